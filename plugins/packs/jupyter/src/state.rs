//! The pack's state, made from its config: the backend and the sessions.

use std::{sync::Arc, time::Duration};

use pack_sdk::{Host, PackError, owned::Table};

use crate::{
    config::{BackendKind, Config},
    kernel::Backend,
    local, server,
    sessions::{SESSIONS, Session},
};

/// The pack's state.
pub struct Jupyter {
    pub(crate) config: Config,
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) sessions: Arc<Table<Session>>,
}

impl Jupyter {
    pub(crate) fn new(config: Config, host: &Host) -> Result<Self, PackError> {
        let backend: Arc<dyn Backend> = match config.backend {
            BackendKind::Local => {
                let sandbox = config
                    .children
                    .sandbox("Jupyter kernels run", host)
                    .map_err(config_error)?;
                let settings = local::Settings {
                    env: config.children.env(),
                    // One folder per kernel inside (removed with it).
                    root: std::env::temp_dir().join("packhost-jupyter"),
                    startup_timeout: Duration::from_secs(config.startup_timeout_secs.max(1)),
                    sandbox,
                    limits: config.children.limits.clone(),
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
        let sessions =
            Table::<Session>::new(SESSIONS, config.sessions.share, config.sessions.limits())
                .map_err(config_error)?;
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

    pub(crate) fn backend_name(&self) -> String {
        match self.config.backend {
            BackendKind::Local => "local",
            BackendKind::Server => "server",
        }
        .to_owned()
    }
}

/// A refused setting, said to be the pack's config (the host reports the
/// start-up failure without naming where it came from).
fn config_error(e: PackError) -> PackError {
    PackError::invalid_argument(format!("config of pack `jupyter`: {}", e.message()))
}
