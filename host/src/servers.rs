//! Server packs: `[packs.<name>] kind = "mcp"` makes another MCP server a
//! pack. Its tools are the pack's functions (`<name>.<tool>` in `tools/list`,
//! `run` and code mode), called through one connection pool.
//!
//! A server that is down at start-up does not hold the host: its pack loads
//! with no functions, a call to it says why, and a background task keeps
//! trying; once the server answers, its tools appear.
//!
//! A stdio server runs in the sandbox with the policy of its section
//! (`sandbox`, `read`, `write`, `limits`; see `mcp_downstream::Confinement`).

use std::{
    sync::{Arc, Weak},
    time::Duration,
};

use mcp_downstream::{DownstreamError as Downstream, Endpoint, Level, Pool, PoolSettings};
use pack_api::Manifest;

use crate::{
    backend::{Backend, LoadedPack},
    config::Config,
    executor::Executor,
    server_pack::{Names, ServerPack, Unanswered, functions},
};

/// How long start-up waits for a server's tool list before going on
/// without it.
const STARTUP_WAIT: Duration = Duration::from_secs(10);

/// Retries of a server that was down: from 1 s, doubling, up to this.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// The server packs whose tools are not known yet.
pub struct Servers {
    pending: Vec<Pending>,
}

struct Pending {
    name: String,
    endpoint: Endpoint,
    names: Names,
    unanswered: Unanswered,
    pool: Arc<Pool>,
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
    if servers.is_empty() {
        return (
            Vec::new(),
            Servers {
                pending: Vec::new(),
            },
        );
    }
    let pool = Pool::new(PoolSettings {
        log: Arc::new(|level, message| match level {
            Level::Debug => tracing::debug!(target: "packhost::servers", "{message}"),
            Level::Info => tracing::info!(target: "packhost::servers", "{message}"),
            Level::Warn => tracing::warn!(target: "packhost::servers", "{message}"),
        }),
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
        let pool = Arc::clone(&pool);
        let timeout = Duration::from_millis(timeout_ms.unwrap_or(config.server.timeout_ms));
        let endpoint = endpoint.clone();
        async move {
            let tools =
                tokio::time::timeout(STARTUP_WAIT, pool.list_tools(name, &endpoint, timeout))
                    .await
                    .unwrap_or_else(|_| {
                        Err(Downstream::Upstream(format!(
                            "no tool list within {} s",
                            STARTUP_WAIT.as_secs()
                        )))
                    });
            (name.clone(), endpoint, timeout, tools)
        }
    });
    let mut loaded = Vec::new();
    let mut pending = Vec::new();
    for (name, endpoint, timeout, tools) in futures_util::future::join_all(connecting).await {
        let names = Names::default();
        let unanswered = Unanswered::default();
        let functions = match tools {
            Ok(tools) => functions(&name, &tools, &names),
            Err(failure) => {
                set(&unanswered, Some(reason(&failure).to_owned()));
                tracing::warn!(
                    pack = %name,
                    "server {} is not answering ({}); its tools appear once it does",
                    endpoint.describe(),
                    reason(&failure)
                );
                pending.push(Pending {
                    name: name.clone(),
                    endpoint: endpoint.clone(),
                    names: Arc::clone(&names),
                    unanswered: Arc::clone(&unanswered),
                    pool: Arc::clone(&pool),
                });
                Vec::new()
            }
        };
        let pack = ServerPack::new(
            name.clone(),
            endpoint.clone(),
            Arc::clone(&pool),
            names,
            unanswered,
            timeout,
        );
        loaded.push(LoadedPack {
            name: name.clone(),
            origin: endpoint.describe(),
            manifest: Manifest {
                name,
                version: "mcp".to_owned(),
                description: format!("Tools of the MCP server {}", endpoint.describe()),
                functions,
                ..Manifest::default()
            },
            backend: Backend::Server(Box::new(pack)),
            timeout,
        });
    }
    (loaded, Servers { pending })
}

impl Servers {
    /// Keep asking the servers that were down for their tools, and hand
    /// them to `executor` once they answer.
    pub fn watch(self, executor: &Arc<Executor>) {
        for pending in self.pending {
            tokio::spawn(retry(pending, Arc::downgrade(executor)));
        }
    }
}

async fn retry(pending: Pending, executor: Weak<Executor>) {
    let mut delay = Duration::from_secs(1);
    loop {
        tokio::time::sleep(delay).await;
        if executor.strong_count() == 0 {
            return;
        }
        let tools = pending
            .pool
            .list_tools(&pending.name, &pending.endpoint, STARTUP_WAIT)
            .await;
        match tools {
            Err(failure) => set(&pending.unanswered, Some(reason(&failure).to_owned())),
            Ok(tools) => {
                let specs = functions(&pending.name, &tools, &pending.names);
                set(&pending.unanswered, None);
                let Some(executor) = executor.upgrade() else {
                    return;
                };
                tracing::info!(pack = %pending.name, tools = specs.len(), "server answers; its tools are served");
                executor.set_functions(&pending.name, &specs);
                return;
            }
        }
        delay = (delay * 2).min(MAX_RETRY_DELAY);
    }
}

fn set(unanswered: &Unanswered, why: Option<String>) {
    *unanswered.write().unwrap_or_else(|e| e.into_inner()) = why;
}

fn reason(failure: &Downstream) -> &str {
    match failure {
        Downstream::Rejected(message) | Downstream::Upstream(message) => message,
    }
}
