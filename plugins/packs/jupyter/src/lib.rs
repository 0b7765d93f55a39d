//! `jupyter`: persistent Python kernels, state kept between calls.
//!
//! Two backends behind one trait ([`kernel::Backend`]): `local` (default)
//! launches `ipykernel` itself, confined by the sandbox to its session's
//! folder with bounded memory and processes and no network but its own
//! listening ports, and speaks the Jupyter messaging protocol over ZeroMQ on
//! TCP on loopback; `server` drives kernels on a Jupyter Server (REST +
//! websocket). Sessions are owned by the pack and each belongs to the caller
//! that created it (the SDK's [`pack_sdk::owned::Table`]: anyone else gets
//! `SESSION_NOT_FOUND`, as for an unknown id; `share = "org"` lets the
//! organisation's users share them): closed after an idle TTL, limited in
//! number per owner and in all, and all shut down when the host exits.

mod conn;
mod execute;
mod http;
mod kernel;
mod local;
mod server;
mod sessions;

use std::{
    path::PathBuf,
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant, UNIX_EPOCH},
};

use pack_process::{Bound, EnvAllowList, Mode, Sandbox};
use pack_sdk::{
    Content, Context, Empty, Function, LogLevel, PackDef, PackError, Value, codes,
    owned::{self, Share, Table},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    execute::{Collected, Image, Limits, Outcome, Output},
    kernel::Backend,
    sessions::{SESSIONS, Session},
};

/// The largest `timeout` of one execution, in seconds.
const MAX_TIMEOUT_SECS: f64 = 300.0;

/// Where kernels run.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// ipykernel launched by the pack, over ZeroMQ.
    #[default]
    Local,
    /// A Jupyter Server (`url`, `token`).
    Server,
}

/// `[packs.jupyter] config`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `local` (default) or `server`.
    #[serde(default)]
    pub backend: BackendKind,
    /// local: the Python that has ipykernel; default `python3` on PATH,
    /// resolved once to the real interpreter. A leading `~` is the home
    /// directory.
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub python: Option<PathBuf>,
    /// server: the Jupyter Server, e.g. `http://127.0.0.1:8888`.
    #[serde(default)]
    pub url: Option<String>,
    /// server: its token.
    #[serde(default)]
    pub token: Option<String>,
    /// Sessions idle this long are closed (default 30 min).
    #[serde(default = "default_ttl")]
    pub session_ttl_secs: u64,
    /// At most this many sessions at once on the host (default 8).
    #[serde(default = "default_max_sessions")]
    pub max_sessions: usize,
    /// At most this many sessions of one owner: a user, or with
    /// `share = "org"` an organisation (default: `max_sessions`).
    #[serde(default)]
    pub max_sessions_per_owner: Option<usize>,
    /// Who may use a session besides the user who created it: `user` (no
    /// one, the default) or `org` (every user of the organisation).
    #[serde(default)]
    pub share: Share,
    /// Images larger than this (after base64) are dropped with a note
    /// (default 1 MiB).
    #[serde(default = "default_max_image")]
    pub max_image_bytes: usize,
    /// Cap of stdout and of stderr of one execution, each (default 16 MiB).
    #[serde(default = "default_max_output")]
    pub max_output_bytes: usize,
    /// local: host environment variables the kernel sees (default `PATH`,
    /// `HOME`, `LANG`).
    #[serde(default = "default_env_allow")]
    pub env_allow: Vec<String>,
    /// local: how long a kernel may take to start (default 60 s).
    #[serde(default = "default_startup")]
    pub startup_timeout_secs: u64,
    /// local: `"on"` (default): each kernel is confined to its session's
    /// own folder (also its `HOME` and `TMPDIR`) with the Python
    /// installation read-only, no network but its own ports on loopback,
    /// and `limits`; refused where the machine cannot confine it. `"off"`:
    /// kernels run with every right of the host's user (logged as a
    /// warning at start).
    #[serde(default)]
    pub sandbox: Mode,
    /// local: the bounds of each kernel over its whole life (`memory_mb`,
    /// `processes`, `cpu_seconds`, `file_size_mb`, `open_files`). A kernel
    /// ended for passing one fails the running execution with
    /// `LIMIT_EXCEEDED` naming it; the session is then dead until restarted.
    #[serde(default)]
    pub limits: pack_process::Limits,
}

fn default_ttl() -> u64 {
    30 * 60
}
fn default_max_sessions() -> usize {
    8
}
fn default_max_image() -> usize {
    1 << 20
}
fn default_max_output() -> usize {
    16 << 20
}
fn default_env_allow() -> Vec<String> {
    ["PATH", "HOME", "LANG"].map(String::from).to_vec()
}
fn default_startup() -> u64 {
    60
}

/// Arguments of `jupyter.session_create`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateArgs {
    /// Make it a notebook session for this path (its kernel id then differs
    /// from the session id).
    #[serde(default)]
    pub notebook_path: Option<String>,
    /// The kernel spec; the local backend runs `python3` only.
    #[serde(default = "default_kernel_name")]
    pub kernel_name: String,
}

fn default_kernel_name() -> String {
    "python3".to_owned()
}

/// A new session.
#[derive(Serialize, JsonSchema)]
pub struct Created {
    /// Pass it to the other functions.
    pub session_id: String,
    /// The kernel's id (also accepted where a session id is).
    pub kernel_id: String,
    /// The kernel spec.
    pub kernel_name: String,
    /// `local` or `server`.
    pub backend: String,
    /// Milliseconds from the request to a kernel that answers.
    pub startup_ms: f64,
}

/// Arguments of `jupyter.execute_code`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteArgs {
    /// A session id (or a kernel id).
    pub session_id: String,
    /// Python source; state stays in the kernel between calls. Empty code
    /// does nothing.
    pub code: String,
    /// Time limit in seconds, more than 0 and at most 300. Past it the kernel
    /// is interrupted (state kept), or restarted if it does not stop.
    #[serde(default = "default_timeout")]
    #[schemars(range(max = 300.0))]
    pub timeout: f64,
}

fn default_timeout() -> f64 {
    30.0
}

/// An execution, finished or failed: one shape, so that a failure's
/// structured content fits the function's output schema as MCP clients
/// check it.
#[derive(Serialize, JsonSchema)]
pub struct ExecuteOutput {
    /// True when the code finished; false on a failure (an error result,
    /// with `error_type` and `error_message`).
    pub success: bool,
    /// What the code printed.
    pub stdout: String,
    /// What the code wrote to stderr (warnings too).
    pub stderr: String,
    /// The displayed value of the last expression (`text/plain`), if any.
    pub result: Option<String>,
    /// The value as JSON, when the kernel sent `application/json`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_json: Option<Value>,
    /// `display()`ed outputs other than images, as text.
    pub outputs: Vec<Output>,
    /// PNG, JPEG and SVG images displayed or returned (also sent as MCP image
    /// content).
    pub images: Vec<Image>,
    /// Said when something was left out (an image over the size cap).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The kernel's execution counter.
    pub execution_count: Option<u64>,
    /// Failure: the exception class (`ZeroDivisionError`), `TimeoutError`,
    /// `KernelDied`, `LimitExceeded`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// Failure: the exception's message, or what happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Failure: the traceback, without colour codes (raised exceptions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
    /// Wall time of the call.
    pub execution_time_ms: f64,
}

impl ExecuteOutput {
    /// What the code did before it failed with `error_type`.
    fn failed(error_type: &str, error_message: String, c: Collected, elapsed_ms: f64) -> Self {
        Self {
            success: false,
            stdout: c.stdout,
            stderr: c.stderr,
            result: None,
            result_json: None,
            outputs: c.outputs,
            images: c.images,
            notes: c.notes,
            execution_count: c.execution_count,
            error_type: Some(error_type.to_owned()),
            error_message: Some(error_message),
            traceback: None,
            execution_time_ms: elapsed_ms,
        }
    }
}

/// Arguments naming one session.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionArgs {
    /// A session id (or a kernel id).
    pub session_id: String,
}

/// One open session.
#[derive(Serialize, JsonSchema)]
pub struct SessionInfo {
    pub session_id: String,
    pub kernel_id: String,
    pub kernel_name: String,
    pub notebook_path: Option<String>,
    /// `idle`, `busy` or `dead`.
    pub state: String,
    /// Seconds since the Unix epoch.
    pub created: u64,
    /// Seconds since the last call on it.
    pub idle_secs: u64,
}

/// `jupyter.session_list`: the caller's own sessions.
#[derive(Serialize, JsonSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionInfo>,
    /// `local` or `server`.
    pub backend: String,
    /// `max_sessions`: the most on the whole host.
    pub max_sessions: usize,
    /// `max_sessions_per_owner`: the most the caller (or with `share =
    /// "org"` its organisation) may have.
    pub max_sessions_per_owner: usize,
}

/// What an action on a session did.
#[derive(Serialize, JsonSchema)]
pub struct Done {
    pub session_id: String,
    pub kernel_id: String,
    /// `closed`, `interrupted` or `restarted`.
    pub action: String,
}

/// The pack's state.
pub struct Jupyter {
    config: Config,
    backend: Arc<dyn Backend>,
    sessions: Arc<Table<Session>>,
}

impl Jupyter {
    fn new(config: Config, host: &pack_sdk::Host) -> Result<Self, PackError> {
        let backend: Arc<dyn Backend> = match config.backend {
            BackendKind::Local => {
                let (sandbox, warning) =
                    Sandbox::configure(config.sandbox, &config.limits, "Jupyter kernels run")
                        .map_err(|e| {
                            PackError::invalid_argument(format!("config of pack `jupyter`: {e}"))
                        })?;
                if let Some(warning) = warning {
                    host.log(LogLevel::Warn, &warning);
                }
                let settings = local::Settings {
                    env: EnvAllowList::new(config.env_allow.clone()),
                    // One folder per kernel inside (removed with it).
                    root: std::env::temp_dir().join("packhost-jupyter"),
                    startup_timeout: Duration::from_secs(config.startup_timeout_secs.max(1)),
                    sandbox,
                    limits: config.limits.clone(),
                };
                Arc::new(local::LocalBackend::new(config.python.clone(), settings))
            }
            BackendKind::Server => {
                let url = config.url.as_deref().ok_or_else(|| {
                    PackError::invalid_argument(
                        "config of pack `jupyter`: `backend = \"server\"` needs `url` (e.g. \"http://127.0.0.1:8888\")",
                    )
                })?;
                let backend =
                    server::ServerBackend::new(url, config.token.as_deref().unwrap_or(""))
                        .map_err(|e| {
                            PackError::invalid_argument(format!("config of pack `jupyter`: {e}"))
                        })?;
                Arc::new(backend)
            }
        };
        let limits = owned::Limits {
            max: config.max_sessions,
            per_owner: config.max_sessions_per_owner.unwrap_or(config.max_sessions),
        };
        let sessions = Table::<Session>::new(SESSIONS, config.share, limits).map_err(|e| {
            PackError::invalid_argument(format!("config of pack `jupyter`: {}", e.message()))
        })?;
        let sessions = Arc::new(sessions);
        // Idle past the TTL: closed.
        sessions.spawn_reaper(
            Duration::from_secs(config.session_ttl_secs.max(1)),
            |session| async move { session.kernel.shutdown().await },
        );
        Ok(Self {
            config,
            backend,
            sessions,
        })
    }

    fn backend_name(&self) -> String {
        match self.config.backend {
            BackendKind::Local => "local",
            BackendKind::Server => "server",
        }
        .to_owned()
    }
}

/// Start a kernel as a session owned by the caller.
async fn session_create(
    state: Arc<Jupyter>,
    args: CreateArgs,
    ctx: Context,
) -> Result<Created, PackError> {
    let backend = &state.backend;
    let slot = state.sessions.reserve(&ctx.owner())?;
    let started = Instant::now();
    let kernel = backend
        .start(&args.kernel_name, args.notebook_path.as_deref())
        .await?;
    // A kernel id names the session too.
    let aliases = if kernel.kernel_id == kernel.session_id {
        Vec::new()
    } else {
        vec![kernel.kernel_id.clone()]
    };
    let session = slot.insert(
        kernel.session_id.clone(),
        aliases,
        Session::new(
            kernel.session_id,
            kernel.kernel_id,
            args.kernel_name,
            args.notebook_path,
            kernel.kernel,
        ),
    );
    Ok(Created {
        session_id: session.session_id.clone(),
        kernel_id: session.kernel_id.clone(),
        kernel_name: session.kernel_name.clone(),
        backend: backend.name().to_owned(),
        startup_ms: started.elapsed().as_secs_f64() * 1000.0,
    })
}

async fn execute_code(
    state: Arc<Jupyter>,
    args: ExecuteArgs,
    ctx: Context,
) -> Result<Content<ExecuteOutput>, PackError> {
    if !(args.timeout > 0.0 && args.timeout <= MAX_TIMEOUT_SECS) {
        return Err(PackError::invalid_argument(format!(
            "`timeout` must be more than 0 and at most {MAX_TIMEOUT_SECS} seconds, got {}",
            args.timeout
        )));
    }
    // Held until the end: a session in use never expires.
    let session = state.sessions.get(&ctx.owner(), &args.session_id)?;
    let started = Instant::now();
    let elapsed_ms = || started.elapsed().as_secs_f64() * 1000.0;
    if let Some(reason) = session.dead_reason() {
        return Err(kernel_died(
            &session,
            &reason,
            Collected::default(),
            elapsed_ms(),
        ));
    }
    let _running = session.exec_lock.lock().await;
    session.busy.store(true, Ordering::SeqCst);
    let limits = Limits {
        max_image_bytes: state.config.max_image_bytes,
        max_output_bytes: state.config.max_output_bytes,
    };
    let timeout = Duration::from_secs_f64(args.timeout);
    let outcome = execute::execute(&session.kernel, &args.code, timeout, limits, &ctx).await;
    session.busy.store(false, Ordering::SeqCst);
    match outcome {
        Outcome::Done(mut c) => match c.error.take() {
            None => Ok(with_images(ExecuteOutput {
                success: true,
                stdout: c.stdout,
                stderr: c.stderr,
                result: c.result,
                result_json: c.result_json,
                outputs: c.outputs,
                images: c.images,
                notes: c.notes,
                execution_count: c.execution_count,
                error_type: None,
                error_message: None,
                traceback: None,
                execution_time_ms: elapsed_ms(),
            })),
            Some((ename, evalue, traceback)) => {
                let traceback = execute::strip_ansi(&traceback.join("\n"));
                let message = format!("{ename}: {evalue}\n{traceback}");
                let failed = ExecuteOutput {
                    traceback: Some(traceback),
                    ..ExecuteOutput::failed(&ename, evalue, c, elapsed_ms())
                };
                Err(PackError::new(codes::EXECUTION_ERROR, message).with_result(&failed))
            }
        },
        Outcome::TimedOut {
            collected,
            kept,
            restart_error,
        } => {
            let limit = args.timeout;
            let (message, help) = match (kept, restart_error) {
                (true, _) => (
                    format!(
                        "the code ran past its `timeout` of {limit} s; the kernel was interrupted and the session's state is kept"
                    ),
                    "pass a larger `timeout` (at most 300), or make the code finish sooner",
                ),
                (false, None) => (
                    format!(
                        "the code ran past its `timeout` of {limit} s and did not stop when interrupted; the kernel was restarted: its state is lost"
                    ),
                    "pass a larger `timeout`, or make the code check for KeyboardInterrupt",
                ),
                (false, Some(e)) => {
                    session.set_dead(Some(format!("restart after a timeout failed: {e}")));
                    (
                        format!(
                            "the code ran past its `timeout` of {limit} s, did not stop when interrupted, and the restart failed: {e}"
                        ),
                        "call jupyter.restart(session_id), or close the session",
                    )
                }
            };
            Err(PackError::new(codes::TIMEOUT, &message)
                .with_help(help)
                .with_result(&ExecuteOutput::failed(
                    "TimeoutError",
                    message.clone(),
                    collected,
                    elapsed_ms(),
                )))
        }
        Outcome::Died { collected, reason } => {
            session.set_dead(Some(reason.clone()));
            match session.kernel.exceeded().await {
                Some(bound) => Err(limit_exceeded(&session, bound, collected, elapsed_ms())),
                None => Err(kernel_died(&session, &reason, collected, elapsed_ms())),
            }
        }
    }
}

/// The images of `output` also as MCP image blocks, and in its text only as
/// a mention: models should not read base64.
fn with_images(output: ExecuteOutput) -> Content<ExecuteOutput> {
    if output.images.is_empty() {
        return Content::new(output);
    }
    let mut shown = serde_json::to_value(&output).unwrap_or_default();
    for image in shown["images"].as_array_mut().into_iter().flatten() {
        if let Some(data) = image.get_mut("data_base64") {
            let size = data.as_str().map_or(0, str::len);
            *data = Value::String(format!("<{size} bytes of base64, sent as an image block>"));
        }
    }
    let text = serde_json::to_string_pretty(&shown).unwrap_or_default();
    let images: Vec<(String, String)> = output
        .images
        .iter()
        .map(|image| (image.mime.clone(), image.data_base64.clone()))
        .collect();
    images
        .into_iter()
        .fold(Content::new(output).text(text), |content, (mime, data)| {
            content.image(&mime, data)
        })
}

/// The kernel was ended by its sandbox for passing `bound`.
fn limit_exceeded(session: &Session, bound: Bound, c: Collected, elapsed_ms: f64) -> PackError {
    let message = format!(
        "the kernel of session `{}` was ended: the code passed {bound}; its state is lost and the session is dead until jupyter.restart(session_id)",
        session.session_id
    );
    PackError::new(codes::LIMIT_EXCEEDED, &message)
        .with_help(format!(
            "use less, or raise `{}` in [packs.jupyter] config; then call jupyter.restart(session_id)",
            bound.key()
        ))
        .with_result(&ExecuteOutput::failed(
            "LimitExceeded",
            message.clone(),
            c,
            elapsed_ms,
        ))
}

fn kernel_died(session: &Session, reason: &str, c: Collected, elapsed_ms: f64) -> PackError {
    let message = format!(
        "the kernel of session `{}` died ({reason}); the session is dead until jupyter.restart(session_id)",
        session.session_id
    );
    PackError::new(codes::EXECUTION_ERROR, &message)
        .with_help("call jupyter.restart(session_id) (its state is lost), or jupyter.session_close(session_id)")
        .with_result(&ExecuteOutput::failed(
            "KernelDied",
            message.clone(),
            c,
            elapsed_ms,
        ))
}

/// The caller's own sessions.
async fn session_list(
    state: Arc<Jupyter>,
    _: Empty,
    ctx: Context,
) -> Result<SessionList, PackError> {
    let sessions = state
        .sessions
        .list(&ctx.owner())
        .into_iter()
        .map(|s| {
            let dead = s.dead_reason().is_some() || s.kernel.conn().dead_reason().is_some();
            SessionInfo {
                session_id: s.session_id.clone(),
                kernel_id: s.kernel_id.clone(),
                kernel_name: s.kernel_name.clone(),
                notebook_path: s.notebook_path.clone(),
                state: if dead {
                    "dead"
                } else if s.busy.load(Ordering::SeqCst) {
                    "busy"
                } else {
                    "idle"
                }
                .to_owned(),
                created: s
                    .created
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0),
                idle_secs: s.idle_for().as_secs(),
            }
        })
        .collect();
    let limits = state.sessions.limits();
    Ok(SessionList {
        sessions,
        backend: state.backend_name(),
        max_sessions: limits.max,
        max_sessions_per_owner: limits.per_owner,
    })
}

async fn session_close(
    state: Arc<Jupyter>,
    args: SessionArgs,
    ctx: Context,
) -> Result<Done, PackError> {
    let session = state.sessions.take(&ctx.owner(), &args.session_id)?;
    session.kernel.shutdown().await;
    Ok(Done {
        session_id: session.session_id.clone(),
        kernel_id: session.kernel_id.clone(),
        action: "closed".to_owned(),
    })
}

async fn interrupt(
    state: Arc<Jupyter>,
    args: SessionArgs,
    ctx: Context,
) -> Result<Done, PackError> {
    let session = state.sessions.get(&ctx.owner(), &args.session_id)?;
    session.kernel.interrupt().await.map_err(|e| {
        PackError::new(
            codes::UPSTREAM_ERROR,
            format!(
                "cannot interrupt the kernel of session `{}`: {e}",
                session.session_id
            ),
        )
    })?;
    Ok(Done {
        session_id: session.session_id.clone(),
        kernel_id: session.kernel_id.clone(),
        action: "interrupted".to_owned(),
    })
}

async fn restart(state: Arc<Jupyter>, args: SessionArgs, ctx: Context) -> Result<Done, PackError> {
    let session = state.sessions.get(&ctx.owner(), &args.session_id)?;
    session.kernel.restart().await.map_err(|e| {
        session.set_dead(Some(format!("the restart failed: {e}")));
        PackError::new(
            codes::UPSTREAM_ERROR,
            format!(
                "cannot restart the kernel of session `{}`: {e}",
                session.session_id
            ),
        )
        .with_help("close the session and create a new one")
    })?;
    session.set_dead(None);
    Ok(Done {
        session_id: session.session_id.clone(),
        kernel_id: session.kernel_id.clone(),
        action: "restarted".to_owned(),
    })
}

fn pack() -> PackDef<Jupyter> {
    PackDef::new(
        "jupyter",
        "Persistent Python kernels (Jupyter): run code step by step with state kept between calls; stdout, results, plots as images, precise errors",
        |config: Config, host| Jupyter::new(config, &host),
    )
    // No examples: every call but `session_create` needs a session id that
    // another call made. Code can do anything its confinement allows: as
    // unsafe as it gets. The rest only touch the caller's own sessions.
    .function_with(
        Function::new(
            "session_create",
            "Start a kernel (a session). State persists across execute_code calls until the session is closed, restarted, or idle past the TTL.",
            session_create,
        )
        .title("Start a kernel session")
        .additive()
        .closed_world(),
    )
    .function_with(
        Function::new(
            "execute_code",
            "Run code in a session's kernel: stdout, stderr, the last expression's displayed value, images (PNG/JPEG/SVG), or the exception with its traceback. `timeout` in seconds (default 30, at most 300).",
            execute_code,
        )
        .title("Run code in a kernel")
        .destructive()
        .open_world(),
    )
    .function_with(
        Function::new("session_list", "Your open sessions and their state (idle, busy, dead).", session_list)
            .title("List kernel sessions")
            .read_only()
            .closed_world(),
    )
    .function_with(
        Function::new("session_close", "Shut a session's kernel down.", session_close)
            .title("Close a kernel session")
            .destructive()
            .idempotent()
            .closed_world(),
    )
    .function_with(
        Function::new("interrupt", "Interrupt what a session's kernel is running (KeyboardInterrupt); state is kept.", interrupt)
            .title("Interrupt a kernel")
            .destructive()
            .idempotent()
            .closed_world(),
    )
    .function_with(
        Function::new("restart", "Restart a session's kernel: its state is lost, a dead session comes back.", restart)
            .title("Restart a kernel")
            .destructive()
            .closed_world(),
    )
    .on_shutdown(|state: Arc<Jupyter>| async move {
        let sessions = state.sessions.drain();
        futures::future::join_all(sessions.iter().map(|s| s.kernel.shutdown())).await;
    })
}

pack_sdk::export_pack!(pack);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_tilde_in_the_python_path_is_the_home_directory() {
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        let config: Config =
            serde_json::from_value(serde_json::json!({"python": "~/venv/bin/python"})).unwrap();
        assert_eq!(config.python, Some(home.join("venv/bin/python")));
        let config: Config =
            serde_json::from_value(serde_json::json!({"python": "python3"})).unwrap();
        assert_eq!(config.python, Some(PathBuf::from("python3")));
    }
}

#[cfg(test)]
mod result_schemas {
    use pack_sdk::{
        json,
        testing::{check_failure, check_manifest, check_result},
    };

    use super::*;

    fn finished(c: Collected) -> ExecuteOutput {
        ExecuteOutput {
            success: true,
            result: c.result.clone(),
            result_json: c.result_json.clone(),
            error_type: None,
            error_message: None,
            ..ExecuteOutput::failed("", String::new(), c, 2.0)
        }
    }

    /// With and without the optional fields (`notes`, `result_json`, image
    /// sizes), and failures, which keep the same shape.
    #[test]
    fn results_and_failures_fit_the_schemas() {
        check_manifest(pack).unwrap();
        check_result(&finished(Collected::default())).unwrap();
        let mut rich = Collected::default();
        rich.result = Some("43".into());
        rich.result_json = Some(json!({"a": [1, null]}));
        rich.notes.push("an image was left out".into());
        rich.execution_count = Some(3);
        rich.images.push(execute::Image {
            mime: "image/png".into(),
            data_base64: "AA==".into(),
            width: None,
            height: Some(1),
        });
        check_result(&finished(rich)).unwrap();
        let died = kernel_died_result(Collected::default());
        check_failure::<ExecuteOutput>(&died).unwrap();
        let raised = ExecuteOutput {
            traceback: Some("Traceback".into()),
            ..ExecuteOutput::failed("NameError", "x".into(), Collected::default(), 1.0)
        };
        check_result(&raised).unwrap();
    }

    fn kernel_died_result(c: Collected) -> PackError {
        PackError::new(codes::EXECUTION_ERROR, "died").with_result(&ExecuteOutput::failed(
            "KernelDied",
            "died".into(),
            c,
            1.0,
        ))
    }
}

/// Sessions belong to their creator: the pack called in-process as callers
/// of two organisations, with real kernels (the Python of
/// `PACKHOST_TEST_PYTHON`, which `./dev test` sets, else its venv).
#[cfg(test)]
mod ownership {
    use pack_sdk::{
        json,
        owned::Owner,
        testing::{
            PackTest,
            callers::{ada, bob, eve},
        },
    };

    use super::*;

    fn python() -> String {
        if let Ok(python) = std::env::var("PACKHOST_TEST_PYTHON") {
            return python;
        }
        let venv = PathBuf::from(std::env::var("HOME").unwrap_or_default())
            .join(".cache/packhost-venv/bin/python");
        assert!(
            venv.exists(),
            "no Python with ipykernel: run `./dev test`, or set PACKHOST_TEST_PYTHON"
        );
        venv.display().to_string()
    }

    fn start(extra: Value) -> PackTest {
        // The test binary is not the host, whose binary is the sandbox's helper.
        let mut config = json!({ "python": python(), "sandbox": "off" });
        config
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        PackTest::build(pack).config(config).start().unwrap()
    }

    async fn create(pack: &PackTest, owner: &Owner, args: Value) -> (String, String) {
        let out = pack.call(owner, "session_create", args).await.unwrap();
        let id = |key: &str| out[key].as_str().unwrap().to_owned();
        (id("session_id"), id("kernel_id"))
    }

    async fn listed(pack: &PackTest, owner: &Owner) -> Vec<String> {
        let out = pack.call(owner, "session_list", json!({})).await.unwrap();
        let sessions = out["sessions"].as_array().unwrap().iter();
        sessions
            .map(|s| s["session_id"].as_str().unwrap().to_owned())
            .collect()
    }

    #[tokio::test]
    async fn another_caller_gets_what_an_unknown_id_gets() {
        let pack = start(json!({}));
        let (mine, _) = create(&pack, &ada(), json!({})).await;
        let (notebook, kernel) = create(&pack, &ada(), json!({"notebook_path": "a.ipynb"})).await;
        let (theirs, _) = create(&pack, &eve(), json!({})).await;
        let run = |id: &str| json!({"session_id": id, "code": "secret = 42; secret"});
        assert_eq!(
            pack.call(&ada(), "execute_code", run(&mine)).await.unwrap()["result"],
            "42"
        );
        let mut own = vec![mine.clone(), notebook.clone()];
        own.sort();
        assert_eq!(listed(&pack, &ada()).await, own);
        assert_eq!(listed(&pack, &eve()).await, [theirs.as_str()]);
        assert!(listed(&pack, &bob()).await.is_empty(), "share = user");
        let unknown = pack
            .call(&eve(), "execute_code", run("no-such-id"))
            .await
            .unwrap_err();
        assert_eq!(
            unknown.message(),
            format!("no session `no-such-id` (your sessions: {theirs})")
        );
        // Another organisation, by session and by kernel id, and another
        // user of ada's organisation: every function answers as for an id
        // nobody has, and lists none of ada's ids.
        for (caller, id) in [(eve(), &mine), (eve(), &kernel), (bob(), &notebook)] {
            let expected = pack
                .call(&caller, "execute_code", run("no-such-id"))
                .await
                .unwrap_err();
            for (function, args) in [
                ("execute_code", run(id)),
                ("interrupt", json!({"session_id": id})),
                ("restart", json!({"session_id": id})),
                ("session_close", json!({"session_id": id})),
            ] {
                let err = pack.call(&caller, function, args).await.unwrap_err();
                assert_eq!(err.code(), codes::SESSION_NOT_FOUND, "{function}: {err}");
                let message = err.message().replace(id.as_str(), "no-such-id");
                assert_eq!(message, expected.message(), "{function}");
                for own in [&mine, &notebook, &kernel] {
                    assert!(!message.contains(own.as_str()), "{function}: {err}");
                }
            }
        }
        // Nothing of ada's was touched.
        let out = pack.call(&ada(), "execute_code", run(&mine)).await.unwrap();
        assert_eq!(out["execution_count"], 2, "ada's kernel ran nothing else");
        assert_eq!(listed(&pack, &ada()).await, own);
        pack.shutdown().await;
    }

    #[tokio::test]
    async fn share_org_lets_the_organisation_share_and_nobody_else() {
        let pack = start(json!({"share": "org"}));
        let (session, _) = create(&pack, &ada(), json!({})).await;
        let run = |code: &str| json!({"session_id": session, "code": code});
        pack.call(&ada(), "execute_code", run("x = 7"))
            .await
            .unwrap();
        let out = pack.call(&bob(), "execute_code", run("x")).await.unwrap();
        assert_eq!(out["result"], "7");
        assert_eq!(listed(&pack, &bob()).await, [session.as_str()]);
        let err = pack
            .call(&eve(), "execute_code", run("x"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), codes::SESSION_NOT_FOUND);
        assert!(listed(&pack, &eve()).await.is_empty());
        pack.shutdown().await;
    }

    #[tokio::test]
    async fn limits_count_per_owner_and_for_the_host() {
        let pack = start(json!({"max_sessions": 2, "max_sessions_per_owner": 1}));
        let (mine, _) = create(&pack, &ada(), json!({})).await;
        let err = pack
            .call(&ada(), "session_create", json!({}))
            .await
            .unwrap_err();
        assert_eq!(err.code(), codes::LIMIT_EXCEEDED);
        assert_eq!(
            err.message(),
            format!(
                "you have 1 session(s) open, the most one owner may have is 1 \
                 (`max_sessions_per_owner`): {mine}"
            )
        );
        let (theirs, _) = create(&pack, &eve(), json!({})).await;
        // The host is full: bob hears so, and nothing of ada's or eve's.
        let err = pack
            .call(&bob(), "session_create", json!({}))
            .await
            .unwrap_err();
        assert_eq!(err.code(), codes::LIMIT_EXCEEDED);
        assert_eq!(
            err.message(),
            "this host has reached its limit of 2 open sessions (`max_sessions`)"
        );
        pack.call(&eve(), "session_close", json!({"session_id": theirs}))
            .await
            .unwrap();
        create(&pack, &bob(), json!({})).await;
        let list = pack.call(&bob(), "session_list", json!({})).await.unwrap();
        assert_eq!(
            (
                list["max_sessions"].clone(),
                list["max_sessions_per_owner"].clone()
            ),
            (json!(2), json!(1))
        );
        pack.shutdown().await;
    }
}
