//! Running JavaScript with `node` under the shared process rules
//! (`pack-process`): own process group, whole-group kill on timeout, capped
//! capture, environment allow-list; plus a warm pool of idle `node`
//! processes for calls that need no particular directory or environment.

use std::{
    collections::BTreeMap,
    ffi::OsString,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use pack_process::{EnvAllowList, Exit, Finished, ProcessGroup, WarmPool};
use pack_sdk::{PackError, codes};
use schemars::JsonSchema;
use serde::Serialize;
use tempfile::TempDir;
use tokio::{io::AsyncWriteExt, process::Command};

/// What every run returns: `exec_ts.execute`, `exec_ts.cell_execute`,
/// `exec_ts.npm_install`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecOutput {
    /// Standard output, at most `max_output_bytes` (then ends with
    /// `\n[Output truncated]`).
    pub stdout: String,
    /// Standard error, same cap. Syntax errors, uncaught exceptions with their
    /// stack, and not-found errors land here.
    pub stderr: String,
    /// The process exit code; 124 when the time limit killed it.
    pub exit_code: i32,
    /// Wall time of the call in milliseconds.
    pub execution_time: u64,
    /// Whether the time limit killed it (the exit code alone cannot tell).
    #[serde(skip)]
    pub timed_out: bool,
}

impl ExecOutput {
    /// A run that never started: `message` in stderr, exit code 1, no time.
    pub fn refused(message: impl Into<String>) -> Self {
        Self {
            stderr: message.into(),
            exit_code: 1,
            ..Self::default()
        }
    }

    /// Success for exit code 0, else an error result keeping this shape:
    /// `TIMEOUT` for a timeout, `EXECUTION_ERROR` otherwise.
    pub fn into_result(self, what: &str) -> Result<Self, PackError> {
        match self.exit_code {
            0 => Ok(self),
            _ if self.timed_out => Err(PackError::new(
                codes::TIMEOUT,
                format!("{what} ran past its time limit and was killed (exit code 124)"),
            )
            .with_result(&self)),
            code => Err(PackError::new(
                codes::EXECUTION_ERROR,
                format!("{what} exited with code {code}; see `stderr`"),
            )
            .with_result(&self)),
        }
    }

    fn from_finished(finished: Finished, started: Instant, timeout: Duration) -> Self {
        let mut stderr = finished.stderr.text;
        if finished.exit == Exit::TimedOut {
            if !stderr.is_empty() && !stderr.ends_with('\n') {
                stderr.push('\n');
            }
            stderr.push_str(&format!(
                "[timed out after {} ms: the process group was killed]",
                timeout.as_millis()
            ));
        }
        Self {
            stdout: finished.stdout.text,
            stderr,
            exit_code: finished.exit.code(),
            execution_time: started.elapsed().as_millis() as u64,
            timed_out: finished.exit == Exit::TimedOut,
        }
    }
}

/// Where `node` and `npm` are, or why not.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The `node` binary, or the message to show on every call.
    pub node: Result<PathBuf, String>,
    /// `npm`: beside `node`, else on PATH.
    pub npm: Option<PathBuf>,
}

impl Tools {
    /// Resolve `node` (a path, or a name looked up on the host's PATH) once.
    pub fn find(node: &Path) -> Self {
        let node = which(node).ok_or_else(|| {
            format!(
                "Node.js is not installed: `{}` was not found{}; install Node.js 20 or newer \
                 (e.g. `apt-get install nodejs npm`) or set `node` in `[packs.exec_ts] config` \
                 to the path of the node binary",
                node.display(),
                if node.components().count() > 1 {
                    String::new()
                } else {
                    " on PATH".to_owned()
                }
            )
        });
        let npm = node
            .as_ref()
            .ok()
            .and_then(|node| node.parent())
            .map(|dir| dir.join("npm"))
            .filter(|npm| npm.is_file())
            .or_else(|| which(Path::new("npm")));
        Self { node, npm }
    }

    /// The node binary or a `NOT_FOUND` error (keeping the run shape) that
    /// names what to install.
    pub fn node(&self) -> Result<&Path, PackError> {
        self.node.as_deref().map_err(|message| {
            PackError::not_found(message.clone()).with_result(&ExecOutput {
                exit_code: 127,
                ..ExecOutput::refused(message.clone())
            })
        })
    }
}

/// `name` as given when it contains a `/`, else the first executable
/// `name` on the host's PATH.
fn which(name: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if name.components().count() > 1 {
        return executable(name).then(|| name.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| executable(candidate))
}

/// An idle `node --input-type=module` waiting for its program on stdin, in
/// its own fresh directory.
pub struct Warm {
    group: ProcessGroup,
    dir: TempDir,
}

/// Runs processes for the pack.
pub struct Runner {
    /// Where node and npm are.
    pub tools: Tools,
    env: EnvAllowList,
    limit: usize,
    pool: Option<WarmPool<Warm>>,
}

impl Runner {
    /// A runner; with `pool_size > 0` (and node found) idle processes start
    /// now, so this must run inside a tokio runtime.
    pub fn new(tools: Tools, env: EnvAllowList, limit: usize, pool_size: usize) -> Self {
        let pool = match (&tools.node, pool_size) {
            (Ok(node), 1..) => {
                let (node, env) = (node.clone(), env.clone());
                Some(WarmPool::new(
                    pool_size,
                    move || {
                        let (node, env) = (node.clone(), env.clone());
                        async move {
                            let dir = TempDir::with_prefix("packhost-exec-ts-")?;
                            let mut command =
                                stdin_command(&node, dir.path(), &env, &BTreeMap::new());
                            let group = ProcessGroup::spawn(&mut command)?;
                            Ok(Warm { group, dir })
                        }
                    },
                    |warm: &mut Warm| warm.group.is_running(),
                ))
            }
            _ => None,
        };
        Self {
            tools,
            env,
            limit,
            pool,
        }
    }

    /// Kill the idle processes (host shutdown).
    pub fn shutdown(&self) {
        if let Some(pool) = &self.pool {
            pool.clear();
        }
    }

    /// Run the ES module `js` (fed on stdin) in `cwd`, or in a fresh
    /// directory removed afterwards when `cwd` is `None`.
    pub async fn run_module(
        &self,
        js: String,
        cwd: Option<&Path>,
        env: &BTreeMap<String, String>,
        timeout: Duration,
        started: Instant,
    ) -> Result<ExecOutput, PackError> {
        let node = self.tools.node()?;
        let (group, _dir) = match (cwd, &self.pool) {
            (None, Some(pool)) if env.is_empty() => {
                let warm = pool.take().await.map_err(|e| spawn_error(node, e))?;
                (warm.group, Some(warm.dir))
            }
            _ => {
                let dir = match cwd {
                    Some(_) => None,
                    None => Some(TempDir::with_prefix("packhost-exec-ts-")?),
                };
                let cwd = cwd.unwrap_or_else(|| dir.as_ref().expect("made above").path());
                let mut command = stdin_command(node, cwd, &self.env, env);
                let group = ProcessGroup::spawn(&mut command).map_err(|e| spawn_error(node, e))?;
                (group, dir)
            }
        };
        Ok(self.finish(group, Some(js), timeout, started).await)
    }

    /// Run `program args` in `cwd` (the environment is the allow-list).
    pub async fn run(
        &self,
        program: &Path,
        args: &[OsString],
        cwd: &Path,
        timeout: Duration,
        started: Instant,
    ) -> Result<ExecOutput, PackError> {
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        self.env.apply(&mut command, &BTreeMap::new());
        let group = ProcessGroup::spawn(&mut command).map_err(|e| spawn_error(program, e))?;
        Ok(self.finish(group, None, timeout, started).await)
    }

    async fn finish(
        &self,
        mut group: ProcessGroup,
        stdin: Option<String>,
        timeout: Duration,
        started: Instant,
    ) -> ExecOutput {
        if let (Some(code), Some(mut pipe)) = (stdin, group.child().stdin.take()) {
            // A separate task: a child that never reads cannot block the call,
            // and the write fails (EPIPE) once the group is killed.
            tokio::spawn(async move {
                let _ = pipe.write_all(code.as_bytes()).await;
            });
        }
        let finished = group.finish(timeout, self.limit).await;
        ExecOutput::from_finished(finished, started, timeout)
    }
}

fn stdin_command(
    node: &Path,
    cwd: &Path,
    env: &EnvAllowList,
    extra: &BTreeMap<String, String>,
) -> Command {
    let mut command = Command::new(node);
    command
        .arg("--input-type=module")
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    env.apply(&mut command, extra);
    command
}

fn spawn_error(program: &Path, e: std::io::Error) -> PackError {
    let message = format!("could not start `{}`: {e}", program.display());
    PackError::internal(message.clone()).with_result(&ExecOutput::refused(message))
}
