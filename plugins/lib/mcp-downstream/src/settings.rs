//! What a [`Pool`](crate::Pool) is told (its limits, where its messages
//! go) and how a request fails.

use std::{sync::Arc, time::Duration};

use crate::relay::Events;

/// How loud a pool message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// A downstream server's own stderr.
    Debug,
    /// Connections opened and closed.
    Info,
    /// Connections lost.
    Warn,
}

/// Where the pool's messages go (the host's log, or a pack's).
pub type Log = Arc<dyn Fn(Level, &str) + Send + Sync>;

/// Limits and rules of a [`Pool`](crate::Pool).
#[derive(Clone)]
pub struct PoolSettings {
    /// Starting a server and the MCP handshake, together.
    pub connect_timeout: Duration,
    /// A connection unused this long is closed (its process stopped).
    pub idle_ttl: Duration,
    /// Connections open at once; past it the least recently used is closed.
    pub max_connections: usize,
    /// Refuse HTTP endpoints on private and loopback addresses.
    pub forbid_private_addresses: bool,
    /// Where messages go.
    pub log: Log,
    /// Where servers' notifications outside a caller's request go.
    pub events: Events,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(20),
            idle_ttl: Duration::from_secs(600),
            max_connections: 64,
            forbid_private_addresses: false,
            log: Arc::new(|_, _| {}),
            events: Arc::new(|_, _| {}),
        }
    }
}

/// Why a downstream request gave no result. The host and `remote_mcp` turn
/// it into their failed call: `Rejected` as the tool's own error,
/// `Upstream` as `UPSTREAM_ERROR`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DownstreamError {
    /// The server answered with an error (a JSON-RPC error such as an
    /// unknown tool): its answer, to hand on as it is.
    Rejected(String),
    /// The connection failed: the server could not be started or reached,
    /// closed the connection, answered garbage, or not in time. A short
    /// reason without credentials.
    Upstream(String),
}
