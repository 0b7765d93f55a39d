//! `[search]`: how `packhost.search` ranks, by BM25 alone or fused with a
//! sentence model's meaning (`catalog_search`). Nothing of the model is
//! loaded at start: the first search loads it, and it is unloaded when
//! idle, the memory going back to the OS.

use std::{sync::Arc, time::Duration};

use catalog_search::{Meanings, Searcher};

use crate::{
    config::SearchConfig,
    error::{ConfigCode, ConfigError, ConfigProblem},
};

/// The searcher `config` asks for. The model's folder is checked now
/// (cheaply: none of the weights are read), since a folder that cannot
/// load would quietly make every search worse.
pub fn searcher(config: &SearchConfig) -> Result<Arc<Searcher>, ConfigError> {
    let Some(dir) = &config.model else {
        return Ok(Arc::new(Searcher::new(None)));
    };
    let idle = Duration::from_secs(config.model_idle_secs);
    let meanings = Meanings::on_demand(dir, idle, return_freed_memory).map_err(|error| {
        ConfigError::one(
            ConfigProblem::new(ConfigCode::Path, format!("`search.model`: {error}"))
                .with_fix("`./dev run` installs the model; or remove `[search] model` to search by BM25 alone"),
        )
    })?;
    Ok(Arc::new(Searcher::new(Some(Arc::new(meanings)))))
}

/// Hands the pages that one-off work (a model's load, a catalog's
/// embedding, an unload) freed back to the OS: mimalloc keeps freed pages
/// for reuse otherwise, and the host's RSS would stay at its peak.
fn return_freed_memory() {
    // SAFETY: `mi_collect` takes no pointers; mimalloc is the global
    // allocator (main.rs), so this is the allocator that freed them.
    unsafe { libmimalloc_sys::mi_collect(true) }
}
