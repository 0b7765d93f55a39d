//! Pre-started Python interpreters: each runs `runner.py` and waits on a
//! private socket (fd 3) for the one request it will serve.

use std::{
    collections::BTreeMap,
    io,
    os::{fd::AsRawFd, unix::net::UnixStream as StdUnixStream},
    path::{Path, PathBuf},
    process::Stdio,
};

use pack_process::{EnvAllowList, ProcessGroup};
use tokio::{net::UnixStream, process::Command};

const RUNNER: &str = include_str!("runner.py");

/// The file descriptor the runner reads its channel from.
const CHANNEL_FD: i32 = 3;

/// An idle interpreter and the pack's end of its channel.
pub struct Interpreter {
    /// The process group led by the interpreter.
    pub group: ProcessGroup,
    /// JSON lines both ways: the request, bridge calls and replies, the answer.
    pub channel: UnixStream,
}

impl Interpreter {
    /// Start `python` on the runner in `dir`, with only the allowed variables.
    pub async fn start(python: &Path, env: &EnvAllowList, dir: &Path) -> io::Result<Self> {
        let (ours, theirs) = StdUnixStream::pair()?;
        let mut command = Command::new(python);
        // -I: ignore PYTHON* variables and the user site; -u: unbuffered output.
        command
            .args(["-I", "-u", "-c", RUNNER])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        env.apply(&mut command, &BTreeMap::new());
        let fd = theirs.as_raw_fd();
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
        let group = ProcessGroup::spawn(&mut command)?;
        drop(theirs);
        ours.set_nonblocking(true)?;
        Ok(Self {
            group,
            channel: UnixStream::from_std(ours)?,
        })
    }

    /// Whether an idle interpreter is still there to take a request.
    pub fn is_alive(&mut self) -> bool {
        self.group.is_running()
    }
}

/// The real interpreter behind `python3` on PATH: a pyenv shim costs ~300 ms
/// per spawn, so it is resolved once.
pub fn resolve(configured: Option<&Path>) -> Result<PathBuf, String> {
    let program = configured.unwrap_or(Path::new("python3"));
    let output = std::process::Command::new(program)
        .args(["-c", "import sys; print(sys.executable)"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", program.display()))?;
    let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || path.is_empty() {
        return Err(format!(
            "`{}` did not report its interpreter: {}",
            program.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(PathBuf::from(path))
}
