//! A loaded pack and what serves its calls: a library through the pack ABI,
//! another MCP server, or the host itself. Only libraries cross the ABI;
//! the other two are called in-process, typed.

use std::{sync::Arc, time::Duration};

use catalog_search::Searcher;
use pack_api::{Manifest, PackBox};
use tokio::sync::watch;

use crate::{
    audit::Audit,
    builtin::{self, Builtin},
    error::{LoadError, LoadReason},
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
    Library(Library),
    /// Another MCP server (`kind = "mcp"`).
    Server(Box<ServerPack>),
    /// The host's own `packhost` pack.
    Host(Builtin),
}

impl Backend {
    /// Let it release what it holds (child processes, connections).
    pub async fn shutdown(&self) {
        match self {
            Self::Library(library) => {
                if let Ok(instance) = &*library.instance().await {
                    instance.shutdown().await;
                }
            }
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

/// What a library's load came to.
pub type Outcome = Arc<Result<PackBox, LoadError>>;

/// A pack library's instance: loaded at start, or still loading in the
/// background (its functions came from the catalog cache).
#[derive(Clone)]
pub struct Library {
    pack: String,
    outcome: watch::Receiver<Option<Outcome>>,
}

/// Where a library loading in the background puts its [`Outcome`].
pub struct Loading(watch::Sender<Option<Outcome>>);

impl Library {
    /// A library loaded already.
    pub fn loaded(pack: &str, instance: PackBox) -> Self {
        let (_, outcome) = watch::channel(Some(Arc::new(Ok(instance))));
        Self {
            pack: pack.to_owned(),
            outcome,
        }
    }

    /// A library that a [`Loading`] will load.
    pub fn loading(pack: &str) -> (Loading, Self) {
        let (sender, outcome) = watch::channel(None);
        let library = Self {
            pack: pack.to_owned(),
            outcome,
        };
        (Loading(sender), library)
    }

    /// Its instance once loaded, or why it did not load.
    pub async fn instance(&self) -> Outcome {
        if let Some(outcome) = &*self.outcome.borrow() {
            return Arc::clone(outcome);
        }
        let mut outcome = self.outcome.clone();
        match outcome.wait_for(Option::is_some).await {
            Ok(ready) => Arc::clone(ready.as_ref().expect("waited for it")),
            // The loading side is gone without an answer (it panicked).
            Err(_) => Arc::new(Err(LoadError {
                pack: self.pack.clone(),
                file: None,
                reason: LoadReason::Library("its load in the background stopped".to_owned()),
            })),
        }
    }
}

impl Loading {
    /// Give the waiting calls what the load came to.
    pub fn finish(self, outcome: Result<PackBox, LoadError>) {
        self.0.send_replace(Some(Arc::new(outcome)));
    }
}
