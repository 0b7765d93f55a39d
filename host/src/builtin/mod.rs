//! The `packhost` pack: the host's own functions, served like any pack's
//! (listed, validated, callable from `run` and from code): what a caller can
//! call, found on demand instead of read from a long tool list, and the
//! results too large to send, read by handle. Every answer comes from the
//! caller's own catalog and results, so nothing outside its allow-list, and
//! nobody else's result, is ever shown.
//!
//! Called in-process and typed: each function is declared once, in
//! [`table`], with its argument type, schemas, title and handler.

use std::sync::Arc;

use catalog_search::Searcher;
use pack_api::{Catalog, Manifest, Owner, codes};
use serde_json::Value;

use crate::{
    audit::Audit,
    failure::Failure,
    results::{Kept, Results},
};

mod audit;
mod catalog;
mod kept;
mod table;

/// The pack's call name.
pub use crate::tool_name::HOST_PACK as PACK;

/// Its functions that find the others: listed whatever `expose` says.
pub const DISCOVERY: [&str; 3] = ["search", "describe", "packs"];

/// The `packhost` pack over the host's kept results and its search.
pub struct Builtin {
    results: Arc<Results>,
    searcher: Arc<Searcher>,
    audit: Audit,
}

/// What one call of a `packhost` function reads: the caller's catalog, its
/// kept results, the search over catalogs, and the audit trail (which only
/// an admin's calls reach, and only for their organisation).
struct Request {
    results: Arc<Results>,
    searcher: Arc<Searcher>,
    audit: Audit,
    owner: Owner,
    catalog: Arc<Catalog>,
}

impl Request {
    /// The caller's kept result `handle`. Runs on the blocking pool (see
    /// [`Builtin::call`]), where waiting for the store is allowed.
    fn kept(&self, handle: &str) -> Result<Kept, Failure> {
        let found =
            tokio::runtime::Handle::current().block_on(self.results.get(&self.owner, handle));
        found?.ok_or_else(|| {
            Failure::new(
                codes::NOT_FOUND,
                format!("no kept result `{handle}`: it is unknown or has expired"),
            )
            .with_help("call the tool again for a fresh result and handle")
        })
    }
}

impl Builtin {
    /// The pack over `results`, searching with `searcher`, reading `audit`.
    pub fn new(results: Arc<Results>, searcher: Arc<Searcher>, audit: Audit) -> Self {
        Self {
            results,
            searcher,
            audit,
        }
    }

    /// What the pack says about itself.
    pub fn manifest() -> Manifest {
        Manifest {
            name: PACK.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            description: "Find what you can call (search, describe, list packs), read results kept by handle, and (an organisation's admin) read its audit trail".to_owned(),
            functions: table::specs(),
            ..Manifest::default()
        }
    }

    /// Call `function` for `owner`, who sees `catalog`.
    pub async fn call(
        &self,
        function: &str,
        args: Value,
        owner: Owner,
        catalog: Arc<Catalog>,
    ) -> Result<Value, Failure> {
        let Some(entry) = table::entry(function) else {
            return Err(Failure::new(
                codes::UNKNOWN_FUNCTION,
                format!("the packhost pack has no function `{function}`"),
            ));
        };
        let request = Request {
            results: Arc::clone(&self.results),
            searcher: Arc::clone(&self.searcher),
            audit: self.audit.clone(),
            owner,
            catalog,
        };
        // Searching megabytes of a kept result, or embedding a catalog's
        // new tools, is blocking work.
        tokio::task::spawn_blocking(move || entry.run(&request, args))
            .await
            .unwrap_or_else(|e| Err(Failure::internal(format!("the packhost pack failed: {e}"))))
    }
}
