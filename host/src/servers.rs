//! Server packs: `[packs.<name>] kind = "mcp"` makes another MCP server a
//! pack. Its tools are the pack's functions (`<name>.<tool>` in `tools/list`,
//! `run` and code mode), its prompts the pack's prompts, its resources and
//! templates the pack's, all called through one connection pool.
//!
//! A server that is down at start-up does not hold the host: its pack loads
//! with no functions, a call to it says why, and a background task keeps
//! trying; once the server answers, its tools appear. A server that says
//! its lists changed is listed again.
//!
//! A stdio server runs in the sandbox with the policy of its section
//! (`sandbox`, `read`, `write`, `limits`; see `mcp_downstream::Confinement`).

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock, Weak},
    time::Duration,
};

use mcp_downstream::{DownstreamError as Downstream, Endpoint, Event, Level, Pool, PoolSettings};
use pack_api::{FunctionSpec, Manifest};

use crate::{
    backend::{Backend, LoadedPack},
    config::Config,
    executor::{Executor, Offers},
    server_pack::{Served, ServerPack, functions, offers},
};

/// How long start-up waits for a server's lists before going on without
/// them.
const STARTUP_WAIT: Duration = Duration::from_secs(10);

/// Retries of a server that was down: from 1 s, doubling, up to this.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// The server packs, to keep listing.
pub struct Servers {
    /// By pack name.
    all: HashMap<String, Arc<Server>>,
    /// Those whose lists are not known yet.
    pending: Vec<Arc<Server>>,
    /// Set once the executor exists: where lists go when they change.
    watched: Arc<OnceLock<Watched>>,
}

struct Watched {
    executor: Weak<Executor>,
    servers: HashMap<String, Arc<Server>>,
}

struct Server {
    name: String,
    endpoint: Endpoint,
    served: Arc<Served>,
    pool: Arc<Pool>,
}

impl Server {
    /// Its tools and offers now.
    async fn list(&self, wait: Duration) -> Result<(Vec<FunctionSpec>, Offers), Downstream> {
        let tools = self
            .pool
            .list_tools(&self.name, &self.endpoint, wait)
            .await?;
        let offers = offers(&self.pool, &self.name, &self.endpoint, wait, &self.served).await?;
        Ok((functions(&self.name, &tools, &self.served), offers))
    }
}

/// Connect every enabled server pack of `config` (all at once, each for at
/// most [`STARTUP_WAIT`]). Without server packs no pool is made: start-up
/// pays nothing for them.
pub async fn connect_all(config: &Config) -> (Vec<LoadedPack>, Servers) {
    let servers: Vec<(&String, &Endpoint, Option<u64>)> = config
        .packs
        .iter()
        .filter(|(_, p)| p.enabled)
        .filter_map(|(name, p)| Some((name, p.server()?, p.timeout_ms)))
        .collect();
    let watched = Arc::new(OnceLock::<Watched>::new());
    if servers.is_empty() {
        return (
            Vec::new(),
            Servers {
                all: HashMap::new(),
                pending: Vec::new(),
                watched,
            },
        );
    }
    let events = {
        let watched = Arc::clone(&watched);
        Arc::new(move |key: &str, event: Event| {
            if let Some(watched) = watched.get() {
                watched.heard(key, event);
            }
        })
    };
    let pool = Pool::new(PoolSettings {
        log: Arc::new(|level, message| match level {
            Level::Debug => tracing::debug!(target: "packhost::servers", "{message}"),
            Level::Info => tracing::info!(target: "packhost::servers", "{message}"),
            Level::Warn => tracing::warn!(target: "packhost::servers", "{message}"),
        }),
        events,
        ..PoolSettings::default()
    });
    for (name, endpoint, _) in &servers {
        if let Endpoint::Stdio { confinement, .. } = endpoint
            && let Ok(Some(warning)) = pack_sandbox::check_settings(
                confinement.mode,
                &confinement.limits,
                "the server runs",
            )
        {
            tracing::warn!(pack = %name, "{warning}");
        }
    }
    let connecting = servers.into_iter().map(|(name, endpoint, timeout_ms)| {
        let server = Arc::new(Server {
            name: name.clone(),
            endpoint: endpoint.clone(),
            served: Arc::default(),
            pool: Arc::clone(&pool),
        });
        let timeout = Duration::from_millis(timeout_ms.unwrap_or(config.server.timeout_ms));
        async move {
            let listed = tokio::time::timeout(STARTUP_WAIT, server.list(timeout))
                .await
                .unwrap_or_else(|_| {
                    Err(Downstream::Upstream(format!(
                        "no tool list within {} s",
                        STARTUP_WAIT.as_secs()
                    )))
                });
            (server, timeout, listed)
        }
    });
    let mut loaded = Vec::new();
    let mut all = HashMap::new();
    let mut pending = Vec::new();
    for (server, timeout, listed) in futures_util::future::join_all(connecting).await {
        let (functions, offers) = match listed {
            Ok(listed) => listed,
            Err(failure) => {
                server
                    .served
                    .set_unanswered(Some(reason(&failure).to_owned()));
                tracing::warn!(
                    pack = %server.name,
                    "server {} is not answering ({}); its tools appear once it does",
                    server.endpoint.describe(),
                    reason(&failure)
                );
                pending.push(Arc::clone(&server));
                (Vec::new(), Offers::default())
            }
        };
        let pack = ServerPack::new(
            server.name.clone(),
            server.endpoint.clone(),
            Arc::clone(&pool),
            Arc::clone(&server.served),
            timeout,
        );
        loaded.push(LoadedPack {
            name: server.name.clone(),
            origin: server.endpoint.describe(),
            manifest: Manifest {
                name: server.name.clone(),
                version: "mcp".to_owned(),
                description: format!("The MCP server {}", server.endpoint.describe()),
                functions,
                prompts: offers.prompts,
                resources: offers.resources,
                resource_templates: offers.templates,
                ..Manifest::default()
            },
            backend: Backend::Server(Box::new(pack)),
            timeout,
        });
        all.insert(server.name.clone(), server);
    }
    (
        loaded,
        Servers {
            all,
            pending,
            watched,
        },
    )
}

impl Servers {
    /// Keep asking the servers that were down for their lists, list again
    /// those that say theirs changed, and hand the lists to `executor`.
    pub fn watch(self, executor: &Arc<Executor>) {
        for pending in self.pending {
            tokio::spawn(retry(pending, Arc::downgrade(executor)));
        }
        let _ = self.watched.set(Watched {
            executor: Arc::downgrade(executor),
            servers: self.all,
        });
    }
}

impl Watched {
    /// What server connection `key` said outside a caller's request.
    fn heard(&self, key: &str, event: Event) {
        // A caller's connection is `pack@owner`; the pack's own is `pack`.
        let (pack, lane) = match key.split_once('@') {
            Some((pack, _)) => (pack, true),
            None => (key, false),
        };
        let Some(server) = self.servers.get(pack) else {
            return;
        };
        let listed = matches!(
            event,
            Event::ToolsChanged | Event::PromptsChanged | Event::ResourcesChanged
        );
        if lane {
            // Lists are the pack's own connection's; a caller's may differ
            // by what that session made.
            server.served.heard(pack, key, event);
        } else if listed {
            let server = Arc::clone(server);
            let executor = self.executor.clone();
            tokio::spawn(async move {
                match server.list(STARTUP_WAIT).await {
                    Ok(listed) => served(&server, listed, &executor),
                    Err(failure) => tracing::warn!(
                        pack = %server.name,
                        "the server's lists changed, and listing them again failed: {}",
                        reason(&failure)
                    ),
                }
            });
        }
    }
}

/// Serve `listed` as `server`'s functions and offers.
fn served(
    server: &Server,
    (functions, offers): (Vec<FunctionSpec>, Offers),
    executor: &Weak<Executor>,
) {
    let Some(executor) = executor.upgrade() else {
        return;
    };
    tracing::info!(pack = %server.name, tools = functions.len(), prompts = offers.prompts.len(), "the server's lists are served");
    executor.set_functions(&server.name, &functions);
    executor.set_offers(&server.name, offers);
}

async fn retry(server: Arc<Server>, executor: Weak<Executor>) {
    let mut delay = Duration::from_secs(1);
    loop {
        tokio::time::sleep(delay).await;
        if executor.strong_count() == 0 {
            return;
        }
        match server.list(STARTUP_WAIT).await {
            Err(failure) => server
                .served
                .set_unanswered(Some(reason(&failure).to_owned())),
            Ok(listed) => {
                server.served.set_unanswered(None);
                served(&server, listed, &executor);
                return;
            }
        }
        delay = (delay * 2).min(MAX_RETRY_DELAY);
    }
}

fn reason(failure: &Downstream) -> &str {
    match failure {
        Downstream::Rejected(message) | Downstream::Upstream(message) => message,
    }
}
