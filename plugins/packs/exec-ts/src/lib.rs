//! `exec_ts`: run TypeScript and JavaScript with Node.js, buffered, and work
//! in notebook sessions of cells (the Srcbook model).
//!
//! TypeScript never reaches `node` as TypeScript: [`strip::strip_types`]
//! turns it into JavaScript in-process (swc's type stripper, which keeps every
//! line and column), so there is no loader to start and node's stack traces
//! point at the original lines. Every process runs confined by the sandbox
//! (node's installation read-only, one writable folder: its own fresh one,
//! or the session's; no network unless configured; bounded memory,
//! processes, CPU and files) and under `pack-process`'s rules (own process
//! group killed whole on timeout, capped capture, environment allow-list).
//! Calls with neither `cwd` nor `env` take an idle `node` from a warm pool
//! (a fresh process per call, never reused).
//!
//! Functions: `execute`; `session_create`, `session_list`, `session_delete`,
//! `session_export`, `session_import`; `cell_create`, `cell_update`,
//! `cell_list`, `cell_delete`, `cell_execute`; `npm_install`.

pub mod instrument;
pub mod network;
pub mod node;
pub mod notebook;
pub mod npm;
pub mod scratch;
pub mod srcmd;
pub mod strip;
pub mod typecheck;

use std::{
    collections::BTreeMap,
    os::fd::OwnedFd,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use beneath::Links;
use pack_process::{EnvAllowList, Limits, Mode, Sandbox};
use pack_sdk::{
    Context, Empty, Function, Host, LogLevel, PackDef, PackError, codes, json,
    owned::{self, Ownership, Share},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    network::CodeNetwork,
    node::{Confinement, ExecOutput, Runner, Tools},
    notebook::{CellKind, CellMeta, Language, Notebooks, SessionMeta, cell_not_found},
    npm::Npm,
    scratch::Scratch,
    strip::strip_types,
    typecheck::Checker,
};

/// Default cap of each output stream.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 20;
/// Default time limit of code (ms).
const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Default time limit of `npm install` (ms).
const DEFAULT_NPM_TIMEOUT_MS: u64 = 300_000;

/// `[packs.exec_ts] config = {...}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The `node` binary: a path, or a name looked up on PATH once at start.
    /// Default `node`. A leading `~` is the home directory.
    #[serde(
        default = "default_node",
        deserialize_with = "pack_sdk::paths::deserialize_home"
    )]
    pub node: PathBuf,
    /// Where notebook sessions live, one directory each (a leading `~` is the
    /// home directory). Default `~/.packhost/notebooks`.
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub notebooks_dir: Option<PathBuf>,
    /// Host environment variables a child process may see (nothing else of
    /// the host's environment reaches it). Default `PATH`, `HOME`, `LANG`.
    #[serde(default = "default_env_allow")]
    pub env_allow: Vec<String>,
    /// Cap of each of stdout and stderr, in bytes. Default 1 MiB.
    #[serde(default = "default_max_output")]
    pub max_output_bytes: usize,
    /// Idle `node` processes kept ready for `execute` calls without `cwd`
    /// and `env`; 0 turns the pool off. Default 2.
    #[serde(default = "default_pool_size")]
    pub pool_size: usize,
    /// Who may use a notebook session besides the user who created it:
    /// `user` (no one, the default) or `org` (every user of the
    /// organisation).
    #[serde(default)]
    pub share: Share,
    /// Notebook sessions on this host at most. Default 1000.
    #[serde(default = "default_max_sessions")]
    pub max_sessions: usize,
    /// Sessions one owner (a user, or with `share = "org"` an organisation)
    /// may have at most. Default 100.
    #[serde(default = "default_max_sessions_per_owner")]
    pub max_sessions_per_owner: usize,
    /// `"on"` (the default): every process (`execute`, `cell_execute`,
    /// `npm_install`) is confined to node's installation read-only and one
    /// writable folder (its own fresh one, or the session's), or refused
    /// where the machine cannot confine it. `"off"`: they run with every
    /// right of the host's user (logged as a warning at start).
    #[serde(default)]
    pub sandbox: Mode,
    /// The bounds of each process: `memory_mb` (1024), `processes` (128),
    /// `cpu_seconds` (3600), `file_size_mb` (1024), `open_files` (1024).
    /// A process that passes one ends with `LIMIT_EXCEEDED`.
    #[serde(default)]
    pub limits: Limits,
    /// Folders an `execute` `cwd` may be in (a leading `~` is the home
    /// directory), and where `npm_install` may take local packages from.
    /// Default none: `cwd` is refused.
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub cwd_roots: Vec<PathBuf>,
    /// Whether code may write in the `cwd` it is given (it always may in
    /// its own fresh folder). Default false.
    #[serde(default)]
    pub cwd_writable: bool,
    /// What code (`execute`, `cell_execute`) may reach: `false` (the
    /// default) no sockets at all; `true` everything the host can reach;
    /// a list of host names those only, on ports 443 and 80, through an
    /// egress proxy (`HTTPS_PROXY`/`HTTP_PROXY` in code's environment)
    /// that refuses loopback, private and metadata addresses.
    #[serde(default)]
    pub network: CodeNetwork,
    /// Whether `npm_install` may reach `npm_registry`, through an egress
    /// proxy that reaches nothing else (local packages install without).
    /// Default true; false: no network.
    #[serde(default = "default_true")]
    pub npm_network: bool,
    /// The npm registry `npm_install` uses, the one host its proxy
    /// reaches (on ports 443, 80 and the URL's own). Default
    /// `https://registry.npmjs.org/`.
    #[serde(default = "default_npm_registry")]
    pub npm_registry: String,
    /// Packages whose lifecycle scripts (`preinstall`, `install`,
    /// `postinstall`, a native build) run: after `npm_install`, when
    /// installed, confined like npm. Default none: no package's script runs.
    #[serde(default)]
    pub npm_scripts_allow: Vec<String>,
    /// The TypeScript compiler for type checks: the folder of the
    /// `typescript` npm package, 7 or newer (its native compiler), or its
    /// `tsc` binary. A leading `~` is the home directory. Default none:
    /// `typecheck` is refused.
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub typescript: Option<PathBuf>,
    /// Whether `execute` checks TypeScript against the packs' declarations
    /// before running it unless the call says otherwise. Default false.
    #[serde(default)]
    pub typecheck: bool,
}

/// Why a type check cannot run, and how to make it.
const NO_COMPILER: &str = "type checks need the TypeScript compiler: `npm install typescript@7`, then set \
     `typescript` in [packs.exec_ts] config to the `node_modules/typescript` folder";

fn default_true() -> bool {
    true
}

fn default_npm_registry() -> String {
    npm::DEFAULT_REGISTRY.to_owned()
}

fn default_max_sessions() -> usize {
    1000
}

fn default_max_sessions_per_owner() -> usize {
    100
}

fn default_node() -> PathBuf {
    "node".into()
}

fn default_env_allow() -> Vec<String> {
    ["PATH", "HOME", "LANG"].map(String::from).to_vec()
}

fn default_max_output() -> usize {
    DEFAULT_MAX_OUTPUT_BYTES
}

fn default_pool_size() -> usize {
    2
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_MS
}

fn default_npm_timeout() -> u64 {
    DEFAULT_NPM_TIMEOUT_MS
}

/// The pack's state.
pub struct State {
    runner: Runner,
    /// The TypeScript compiler, when configured.
    checker: Option<Checker>,
    /// Whether TypeScript is checked unless a call says otherwise.
    typecheck: bool,
    notebooks: Notebooks,
    npm: Npm,
    /// Code's way out when `network` lists hosts.
    _code_proxy: Option<egress::Proxy>,
    cwd_roots: Vec<PathBuf>,
    cwd_writable: bool,
    /// Held around every read-modify-write of a session's metadata.
    lock: Mutex<()>,
}

impl State {
    /// State from the pack's config (inside a tokio runtime: the pool
    /// starts); sessions are shared as `ownership` says.
    pub fn new(config: Config, ownership: Ownership, host: &Host) -> Result<Self, PackError> {
        let (sandbox, warning) = Sandbox::configure(
            config.sandbox,
            &config.limits,
            "TypeScript/JavaScript code and npm run",
        )
        .map_err(PackError::invalid_argument)?;
        if let Some(warning) = warning {
            host.log(LogLevel::Warn, &warning);
        }
        if config.max_output_bytes == 0 {
            return Err(PackError::invalid_argument(
                "`max_output_bytes` is 0; give the cap of each output stream in bytes (default 1048576)",
            ));
        }
        let notebooks_dir = match config.notebooks_dir {
            Some(dir) => dir,
            None => std::env::var_os("HOME")
                .map(PathBuf::from)
                .ok_or_else(|| {
                    PackError::invalid_argument(
                        "HOME is not set, so the default notebooks directory ~/.packhost/notebooks is unknown; \
                         set `notebooks_dir` in `[packs.exec_ts] config`",
                    )
                })?
                .join(".packhost/notebooks"),
        };
        let limits = owned::Limits {
            max: config.max_sessions,
            per_owner: config.max_sessions_per_owner,
        };
        let notebooks = Notebooks::new(notebooks_dir, ownership, limits)?;
        let checker = config
            .typescript
            .as_deref()
            .map(Checker::find)
            .transpose()
            .map_err(PackError::invalid_argument)?;
        if config.typecheck && checker.is_none() {
            return Err(PackError::invalid_argument(NO_COMPILER));
        }
        let npm = Npm::new(
            config.npm_registry,
            config.npm_network,
            config.npm_scripts_allow,
        )
        .map_err(PackError::invalid_argument)?;
        let tools = Tools::find(&config.node);
        let egress = config
            .network
            .start()
            .map_err(PackError::invalid_argument)?;
        let confinement = Confinement {
            sandbox: Arc::new(sandbox),
            limits: config.limits,
            code_network: egress.network,
            code_env: egress.env,
        };
        let runner = Runner::new(
            tools,
            EnvAllowList::new(config.env_allow),
            config.max_output_bytes,
            config.pool_size,
            confinement,
        );
        Ok(Self {
            runner,
            checker,
            typecheck: config.typecheck,
            notebooks,
            npm,
            _code_proxy: egress.proxy,
            cwd_roots: config.cwd_roots,
            cwd_writable: config.cwd_writable,
            lock: Mutex::new(()),
        })
    }

    /// `path`, opened by `open` (see [`beneath::open_inside`]), when it is
    /// inside a `cwd_roots` folder; else an `ACCESS_DENIED` naming `what`,
    /// the roots and `way_out`.
    fn inside_roots<T>(
        &self,
        what: &str,
        path: &Path,
        way_out: &str,
        open: fn(&[PathBuf], &Path, Links) -> std::io::Result<T>,
    ) -> Result<T, PackError> {
        open(&self.cwd_roots, path, Links::Inside).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                return PackError::not_found(format!("{what} {e}"));
            }
            PackError::access_denied(format!("{what} {e}")).with_help(format!(
                "{way_out}, or add a root to `cwd_roots` in [packs.exec_ts] config"
            ))
        })
    }

    fn locked<T>(&self, work: impl FnOnce(&Notebooks) -> T) -> T {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        work(&self.notebooks)
    }
}

/// File work blocks, so it runs off the async workers, with the state.
async fn blocking<T: Send + 'static>(
    state: &Arc<State>,
    work: impl FnOnce(&State) -> Result<T, PackError> + Send + 'static,
) -> Result<T, PackError> {
    let state = Arc::clone(state);
    pack_sdk::blocking("exec_ts", move || work(&state)).await
}

fn timeout_of(ms: u64) -> Result<Duration, PackError> {
    if ms == 0 {
        return Err(PackError::invalid_argument(
            "`timeout` is 0; give the time limit in milliseconds (default 30000)",
        ));
    }
    Ok(Duration::from_millis(ms))
}

// ---------------------------------------------------------------- execute

/// `exec_ts.execute` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteArgs {
    /// The program: an ES module (`import`, `export` and top-level `await`
    /// work).
    pub code: String,
    /// `typescript` (types are stripped, then node runs it) or `javascript`.
    #[serde(default)]
    pub language: Language,
    /// Absolute path of the working directory (bare imports resolve from its
    /// `node_modules`), inside the folders the pack's `cwd_roots` config
    /// allows; read-only unless the config says otherwise. Default: a fresh
    /// empty directory, removed afterwards.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Extra environment variables for the process (on top of the allowed
    /// host variables).
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Time limit in milliseconds; past it the whole process group is killed
    /// and `exitCode` is 124.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1))]
    pub timeout: u64,
    /// Check TypeScript against the packs' declarations first: a type error
    /// is an `INVALID_ARGUMENT` with its line and column, and nothing runs.
    /// Default: the pack's `typecheck` config (false unless set).
    #[serde(default)]
    pub typecheck: Option<bool>,
}

async fn execute(
    state: Arc<State>,
    args: ExecuteArgs,
    ctx: Context,
) -> Result<ExecOutput, PackError> {
    let started = Instant::now();
    let timeout = timeout_of(args.timeout)?;
    let cwd = match &args.cwd {
        None => None,
        Some(cwd) => {
            let path = PathBuf::from(cwd);
            if !path.is_absolute() || !path.is_dir() {
                return Err(PackError::invalid_argument(format!(
                    "`cwd` {cwd:?} is not an absolute path to an existing directory; \
                     pass one, or leave `cwd` out to run in a fresh empty directory"
                )));
            }
            Some(state.inside_roots(
                "`cwd`",
                &path,
                "leave `cwd` out to run in a fresh empty directory",
                beneath::open_inside,
            )?)
        }
    };
    let typecheck = args
        .typecheck
        .unwrap_or(state.typecheck && args.language == Language::Typescript);
    if typecheck {
        if args.language == Language::Javascript {
            return Err(PackError::invalid_argument(
                "`typecheck` is for TypeScript; pass `language: \"typescript\"` or leave `typecheck` out",
            ));
        }
        let checker = state
            .checker
            .as_ref()
            .ok_or_else(|| PackError::invalid_argument(NO_COMPILER))?;
        checker
            .check(&state.runner, &ctx.catalog(), &args.code, started)
            .await?;
    }
    let js = match args.language {
        Language::Javascript => args.code,
        Language::Typescript => match strip_types(&args.code, "input.ts") {
            Ok(js) => js,
            Err(e) => {
                let output = ExecOutput {
                    execution_time: started.elapsed().as_millis() as u64,
                    ..ExecOutput::refused(e.0)
                };
                return output.into_result("the TypeScript code (syntax error)");
            }
        },
    };
    let js = instrument::instrument(&js, true);
    let env = args.env.unwrap_or_default();
    state
        .runner
        .run_module(
            js,
            cwd.as_ref().map(|cwd| (cwd, state.cwd_writable)),
            &env,
            timeout,
            started,
            &ctx,
        )
        .await?
        .into_result("the code")
}

async fn declarations(
    _: Arc<State>,
    args: declarations::DeclarationsArgs,
    ctx: Context,
) -> Result<declarations::Declared, PackError> {
    let declarations = declarations::typescript(&ctx.catalog(), &args.into())?;
    Ok(declarations::Declared { declarations })
}

// --------------------------------------------------------------- sessions

/// `exec_ts.session_create` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionCreateArgs {
    /// A title for listings and exports. Default `Untitled`.
    #[serde(default)]
    pub title: Option<String>,
    /// Language of cells created without a filename or language.
    #[serde(default)]
    pub language: Language,
}

/// `exec_ts.session_create` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCreated {
    /// The new session's id: pass it to the cell functions.
    pub session_id: String,
    /// Its directory (the working directory of its cells).
    pub dir: String,
}

async fn session_create(
    state: Arc<State>,
    args: SessionCreateArgs,
    ctx: Context,
) -> Result<SessionCreated, PackError> {
    let owner = state.notebooks.caller(&ctx);
    blocking(&state, move |state| {
        let title = args.title.unwrap_or_else(|| "Untitled".to_owned());
        let meta =
            state.locked(|nb| nb.create(&title, args.language, notebook::PACKAGE_JSON, &owner))?;
        Ok(SessionCreated {
            dir: state.notebooks.dir(&meta.id).display().to_string(),
            session_id: meta.id,
        })
    })
    .await
}

/// One session in `session_list`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// Session id.
    pub session_id: String,
    /// Title.
    pub title: String,
    /// Default language of new cells.
    pub language: Language,
    /// Its directory.
    pub dir: String,
    /// How many cells it has.
    pub cells: usize,
}

/// `exec_ts.session_list` result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionList {
    /// Your sessions under the notebooks root, by id.
    pub sessions: Vec<SessionInfo>,
    /// The notebooks root.
    pub root: String,
}

async fn session_list(state: Arc<State>, _: Empty, ctx: Context) -> Result<SessionList, PackError> {
    let owner = state.notebooks.caller(&ctx);
    blocking(&state, move |state| {
        let nb = &state.notebooks;
        let sessions = nb
            .sessions(&owner)
            .into_iter()
            .map(|meta| SessionInfo {
                dir: nb.dir(&meta.id).display().to_string(),
                session_id: meta.id,
                title: meta.title,
                language: meta.language,
                cells: meta.cells.len(),
            })
            .collect();
        Ok(SessionList {
            sessions,
            root: nb.root().display().to_string(),
        })
    })
    .await
}

/// Arguments naming a session.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionArgs {
    /// Session id (from `session_create` or `session_list`).
    pub session_id: String,
}

/// `exec_ts.session_delete` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDeleted {
    /// The deleted session.
    pub session_id: String,
    /// Always true (a missing session is an error).
    pub deleted: bool,
}

async fn session_delete(
    state: Arc<State>,
    args: SessionArgs,
    ctx: Context,
) -> Result<SessionDeleted, PackError> {
    let owner = state.notebooks.caller(&ctx);
    blocking(&state, move |state| {
        state.locked(|nb| nb.delete(&args.session_id, &owner))?;
        Ok(SessionDeleted {
            session_id: args.session_id,
            deleted: true,
        })
    })
    .await
}

// ------------------------------------------------------------------ cells

/// `exec_ts.cell_create` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CellCreateArgs {
    /// Session id.
    pub session_id: String,
    /// The cell's code (an ES module; other cells can import its exports as
    /// `./<filename>`).
    pub source: String,
    /// File name under `src/`, ending in .ts, .mts, .js or .mjs. Default
    /// `cell-<n>.ts` (or `.js` for JavaScript).
    #[serde(default)]
    pub filename: Option<String>,
    /// The cell's language; wins over the file extension. Default: from the
    /// extension, else the session's language.
    #[serde(default)]
    pub language: Option<Language>,
}

/// `exec_ts.cell_create` / `cell_update` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellRef {
    /// The cell's stable id.
    pub cell_id: String,
    /// Its file name under `src/`.
    pub filename: String,
}

async fn cell_create(
    state: Arc<State>,
    args: CellCreateArgs,
    ctx: Context,
) -> Result<CellRef, PackError> {
    let owner = state.notebooks.caller(&ctx);
    blocking(&state, move |state| {
        state.locked(|nb| {
            let mut meta = nb.load(&args.session_id, &owner)?;
            let filename = match args.filename {
                Some(name) => name,
                None => {
                    let ext = args.language.unwrap_or(meta.language).extension();
                    (1..)
                        .map(|n| format!("cell-{n}.{ext}"))
                        .find(|name| !has_file(&meta, name))
                        .expect("an unused name exists")
                }
            };
            notebook::check_filename(&filename)?;
            if has_file(&meta, &filename) {
                return Err(PackError::invalid_argument(format!(
                    "session `{}` already has a cell `{filename}`; pick another filename or use `exec_ts.cell_update`",
                    meta.id
                )));
            }
            let language = args.language;
            let cell = CellMeta {
                id: notebook::new_id("c"),
                kind: CellKind::Code,
                filename: Some(filename.clone()),
                language,
                text: None,
            };
            notebook::write(
                &nb.dir(&meta.id),
                Notebooks::cell_file(&filename),
                &args.source,
            )?;
            let cell_id = cell.id.clone();
            meta.cells.push(cell);
            nb.save(&meta)?;
            Ok(CellRef { cell_id, filename })
        })
    })
    .await
}

fn has_file(meta: &SessionMeta, name: &str) -> bool {
    meta.cells
        .iter()
        .any(|c| c.filename.as_deref() == Some(name))
}

fn find_cell<'a>(meta: &'a SessionMeta, cell_id: &str) -> Result<&'a CellMeta, PackError> {
    meta.cells
        .iter()
        .find(|c| c.id == cell_id)
        .ok_or_else(|| PackError::new(codes::CELL_NOT_FOUND, cell_not_found(meta, cell_id)))
}

/// `exec_ts.cell_update` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CellUpdateArgs {
    /// Session id.
    pub session_id: String,
    /// Cell id (from `cell_create` or `cell_list`).
    pub cell_id: String,
    /// The new source (code, or text of a markdown cell).
    pub source: String,
}

async fn cell_update(
    state: Arc<State>,
    args: CellUpdateArgs,
    ctx: Context,
) -> Result<CellRef, PackError> {
    let owner = state.notebooks.caller(&ctx);
    blocking(&state, move |state| {
        state.locked(|nb| {
            let mut meta = nb.load(&args.session_id, &owner)?;
            let index = meta
                .cells
                .iter()
                .position(|c| c.id == args.cell_id)
                .ok_or_else(|| {
                    PackError::new(codes::CELL_NOT_FOUND, cell_not_found(&meta, &args.cell_id))
                })?;
            let cell = &mut meta.cells[index];
            match cell.filename.clone() {
                Some(filename) => {
                    notebook::write(
                        &nb.dir(&meta.id),
                        Notebooks::cell_file(&filename),
                        &args.source,
                    )?;
                    Ok(CellRef {
                        cell_id: args.cell_id,
                        filename,
                    })
                }
                None => {
                    cell.text = Some(args.source);
                    nb.save(&meta)?;
                    Ok(CellRef {
                        cell_id: args.cell_id,
                        filename: String::new(),
                    })
                }
            }
        })
    })
    .await
}

/// One cell in `cell_list`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellInfo {
    /// Stable id.
    pub cell_id: String,
    /// `code` or `markdown`.
    #[serde(rename = "type")]
    pub kind: CellKind,
    /// File name under `src/` (code cells; empty for markdown).
    pub filename: String,
    /// Detected language (code cells).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<Language>,
    /// The code or markdown text.
    pub source: String,
}

/// `exec_ts.cell_list` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellList {
    /// Session id.
    pub session_id: String,
    /// Cells in order.
    pub cells: Vec<CellInfo>,
}

async fn cell_list(
    state: Arc<State>,
    args: SessionArgs,
    ctx: Context,
) -> Result<CellList, PackError> {
    let owner = state.notebooks.caller(&ctx);
    blocking(&state, move |state| {
        let nb = &state.notebooks;
        let meta = nb.load(&args.session_id, &owner)?;
        let cells = meta
            .cells
            .iter()
            .map(|c| {
                Ok(CellInfo {
                    cell_id: c.id.clone(),
                    kind: c.kind,
                    filename: c.filename.clone().unwrap_or_default(),
                    language: (c.kind == CellKind::Code).then(|| c.language()),
                    source: nb.source(&meta.id, c)?,
                })
            })
            .collect::<Result<_, PackError>>()?;
        Ok(CellList {
            session_id: meta.id,
            cells,
        })
    })
    .await
}

/// Arguments naming a cell.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CellArgs {
    /// Session id.
    pub session_id: String,
    /// Cell id.
    pub cell_id: String,
}

/// `exec_ts.cell_delete` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellDeleted {
    /// Session id.
    pub session_id: String,
    /// The deleted cell.
    pub cell_id: String,
    /// Always true (a missing cell is an error).
    pub deleted: bool,
}

async fn cell_delete(
    state: Arc<State>,
    args: CellArgs,
    ctx: Context,
) -> Result<CellDeleted, PackError> {
    let owner = state.notebooks.caller(&ctx);
    blocking(&state, move |state| {
        state.locked(|nb| {
            let mut meta = nb.load(&args.session_id, &owner)?;
            let cell = find_cell(&meta, &args.cell_id)?.clone();
            meta.cells.retain(|c| c.id != cell.id);
            nb.save(&meta)?;
            if let Some(filename) = &cell.filename {
                let _ = notebook::session_dir(&nb.dir(&meta.id))
                    .map(|dir| dir.remove_file(Notebooks::cell_file(filename)));
            }
            Ok(CellDeleted {
                session_id: meta.id,
                cell_id: cell.id,
                deleted: true,
            })
        })
    })
    .await
}

/// `exec_ts.cell_execute` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CellExecuteArgs {
    /// Session id.
    pub session_id: String,
    /// Cell id.
    pub cell_id: String,
    /// Time limit in milliseconds; past it the whole process group is killed
    /// and `exitCode` is 124.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1))]
    pub timeout: u64,
}

/// Resolves `./x`, `./x.js` to the TypeScript cells and loads `.ts` files as
/// ES modules (their content is already JavaScript: see `build`).
const LOADER_MJS: &str = r#"// Written by packhost exec_ts: cells are stripped to JavaScript before node runs them.
const RELATIVE = /^\.{0,2}\//;
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !RELATIVE.test(specifier)) throw error;
    const candidates = /\.js$/.test(specifier) ? [specifier.replace(/\.js$/, '.ts')]
      : /\.mjs$/.test(specifier) ? [specifier.replace(/\.mjs$/, '.mts')]
      : ['.ts', '.mts', '.js', '.mjs'].map((ext) => specifier + ext);
    for (const candidate of candidates) {
      try { return await next(candidate, context); } catch {}
    }
    throw error;
  }
}
export async function load(url, context, next) {
  if (url.startsWith('file:') && /\.m?ts$/.test(new URL(url).pathname)) {
    return next(url, { ...context, format: 'module' });
  }
  return next(url, context);
}
"#;
const REGISTER_MJS: &str =
    "import { register } from 'node:module';\nregister('./loader.mjs', import.meta.url);\n";

/// Strip every code cell of the session into a fresh `.packhost/run-*/src/`
/// (same file names, so cells import each other as they are written). The
/// executed cell's syntax error is returned; another cell's becomes a module
/// that throws it when imported.
fn build(
    nb: &Notebooks,
    meta: &SessionMeta,
    cell: &CellMeta,
) -> Result<Result<(Scratch, PathBuf), String>, PackError> {
    let dir = nb.dir(&meta.id);
    let hidden = Path::new(".packhost");
    let session = notebook::session_dir(&dir)?;
    session
        .create_dir_all(hidden)
        .map_err(|e| notebook::io_error(&dir.join(hidden), e))?;
    for (name, content) in [("loader.mjs", LOADER_MJS), ("register.mjs", REGISTER_MJS)] {
        let path = hidden.join(name);
        if session.read_to_string(&path).ok().as_deref() != Some(content) {
            notebook::write(&dir, &path, content)?;
        }
    }
    let run = Scratch::new(&dir, ".packhost", "run-")
        .map_err(|e| notebook::io_error(&dir.join(hidden), e))?;
    let src = run.rel().join("src");
    session
        .create_dir_all(&src)
        .map_err(|e| notebook::io_error(&dir.join(&src), e))?;
    let mut entry = None;
    for c in meta.cells.iter().filter(|c| c.kind == CellKind::Code) {
        let Some(filename) = &c.filename else {
            continue;
        };
        let source = nb.source(&meta.id, c)?;
        let js = match c.language() {
            Language::Javascript => source,
            Language::Typescript => match strip_types(&source, filename) {
                Ok(js) => js,
                Err(e) if c.id == cell.id => return Ok(Err(e.0)),
                Err(e) => format!(
                    "throw new SyntaxError({});\n",
                    serde_json::to_string(&e.0).expect("a string is JSON")
                ),
            },
        };
        let path = src.join(filename);
        notebook::write(&dir, &path, &instrument::instrument(&js, false))?;
        if c.id == cell.id {
            entry = Some(dir.join(path));
        }
    }
    let entry = entry.ok_or_else(|| {
        PackError::invalid_argument(format!(
            "cell `{}` is a markdown cell; only code cells run",
            cell.id
        ))
    })?;
    Ok(Ok((run, entry)))
}

async fn cell_execute(
    state: Arc<State>,
    args: CellExecuteArgs,
    ctx: Context,
) -> Result<ExecOutput, PackError> {
    let started = Instant::now();
    let timeout = timeout_of(args.timeout)?;
    let owner = state.notebooks.caller(&ctx);
    let prepared = blocking(&state, move |state| {
        state.locked(|nb| {
            // Not found: the run shape, with the error in stderr.
            let meta = nb.load(&args.session_id, &owner).map_err(refused)?;
            let cell = find_cell(&meta, &args.cell_id).map_err(refused)?.clone();
            let built = build(nb, &meta, &cell)?;
            Ok((nb.dir(&meta.id), cell, built))
        })
    })
    .await?;
    let (dir, cell, built) = prepared;
    let what = format!("cell `{}`", cell.filename.as_deref().unwrap_or(&cell.id));
    let (run, entry) = match built {
        Ok(built) => built,
        Err(diagnostics) => {
            let output = ExecOutput {
                execution_time: started.elapsed().as_millis() as u64,
                ..ExecOutput::refused(diagnostics)
            };
            return output.into_result(&format!("{what} (syntax error)"));
        }
    };
    // The session's folder is the only one it may write (nothing of other
    // sessions is visible); temporary files go in this run's build folder.
    let env = node::tmpdir(run.path());
    state
        .runner
        .run_cell(
            "./.packhost/register.mjs",
            &entry,
            &dir,
            &env,
            timeout,
            started,
            &ctx,
        )
        .await?
        .into_result(&what)
}

/// A not-found error served with the run shape: `CODE: message` in
/// `stderr`, exit code 1, no time.
fn refused(error: PackError) -> PackError {
    let output = ExecOutput::refused(format!("{}: {}", error.code(), error.message()));
    error.with_result(&output)
}

// ------------------------------------------------------ export and import

/// `exec_ts.session_export` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionExported {
    /// Session id.
    pub session_id: String,
    /// Where the document was written (`<session dir>/<sessionId>.src.md`).
    pub path: String,
    /// The `.src.md` document (Srcbook's format).
    pub markdown: String,
}

async fn session_export(
    state: Arc<State>,
    args: SessionArgs,
    ctx: Context,
) -> Result<SessionExported, PackError> {
    let owner = state.notebooks.caller(&ctx);
    blocking(&state, move |state| {
        state.locked(|nb| {
            let meta = nb.load(&args.session_id, &owner)?;
            let dir = nb.dir(&meta.id);
            let package_json = notebook::read(&dir, "package.json").ok();
            let cells = meta
                .cells
                .iter()
                .map(|c| {
                    let source = nb.source(&meta.id, c)?;
                    Ok(match (&c.kind, &c.filename) {
                        (CellKind::Code, Some(filename)) => srcmd::Cell::Code {
                            filename: filename.clone(),
                            source,
                        },
                        _ => srcmd::Cell::Markdown(source),
                    })
                })
                .collect::<Result<_, PackError>>()?;
            let markdown = srcmd::render(&srcmd::Document {
                title: meta.title.clone(),
                language: meta.language,
                package_json,
                cells,
            });
            let name = format!("{}.src.md", meta.id);
            notebook::write(&dir, &name, &markdown)?;
            let path = dir.join(name);
            Ok(SessionExported {
                session_id: meta.id,
                path: path.display().to_string(),
                markdown,
            })
        })
    })
    .await
}

/// `exec_ts.session_import` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionImportArgs {
    /// A `.src.md` document (Srcbook's format: `<!-- srcbook:{...} -->`
    /// header, `# Title`, `###### package.json` block, markdown cells,
    /// `###### name.ts` code blocks).
    pub markdown: String,
}

/// `exec_ts.session_import` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionImported {
    /// The new session's id.
    pub session_id: String,
    /// Its directory.
    pub dir: String,
    /// Its title.
    pub title: String,
    /// Its cells, in order.
    pub cells: Vec<CellRef>,
}

async fn session_import(
    state: Arc<State>,
    args: SessionImportArgs,
    ctx: Context,
) -> Result<SessionImported, PackError> {
    let owner = state.notebooks.caller(&ctx);
    blocking(&state, move |state| {
        let doc = srcmd::parse(&args.markdown)
            .map_err(|e| PackError::invalid_argument(format!("`markdown`: {e}")))?;
        let mut seen = Vec::new();
        for cell in &doc.cells {
            if let srcmd::Cell::Code { filename, .. } = cell {
                notebook::check_filename(filename)?;
                if seen.contains(&filename) {
                    return Err(PackError::invalid_argument(format!(
                        "`markdown` has two code cells named `{filename}`; file names must be unique"
                    )));
                }
                seen.push(filename);
            }
        }
        state.locked(|nb| {
            let package = doc.package_json.as_deref().unwrap_or(notebook::PACKAGE_JSON);
            let mut meta = nb.create(&doc.title, doc.language, package, &owner)?;
            let mut refs = Vec::new();
            for cell in doc.cells {
                let id = notebook::new_id("c");
                let meta_cell = match cell {
                    srcmd::Cell::Markdown(text) => CellMeta {
                        id,
                        kind: CellKind::Markdown,
                        filename: None,
                        language: None,
                        text: Some(text),
                    },
                    srcmd::Cell::Code { filename, source } => {
                        notebook::write(
                            &nb.dir(&meta.id),
                            Notebooks::cell_file(&filename),
                            &source,
                        )?;
                        refs.push(CellRef {
                            cell_id: id.clone(),
                            filename: filename.clone(),
                        });
                        CellMeta {
                            id,
                            kind: CellKind::Code,
                            filename: Some(filename),
                            language: None,
                            text: None,
                        }
                    }
                };
                meta.cells.push(meta_cell);
            }
            nb.save(&meta)?;
            Ok(SessionImported {
                dir: nb.dir(&meta.id).display().to_string(),
                session_id: meta.id,
                title: meta.title,
                cells: refs,
            })
        })
    })
    .await
}

// -------------------------------------------------------------------- npm

/// `exec_ts.npm_install` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NpmInstallArgs {
    /// Session id.
    pub session_id: String,
    /// Packages to add (`name`, `name@version`, or the absolute path of a
    /// local package folder or tarball inside the pack's `cwd_roots`, copied
    /// in); none installs what `package.json` lists.
    #[serde(default)]
    pub packages: Vec<String>,
    /// Time limit in milliseconds.
    #[serde(default = "default_npm_timeout")]
    #[schemars(range(min = 1))]
    pub timeout: u64,
}

async fn npm_install(
    state: Arc<State>,
    args: NpmInstallArgs,
    ctx: Context,
) -> Result<ExecOutput, PackError> {
    let started = Instant::now();
    let timeout = timeout_of(args.timeout)?;
    if let Some(flag) = args
        .packages
        .iter()
        .find(|p| p.starts_with('-') || p.is_empty())
    {
        return Err(PackError::invalid_argument(format!(
            "`packages` entry {flag:?} is not a package; give names like `lodash` or `zod@3`"
        )));
    }
    let session = args.session_id.clone();
    let owner = state.notebooks.caller(&ctx);
    let dir = blocking(&state, move |state| {
        let meta = state.notebooks.load(&session, &owner).map_err(refused)?;
        Ok(state.notebooks.dir(&meta.id))
    })
    .await?;
    // npm reads a local package where it is: only inside `cwd_roots`.
    let local: Vec<OwnedFd> = args
        .packages
        .iter()
        .filter_map(|spec| {
            let path = spec.strip_prefix("file:").unwrap_or(spec);
            path.starts_with('/').then(|| {
                state.inside_roots(
                    "local package",
                    Path::new(path),
                    "install it from the registry",
                    beneath::locate_inside,
                )
            })
        })
        .collect::<Result<_, _>>()
        .map_err(refused)?;
    state.runner.tools.node()?;
    let npm = state.runner.tools.npm.clone().ok_or_else(|| {
        let message = "npm is not installed: no `npm` beside node nor on PATH; install it (e.g. `apt-get install npm`)";
        PackError::not_found(message).with_result(&ExecOutput::refused(message))
    })?;
    // npm's cache and temporary files are the session's own (never the
    // host user's ~/.npm, which is neither readable nor shared).
    let session = dir.clone();
    let tmp = blocking(&state, move |_| {
        Scratch::new(&session, ".packhost", "npm-")
            .map_err(|e| notebook::io_error(&session.join(".packhost"), e))
    })
    .await?;
    // The proxy serves until this call ends, when it is dropped.
    let (network, proxy) = state.npm.egress().map_err(|e| {
        let message = format!("cannot start npm's egress proxy: {e}");
        PackError::internal(message.clone()).with_result(&ExecOutput::refused(message))
    })?;
    let mut env = node::tmpdir(tmp.path());
    env.insert(
        "npm_config_cache".to_owned(),
        dir.join(".packhost/npm-cache").display().to_string(),
    );
    env.insert("npm_config_update_notifier".to_owned(), "false".to_owned());
    env.extend(state.npm.env(proxy.as_ref()));
    let policy = state.runner.npm_policy(&dir, local, network);
    let runner = &state.runner;
    let install = npm::install_args(&args.packages);
    let installed = runner
        .run(&npm, &install, &dir, &policy, &env, timeout, started)
        .await?;
    let session = dir.clone();
    let scripted = match installed.exit_code {
        0 => blocking(&state, move |state| Ok(state.npm.scripted(&session))).await?,
        _ => Vec::new(),
    };
    let mut output = if scripted.is_empty() {
        installed
    } else {
        let rebuild = npm::rebuild_args(&scripted);
        let left = timeout.saturating_sub(started.elapsed());
        let rebuilt = runner
            .run(&npm, &rebuild, &dir, &policy, &env, left, started)
            .await?;
        installed.followed_by(rebuilt)
    };
    npm::note_refusals(&mut output, proxy.as_ref());
    output.into_result("npm install")
}

// ------------------------------------------------------------------- pack

fn pack() -> PackDef<State> {
    PackDef::new(
        "exec_ts",
        "Run TypeScript/JavaScript with Node.js and work in notebook sessions of cells",
        |config: Config, host: Host| {
            let ownership = Ownership::new(config.share);
            State::new(config, ownership, &host)
        },
    )
    // Code (execute, cell_execute, npm install's scripts) can do anything its
    // confinement allows, and code mode calls every function the caller may:
    // as unsafe as the worst of them. The rest only touch the caller's own
    // notebook sessions.
    .function_with(
        Function::new(
            "execute",
            "Run TypeScript or JavaScript (an ES module: import, top-level await) in a fresh node process; \
             returns {stdout, stderr, exitCode, executionTime, result} (result: the last expression's value). \
             Every pack is a global of async functions taking one object: `await proj.list()`, \
             `await proj.read({name, path})`; a failed call throws `PackError` (code, message, help). \
             Types are stripped, and checked against the packs' declarations with `typecheck: true` \
             (`exec_ts.declarations` shows them). A non-zero exit, a thrown error or a timeout \
             (exitCode 124) is an error result with the same shape.",
            execute,
        )
        .title("Run TypeScript or JavaScript")
        .destructive()
        .open_world()
        .example(
            json!({"code": "const xs: number[] = [1, 2, 3];\nconsole.log(xs.length);\nxs.reduce((a, b) => a + b)"}),
            json!({"stdout": "3\n", "exitCode": 0, "result": 6}),
        ),
    )
    .function_with(
        Function::new(
            "declarations",
            "TypeScript declarations (.d.ts) of the packs `execute` code can call: a pack's or one function's \
             (`pack`, `function`), or every one's.",
            declarations,
        )
        .title("TypeScript declarations of the packs")
        .read_only()
        .closed_world(),
    )
    .function_with(
        Function::new(
            "session_create",
            "Create a notebook session: a directory with package.json, tsconfig.json and src/ for its cells.",
            session_create,
        )
        .title("Create a notebook session")
        .additive()
        .closed_world(),
    )
    .function_with(
        Function::new("session_list", "List your notebook sessions.", session_list)
            .title("List notebook sessions")
            .read_only()
            .closed_world(),
    )
    .function_with(
        Function::new(
            "session_delete",
            "Delete a notebook session and its directory.",
            session_delete,
        )
        .title("Delete a notebook session")
        .destructive()
        .idempotent()
        .closed_world(),
    )
    .function_with(
        Function::new(
            "cell_create",
            "Add a code cell (a file under src/) to a session; cells import each other as `./<filename>`.",
            cell_create,
        )
        .title("Add a cell")
        .additive()
        .closed_world(),
    )
    .function_with(
        Function::new("cell_update", "Replace a cell's source.", cell_update)
            .title("Replace a cell's source")
            .destructive()
            .idempotent()
            .closed_world(),
    )
    .function_with(
        Function::new("cell_list", "List a session's cells with their sources.", cell_list)
            .title("List cells")
            .read_only()
            .closed_world(),
    )
    .function_with(
        Function::new("cell_delete", "Delete a cell and its file.", cell_delete)
            .title("Delete a cell")
            .destructive()
            .idempotent()
            .closed_world(),
    )
    .function_with(
        Function::new(
            "cell_execute",
            "Run a cell with the session directory as working directory (its node_modules and the other cells are importable); \
             returns {stdout, stderr, exitCode, executionTime}.",
            cell_execute,
        )
        .title("Run a cell")
        .destructive()
        .open_world(),
    )
    .function_with(
        Function::new(
            "session_export",
            "Export a session as a Srcbook .src.md document (returned, and written beside the session).",
            session_export,
        )
        .title("Export a session")
        .additive()
        .idempotent()
        .closed_world(),
    )
    .function_with(
        Function::new(
            "session_import",
            "Create a session from a Srcbook .src.md document.",
            session_import,
        )
        .title("Import a session")
        .additive()
        .closed_world(),
    )
    .function_with(
        Function::new(
            "npm_install",
            "Run `npm install [packages]` in a session directory, so its cells can import them.",
            npm_install,
        )
        .title("Install npm packages")
        .destructive()
        .open_world(),
    )
    .on_shutdown(|state: Arc<State>| async move { state.runner.shutdown() })
}

pack_sdk::export_pack!(pack);

#[cfg(test)]
mod tests {
    use super::*;

    /// Models read these schemas: every argument needs a description, and
    /// unknown keys must be refused.
    #[test]
    fn argument_schemas_describe_every_field() {
        use pack_sdk::Value;
        use schemars::schema_for;
        let schemas: [(&str, Value); 10] = [
            ("execute", schema_for!(ExecuteArgs).to_value()),
            ("session_create", schema_for!(SessionCreateArgs).to_value()),
            ("session", schema_for!(SessionArgs).to_value()),
            ("cell_create", schema_for!(CellCreateArgs).to_value()),
            ("cell_update", schema_for!(CellUpdateArgs).to_value()),
            ("cell", schema_for!(CellArgs).to_value()),
            ("cell_execute", schema_for!(CellExecuteArgs).to_value()),
            ("session_import", schema_for!(SessionImportArgs).to_value()),
            ("npm_install", schema_for!(NpmInstallArgs).to_value()),
            ("cell_list", schema_for!(CellList).to_value()),
        ];
        for (function, schema) in schemas {
            let properties = schema["properties"].as_object().unwrap();
            for (arg, prop) in properties {
                assert!(
                    prop["description"].is_string() || prop["$ref"].is_string(),
                    "{function}.{arg}: {prop}"
                );
            }
            if function != "cell_list" {
                assert_eq!(schema["additionalProperties"], false, "{function}");
            }
        }
    }

    #[test]
    fn a_leading_tilde_in_config_paths_is_the_home_directory() {
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        let config: Config = serde_json::from_value(serde_json::json!({
            "node": "~/bin/node", "notebooks_dir": "~/nb",
        }))
        .unwrap();
        assert_eq!(config.node, home.join("bin/node"));
        assert_eq!(config.notebooks_dir, Some(home.join("nb")));
        let config: Config = serde_json::from_value(serde_json::json!({
            "notebooks_dir": "/abs/~/nb",
        }))
        .unwrap();
        assert_eq!(config.node, PathBuf::from("node"));
        assert_eq!(config.notebooks_dir, Some(PathBuf::from("/abs/~/nb")));
        let err = serde_json::from_value::<Config>(serde_json::json!({"notebooks_dir": "~bob/nb"}))
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("`~bob/nb`: `~user` is not expanded"),
            "{err}"
        );
    }

    #[test]
    fn config_refuses_unknown_keys_and_names_them() {
        let err = serde_json::from_value::<Config>(serde_json::json!({"nodes": "x"})).unwrap_err();
        assert!(err.to_string().contains("unknown field `nodes`"), "{err}");
    }

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

#[cfg(test)]
mod result_schemas {
    use pack_sdk::testing::{check_failure, check_manifest, check_result};

    use crate::node::ExecOutput;

    #[test]
    fn results_and_failures_fit_the_schemas() {
        check_manifest(super::pack).unwrap();
        let refused = ExecOutput::refused("no node");
        check_result(&refused).unwrap();
        check_failure::<ExecOutput>(&refused.into_result("node").unwrap_err()).unwrap();
    }
}

/// Notebook sessions belong to their creator: the pack called in-process as
/// callers of two organisations.
#[cfg(test)]
mod ownership {
    use pack_sdk::{
        Value, json,
        owned::Owner,
        testing::{
            PackTest,
            callers::{ada, bob, eve},
        },
    };

    use super::*;

    /// Unconfined: the test binary is not the host's sandbox helper.
    fn start(root: &std::path::Path, share: &str) -> PackTest {
        PackTest::build(pack)
            .config(json!({
                "notebooks_dir": root, "pool_size": 0, "share": share, "sandbox": "off"
            }))
            .identity(Owner::new("local", "root"))
            .start()
            .unwrap()
    }

    /// The examples, run by a real node (unconfined, as everything here).
    #[tokio::test]
    async fn examples_hold() {
        let root = tempfile::tempdir().unwrap();
        let pack = start(root.path(), "user");
        let checked = pack.check_examples().await;
        pack.shutdown().await;
        if let Err(failed) = checked {
            panic!("{failed}");
        }
    }

    async fn ids(pack: &PackTest, caller: &Owner) -> Vec<String> {
        let out = pack.call(caller, "session_list", json!({})).await.unwrap();
        let sessions = out["sessions"].as_array().unwrap().iter();
        sessions
            .map(|s| s["sessionId"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Every function that takes a session id, called on `id`.
    fn calls(id: &str, cell: &str) -> Vec<(&'static str, Value)> {
        vec![
            ("cell_list", json!({"sessionId": id})),
            ("cell_create", json!({"sessionId": id, "source": "1"})),
            (
                "cell_update",
                json!({"sessionId": id, "cellId": cell, "source": "2"}),
            ),
            ("cell_delete", json!({"sessionId": id, "cellId": cell})),
            ("cell_execute", json!({"sessionId": id, "cellId": cell})),
            ("session_export", json!({"sessionId": id})),
            ("npm_install", json!({"sessionId": id})),
            ("session_delete", json!({"sessionId": id})),
        ]
    }

    #[tokio::test]
    async fn another_caller_gets_what_an_unknown_id_gets() {
        // Long enough never to occur in a random id or a message by chance.
        const UNKNOWN: &str = "unknown-session-3f9c";
        let root = tempfile::tempdir().unwrap();
        let pack = start(root.path(), "user");
        let created = pack
            .call(&ada(), "session_create", json!({"title": "acme secrets"}))
            .await
            .unwrap();
        let session = created["sessionId"].as_str().unwrap().to_owned();
        let cell = pack
            .call(
                &ada(),
                "cell_create",
                json!({"sessionId": session, "source": "console.log('acme')"}),
            )
            .await
            .unwrap()["cellId"]
            .as_str()
            .unwrap()
            .to_owned();
        let imported = pack
            .call(&ada(), "session_import", json!({"markdown": "# Two\n"}))
            .await
            .unwrap();
        let other = imported["sessionId"].as_str().unwrap().to_owned();
        let mine = pack
            .call(&eve(), "session_create", json!({}))
            .await
            .unwrap();
        let mine = mine["sessionId"].as_str().unwrap().to_owned();
        let mut own = vec![session.clone(), other.clone()];
        own.sort();
        assert_eq!(ids(&pack, &ada()).await, own);
        assert_eq!(ids(&pack, &eve()).await, [mine.as_str()]);
        assert!(ids(&pack, &bob()).await.is_empty(), "share = user");
        for caller in [eve(), bob()] {
            for ((function, args), (_, unknown)) in calls(&session, &cell)
                .into_iter()
                .zip(calls(UNKNOWN, &cell))
            {
                let err = pack.call(&caller, function, args).await.unwrap_err();
                let expected = pack.call(&caller, function, unknown).await.unwrap_err();
                assert_eq!(err.code(), codes::SESSION_NOT_FOUND, "{function}: {err}");
                let message = err.message().replace(&session, UNKNOWN);
                assert_eq!(message, expected.message(), "{function}");
                assert!(
                    !message.contains(&session) && !message.contains(&other),
                    "{function}: {err}"
                );
                // cell_execute and npm_install keep their run shape.
                assert_eq!(
                    err.clone().into_wire().result,
                    expected.into_wire().result.map(|r| {
                        let text = r.to_string().replace(UNKNOWN, &session);
                        serde_json::from_str::<Value>(&text).unwrap()
                    }),
                    "{function}"
                );
            }
        }
        // Nothing of ada's changed.
        let cells = pack
            .call(&ada(), "cell_list", json!({"sessionId": session}))
            .await
            .unwrap();
        assert_eq!(cells["cells"][0]["source"], "console.log('acme')");
        assert_eq!(cells["cells"].as_array().unwrap().len(), 1);
        let out = pack
            .call(
                &ada(),
                "cell_execute",
                json!({"sessionId": session, "cellId": cell}),
            )
            .await
            .unwrap();
        assert_eq!(out["stdout"], "acme\n");
        assert_eq!(ids(&pack, &ada()).await, own);
    }

    #[tokio::test]
    async fn owners_survive_a_restart() {
        let root = tempfile::tempdir().unwrap();
        let pack = start(root.path(), "user");
        let created = pack
            .call(&ada(), "session_create", json!({}))
            .await
            .unwrap();
        let session = created["sessionId"].as_str().unwrap().to_owned();
        pack.shutdown().await;
        drop(pack);
        // A new pack over the same directory: the owner is on disk.
        let pack = start(root.path(), "user");
        assert_eq!(ids(&pack, &ada()).await, [session.as_str()]);
        assert!(ids(&pack, &eve()).await.is_empty());
    }

    #[tokio::test]
    async fn sessions_are_limited_per_owner_and_for_the_host() {
        let root = tempfile::tempdir().unwrap();
        let pack = PackTest::build(pack)
            .config(json!({
                "notebooks_dir": root.path(), "pool_size": 0,
                "max_sessions": 3, "max_sessions_per_owner": 2
            }))
            .start()
            .unwrap();
        let create = |caller: Owner| {
            let pack = &pack;
            async move { pack.call(&caller, "session_create", json!({})).await }
        };
        create(ada()).await.unwrap();
        create(ada()).await.unwrap();
        let full = create(ada()).await.unwrap_err();
        assert_eq!(full.code(), "LIMIT_EXCEEDED");
        assert!(
            full.to_string().contains("`max_sessions_per_owner`"),
            "{full}"
        );
        let mine = ids(&pack, &ada()).await;
        assert!(
            mine.iter().all(|id| full.to_string().contains(id)),
            "{full}"
        );
        create(bob()).await.unwrap();
        let host_full = create(eve()).await.unwrap_err();
        assert_eq!(host_full.code(), "LIMIT_EXCEEDED");
        assert!(
            host_full.to_string().contains("`max_sessions`"),
            "{host_full}"
        );
        // Nobody else's ids.
        for id in mine.iter().chain(&ids(&pack, &bob()).await) {
            assert!(!host_full.to_string().contains(id.as_str()), "{host_full}");
        }
        pack.shutdown().await;
    }

    #[tokio::test]
    async fn a_limit_of_zero_is_refused_at_start() {
        let root = tempfile::tempdir().unwrap();
        let started = PackTest::build(pack)
            .config(json!({"notebooks_dir": root.path(), "pool_size": 0, "max_sessions": 0}))
            .start();
        let error = started.err().expect("a limit of 0 is refused");
        assert!(error.to_string().contains("`max_sessions` is 0"), "{error}");
        let started = PackTest::build(pack)
            .config(json!({"notebooks_dir": root.path(), "limits": {"memory_mb": 0}}))
            .start();
        let error = started.err().expect("a bound of 0 is refused");
        assert!(
            error.to_string().contains("`limits.memory_mb` is 0"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn share_org_lets_the_organisation_share_and_nobody_else() {
        let root = tempfile::tempdir().unwrap();
        let pack = start(root.path(), "org");
        let created = pack
            .call(&ada(), "session_create", json!({}))
            .await
            .unwrap();
        let session = created["sessionId"].as_str().unwrap().to_owned();
        let args = json!({"sessionId": session, "source": "export const x = 1"});
        pack.call(&bob(), "cell_create", args).await.unwrap();
        assert_eq!(ids(&pack, &bob()).await, [session.as_str()]);
        let args = json!({"sessionId": session});
        let err = pack.call(&eve(), "cell_list", args).await.unwrap_err();
        assert_eq!(err.code(), codes::SESSION_NOT_FOUND);
        assert!(ids(&pack, &eve()).await.is_empty());
    }
}
