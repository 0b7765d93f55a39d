//! Running JavaScript with `node` under the shared process rules
//! (`pack-process`): confined by the sandbox (a read-only runtime, one
//! writable folder, the pack's network and bounds), own process group,
//! whole-group kill on timeout, capped capture, environment allow-list; plus
//! a warm pool of idle `node` processes, each in its own fresh folder, for
//! calls that need no particular directory or environment. Code runs with
//! the prelude (`prelude.mjs`): every pack the caller may reach is a global
//! namespace, its calls served over a private channel by `pack_sdk::bridge`.

use std::{
    collections::BTreeMap,
    ffi::OsString,
    io,
    os::fd::{AsFd, OwnedFd},
    path::{Path, PathBuf},
    process::Stdio,
    sync::{Arc, LazyLock, OnceLock},
    time::{Duration, Instant},
};

use beneath::Dir;
use pack_process::{
    Bound, ChannelPair, Demand, EnvAllowList, Exit, Finished, Limits, Network, Policy,
    ProcessGroup, Sandbox, WarmPool,
};
use pack_sdk::{Context, PackError, Value, bridge, codes};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tempfile::TempDir;
use tokio::{
    io::{AsyncWriteExt, BufReader},
    net::UnixStream,
};
use tokio_util::sync::CancellationToken;

/// Code mode for node: loaded before the code, it reads its bindings from
/// the channel.
const PRELUDE: &str = include_str!("prelude.mjs");

/// `--import` of the prelude, as a `data:` URL: nothing on disk for the
/// sandbox to open. Encoded once: every node process takes it.
fn prelude_import() -> [OsString; 2] {
    static URL: LazyLock<String> = LazyLock::new(|| data_url(PRELUDE));
    ["--import".into(), URL.as_str().into()]
}

/// `source` as a `data:` URL node imports.
pub(crate) fn data_url(source: &str) -> String {
    let mut url = String::from("data:text/javascript,");
    for byte in source.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            url.push(byte as char);
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url
}

/// What every run returns: `exec_ts.execute`, `exec_ts.cell_execute`,
/// `exec_ts.npm_install`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecOutput {
    /// Standard output, at most `max_output_bytes` (then ends with
    /// `\n[Output truncated]`).
    pub stdout: String,
    /// Standard error, same cap. Syntax errors, uncaught exceptions with their
    /// stack, and not-found errors land here.
    pub stderr: String,
    /// The process exit code; 124 when the time limit killed it, 137 when
    /// it passed a bound of its sandbox.
    pub exit_code: i32,
    /// Wall time of the call in milliseconds.
    pub execution_time: u64,
    /// The value of the code's last expression (awaited when it is a
    /// promise), when it ends with one and the value is JSON: `null` is a
    /// value, absent is none (no last expression, or `undefined`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The value shown by `util.inspect` when it is not JSON (a function, a
    /// `Map`, a cycle) or too large.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_repr: Option<String>,
    /// What the code threw and nothing caught: the message of the failure.
    #[serde(skip)]
    pub thrown: Option<Thrown>,
    /// Whether the time limit killed it (the exit code alone cannot tell).
    #[serde(skip)]
    pub timed_out: bool,
    /// The sandbox bound it passed, if that ended it.
    #[serde(skip)]
    pub exceeded: Option<Bound>,
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
    /// `TIMEOUT` for a timeout, `LIMIT_EXCEEDED` for a passed bound,
    /// `EXECUTION_ERROR` otherwise.
    pub fn into_result(self, what: &str) -> Result<Self, PackError> {
        if let Some(bound) = self.exceeded {
            return Err(PackError::new(
                codes::LIMIT_EXCEEDED,
                format!("{what} was ended: it passed {bound}"),
            )
            .with_help(format!(
                "use less, or raise `{}` in [packs.exec_ts] config",
                bound.key()
            ))
            .with_result(&self));
        }
        match self.exit_code {
            0 => Ok(self),
            _ if self.timed_out => Err(PackError::new(
                codes::TIMEOUT,
                format!("{what} ran past its time limit and was killed (exit code 124)"),
            )
            .with_result(&self)),
            code => {
                let error = match &self.thrown {
                    Some(thrown) => PackError::new(codes::EXECUTION_ERROR, thrown.to_string())
                        .with_help(format!(
                            "{what} threw it and exited with code {code}; its stack is in `stderr`"
                        )),
                    None => PackError::new(
                        codes::EXECUTION_ERROR,
                        format!("{what} exited with code {code}; see `stderr`"),
                    ),
                };
                Err(error.with_result(&self))
            }
        }
    }

    /// Code that does not parse, so nothing ran: `INVALID_ARGUMENT` saying
    /// the first line of `diagnostics` (`SyntaxError: … (line L, column
    /// C)`), all of them in `stderr`.
    pub fn syntax_error(diagnostics: String, started: Instant) -> PackError {
        let first = diagnostics.lines().next().unwrap_or_default().to_owned();
        PackError::invalid_argument(first)
            .with_help("fix the code at that line and column; nothing ran")
            .with_result(&Self {
                execution_time: started.elapsed().as_millis() as u64,
                ..Self::refused(diagnostics)
            })
    }

    /// This run followed by `next`: both outputs in order, `next`'s end.
    pub fn followed_by(self, next: Self) -> Self {
        Self {
            stdout: self.stdout + &next.stdout,
            stderr: self.stderr + &next.stderr,
            ..next
        }
    }

    pub(crate) fn from_finished(finished: Finished, started: Instant, timeout: Duration) -> Self {
        let mut stderr = finished.stderr.text;
        let note = match finished.exit {
            Exit::TimedOut => Some(format!(
                "[timed out after {} ms: the process group was killed]",
                timeout.as_millis()
            )),
            Exit::Exceeded(bound) => Some(format!("[ended: it passed {bound}]")),
            _ => None,
        };
        if let Some(note) = note {
            if !stderr.is_empty() && !stderr.ends_with('\n') {
                stderr.push('\n');
            }
            stderr.push_str(&note);
        }
        Self {
            stdout: finished.stdout.text,
            stderr,
            exit_code: finished.exit.code(),
            execution_time: started.elapsed().as_millis() as u64,
            timed_out: finished.exit == Exit::TimedOut,
            exceeded: match finished.exit {
                Exit::Exceeded(bound) => Some(bound),
                _ => None,
            },
            result: None,
            result_repr: None,
            thrown: None,
        }
    }

    /// Show `code`'s line where the uncaught error was thrown below its
    /// stack (node would show the line as it ran, with the pack's wrapper).
    pub fn show_thrown_line(&mut self, code: &str) {
        let Some(line) = self.thrown.as_ref().and_then(|t| t.line) else {
            return;
        };
        if let Some(text) = code.lines().nth(line.saturating_sub(1)) {
            self.stderr.push_str(&format!("  {line} | {text}\n"));
        }
    }
}

/// An error the code threw and nothing caught.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Thrown {
    /// Its first line: `TypeError: x is not a function`.
    pub error: String,
    /// The code's line it was thrown at, when a frame of the code's has it.
    pub line: Option<usize>,
}

impl std::fmt::Display for Thrown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.error)?;
        match self.line {
            Some(line) => write!(f, " (line {line})"),
            None => Ok(()),
        }
    }
}

/// The prelude's answer: the value of the last expression.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Answer {
    /// Present when there is a value, `null` included.
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default)]
    result_repr: Option<String>,
    /// What the code threw, when nothing caught it (then no value): its
    /// first line, and the code's line it was thrown at.
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    line: Option<usize>,
}

impl Answer {
    /// Its value, or what was thrown, on `output`.
    pub(crate) fn fill(self, output: &mut ExecOutput) {
        if self.result.is_some() || self.result_repr.is_some() {
            output.result = self.result;
            output.result_repr = self.result_repr;
        }
        if let Some(error) = self.error {
            output.thrown = Some(Thrown {
                error,
                line: self.line,
            });
        }
    }
}

/// A field that is there, even as `null` (which `Option` alone reads as
/// absent).
fn present<'de, D: serde::Deserializer<'de>>(field: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(field).map(Some)
}

/// Where `node` and `npm` are, or why not.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The `node` binary, or the message to show on every call.
    pub node: Result<PathBuf, String>,
    /// `npm`: beside `node`, else on PATH.
    pub npm: Option<PathBuf>,
    /// What node reads and runs: the installation it belongs to.
    pub node_runtime: Vec<PathBuf>,
    /// What npm reads besides node: its own package folder.
    pub npm_runtime: Vec<PathBuf>,
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
        let node_runtime = node.as_deref().ok().and_then(install_prefix);
        let npm_runtime = npm.as_deref().and_then(install_prefix);
        Self {
            node,
            npm,
            node_runtime: node_runtime.into_iter().collect(),
            npm_runtime: npm_runtime.into_iter().collect(),
        }
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

/// The installation a program belongs to: its real file's folder, or the
/// folder above when that is a `bin` (`/usr/bin/node` is `/usr`, npm's
/// `.../node_modules/npm/bin/npm-cli.js` is `.../node_modules/npm`).
fn install_prefix(program: &Path) -> Option<PathBuf> {
    let real = program.canonicalize().ok()?;
    let dir = real.parent()?;
    match dir.file_name() {
        Some(name) if name == "bin" => dir.parent().map(Path::to_path_buf),
        _ => Some(dir.to_path_buf()),
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

/// How the pack's processes are confined.
#[derive(Clone)]
pub struct Confinement {
    /// The sandbox (or `sandbox = "off"`).
    pub sandbox: Arc<Sandbox>,
    /// The bounds of each process.
    pub limits: Limits,
    /// The network of code (`execute`, `cell_execute`).
    pub code_network: Network,
    /// What code's environment says of it (the egress proxy's address).
    pub code_env: BTreeMap<String, String>,
}

/// An idle `node --input-type=module` in its own fresh folder, the only one
/// it may write: its prelude waits for the bindings on the channel, then
/// node reads the program on stdin.
pub struct Warm {
    pub(crate) group: ProcessGroup,
    pub(crate) channel: UnixStream,
    pub(crate) dir: TempDir,
}

/// Starts confined `node` processes reading their module on stdin: the same
/// for pooled and one-off ones.
#[derive(Clone)]
pub(crate) struct Launcher {
    node: PathBuf,
    runtime: Vec<PathBuf>,
    env: EnvAllowList,
    confinement: Confinement,
}

impl Launcher {
    /// A `node` with the prelude, reading its module on stdin, in a fresh
    /// folder of its own (also its `TMPDIR`), working in `cwd` (readable,
    /// writable when its flag is set) or in that folder.
    fn start(
        &self,
        cwd: Option<(&Dir, bool)>,
        extra: &BTreeMap<String, String>,
    ) -> io::Result<Warm> {
        let [import, prelude] = prelude_import();
        self.start_node(cwd, extra, [import, prelude, "--input-type=module".into()])
    }

    /// A `node` running `args` (a module on stdin, at the end of them),
    /// confined as [`start`](Self::start) says.
    pub(crate) fn start_node(
        &self,
        cwd: Option<(&Dir, bool)>,
        extra: &BTreeMap<String, String>,
        args: [OsString; 3],
    ) -> io::Result<Warm> {
        let dir = TempDir::with_prefix("packhost-exec-ts-")?;
        let mut policy = code_policy(&self.runtime, dir.path(), &self.confinement);
        match cwd {
            Some((cwd, true)) => policy = policy.write_opened(cwd.as_fd().try_clone_to_owned()?),
            Some((cwd, false)) => policy = policy.read_opened(cwd.as_fd().try_clone_to_owned()?),
            None => {}
        }
        let mut confined = self
            .confinement
            .sandbox
            .command(&policy, &self.node)
            .map_err(io::Error::other)?;
        confined.command.current_dir(dir.path());
        if let Some((cwd, _)) = cwd {
            confined.current_dir_opened(cwd.as_fd().try_clone_to_owned()?);
        }
        let channel = ChannelPair::new()?;
        confined
            .command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        channel.pass_to(&mut confined.command);
        let mut env = tmpdir(dir.path());
        env.extend(self.confinement.code_env.clone());
        env.extend(extra.clone());
        self.env.apply(&mut confined.command, &env);
        let group = ProcessGroup::spawn(confined)?;
        Ok(Warm {
            group,
            channel: channel.into_ours()?,
            dir,
        })
    }
}

/// Code's confinement: node's runtime, `work` writable, the code's network.
fn code_policy(runtime: &[PathBuf], work: &Path, confinement: &Confinement) -> Policy {
    Policy::new(runtime.iter().cloned(), work)
        .network(confinement.code_network.clone())
        .limits(confinement.limits.clone())
}

/// `TMPDIR` inside the writable folder: `/tmp` is not writable.
pub fn tmpdir(dir: &Path) -> BTreeMap<String, String> {
    BTreeMap::from([("TMPDIR".to_owned(), dir.display().to_string())])
}

/// Runs processes for the pack.
pub struct Runner {
    /// Where node and npm are.
    pub tools: Tools,
    env: EnvAllowList,
    limit: usize,
    confinement: Confinement,
    /// Present when node was found.
    launcher: Option<Launcher>,
    demand: Demand,
    /// Made at the first call that takes from it: nothing idles before
    /// node is wanted.
    pool: OnceLock<WarmPool<Warm>>,
}

impl Runner {
    /// A runner; nothing starts before the first call.
    pub fn new(
        tools: Tools,
        env: EnvAllowList,
        limit: usize,
        demand: Demand,
        confinement: Confinement,
    ) -> Self {
        let launcher = tools.node.as_ref().ok().map(|node| Launcher {
            node: node.clone(),
            runtime: tools.node_runtime.clone(),
            env: env.clone(),
            confinement: confinement.clone(),
        });
        Self {
            tools,
            env,
            limit,
            confinement,
            launcher,
            demand,
            pool: OnceLock::new(),
        }
    }

    /// The warm pool of `launcher`'s processes (inside a tokio runtime).
    fn pool(&self, launcher: &Launcher) -> &WarmPool<Warm> {
        self.pool.get_or_init(|| {
            let launcher = launcher.clone();
            WarmPool::following(
                self.demand,
                // A node process has nothing to skip when a call waits for it.
                move |_wanted| {
                    let started = launcher.start(None, &BTreeMap::new());
                    async move { started }
                },
                |warm: &mut Warm| warm.group.is_running(),
                || {},
            )
        })
    }

    /// How code's processes start: `None` when node was not found.
    pub(crate) fn launcher(&self) -> Option<&Launcher> {
        self.launcher.as_ref()
    }

    /// The cap of each output stream, in bytes.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Kill the idle processes (host shutdown).
    pub fn shutdown(&self) {
        if let Some(pool) = self.pool.get() {
            pool.clear();
        }
    }

    /// Run the ES module `js` (fed on stdin) in a fresh folder of its own,
    /// removed afterwards, working in `cwd` (readable, and writable when its
    /// flag is set) or in that folder, with the packs `ctx` may reach.
    #[allow(clippy::too_many_arguments)]
    pub async fn run_module(
        &self,
        js: String,
        cwd: Option<(&Dir, bool)>,
        env: &BTreeMap<String, String>,
        timeout: Duration,
        started: Instant,
        ctx: &Context,
    ) -> Result<ExecOutput, PackError> {
        let node = self.tools.node()?;
        let launcher = self.launcher.as_ref().expect("node was found");
        let taken = match cwd {
            None if env.is_empty() && self.demand.max > 0 => self
                .pool(launcher)
                .take()
                .await
                .map(|(warm, replacement)| (warm, Some(replacement))),
            _ => launcher.start(cwd, env).map(|warm| (warm, None)),
        };
        // Its folder goes when the call ends; a pooled one's replacement
        // starts once this call is done with it.
        let (
            Warm {
                group,
                channel,
                dir: _dir,
            },
            _replacement,
        ) = taken.map_err(|e| spawn_error(node, e))?;
        Ok(self
            .finish(group, Some(js), Some((channel, ctx)), timeout, started)
            .await)
    }

    /// Run the code file `entry` of a notebook session in `dir` (its
    /// working folder, the only one it may write) with the session's loader
    /// and the packs `ctx` may reach.
    #[allow(clippy::too_many_arguments)]
    pub async fn run_cell(
        &self,
        loader: &str,
        entry: &Path,
        dir: &Path,
        extra: &BTreeMap<String, String>,
        timeout: Duration,
        started: Instant,
        ctx: &Context,
    ) -> Result<ExecOutput, PackError> {
        let node = self.tools.node()?;
        let mut args: Vec<OsString> = prelude_import().into();
        args.extend(["--import".into(), loader.into(), entry.into()]);
        let channel = ChannelPair::new().map_err(|e| spawn_error(node, e))?;
        let policy = self.code_policy(dir);
        let mut env = self.confinement.code_env.clone();
        env.extend(extra.clone());
        let group = self.spawn(node, &args, dir, &policy, &env, Some(&channel))?;
        let channel = channel.into_ours().map_err(|e| spawn_error(node, e))?;
        Ok(self
            .finish(group, None, Some((channel, ctx)), timeout, started)
            .await)
    }

    /// Code's confinement with `work` writable.
    pub fn code_policy(&self, work: &Path) -> Policy {
        code_policy(&self.tools.node_runtime, work, &self.confinement)
    }

    /// A tool's confinement (the type checker): its `runtime` read-only,
    /// `work` writable, no network.
    pub fn tool_policy(&self, runtime: &[PathBuf], work: &Path) -> Policy {
        Policy::new(runtime.iter().cloned(), work).limits(self.confinement.limits.clone())
    }

    /// `npm install`'s confinement: node's and npm's runtime, `session`
    /// writable, `readable` (local packages) too, and `network`.
    pub fn npm_policy(&self, session: &Path, readable: Vec<OwnedFd>, network: Network) -> Policy {
        let runtime = self
            .tools
            .node_runtime
            .iter()
            .chain(&self.tools.npm_runtime);
        let policy = Policy::new(runtime.cloned(), session)
            .network(network)
            .limits(self.confinement.limits.clone());
        readable.into_iter().fold(policy, Policy::read_opened)
    }

    /// Run `program args` in `cwd` under `policy`; the environment is the
    /// allow-list and `extra`.
    #[allow(clippy::too_many_arguments)]
    pub async fn run(
        &self,
        program: &Path,
        args: &[OsString],
        cwd: &Path,
        policy: &Policy,
        extra: &BTreeMap<String, String>,
        timeout: Duration,
        started: Instant,
    ) -> Result<ExecOutput, PackError> {
        let group = self.spawn(program, args, cwd, policy, extra, None)?;
        Ok(self.finish(group, None, None, timeout, started).await)
    }

    fn spawn(
        &self,
        program: &Path,
        args: &[OsString],
        cwd: &Path,
        policy: &Policy,
        extra: &BTreeMap<String, String>,
        channel: Option<&ChannelPair>,
    ) -> Result<ProcessGroup, PackError> {
        let mut confined = self
            .confinement
            .sandbox
            .command(policy, program)
            .map_err(|e| spawn_error(program, io::Error::other(e)))?;
        let command = &mut confined.command;
        command
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(channel) = channel {
            channel.pass_to(command);
        }
        self.env.apply(command, extra);
        ProcessGroup::spawn(confined).map_err(|e| spawn_error(program, e))
    }

    /// Wait for the process to end, serving its tool calls when it has a
    /// channel; its answer is the result.
    async fn finish(
        &self,
        mut group: ProcessGroup,
        stdin: Option<String>,
        channel: Option<(UnixStream, &Context)>,
        timeout: Duration,
        started: Instant,
    ) -> ExecOutput {
        let answered = stdin.as_deref().and_then(crate::instrument::answered_at);
        if let (Some(code), Some(mut pipe)) = (stdin, group.take_stdin()) {
            // A separate task: a child that never reads cannot block the call,
            // and the write fails (EPIPE) once the group is killed.
            tokio::spawn(async move {
                let _ = pipe.write_all(code.as_bytes()).await;
            });
        }
        let Some((channel, ctx)) = channel else {
            let finished = group.finish(timeout, self.limit).await;
            return ExecOutput::from_finished(finished, started, timeout);
        };
        let (reader, mut writer) = channel.into_split();
        let setup = json!({
            "max_result_bytes": self.limit,
            "answered": answered.map(|(line, column, width)| json!({"line": line, "column": column, "width": width})),
        });
        let bindings =
            bridge::object_with(&setup, "bindings", ctx.shared_catalog().bindings()) + "\n";
        let gone = CancellationToken::new();
        // Beside the wait, so the time limit holds while node reads them.
        let serve = async {
            // A process gone before reading them says so in its output.
            let _ = writer.write_all(bindings.as_bytes()).await;
            let reader = BufReader::new(reader);
            bridge::serve(reader, writer, ctx, &gone, bridge::Until::Gone).await
        };
        let (answer, finished) = tokio::join!(serve, async {
            let finished = group.finish(timeout, self.limit).await;
            gone.cancel();
            finished
        });
        let mut output = ExecOutput::from_finished(finished, started, timeout);
        if let Some(answer) = answer.and_then(|line| serde_json::from_str::<Answer>(&line).ok()) {
            answer.fill(&mut output);
        }
        output
    }
}

fn spawn_error(program: &Path, e: std::io::Error) -> PackError {
    let message = format!("could not start `{}`: {e}", program.display());
    PackError::internal(message.clone()).with_result(&ExecOutput::refused(message))
}

#[cfg(test)]
mod tests {
    use pack_sdk::codes;

    use super::*;

    #[test]
    fn a_missing_node_names_what_to_install() {
        let tools = Tools::find(std::path::Path::new("node-that-is-not-installed"));
        let err = tools.node().unwrap_err();
        assert_eq!(err.code(), codes::NOT_FOUND);
        assert!(err.message().contains("install Node.js"), "{err}");
        assert!(
            err.message().contains("node-that-is-not-installed"),
            "{err}"
        );
    }
}
