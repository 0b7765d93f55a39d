//! The pack's state, made from its config, and what every function shares:
//! file work off the async workers, the caller's session under the lock,
//! time limits.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use beneath::Links;
use pack_sdk::{Context, Host, PackError, codes, owned::Ownership};

use crate::{
    config::Config,
    node::{Confinement, ExecOutput, Runner, Tools},
    notebook::{Notebooks, SessionMeta},
    npm::Npm,
    realm::Realms,
    typecheck::{Checker, NO_COMPILER},
};

/// How many times a change is made before a `CONFLICT` is answered.
const TRIES: usize = 5;

/// Default time limit of code (ms).
const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// The pack's state.
pub struct State {
    pub(crate) runner: Runner,
    /// Warm workers for blocks that need nothing of node's; `None` when node
    /// was not found or `realm_workers` is 0.
    pub(crate) realms: Option<Realms>,
    /// The TypeScript compiler, when configured.
    pub(crate) checker: Option<Checker>,
    /// Whether TypeScript is checked unless a call says otherwise.
    pub(crate) typecheck: bool,
    pub(crate) notebooks: Notebooks,
    pub(crate) npm: Npm,
    /// Code's way out when `network` lists hosts.
    _code_proxy: Option<egress::Proxy>,
    cwd_roots: Vec<PathBuf>,
    pub(crate) cwd_writable: bool,
    /// Held around every read-modify-write of a session's metadata.
    lock: Mutex<()>,
}

impl State {
    /// State from the pack's config: nothing starts before a call needs it.
    pub fn new(config: Config, host: &Host) -> Result<Self, PackError> {
        let sandbox = config
            .children
            .sandbox("TypeScript/JavaScript code and npm run", host)?;
        if config.max_output_bytes == 0 {
            return Err(PackError::invalid_argument(
                "`max_output_bytes` is 0; give the cap of each output stream in bytes (default 1048576)",
            ));
        }
        let demand = config.demand();
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
        // Relative: the host's working folder's (each instance's own).
        let notebooks_dir = std::path::absolute(&notebooks_dir)
            .map_err(|e| PackError::invalid_argument(format!("`notebooks_dir`: {e}")))?;
        let sessions = &config.sessions;
        let ownership = Ownership::new(sessions.share);
        let notebooks = Notebooks::new(
            notebooks_dir,
            ownership,
            sessions.limits(),
            host.state_database().map(str::to_owned),
        )?;
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
            limits: config.children.limits.clone(),
            code_network: egress.network,
            code_env: egress.env,
        };
        let runner = Runner::new(
            tools,
            config.children.env(),
            config.max_output_bytes,
            demand,
            confinement,
        );
        if config.realm_idle_ms == 0 {
            return Err(PackError::invalid_argument(
                "`realm_idle_ms` is 0; give how long an idle realm worker is kept, in milliseconds (default 60000)",
            ));
        }
        let realms = runner
            .launcher()
            .filter(|_| config.realm_workers > 0)
            .map(|launcher| {
                Realms::new(
                    launcher.clone(),
                    runner.limit(),
                    config.realm_workers,
                    Duration::from_millis(config.realm_idle_ms),
                )
            });
        Ok(Self {
            runner,
            realms,
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
    pub(crate) fn inside_roots<T>(
        &self,
        what: &str,
        path: &Path,
        way_out: &str,
        open: fn(&[PathBuf], &Path, Links) -> std::io::Result<T>,
    ) -> Result<T, PackError> {
        open(&self.cwd_roots, path, Links::Inside).map_err(|e| {
            PackError::under_roots(
                what,
                e,
                format!("{way_out}, or add a root to `cwd_roots` in [packs.exec_ts] config"),
            )
        })
    }

    /// `work` on the notebooks, under the lock.
    pub(crate) fn locked<T>(&self, work: impl FnOnce(&Notebooks) -> T) -> T {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        work(&self.notebooks)
    }

    /// `work` on the caller's session `id`, loaded under the lock, off the
    /// async workers. A session that is not the caller's is answered as an
    /// unknown one. A change that lost to another instance's (`CONFLICT`)
    /// is made again on the session as it is now, a few times.
    pub(crate) async fn in_session<T: Send + 'static>(
        self: &Arc<Self>,
        ctx: &Context,
        id: String,
        work: impl FnMut(&Notebooks, SessionMeta) -> Result<T, PackError> + Send + 'static,
    ) -> Result<T, PackError> {
        self.session_then(ctx, id, |e| e, work).await
    }

    /// [`Self::in_session`] for the functions that answer with a run
    /// (`cell_execute`, `npm_install`): a session not found is a refused run.
    pub(crate) async fn in_session_run<T: Send + 'static>(
        self: &Arc<Self>,
        ctx: &Context,
        id: String,
        work: impl FnMut(&Notebooks, SessionMeta) -> Result<T, PackError> + Send + 'static,
    ) -> Result<T, PackError> {
        self.session_then(ctx, id, refused, work).await
    }

    async fn session_then<T: Send + 'static>(
        self: &Arc<Self>,
        ctx: &Context,
        id: String,
        missing: fn(PackError) -> PackError,
        mut work: impl FnMut(&Notebooks, SessionMeta) -> Result<T, PackError> + Send + 'static,
    ) -> Result<T, PackError> {
        let owner = self.notebooks.caller(ctx);
        blocking(self, move |state| {
            let mut tries = 1;
            loop {
                let done = state.locked(|nb| {
                    let meta = nb.load(&id, &owner).map_err(missing)?;
                    work(nb, meta)
                });
                match done {
                    Err(e) if e.code() == codes::CONFLICT && tries < TRIES => tries += 1,
                    done => return done,
                }
            }
        })
        .await
    }
}

/// File work blocks, so it runs off the async workers, with the state.
pub(crate) async fn blocking<T: Send + 'static>(
    state: &Arc<State>,
    work: impl FnOnce(&State) -> Result<T, PackError> + Send + 'static,
) -> Result<T, PackError> {
    let state = Arc::clone(state);
    pack_sdk::blocking("exec_ts", move || work(&state)).await
}

/// A not-found error served with the run shape: `CODE: message` in
/// `stderr`, exit code 1, no time.
pub(crate) fn refused(error: PackError) -> PackError {
    let output = ExecOutput::refused(format!("{}: {}", error.code(), error.message()));
    error.with_result(&output)
}

pub(crate) fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_MS
}

/// A `timeout` argument in milliseconds, 0 refused.
pub(crate) fn timeout_of(ms: u64) -> Result<Duration, PackError> {
    if ms == 0 {
        return Err(PackError::invalid_argument(
            "`timeout` is 0; give the time limit in milliseconds (default 30000)",
        ));
    }
    Ok(Duration::from_millis(ms))
}
