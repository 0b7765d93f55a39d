//! Python interpreters: each runs `runner.py`, confined to its own fresh
//! folder, and waits on a private socket (fd 3) for the one request it will
//! serve. Most are forked by the zygote (`zygote.rs`); a call with a `cwd`
//! gets one started for it, with that folder in its policy.

use std::{
    collections::BTreeMap,
    io,
    os::fd::AsFd,
    path::{Path, PathBuf},
    process::Stdio,
    sync::Arc,
};

use beneath::Dir;
use pack_process::{ChannelPair, EnvAllowList, Limits, Policy, ProcessGroup, Python, Sandbox};
use tempfile::TempDir;
use tokio::net::UnixStream;

pub const RUNNER: &str = include_str!("runner.py");

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
    pub async fn start(&self, cwd: &Dir, writable: bool) -> io::Result<Interpreter> {
        let dir = tempfile::Builder::new()
            .prefix("call-")
            .tempdir_in(&self.settings.scratch)?;
        let policy = self.policy(dir.path());
        let cwd = cwd.as_fd().try_clone_to_owned()?;
        let policy = if writable {
            policy.write_opened(cwd)
        } else {
            policy.read_opened(cwd)
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
        let channel = ChannelPair::new()?;
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
        channel.pass_to(command);
        let group = ProcessGroup::spawn(confined)?;
        Ok(Self {
            group,
            channel: channel.into_ours()?,
            dir,
        })
    }
}
