//! `exec_py`: run Python and get back exactly what happened.
//!
//! Every call runs in a fresh interpreter (forked from a warm zygote ahead
//! of demand, so no call pays the start-up), confined by the sandbox
//! to its own folder with no network and bounded memory and processes, in
//! its own process group, with an allow-listed environment, capped output,
//! and a time limit that kills the whole group. The value of the last expression (or of a top-level
//! `return`) comes back as JSON. With `bridge` on, every pack the caller can
//! reach is a Python object in the code (`proj.list()`, aliases too), and its
//! calls go back through the host over a private socket.

mod call;
mod interpreter;
mod zygote;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use beneath::{Dir, Links};
use pack_process::{Python, WarmPool};
use pack_sdk::{Context, Function, PackDef, PackError, Value, config::Children, json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::sync::OnceLock;

use tokio::sync::OnceCell;

use crate::{
    interpreter::{Interpreter, Launcher, Settings},
    zygote::ForkServer,
};

/// `[packs.exec_py] config`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The Python interpreter; default `python3` on PATH, resolved once to the
    /// real binary. A leading `~` is the home directory.
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub python: Option<PathBuf>,
    /// Interpreters forked ahead of demand, each already confined to its
    /// own folder and cgroup.
    #[serde(default = "default_pool_size")]
    pub pool_size: usize,
    /// `env_allow` (`TMPDIR` is set besides, to the call's own temporary
    /// folder), `sandbox` and `limits` of each interpreter: confined to its
    /// folder, no network, bounded.
    #[serde(flatten)]
    pub children: Children,
    /// Cap of stdout, of stderr and of the result, each, in bytes.
    #[serde(default = "default_max_output")]
    pub max_output_bytes: usize,
    /// Folders the `cwd` argument may point into; empty: `cwd` is refused. A
    /// leading `~` is the home directory.
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub cwd_roots: Vec<PathBuf>,
    /// Whether code may write in a `cwd` it is given (it always may in its
    /// own fresh folder).
    #[serde(default)]
    pub cwd_writable: bool,
}

fn default_pool_size() -> usize {
    2
}

fn default_max_output() -> usize {
    1 << 20
}

/// Arguments of `exec_py.run`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// Python source. Indented blocks are dedented; the value of the last
    /// expression, or of a top-level `return`, is the result.
    pub code: String,
    /// Time limit in milliseconds; past it the whole process group is killed.
    #[serde(default = "default_timeout_ms")]
    #[schemars(range(min = 1))]
    pub timeout_ms: u64,
    /// Make every pack callable from the code (`proj.list()`, aliases).
    #[serde(default = "yes")]
    pub bridge: bool,
    /// Working directory (must be inside `cwd_roots`); default: a fresh
    /// temporary folder removed after the call.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}

fn default_timeout_ms() -> u64 {
    30_000
}

fn yes() -> bool {
    true
}

/// A run, finished or failed: one shape, so that a failure's structured
/// content fits the function's output schema as MCP clients check it.
#[derive(Serialize, JsonSchema)]
pub struct RunOutput {
    /// True when the code finished; false on a failure (an error result,
    /// with `error_type` and `error_message`).
    pub success: bool,
    /// What the code printed (capped).
    pub stdout: String,
    /// What the code wrote to stderr (capped).
    pub stderr: String,
    /// The value as JSON when it is JSON-serialisable, else null.
    pub result: Value,
    /// `repr()` of a value that is not JSON-serialisable.
    pub result_repr: Option<String>,
    /// Whether the code produced a value (`None` counts as a value).
    pub has_value: bool,
    /// Said when there is no value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Failure: `SyntaxError`, `ZeroDivisionError`, `TimeoutError`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// Failure: the exception's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Failure: frames of the user's code, with its own line numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
    /// Failure: the line of the user's code where it failed, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Failure: the column, for a syntax error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// Wall time of the call.
    pub execution_time_ms: f64,
}

/// The pack's state.
pub struct ExecPy {
    config: Config,
    interpreters: Arc<Interpreters>,
}

/// Where interpreters come from: the zygote for most calls, a fresh start
/// for a call with a `cwd`.
struct Interpreters {
    /// Resolved once, in the background from the start: start-up never
    /// waits for Python. `Err`: why there is no interpreter (every call says
    /// so).
    launcher: OnceCell<Result<Launcher, String>>,
    /// `python` of the config, resolved into the launcher.
    python: Option<PathBuf>,
    settings: Arc<Settings>,
    forks: ForkServer,
    /// Children forked ahead of demand: moving a process into its cgroup
    /// waits for the kernel (milliseconds on cgroup v1), so it is done
    /// ahead of the calls.
    ready: OnceLock<WarmPool<Interpreter>>,
}

impl Interpreters {
    async fn launcher(&self) -> Result<&Launcher, PackError> {
        let launcher = self
            .launcher
            .get_or_init(|| async {
                let python = self.python.clone();
                let resolved =
                    tokio::task::spawn_blocking(move || Python::resolve(python.as_deref()))
                        .await
                        .map_err(|e| e.to_string())?;
                Ok(Launcher {
                    python: resolved?,
                    settings: Arc::clone(&self.settings),
                })
            })
            .await;
        launcher.as_ref().map_err(|why| {
            PackError::not_found(format!("no Python interpreter: {why}"))
                .with_help("install Python 3, or set `python` in [packs.exec_py] config")
        })
    }

    /// A forked interpreter: a ready one, or one forked now; its
    /// replacement is forked at once.
    async fn fork(self: &Arc<Self>, pool_size: usize) -> Result<Interpreter, PackError> {
        // Says why there is no interpreter, if there is none.
        self.launcher().await?;
        self.pool(pool_size)
            .take()
            .await
            .map_err(|e| PackError::internal(format!("cannot start Python: {e}")))
    }

    /// The children forked ahead of demand; filling from the first use.
    fn pool(self: &Arc<Self>, size: usize) -> &WarmPool<Interpreter> {
        self.ready.get_or_init(|| {
            let interpreters = Arc::downgrade(self);
            WarmPool::new(
                size,
                move || {
                    let interpreters = interpreters.clone();
                    async move {
                        let interpreters = interpreters
                            .upgrade()
                            .ok_or_else(|| std::io::Error::other("the pack is stopping"))?;
                        let launcher = interpreters
                            .launcher()
                            .await
                            .map_err(|e| std::io::Error::other(e.message().to_owned()))?;
                        interpreters.forks.fork(launcher).await
                    }
                },
                |interpreter: &mut Interpreter| interpreter.group.is_running(),
            )
        })
    }
}

impl ExecPy {
    fn new(config: Config, host: &pack_sdk::Host) -> Result<Self, PackError> {
        let sandbox = config.children.sandbox("Python code runs", host)?;
        let scratch = std::env::temp_dir().join("packhost-exec-py");
        std::fs::create_dir_all(&scratch)?;
        let interpreters = Arc::new(Interpreters {
            launcher: OnceCell::new(),
            python: config.python.clone(),
            settings: Arc::new(Settings {
                env: config.children.env(),
                sandbox,
                limits: config.children.limits.clone(),
                scratch,
            }),
            forks: ForkServer::default(),
            ready: OnceLock::new(),
        });
        // The pool fills behind the first `tools/list` (after its warm-up
        // delay), resolving Python first.
        interpreters.pool(config.pool_size);
        Ok(Self {
            config,
            interpreters,
        })
    }

    /// The `cwd` argument, opened when it is inside a `cwd_roots` folder.
    fn working_dir(&self, cwd: &Path) -> Result<Dir, PackError> {
        beneath::open_inside(&self.config.cwd_roots, cwd, Links::Inside).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                return PackError::not_found(format!("`cwd` {e}"));
            }
            PackError::access_denied(format!("`cwd` {e}")).with_help(
                "leave `cwd` out to run in a fresh temporary folder, or add a root to \
                 `cwd_roots` in [packs.exec_py] config",
            )
        })
    }
}

async fn run(state: Arc<ExecPy>, args: RunArgs, ctx: Context) -> Result<RunOutput, PackError> {
    let interpreters = &state.interpreters;
    let launcher = interpreters.launcher().await?;
    let cwd = args
        .cwd
        .as_deref()
        .map(|cwd| state.working_dir(cwd))
        .transpose()?;
    let interpreter = match &cwd {
        Some(cwd) => launcher
            .start(cwd, state.config.cwd_writable)
            .await
            .map_err(|e| PackError::internal(format!("cannot start Python: {e}")))?,
        None => interpreters.fork(state.config.pool_size).await?,
    };
    let own = interpreter.dir.path();
    let request = call::Request {
        code: args.code,
        cwd: cwd.as_ref().map_or(own, Dir::path).display().to_string(),
        tmpdir: own.display().to_string(),
        bindings: args
            .bridge
            .then(|| pack_sdk::bridge::bindings(&ctx.catalog())),
        max_result_bytes: state.config.max_output_bytes,
    };
    let timeout = Duration::from_millis(args.timeout_ms.max(1));
    call::run(
        interpreter,
        request,
        timeout,
        state.config.max_output_bytes,
        &ctx,
    )
    .await
}

async fn declarations(
    _: Arc<ExecPy>,
    args: declarations::DeclarationsArgs,
    ctx: Context,
) -> Result<declarations::Declared, PackError> {
    let declarations = declarations::python(&ctx.catalog(), &args.into())?;
    Ok(declarations::Declared { declarations })
}

fn pack() -> PackDef<ExecPy> {
    PackDef::new(
        "exec_py",
        "Run Python in a fresh interpreter: stdout, stderr and the value of the last expression; every pack is callable from the code",
        |config: Config, host| ExecPy::new(config, &host),
    )
    // Code can do anything its confinement allows and call every function
    // the caller may (destructive ones too), so `run` is as unsafe as the
    // worst of them.
    .function_with(
        Function::new(
            "run",
            "Run Python code in a fresh process and return stdout, stderr and the value of the last expression (or of a top-level `return`). Packs are Python objects in the code: `proj.list()`, `proj.<project> / \"src\"`, aliases.",
            run,
        )
        .title("Run Python")
        .destructive()
        .open_world()
        .example(
            json!({"code": "print('hi')\nsum(range(10))"}),
            json!({"success": true, "stdout": "hi\n", "result": 45}),
        ),
    )
    .function_with(
        Function::new(
            "declarations",
            "Python stubs (.pyi style) of the packs `run` code can call: a pack's or one function's \
             (`pack`, `function`), or every one's.",
            declarations,
        )
        .title("Python stubs of the packs")
        .read_only()
        .closed_world(),
    )
    .on_shutdown(|state: Arc<ExecPy>| async move {
        if let Some(pool) = state.interpreters.ready.get() {
            pool.clear();
        }
        state.interpreters.forks.stop().await;
    })
}

pack_sdk::export_pack!(pack);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_tilde_in_config_paths_is_the_home_directory() {
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        let config: Config = serde_json::from_value(serde_json::json!({
            "python": "~/venv/bin/python", "cwd_roots": ["~/src", "/srv", "~"],
        }))
        .unwrap();
        assert_eq!(config.python, Some(home.join("venv/bin/python")));
        assert_eq!(
            config.cwd_roots,
            [home.join("src"), PathBuf::from("/srv"), home.clone()]
        );
        let err = serde_json::from_value::<Config>(serde_json::json!({"cwd_roots": ["~bob"]}))
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .starts_with("`~bob`: `~user` is not expanded"),
            "{err}"
        );
    }
}

#[cfg(test)]
mod result_schemas {
    use pack_sdk::testing::{check_failure, check_manifest, check_result};

    use super::*;

    fn finished(note: Option<&str>) -> RunOutput {
        RunOutput {
            success: true,
            stdout: String::new(),
            stderr: String::new(),
            result: Value::Null,
            result_repr: None,
            has_value: note.is_none(),
            note: note.map(str::to_owned),
            error_type: None,
            error_message: None,
            traceback: None,
            line: None,
            column: None,
            execution_time_ms: 1.5,
        }
    }

    /// A failure keeps the run's shape, so it fits the same schema.
    #[test]
    fn results_and_failures_fit_the_schemas() {
        check_manifest(pack).unwrap();
        check_result(&finished(None)).unwrap();
        check_result(&finished(Some("no value"))).unwrap();
        let failed = RunOutput {
            success: false,
            error_type: Some("ZeroDivisionError".into()),
            error_message: Some("division by zero".into()),
            traceback: Some(String::new()),
            line: Some(2),
            ..finished(None)
        };
        let error = PackError::new(pack_sdk::codes::EXECUTION_ERROR, "x").with_result(&failed);
        check_failure::<RunOutput>(&error).unwrap();
    }

    /// The examples, run by a real Python (`PACKHOST_TEST_PYTHON`, which
    /// `./dev test` sets, else `python3`), unconfined: the test binary is not
    /// the host's sandbox helper.
    #[tokio::test]
    async fn examples_hold() {
        let python = std::env::var("PACKHOST_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
        let config = json!({"python": python, "sandbox": "off", "pool_size": 0});
        let pack = pack_sdk::testing::PackTest::build(pack)
            .config(config)
            .start()
            .unwrap();
        let checked = pack.check_examples().await;
        pack.shutdown().await;
        if let Err(failed) = checked {
            panic!("{failed}");
        }
    }
}
