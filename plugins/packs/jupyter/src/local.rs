//! The `local` backend: `python -m ipykernel_launcher -f <connection file>`
//! launched by the pack in its own process group, confined by the sandbox to
//! its session folder, and spoken to over ZeroMQ on TCP ports of loopback
//! picked by the pack: the only ports the kernel may listen on. (IPC sockets
//! would need Unix sockets, and the sandbox cannot keep a kernel that may
//! make them from connecting to other programs' sockets, PostgreSQL's say.)
//!
//! Orphans: the group is killed when the session is closed, restarted or
//! dropped, and at host shutdown; if the host itself is SIGKILLed the kernel
//! gets `JPY_PARENT_PID` (ipykernel's parent poller), so it exits within about
//! a second once its parent is gone.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Stdio,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use jupyter_protocol::{ConnectionInfo, Transport};
use jupyter_zmq_client as zmq;
use pack_process::{
    Bound, EnvAllowList, Exit, Limits, Network, Policy, ProcessGroup, Python, Sandbox,
};
use pack_sdk::PackError;
use tempfile::TempDir;

use crate::{
    conn::Conn,
    kernel::{Backend, BoxFuture, Kernel, Started},
};

/// How often the pack checks that a kernel process still runs.
const LIVENESS_POLL: Duration = Duration::from_millis(100);
/// How long a kernel seen dead may take to be reaped, before the pack asks
/// its sandbox why it ended.
const REAP_GRACE: Duration = Duration::from_secs(2);

/// Launches kernels with the configured Python, resolved on first use.
pub struct LocalBackend {
    configured: Option<PathBuf>,
    resolved: tokio::sync::OnceCell<Result<Python, PackError>>,
    settings: Arc<Settings>,
}

/// How every local kernel is launched, whatever its Python.
pub struct Settings {
    /// The host variables kernels see.
    pub env: EnvAllowList,
    /// Where the kernels' own folders are made.
    pub root: PathBuf,
    /// How long a kernel may take to answer.
    pub startup_timeout: Duration,
    /// Confines each kernel, or not with `sandbox = "off"`.
    pub sandbox: Sandbox,
    /// The bounds of each kernel.
    pub limits: Limits,
}

/// What one kernel is launched with.
struct Launcher {
    python: Python,
    settings: Arc<Settings>,
}

impl LocalBackend {
    /// Kernels run `python` (default `python3`).
    pub fn new(python: Option<PathBuf>, settings: Settings) -> Self {
        Self {
            configured: python,
            resolved: tokio::sync::OnceCell::new(),
            settings: Arc::new(settings),
        }
    }
}

/// The real interpreter behind `python` and its folders, found once, when
/// the first session starts.
async fn resolve_python(configured: Option<PathBuf>) -> Result<Python, PackError> {
    let resolved = tokio::task::spawn_blocking(move || Python::resolve(configured.as_deref()))
        .await
        .map_err(|e| PackError::internal(e.to_string()))?;
    resolved.map_err(|why| {
        PackError::not_found(why).with_help(
            "set `python` in [packs.jupyter] config to an interpreter that has ipykernel (pip install ipykernel)",
        )
    })
}

impl Backend for LocalBackend {
    fn name(&self) -> &'static str {
        "local"
    }

    fn start<'a>(
        &'a self,
        kernel_name: &'a str,
        notebook_path: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Started, PackError>> {
        Box::pin(async move {
            if kernel_name != "python3" {
                return Err(PackError::invalid_argument(format!(
                    "the local backend runs the `python3` kernel (ipykernel) only, got `kernel_name` {kernel_name:?}"
                ))
                .with_help("leave `kernel_name` out, or use the `server` backend for other kernels"));
            }
            let python = self
                .resolved
                .get_or_init(|| resolve_python(self.configured.clone()))
                .await
                .clone()?;
            let launcher = Launcher {
                python,
                settings: Arc::clone(&self.settings),
            };
            let running = launch(&launcher).await?;
            let kernel_id = uuid::Uuid::new_v4().to_string();
            // A notebook session gets its own id, as on a Jupyter Server.
            let session_id = match notebook_path {
                Some(_) => uuid::Uuid::new_v4().to_string(),
                None => kernel_id.clone(),
            };
            let kernel = LocalKernel {
                launcher,
                running: Mutex::new(Some(running)),
            };
            Ok(Started {
                session_id,
                kernel_id,
                kernel: Arc::new(kernel),
            })
        })
    }
}

/// One launched kernel process and its connection.
struct Running {
    /// Owning it keeps the kernel; dropping the last handle kills its group.
    group: Arc<Mutex<ProcessGroup>>,
    conn: Arc<Conn>,
    /// The kernel's own folder (its home, temporary files, connection file
    /// and stderr), the only one it may write; removed on drop.
    _dir: TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.conn.close();
        // Dropping the last handle of the group kills the whole group.
    }
}

/// A local kernel; a restart swaps the running process.
pub struct LocalKernel {
    launcher: Launcher,
    running: Mutex<Option<Running>>,
}

impl LocalKernel {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Kernel for LocalKernel {
    fn conn(&self) -> Arc<Conn> {
        match self.lock().as_ref() {
            Some(running) => Arc::clone(&running.conn),
            None => {
                let (conn, _) = Conn::new(String::new(), false);
                conn.mark_dead("the kernel was shut down");
                conn
            }
        }
    }

    fn interrupt(&self) -> BoxFuture<'_, Result<(), String>> {
        let group = self.lock().as_ref().map(|r| Arc::clone(&r.group));
        Box::pin(async move {
            let group = group.ok_or("the kernel was shut down")?;
            // ipykernel's interrupt mode is `signal`: SIGINT to the kernel.
            let sent = group.lock().unwrap_or_else(|e| e.into_inner()).interrupt();
            sent.map_err(|e| match e.raw_os_error() {
                Some(libc::ESRCH) => "its process has ended".to_owned(),
                _ => e.to_string(),
            })
        })
    }

    fn restart(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            // Kill the old one first: its state is gone either way.
            drop(self.lock().take());
            let running = launch(&self.launcher)
                .await
                .map_err(|e| e.message().to_owned())?;
            *self.lock() = Some(running);
            Ok(())
        })
    }

    fn release(&self) -> BoxFuture<'_, ()> {
        self.shutdown()
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            drop(self.lock().take());
        })
    }

    fn exceeded(&self) -> BoxFuture<'_, Option<Bound>> {
        let group = self.lock().as_ref().map(|r| Arc::clone(&r.group));
        Box::pin(async move {
            let group = group?;
            // Its sockets may close before the process is reaped.
            let deadline = Instant::now() + REAP_GRACE;
            loop {
                if let Some(ended) = ended(&group) {
                    return ended.exceeded;
                }
                if Instant::now() > deadline {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    }
}

/// How a kernel process ended.
struct Ended {
    status: String,
    /// The bound of its sandbox it passed, if that ended it.
    exceeded: Option<Bound>,
}

impl Ended {
    fn reason(&self) -> String {
        match self.exceeded {
            Some(bound) => format!("the kernel was ended: it passed {bound}"),
            None => format!("the kernel process exited ({})", self.status),
        }
    }
}

/// How the kernel ended, if it has.
fn ended(group: &Mutex<ProcessGroup>) -> Option<Ended> {
    use std::os::unix::process::ExitStatusExt;
    let mut group = group.lock().unwrap_or_else(|e| e.into_inner());
    let status = match group.try_wait() {
        Ok(None) => return None,
        Ok(Some(status)) => status,
        Err(e) => {
            return Some(Ended {
                status: e.to_string(),
                exceeded: None,
            });
        }
    };
    let exit = match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(signal)) => Exit::Signal(signal),
        (None, None) => Exit::Code(-1),
    };
    Some(Ended {
        status: status.to_string(),
        exceeded: group.exceeded(exit),
    })
}

fn startup_error(message: String) -> PackError {
    PackError::internal(message)
}

/// How many times a kernel is started on fresh ports when another program
/// took one of them first.
const PORT_TRIES: usize = 3;

/// Why one start of a kernel failed.
enum Launch {
    /// Another program bound one of its ports between our pick and its start.
    PortTaken,
    Failed(PackError),
}

impl From<PackError> for Launch {
    fn from(error: PackError) -> Self {
        Self::Failed(error)
    }
}

impl From<std::io::Error> for Launch {
    fn from(error: std::io::Error) -> Self {
        Self::Failed(error.into())
    }
}

/// Start a kernel and connect to it; returns once it answered `kernel_info`.
/// Its ports are picked free and let go for the kernel to bind: when another
/// program takes one in between, the kernel starts again on others.
async fn launch(launcher: &Launcher) -> Result<Running, PackError> {
    for _ in 0..PORT_TRIES {
        match launch_on(launcher, free_ports()?).await {
            Ok(running) => return Ok(running),
            Err(Launch::PortTaken) => continue,
            Err(Launch::Failed(error)) => return Err(error),
        }
    }
    Err(startup_error(format!(
        "the kernel did not start: another program took one of its ports each time ({PORT_TRIES} tries)"
    )))
}

async fn launch_on(launcher: &Launcher, ports: [u16; 5]) -> Result<Running, Launch> {
    let Launcher { python, settings } = launcher;
    std::fs::create_dir_all(&settings.root)?;
    let dir = tempfile::Builder::new()
        .prefix("k")
        .tempdir_in(&settings.root)?;
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp)?;
    let info = ConnectionInfo {
        ip: "127.0.0.1".to_owned(),
        transport: Transport::TCP,
        shell_port: ports[0],
        iopub_port: ports[1],
        stdin_port: ports[2],
        control_port: ports[3],
        hb_port: ports[4],
        key: uuid::Uuid::new_v4().to_string(),
        signature_scheme: "hmac-sha256".to_owned(),
        kernel_name: Some("python3".to_owned()),
    };
    let connection_file = dir.path().join("connection.json");
    std::fs::write(
        &connection_file,
        serde_json::to_vec(&info).map_err(|e| PackError::internal(e.to_string()))?,
    )?;
    let stderr_path = dir.path().join("stderr.log");
    let stderr = std::fs::File::create(&stderr_path)?;

    let policy = Policy::new(python.runtime.iter().cloned(), dir.path())
        .network(Network::Listen(ports.to_vec()))
        .limits(settings.limits.clone());
    let mut confined = settings
        .sandbox
        .command(&policy, &python.executable)
        .map_err(|e| PackError::internal(format!("cannot start a kernel: {e}")))?;
    let command = &mut confined.command;
    command
        .args(["-m", "ipykernel_launcher", "-f"])
        .arg(&connection_file)
        // No history database in $HOME: faster start, nothing left behind.
        .arg("--HistoryManager.enabled=False")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr));
    let own = |path: &Path| path.display().to_string();
    let mut extra = BTreeMap::from([
        // ipykernel's parent poller: exit when this process (the host) is gone.
        ("JPY_PARENT_PID".to_owned(), std::process::id().to_string()),
        ("PYDEVD_DISABLE_FILE_VALIDATION".to_owned(), "1".to_owned()),
        // Temporary files go with the session.
        ("TMPDIR".to_owned(), own(&tmp)),
    ]);
    if settings.sandbox.gives_own_home() {
        // The kernel's folder is its home, where IPython, Jupyter and
        // matplotlib keep their files.
        extra.insert("HOME".to_owned(), own(dir.path()));
    }
    settings.env.apply(command, &extra);
    let group = ProcessGroup::spawn(confined).map_err(|e| {
        PackError::not_found(format!(
            "cannot start the kernel with `{}`: {e}",
            python.executable.display()
        ))
        .with_help("set `python` in [packs.jupyter] config to an interpreter that has ipykernel (pip install ipykernel)")
    })?;
    let group = Arc::new(Mutex::new(group));

    let deadline = Instant::now() + settings.startup_timeout;
    let failed = |why: &str| -> PackError {
        let log = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        let tail: String = log
            .lines()
            .rev()
            .take(15)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        if log.contains("No module named ipykernel") {
            return PackError::not_found(format!(
                "`{}` has no ipykernel: the kernel cannot start",
                python.executable.display()
            ))
            .with_help(format!(
                "pip install ipykernel (with `{} -m pip install ipykernel`), or set `python` in [packs.jupyter] config to an interpreter that has it",
                python.executable.display()
            ));
        }
        startup_error(format!(
            "the kernel did not start: {why}; its stderr:\n{tail}"
        ))
    };
    let alive = |group: &Arc<Mutex<ProcessGroup>>| {
        group.lock().unwrap_or_else(|e| e.into_inner()).is_running()
    };

    // ipykernel binds every socket before it serves. A kernel that could
    // not bind one is of no use even when it lingers on (ipykernel may stay
    // alive after the traceback): it is dropped, its group killed, at once.
    let port_taken = || {
        std::fs::read_to_string(&stderr_path)
            .is_ok_and(|log| log.contains("Address already in use"))
    };
    while !listening(&ports) {
        if port_taken() {
            return Err(Launch::PortTaken);
        }
        if !alive(&group) {
            let why = ended(&group).map_or_else(|| "the process exited".to_owned(), |e| e.reason());
            return Err(failed(&why).into());
        }
        if Instant::now() > deadline {
            return Err(failed(&format!(
                "it did not listen on its ports within {} s",
                settings.startup_timeout.as_secs()
            ))
            .into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let zmq_err = |e: zmq::RuntimeError| failed(&format!("ZeroMQ: {e}"));
    let session = uuid::Uuid::new_v4().to_string();
    let identity = zmq::peer_identity_for_session(&session).map_err(zmq_err)?;
    let mut iopub = zmq::create_client_iopub_connection(&info, "", &session)
        .await
        .map_err(zmq_err)?;
    // ipykernel 7 publishes on XPUB and welcomes each subscriber: after the
    // welcome no iopub message can be lost. Older kernels just time out here.
    let _ = zmq::wait_for_iopub_welcome(&mut iopub, Duration::from_secs(2)).await;
    let shell =
        zmq::create_client_shell_connection_with_identity(&info, &session, identity.clone())
            .await
            .map_err(zmq_err)?;
    // Shell and stdin share one identity (the protocol routes input requests by it).
    let mut stdin = zmq::create_client_stdin_connection_with_identity(&info, &session, identity)
        .await
        .map_err(zmq_err)?;

    let (conn, mut outgoing) = Conn::new(session, false);
    let (mut shell_tx, mut shell_rx) = shell.split();
    {
        let conn2 = Arc::clone(&conn);
        conn.own(
            tokio::spawn(async move {
                loop {
                    match iopub.read().await {
                        Ok(message) => conn2.route(message),
                        Err(e) if is_fatal(&e) => {
                            conn2.mark_dead(&format!("the kernel's iopub socket failed: {e}"));
                            return;
                        }
                        Err(_) => {}
                    }
                }
            })
            .abort_handle(),
        );
    }
    {
        let conn2 = Arc::clone(&conn);
        conn.own(
            tokio::spawn(async move {
                loop {
                    match shell_rx.read().await {
                        Ok(message) => conn2.route(message),
                        Err(e) if is_fatal(&e) => {
                            conn2.mark_dead(&format!("the kernel's shell socket failed: {e}"));
                            return;
                        }
                        Err(_) => {}
                    }
                }
            })
            .abort_handle(),
        );
    }
    conn.own(
        tokio::spawn(async move {
            // Executions never allow stdin; drain whatever comes.
            while stdin.read().await.is_ok() {}
        })
        .abort_handle(),
    );
    {
        let conn2 = Arc::clone(&conn);
        conn.own(
            tokio::spawn(async move {
                while let Some(message) = outgoing.recv().await {
                    if let Err(e) = shell_tx.send(message).await {
                        conn2.mark_dead(&format!("cannot send to the kernel: {e}"));
                        return;
                    }
                }
            })
            .abort_handle(),
        );
    }
    {
        let conn2 = Arc::clone(&conn);
        let group = Arc::clone(&group);
        conn.own(
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(LIVENESS_POLL).await;
                    if let Some(ended) = ended(&group) {
                        conn2.mark_dead(&ended.reason());
                        return;
                    }
                }
            })
            .abort_handle(),
        );
    }

    let running = Running {
        group,
        conn: Arc::clone(&conn),
        _dir: dir,
    };
    // Ready when it answers on shell.
    match conn.ready(deadline.into()).await {
        Ok(()) => Ok(running),
        Err(reason) => Err(failed(&format!(
            "{reason} (start-up limit {} s)",
            settings.startup_timeout.as_secs()
        ))
        .into()),
    }
}

/// Five free ports of loopback for a kernel: bound together, so they
/// differ, and let go for the kernel to bind (see [`launch`]).
fn free_ports() -> std::io::Result<[u16; 5]> {
    let listeners = [(); 5].map(|()| std::net::TcpListener::bind("127.0.0.1:0"));
    let mut ports = [0; 5];
    for (port, listener) in ports.iter_mut().zip(listeners) {
        *port = listener?.local_addr()?.port();
    }
    Ok(ports)
}

/// Whether something listens on every one of `ports` of IPv4 (the kernel
/// binds 127.0.0.1).
fn listening(ports: &[u16]) -> bool {
    let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
        return false;
    };
    let open: Vec<u16> = table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let local = fields.nth(1)?;
            // `st` 0A is LISTEN.
            (fields.nth(1)? == "0A")
                .then(|| u16::from_str_radix(local.rsplit_once(':')?.1, 16).ok())?
        })
        .collect();
    ports.iter().all(|port| open.contains(port))
}

/// Whether a socket error ends the connection (a bad message does not).
fn is_fatal(e: &zmq::RuntimeError) -> bool {
    matches!(e, zmq::RuntimeError::ZmqError(_))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pack_process::Mode;

    /// A kernel whose port another program holds fails as `PortTaken`, which
    /// `launch` answers by starting it again on other ports.
    #[tokio::test]
    async fn a_port_taken_before_the_kernel_binds_it_is_told_apart() {
        let python = std::env::var("PACKHOST_TEST_PYTHON").unwrap_or_else(|_| {
            let home = std::env::var("HOME").unwrap_or_default();
            format!("{home}/.cache/packhost-venv/bin/python")
        });
        let root = tempfile::tempdir().unwrap();
        let launcher = Launcher {
            python: resolve_python(Some(PathBuf::from(python))).await.unwrap(),
            settings: Arc::new(Settings {
                env: EnvAllowList::new(vec!["PATH".to_owned()]),
                root: root.path().to_path_buf(),
                startup_timeout: Duration::from_secs(60),
                // The test binary is not the host, whose binary is the sandbox's helper.
                sandbox: Sandbox::new(Mode::Off),
                limits: Limits::default(),
            }),
        };
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut ports = free_ports().unwrap();
        ports[0] = taken.local_addr().unwrap().port();
        assert!(matches!(
            launch_on(&launcher, ports).await,
            Err(Launch::PortTaken)
        ));
        let running = launch(&launcher)
            .await
            .unwrap_or_else(|e| panic!("{}", e.message()));
        drop(running);
    }
}
