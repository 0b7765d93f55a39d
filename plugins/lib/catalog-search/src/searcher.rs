//! Indexes kept per catalog: a caller's catalog changes seldom (a server
//! pack comes or goes, an allow-list differs), and building the index of
//! 2,000 tools costs more than searching it.

use std::{
    hash::{DefaultHasher, Hash, Hasher},
    sync::{Arc, Mutex},
};

use pack_api::CatalogTool;

use crate::{Index, Meanings};

/// Catalogs whose index is kept: callers with different allow-lists each
/// see a catalog of their own.
const KEPT_INDEXES: usize = 8;

/// Builds and keeps the indexes of the catalogs searched lately.
pub struct Searcher {
    meanings: Option<Arc<Meanings>>,
    kept: Mutex<Vec<(u64, Arc<Index>)>>,
}

impl Searcher {
    /// Indexes by BM25, and by meaning when `meanings` is given.
    pub fn new(meanings: Option<Arc<Meanings>>) -> Self {
        Self {
            meanings,
            kept: Mutex::default(),
        }
    }

    /// Whether searches rank by meaning too.
    pub fn has_meanings(&self) -> bool {
        self.meanings.is_some()
    }

    /// The index of `tools`, built unless one of the same tools is kept.
    pub fn index(&self, tools: &[CatalogTool]) -> Arc<Index> {
        let key = fingerprint(tools);
        let mut kept = self.kept.lock().expect("kept indexes");
        if let Some(at) = kept.iter().position(|(k, _)| *k == key) {
            let entry = kept.remove(at);
            let index = Arc::clone(&entry.1);
            kept.push(entry);
            return index;
        }
        drop(kept);
        let index = Arc::new(self.build(tools));
        let mut kept = self.kept.lock().expect("kept indexes");
        if kept.len() >= KEPT_INDEXES {
            kept.remove(0);
        }
        kept.push((key, Arc::clone(&index)));
        index
    }

    fn build(&self, tools: &[CatalogTool]) -> Index {
        let Some(meanings) = &self.meanings else {
            return Index::new(tools);
        };
        Index::with_meanings(tools, Arc::clone(meanings)).unwrap_or_else(|error| {
            tracing::warn!(%error, "the sentence model failed; this catalog is searched by BM25 alone");
            Index::new(tools)
        })
    }
}

/// What an index is built from: names, signatures (parameters and their
/// types) and descriptions, in order.
fn fingerprint(tools: &[CatalogTool]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for tool in tools {
        (
            &tool.pack,
            &tool.function,
            &tool.signature,
            &tool.description,
        )
            .hash(&mut hasher);
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(names: &[&str]) -> Vec<CatalogTool> {
        names
            .iter()
            .map(|name| CatalogTool {
                pack: "p".into(),
                function: (*name).into(),
                description: format!("Does {name}."),
                ..CatalogTool::default()
            })
            .collect()
    }

    #[test]
    fn an_index_is_kept_per_catalog() {
        let searcher = Searcher::new(None);
        let first = searcher.index(&tools(&["read", "write"]));
        assert!(Arc::ptr_eq(
            &first,
            &searcher.index(&tools(&["read", "write"]))
        ));
        let other = searcher.index(&tools(&["read"]));
        assert!(!Arc::ptr_eq(&first, &other));
        for n in 0..KEPT_INDEXES {
            searcher.index(&tools(&[&format!("f{n}")]));
        }
        assert!(
            !Arc::ptr_eq(&first, &searcher.index(&tools(&["read", "write"]))),
            "the oldest went"
        );
    }
}
