//! `[search]`: how `packhost.search` ranks, by BM25 alone or fused with a
//! sentence model's meaning (`catalog_search`).

use std::{sync::Arc, time::Instant};

use catalog_search::{Meanings, Searcher};

use crate::{
    config::SearchConfig,
    error::{ConfigCode, ConfigError, ConfigProblem},
    executor::Executor,
};

/// The searcher `config` asks for; a model that does not load stops the
/// start, since searches would quietly be worse.
pub fn searcher(config: &SearchConfig) -> Result<Arc<Searcher>, ConfigError> {
    let Some(dir) = &config.model else {
        return Ok(Arc::new(Searcher::new(None)));
    };
    let started = Instant::now();
    let meanings = Meanings::load(dir).map_err(|error| {
        ConfigError::one(
            ConfigProblem::new(ConfigCode::Path, format!("`search.model`: {error}"))
                .with_fix("`./dev run` installs the model; or remove `[search] model` to search by BM25 alone"),
        )
    })?;
    tracing::info!(model = %dir.display(), ms = started.elapsed().as_millis() as u64, "search ranks by meaning too");
    Ok(Arc::new(Searcher::new(Some(Arc::new(meanings)))))
}

/// Indexes the whole catalog in the background, so that the first search
/// does not wait for its tools to be embedded (callers' catalogs are parts
/// of it: their tools' vectors are then kept).
pub fn warm(searcher: &Arc<Searcher>, executor: &Executor) {
    if !searcher.has_meanings() {
        return;
    }
    let (searcher, catalog) = (Arc::clone(searcher), executor.whole_catalog());
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        searcher.index(&catalog.tools);
        tracing::debug!(
            tools = catalog.tools.len(),
            ms = started.elapsed().as_millis() as u64,
            "search index warm"
        );
    });
}
