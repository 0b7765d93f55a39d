//! The fork server: one warm, confined Python (the zygote) that forks a
//! child per call. A fork of a warm interpreter costs about a millisecond
//! where starting one costs tens, so calls back to back or side by side do
//! not wait for Python to start. The child narrows its confinement to its
//! own call folder (`zygote.py`: the sandbox's narrowing, made here and
//! applied through this library, [`narrow`]) and joins a cgroup of its
//! own (here) before it reads its request.

mod narrow;

use std::{
    collections::HashMap,
    io::{self, IoSlice, IoSliceMut},
    os::{
        fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
        unix::net::UnixStream as StdUnixStream,
    },
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use nix::sys::socket::{
    AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg,
    sendmsg, socketpair,
};
use pack_process::{Adopted, Pidfd, ProcessGroup, pass_as_channel};
use serde::Deserialize;
use serde_json::json;
use tempfile::TempDir;
use tokio::{
    io::{AsyncReadExt, unix::AsyncFd},
    net::{UnixStream, unix::pipe},
    sync::oneshot,
};
use tokio_util::task::AbortOnDropHandle;

use crate::interpreter::{Interpreter, Launcher, RUNNER};

const ZYGOTE: &str = include_str!("zygote.py");

/// How long a fork may take before the zygote counts as stuck.
const FORK_TIMEOUT: Duration = Duration::from_secs(10);

/// A running zygote.
pub struct Zygote {
    /// The zygote process (its drop kills it).
    _group: ProcessGroup,
    control: Arc<AsyncFd<OwnedFd>>,
    waiting: Arc<Mutex<Waiting>>,
    /// Reads the zygote's messages; its end means the zygote is gone.
    reader: AbortOnDropHandle<()>,
    next: AtomicU64,
    /// Its root, the parent of every call folder.
    root: TempDir,
}

/// A forked child's pid, its pidfd and its end to come; or why not.
type Forked = Result<(u32, OwnedFd, oneshot::Receiver<i32>), String>;

/// Forks asked for and children running, by request id and by pid.
#[derive(Default)]
struct Waiting {
    forks: HashMap<u64, oneshot::Sender<Forked>>,
    exits: HashMap<u32, oneshot::Sender<i32>>,
}

/// What the zygote says.
#[derive(Deserialize)]
#[serde(untagged)]
enum Message {
    Forked { id: u64, pid: u32 },
    Refused { id: u64, error: String },
    Exited { exited: u32, status: i32 },
}

impl Zygote {
    /// Start a zygote confined to a fresh root folder.
    async fn start(launcher: &Launcher) -> io::Result<Self> {
        let root = tempfile::Builder::new()
            .prefix("zygote-")
            .tempdir_in(&launcher.settings.scratch)?;
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        )?;
        // All of /proc for the zygote, which runs no user code, so that each
        // child's narrowed domain can grant it its own `/proc/self`; and the
        // library its children narrow themselves through.
        let library = narrow::library()?;
        let policy = launcher
            .policy(root.path())
            .read([std::path::PathBuf::from("/proc"), library.clone()]);
        let mut confined = launcher
            .settings
            .sandbox
            .command(&policy, &launcher.python.executable)
            .map_err(io::Error::other)?;
        let program = format!("_PACKHOST_ZYGOTE = True\n{RUNNER}{ZYGOTE}");
        confined
            .command
            .args(["-I", "-u", "-c", &program])
            .arg(&library)
            .current_dir(root.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        launcher
            .settings
            .env
            .apply(&mut confined.command, &Default::default());
        pass_as_channel(&mut confined.command, theirs.as_raw_fd());
        let group = ProcessGroup::spawn(confined)?;
        drop(theirs);
        // SAFETY: the socket is ours alone and stays open while registered.
        let control = Arc::new(unsafe { AsyncFd::register(ours)? });
        let waiting = Arc::new(Mutex::new(Waiting::default()));
        let reader = AbortOnDropHandle::new(tokio::spawn(read(
            Arc::clone(&control),
            Arc::clone(&waiting),
        )));
        Ok(Self {
            _group: group,
            control,
            waiting,
            reader,
            next: AtomicU64::new(0),
            root,
        })
    }

    /// Whether it still answers.
    pub fn is_alive(&self) -> bool {
        !self.reader.is_finished()
    }

    /// Whether a fork is under way or a child has not been reaped yet.
    fn has_children(&self) -> bool {
        let waiting = lock(&self.waiting);
        !waiting.forks.is_empty() || !waiting.exits.is_empty()
    }

    /// A fresh interpreter for one call: forked, confined to its own new
    /// folder and bounded by its own cgroup; it rehearses a call before it
    /// says it is ready if `rehearse`.
    pub async fn fork(&self, launcher: &Launcher, rehearse: bool) -> io::Result<Interpreter> {
        let dir = tempfile::Builder::new()
            .prefix("call-")
            .tempdir_in(self.root.path())?;
        let narrowing = launcher
            .settings
            .sandbox
            .narrowing(&launcher.policy(dir.path()))
            .map_err(io::Error::other)?;
        let (stdout, stdout_theirs) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let (stderr, stderr_theirs) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let (channel, channel_theirs) = StdUnixStream::pair()?;
        // Made on a blocking thread while the zygote forks: a few file
        // system calls into the cgroup tree.
        let settings = Arc::clone(&launcher.settings);
        let cgroup = tokio::task::spawn_blocking(move || settings.sandbox.cgroup(&settings.limits));
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (sent, forked) = oneshot::channel();
        lock(&self.waiting).forks.insert(id, sent);
        let request = json!({
            "id": id,
            "dir": dir.path(),
            // As a string: the child hands it to the library as it is.
            "narrowing": narrowing.map(|n| json!(n).to_string()),
            "rehearse": rehearse,
        })
        .to_string();
        let fds = [
            stdout_theirs.as_raw_fd(),
            stderr_theirs.as_raw_fd(),
            channel_theirs.as_raw_fd(),
        ];
        let send = async {
            loop {
                let mut ready = self.control.writable().await?;
                let sent = ready.try_io(|control| {
                    sendmsg::<()>(
                        control.as_raw_fd(),
                        &[IoSlice::new(request.as_bytes())],
                        &[ControlMessage::ScmRights(&fds)],
                        MsgFlags::empty(),
                        None,
                    )
                    .map_err(io::Error::from)
                });
                if let Ok(result) = sent {
                    return result.map(drop);
                }
            }
        };
        if let Err(e) = send.await {
            lock(&self.waiting).forks.remove(&id);
            return Err(e);
        }
        // The child holds its ends now.
        drop((stdout_theirs, stderr_theirs, channel_theirs));
        let (pid, pidfd, exit) = match tokio::time::timeout(FORK_TIMEOUT, forked).await {
            Ok(Ok(Ok(forked))) => forked,
            Ok(Ok(Err(refused))) => return Err(io::Error::other(refused)),
            Ok(Err(_)) => return Err(io::Error::other("the zygote is gone")),
            Err(_) => {
                lock(&self.waiting).forks.remove(&id);
                return Err(io::Error::other("the zygote did not fork in time"));
            }
        };
        let adopted = Adopted {
            pidfd: Pidfd::from_fd(pidfd, pid),
            exit,
            stdout: pipe::Receiver::from_owned_fd(stdout)?,
            stderr: pipe::Receiver::from_owned_fd(stderr)?,
        };
        let cgroup = cgroup
            .await
            .map_err(io::Error::other)?
            .map_err(io::Error::other);
        // Bounded before it reads its request, so before any user code. On a
        // blocking thread: on cgroup v1 a move waits for an RCU grace period,
        // milliseconds during which the pack's workers serve other calls.
        let (cgroup, joined) = match cgroup {
            Ok(Some(cgroup)) => tokio::task::spawn_blocking(move || {
                let joined = cgroup.adopt(pid);
                (Some(cgroup), joined)
            })
            .await
            .map_err(io::Error::other)?,
            Ok(None) => (None, Ok(())),
            Err(e) => (None, Err(e)),
        };
        let group = ProcessGroup::adopt(adopted, cgroup);
        joined?;
        channel.set_nonblocking(true)?;
        let mut channel = UnixStream::from_std(channel)?;
        prepared(&mut channel).await?;
        Ok(Interpreter {
            group,
            channel,
            dir,
        })
    }
}

/// What a child sends once it is prepared (`zygote.py`: `_READY`).
const READY: u8 = b'R';

/// Until the child on `channel` has narrowed itself and rehearsed a call:
/// one still preparing would make the call that takes it wait, and would
/// count as ready in the pool while a call could have waited for another.
/// A child that ends first is handed out as it is: its call reports how it
/// ended, with what it wrote.
async fn prepared(channel: &mut UnixStream) -> io::Result<()> {
    let mut said = [0u8; 1];
    match tokio::time::timeout(FORK_TIMEOUT, channel.read(&mut said)).await {
        Err(_) => Err(io::Error::other("the child did not get ready in time")),
        Ok(Ok(0)) => Ok(()),
        Ok(Ok(_)) if said[0] == READY => Ok(()),
        Ok(Ok(_)) => Err(io::Error::other("the child said something else than ready")),
        Ok(Err(e)) => Err(e),
    }
}

/// Dispatch the zygote's messages until it is gone; then every fork and
/// child still waiting learns so (their senders drop).
async fn read(control: Arc<AsyncFd<OwnedFd>>, waiting: Arc<Mutex<Waiting>>) {
    let mut buffer = vec![0u8; 1 << 16];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    loop {
        let Ok(mut ready) = control.readable().await else {
            break;
        };
        let received = ready.try_io(|control| {
            let mut iov = [IoSliceMut::new(&mut buffer)];
            let message = recvmsg::<()>(
                control.as_raw_fd(),
                &mut iov,
                Some(&mut space),
                MsgFlags::MSG_CMSG_CLOEXEC,
            )?;
            // Owned at once: none leaks, whatever the message.
            let fds: Vec<OwnedFd> = message
                .cmsgs()?
                .flat_map(|cmsg| match cmsg {
                    ControlMessageOwned::ScmRights(fds) => fds,
                    _ => Vec::new(),
                })
                // SAFETY: descriptors the kernel just gave us.
                .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
                .collect();
            Ok((message.bytes, fds))
        });
        let (length, mut fds) = match received {
            Ok(Ok((0, _))) | Ok(Err(_)) => break,
            Ok(Ok(received)) => received,
            Err(_would_block) => continue,
        };
        let Ok(message) = serde_json::from_slice::<Message>(&buffer[..length]) else {
            continue;
        };
        let mut waiting = lock(&waiting);
        match message {
            Message::Forked { id, pid } => {
                let forked = match fds.pop() {
                    Some(pidfd) => {
                        let (ended, exit) = oneshot::channel();
                        waiting.exits.insert(pid, ended);
                        Ok((pid, pidfd, exit))
                    }
                    None => Err("the zygote sent no pidfd for its child".to_owned()),
                };
                if let Some(sent) = waiting.forks.remove(&id) {
                    let _ = sent.send(forked);
                }
            }
            Message::Refused { id, error } => {
                if let Some(forked) = waiting.forks.remove(&id) {
                    let _ = forked.send(Err(error));
                }
            }
            Message::Exited { exited, status } => {
                if let Some(ended) = waiting.exits.remove(&exited) {
                    let _ = ended.send(status);
                }
            }
        }
    }
    let mut waiting = lock(&waiting);
    waiting.forks.clear();
    waiting.exits.clear();
}

fn lock(waiting: &Mutex<Waiting>) -> std::sync::MutexGuard<'_, Waiting> {
    waiting.lock().unwrap_or_else(|e| e.into_inner())
}

/// The pack's zygote, started on first use and again when it is gone or was
/// stopped for being idle.
#[derive(Default)]
pub struct ForkServer {
    current: tokio::sync::Mutex<Option<Arc<Zygote>>>,
}

impl ForkServer {
    /// The running zygote, started if there is none (or it is gone).
    async fn zygote(&self, launcher: &Launcher) -> io::Result<Arc<Zygote>> {
        let mut current = self.current.lock().await;
        if let Some(zygote) = current.as_ref().filter(|zygote| zygote.is_alive()) {
            return Ok(Arc::clone(zygote));
        }
        let zygote = Arc::new(Zygote::start(launcher).await?);
        *current = Some(Arc::clone(&zygote));
        Ok(zygote)
    }

    /// A fresh interpreter for one call (see [`Zygote::fork`]).
    pub async fn fork(&self, launcher: &Launcher, rehearse: bool) -> io::Result<Interpreter> {
        self.zygote(launcher).await?.fork(launcher, rehearse).await
    }

    /// Stop the zygote (host shutdown); its children end with their calls.
    pub async fn stop(&self) {
        self.current.lock().await.take();
    }

    /// Stop the zygote once it has no child left (an idle pack), waiting up
    /// to [`UNUSED_WAIT`] for the children just dropped to be reaped; a fork
    /// asked for meanwhile keeps it. Never while a call's child runs: the
    /// zygote reports how its children end.
    pub async fn stop_when_unused(&self) {
        let deadline = tokio::time::Instant::now() + UNUSED_WAIT;
        loop {
            {
                let mut current = self.current.lock().await;
                let Some(zygote) = current.as_ref() else {
                    return;
                };
                // Under the lock: a fork takes its zygote under it too.
                if Arc::strong_count(zygote) == 1 && !zygote.has_children() {
                    current.take();
                    return;
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(UNUSED_POLL).await;
        }
    }
}

/// How long an idle pack waits for its dropped children to be reaped before
/// it stops its zygote; and how often it looks.
const UNUSED_WAIT: Duration = Duration::from_secs(2);
const UNUSED_POLL: Duration = Duration::from_millis(20);
