//! A loaded pack and what serves its calls: a library through the pack ABI,
//! another MCP server, or the host itself. Only libraries cross the ABI;
//! the other two are called in-process, typed.

use std::{sync::Arc, time::Duration};

use catalog_search::Searcher;
use pack_api::{Manifest, PackBox};

use crate::{
    audit::Audit,
    builtin::{self, Builtin},
    results::Results,
    server_pack::ServerPack,
};

/// A pack ready to serve calls.
pub struct LoadedPack {
    /// Call name (the `[packs.<name>]` key).
    pub name: String,
    /// Where it came from: the library file, or the server.
    pub origin: String,
    /// What the pack says about itself.
    pub manifest: Manifest,
    /// What serves its calls.
    pub backend: Backend,
    /// Time limit of one call.
    pub timeout: Duration,
}

/// What serves a pack's calls.
pub enum Backend {
    /// A pack library (`kind = "library"`), through the ABI.
    Library(PackBox),
    /// Another MCP server (`kind = "mcp"`).
    Server(Box<ServerPack>),
    /// The host's own `packhost` pack.
    Host(Builtin),
}

impl Backend {
    /// Let it release what it holds (child processes, connections).
    pub async fn shutdown(&self) {
        match self {
            Self::Library(instance) => instance.shutdown().await,
            Self::Server(server) => server.shutdown(),
            Self::Host(_) => {}
        }
    }
}

impl LoadedPack {
    /// The `packhost` pack over the host's kept `results`, `searcher` and
    /// `audit` trail.
    pub fn builtin(results: Arc<Results>, searcher: Arc<Searcher>, audit: Audit) -> Self {
        Self {
            name: builtin::PACK.to_owned(),
            origin: "built into the host".to_owned(),
            manifest: Builtin::manifest(),
            backend: Backend::Host(Builtin::new(results, searcher, audit)),
            timeout: Duration::from_secs(10),
        }
    }
}
