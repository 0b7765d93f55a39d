//! The `local` backend: `python -m ipykernel_launcher -f <connection file>`
//! launched by the pack in its own process group, spoken to over ZeroMQ on
//! IPC sockets in a private folder.
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
use pack_process::{EnvAllowList, ProcessGroup};
use pack_sdk::PackError;
use tempfile::TempDir;
use tokio::process::Command;

use crate::{
    conn::Conn,
    kernel::{Backend, BoxFuture, Kernel, Started},
};

/// How often the pack checks that a kernel process still runs.
const LIVENESS_POLL: Duration = Duration::from_millis(100);

/// Launches kernels with the configured Python, resolved on first use.
pub struct LocalBackend {
    configured: Option<PathBuf>,
    resolved: tokio::sync::OnceCell<Result<PathBuf, PackError>>,
    env: EnvAllowList,
    root: PathBuf,
    startup_timeout: Duration,
}

/// What every local kernel is launched with.
#[derive(Clone)]
struct Launcher {
    python: PathBuf,
    env: EnvAllowList,
    root: PathBuf,
    startup_timeout: Duration,
}

impl LocalBackend {
    /// Kernels run `python` (default `python3`) with the `env` allow-list;
    /// their sockets live under `root` (short: a socket path is at most 107
    /// bytes).
    pub fn new(
        python: Option<PathBuf>,
        env: EnvAllowList,
        root: PathBuf,
        startup_timeout: Duration,
    ) -> Self {
        Self {
            configured: python,
            resolved: tokio::sync::OnceCell::new(),
            env,
            root,
            startup_timeout,
        }
    }
}

/// The real interpreter behind `python` (a pyenv shim costs ~300 ms a
/// spawn), found once, when the first session starts.
async fn resolve_python(configured: Option<&Path>) -> Result<PathBuf, PackError> {
    let program = configured.unwrap_or(Path::new("python3"));
    let output = Command::new(program)
        .args(["-c", "import sys; print(sys.executable)"])
        .stdin(Stdio::null())
        .output()
        .await;
    let help = "set `python` in [packs.jupyter] config to an interpreter that has ipykernel (pip install ipykernel)";
    match output {
        Ok(output) if output.status.success() => {
            let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            Ok(if path.is_empty() {
                program.to_path_buf()
            } else {
                PathBuf::from(path)
            })
        }
        Ok(output) => Err(PackError::not_found(format!(
            "`{}` failed: {}",
            program.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
        .with_help(help)),
        Err(e) => Err(
            PackError::not_found(format!("cannot run `{}`: {e}", program.display()))
                .with_help(help),
        ),
    }
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
                .get_or_init(|| resolve_python(self.configured.as_deref()))
                .await
                .clone()?;
            let launcher = Launcher {
                python,
                env: self.env.clone(),
                root: self.root.clone(),
                startup_timeout: self.startup_timeout,
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
    _group: Arc<Mutex<ProcessGroup>>,
    pid: libc::pid_t,
    conn: Arc<Conn>,
    /// The connection file, the sockets and the kernel's stderr; removed on drop.
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
        let pid = self.lock().as_ref().map(|r| r.pid);
        Box::pin(async move {
            let pid = pid.ok_or("the kernel was shut down")?;
            // ipykernel's interrupt mode is `signal`: SIGINT to the kernel.
            // SAFETY: kill only sends a signal to our own child.
            if unsafe { libc::kill(pid, libc::SIGINT) } == 0 {
                Ok(())
            } else {
                Err(format!(
                    "cannot interrupt kernel process {pid}: {}",
                    std::io::Error::last_os_error()
                ))
            }
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

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            drop(self.lock().take());
        })
    }
}

fn startup_error(message: String) -> PackError {
    PackError::internal(message)
}

/// Start a kernel and connect to it; returns once it answered `kernel_info`.
async fn launch(backend: &Launcher) -> Result<Running, PackError> {
    std::fs::create_dir_all(&backend.root)?;
    let dir = tempfile::Builder::new()
        .prefix("k")
        .tempdir_in(&backend.root)?;
    let info = ConnectionInfo {
        ip: dir.path().join("s").display().to_string(),
        transport: Transport::IPC,
        shell_port: 1,
        iopub_port: 2,
        stdin_port: 3,
        control_port: 4,
        hb_port: 5,
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

    let mut command = Command::new(&backend.python);
    command
        .args(["-m", "ipykernel_launcher", "-f"])
        .arg(&connection_file)
        // No history database in $HOME: faster start, nothing left behind.
        .arg("--HistoryManager.enabled=False")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr));
    let extra = BTreeMap::from([
        // ipykernel's parent poller: exit when this process (the host) is gone.
        ("JPY_PARENT_PID".to_owned(), std::process::id().to_string()),
        ("PYDEVD_DISABLE_FILE_VALIDATION".to_owned(), "1".to_owned()),
    ]);
    backend.env.apply(&mut command, &extra);
    let mut group = ProcessGroup::spawn(&mut command).map_err(|e| {
        PackError::not_found(format!(
            "cannot start the kernel with `{}`: {e}",
            backend.python.display()
        ))
        .with_help("set `python` in [packs.jupyter] config to an interpreter that has ipykernel (pip install ipykernel)")
    })?;
    let pid = group
        .child()
        .id()
        .and_then(|id| libc::pid_t::try_from(id).ok())
        .ok_or_else(|| startup_error("the kernel exited at once".to_owned()))?;
    let group = Arc::new(Mutex::new(group));

    let deadline = Instant::now() + backend.startup_timeout;
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
                backend.python.display()
            ))
            .with_help(format!(
                "pip install ipykernel (with `{} -m pip install ipykernel`), or set `python` in [packs.jupyter] config to an interpreter that has it",
                backend.python.display()
            ));
        }
        startup_error(format!(
            "the kernel did not start: {why}; its stderr:\n{tail}"
        ))
    };
    let alive = |group: &Arc<Mutex<ProcessGroup>>| {
        group.lock().unwrap_or_else(|e| e.into_inner()).is_running()
    };

    // ipykernel binds every socket before it serves: wait for the files.
    let sockets: Vec<PathBuf> = (1..=5)
        .map(|port| PathBuf::from(format!("{}-{port}", info.ip)))
        .collect();
    while !sockets.iter().all(|s| Path::exists(s)) {
        if !alive(&group) {
            return Err(failed("the process exited"));
        }
        if Instant::now() > deadline {
            return Err(failed(&format!(
                "its sockets did not appear within {} s",
                backend.startup_timeout.as_secs()
            )));
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
                    let exit = {
                        let mut group = group.lock().unwrap_or_else(|e| e.into_inner());
                        match group.child().try_wait() {
                            Ok(None) => None,
                            Ok(Some(status)) => Some(status.to_string()),
                            Err(e) => Some(e.to_string()),
                        }
                    };
                    if let Some(exit) = exit {
                        conn2.mark_dead(&format!("the kernel process exited ({exit})"));
                        return;
                    }
                }
            })
            .abort_handle(),
        );
    }

    let running = Running {
        _group: group,
        pid,
        conn: Arc::clone(&conn),
        _dir: dir,
    };
    // Ready when it answers on shell.
    match conn.ready(deadline.into()).await {
        Ok(()) => Ok(running),
        Err(reason) => Err(failed(&format!(
            "{reason} (start-up limit {} s)",
            backend.startup_timeout.as_secs()
        ))),
    }
}

/// Whether a socket error ends the connection (a bad message does not).
fn is_fatal(e: &zmq::RuntimeError) -> bool {
    matches!(e, zmq::RuntimeError::ZmqError(_))
}
