//! The pack's state, made from its config: the backend and the sessions.

use std::{sync::Arc, time::Duration};

use pack_sdk::{
    Host, PackError,
    owned::{Lease, Owner, Table},
};

use crate::{
    config::{BackendKind, Config},
    kernel::Backend,
    local, server,
    sessions::{SESSIONS, Session},
    shared::{CONNECTIONS, Shared},
};

/// The pack's state.
pub struct Jupyter {
    pub(crate) config: Config,
    pub(crate) backend: Arc<dyn Backend>,
    /// The sessions; with `shared`, this instance's connections to them.
    pub(crate) sessions: Arc<Table<Session>>,
    /// The sessions every instance finds, in the host's `[state] database`.
    pub(crate) shared: Option<Arc<Shared>>,
}

impl Jupyter {
    pub(crate) fn new(config: Config, host: &Host) -> Result<Self, PackError> {
        let mut server = None;
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
                let backend = Arc::new(backend);
                server = Some(Arc::clone(&backend));
                backend
            }
        };
        let share = config.sessions.share;
        let limits = config.sessions.limits();
        limits.validate(&SESSIONS).map_err(config_error)?;
        let ttl = Duration::from_secs(config.session_ttl_secs.max(1));
        // Kernels launched here are this instance's alone, whatever the host
        // shares: only a Jupyter Server's are reachable from every instance.
        let rows = server
            .zip(host.state_database())
            .and_then(|(server, database)| {
                let rows =
                    state_store::State::open(Some(database.to_owned())).pack_sessions("jupyter")?;
                Some(Arc::new(Shared::new(rows, server, share, limits)))
            });
        let table_limits = if rows.is_some() { CONNECTIONS } else { limits };
        let sessions =
            Arc::new(Table::<Session>::new(SESSIONS, share, table_limits).map_err(config_error)?);
        match &rows {
            Some(shared) => shared.spawn_reaper(&sessions, ttl),
            // Idle past the TTL: closed.
            None => sessions.spawn_reaper(
                ttl,
                |session| async move { session.kernel.shutdown().await },
            ),
        }
        Ok(Self {
            config,
            backend,
            sessions,
            shared: rows,
        })
    }

    /// Session `id` (or the session of kernel `id`) if `caller` may use it;
    /// else exactly what an unknown id gets. Shared sessions are looked up
    /// in the database first, and connected to from here on first use.
    pub(crate) async fn session(
        &self,
        caller: &Owner,
        id: &str,
    ) -> Result<Lease<Session>, PackError> {
        match &self.shared {
            None => self.sessions.get(caller, id),
            Some(shared) => {
                let found = shared.find(caller, id).await?;
                shared.connect(&self.sessions, caller, found).await
            }
        }
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
