//! The pack's state: where interpreters come from (the zygote's warm pool,
//! or a fresh start for a call with a `cwd`), made from the config.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, OnceLock},
};

use beneath::{Dir, Links};
use pack_process::{Demand, Python, Replacement, Wanted, WarmPool};
use pack_sdk::PackError;
use tokio::sync::OnceCell;

use crate::{
    config::Config,
    interpreter::{Interpreter, Launcher, Settings},
    zygote::ForkServer,
};

/// The pack's state.
pub struct ExecPy {
    pub(crate) config: Config,
    pub(crate) interpreters: Arc<Interpreters>,
}

/// Where interpreters come from: the zygote for most calls, a fresh start
/// for a call with a `cwd`.
pub(crate) struct Interpreters {
    /// Resolved once, in the background from the start: start-up never
    /// waits for Python. `Err`: why there is no interpreter (every call says
    /// so).
    launcher: OnceCell<Result<Launcher, String>>,
    /// `python` of the config, resolved into the launcher.
    python: Option<PathBuf>,
    settings: Arc<Settings>,
    forks: ForkServer,
    /// Children forked ahead of demand, as many as recent calls took
    /// (`Config::demand`): moving a process into its cgroup waits for the
    /// kernel (milliseconds on cgroup v1), so it is done ahead of the calls.
    ready: OnceLock<WarmPool<Interpreter>>,
}

impl Interpreters {
    pub(crate) async fn launcher(&self) -> Result<&Launcher, PackError> {
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
    /// replacement is forked once the [`Replacement`] is dropped.
    pub(crate) async fn fork(
        self: &Arc<Self>,
        demand: Demand,
    ) -> Result<(Interpreter, Replacement<Interpreter>), PackError> {
        // Says why there is no interpreter, if there is none.
        self.launcher().await?;
        self.pool(demand)
            .take()
            .await
            .map_err(|e| PackError::internal(format!("cannot start Python: {e}")))
    }

    /// The children forked ahead of demand; filling from the first use.
    fn pool(self: &Arc<Self>, demand: Demand) -> &WarmPool<Interpreter> {
        self.ready.get_or_init(|| {
            let interpreters = Arc::downgrade(self);
            let idle = Arc::downgrade(self);
            WarmPool::following(
                demand,
                move |wanted| {
                    let interpreters = interpreters.clone();
                    async move {
                        let interpreters = interpreters
                            .upgrade()
                            .ok_or_else(|| std::io::Error::other("the pack is stopping"))?;
                        let launcher = interpreters
                            .launcher()
                            .await
                            .map_err(|e| std::io::Error::other(e.message().to_owned()))?;
                        // A call waiting for this child would only wait
                        // longer for its rehearsal.
                        let rehearse = wanted == Wanted::Ahead;
                        interpreters.forks.fork(launcher, rehearse).await
                    }
                },
                |interpreter: &mut Interpreter| interpreter.group.is_running(),
                // An idle pack holds no Python at all.
                move || {
                    if let Some(interpreters) = idle.upgrade() {
                        tokio::spawn(async move { interpreters.forks.stop_when_unused().await });
                    }
                },
            )
        })
    }

    /// The ready children ended, then the zygote.
    pub(crate) async fn stop(&self) {
        if let Some(pool) = self.ready.get() {
            pool.clear();
        }
        self.forks.stop().await;
    }
}

impl ExecPy {
    pub(crate) fn new(config: Config, host: &pack_sdk::Host) -> Result<Self, PackError> {
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
        interpreters.pool(config.demand());
        Ok(Self {
            config,
            interpreters,
        })
    }

    /// The `cwd` argument, opened when it is inside a `cwd_roots` folder.
    pub(crate) fn working_dir(&self, cwd: &Path) -> Result<Dir, PackError> {
        beneath::open_inside(&self.config.cwd_roots, cwd, Links::Inside).map_err(|e| {
            PackError::under_roots(
                "`cwd`",
                e,
                "leave `cwd` out to run in a fresh temporary folder, or add a root to \
                 `cwd_roots` in [packs.exec_py] config",
            )
        })
    }
}
