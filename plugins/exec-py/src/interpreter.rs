//! Python interpreters: each runs `runner.py`, confined to its own fresh
//! folder, and waits on a private socket (fd 3) for the one request it will
//! serve. Most are forked by the zygote (`zygote.rs`); a call with a `cwd`
//! gets one started for it, with that folder in its policy.

use std::{
    collections::BTreeMap,
    io,
    os::{
        fd::{AsRawFd, RawFd},
        unix::net::UnixStream as StdUnixStream,
    },
    path::{Path, PathBuf},
    process::Stdio,
    sync::Arc,
};

use pack_process::{EnvAllowList, Limits, Policy, ProcessGroup, Python, Sandbox};
use tempfile::TempDir;
use tokio::net::UnixStream;

pub const RUNNER: &str = include_str!("runner.py");

/// The file descriptor the runner reads its channel from.
const CHANNEL_FD: i32 = 3;

/// An idle interpreter and the pack's end of its channel.
pub struct Interpreter {
    /// The process group led by the interpreter.
    pub group: ProcessGroup,
    /// JSON lines both ways: the request, bridge calls and replies, the answer.
    pub channel: UnixStream,
    /// Its own folder, the only one it may write; removed after the call.
    pub dir: TempDir,
}

/// How interpreters are started: the same for forked and one-off ones.
pub struct Launcher {
    pub python: Python,
    pub settings: Arc<Settings>,
}

/// What the pack's config says of its interpreters.
pub struct Settings {
    pub env: EnvAllowList,
    pub sandbox: Sandbox,
    pub limits: Limits,
    /// Where the interpreters' own folders are made.
    pub scratch: PathBuf,
}

impl Launcher {
    /// The confinement of an interpreter whose own folder is `work`.
    pub fn policy(&self, work: &Path) -> Policy {
        Policy::new(self.python.runtime.iter().cloned(), work).limits(self.settings.limits.clone())
    }

    /// Start an interpreter in a fresh folder of its own, with `cwd`
    /// readable (and writable with `cwd_writable`) too.
    pub async fn start(&self, cwd: &Path, writable: bool) -> io::Result<Interpreter> {
        let dir = tempfile::Builder::new()
            .prefix("call-")
            .tempdir_in(&self.settings.scratch)?;
        let policy = self.policy(dir.path());
        let policy = if writable {
            policy.write([cwd.to_path_buf()])
        } else {
            policy.read([cwd.to_path_buf()])
        };
        let confined = self
            .settings
            .sandbox
            .command(&policy, &self.python.executable)
            .map_err(io::Error::other)?;
        Interpreter::start(confined, &self.settings.env, dir).await
    }
}

impl Interpreter {
    /// Start the confined interpreter on the runner in `dir`, with only the
    /// allowed variables.
    async fn start(
        confined: pack_process::Confined,
        env: &EnvAllowList,
        dir: TempDir,
    ) -> io::Result<Self> {
        let (ours, theirs) = StdUnixStream::pair()?;
        let mut confined = confined;
        let command = &mut confined.command;
        // -I: ignore PYTHON* variables and the user site; -u: unbuffered output.
        command
            .args(["-I", "-u", "-c", RUNNER])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let tmp = BTreeMap::from([("TMPDIR".to_owned(), dir.path().display().to_string())]);
        env.apply(command, &tmp);
        pass_as_channel(command, theirs.as_raw_fd());
        let group = ProcessGroup::spawn(confined)?;
        drop(theirs);
        ours.set_nonblocking(true)?;
        Ok(Self {
            group,
            channel: UnixStream::from_std(ours)?,
            dir,
        })
    }
}

/// Give the child `fd` as its fd 3, where the runner and the zygote read
/// their channel.
pub fn pass_as_channel(command: &mut tokio::process::Command, fd: RawFd) {
    // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let ok = if fd == CHANNEL_FD {
                // Already in place: only drop close-on-exec.
                libc::fcntl(fd, libc::F_SETFD, 0) >= 0
            } else {
                libc::dup2(fd, CHANNEL_FD) >= 0
            };
            if ok {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        });
    }
}
