//! Indexes kept per catalog: a caller's catalog changes seldom (a server
//! pack comes or goes, an allow-list differs), and building the index of
//! 2,000 tools costs more than searching it.
//!
//! Embedding new tools takes about 5 ms each (a server of 2,000 tools:
//! ten seconds), after the model's load (~0.2 s) when it is not in memory,
//! longer than a search may wait: past [`EMBED_WAIT`] the search answers
//! by BM25 alone while the tools are embedded on, and the searches after
//! it rank by meaning too.

use std::{
    hash::{DefaultHasher, Hash, Hasher},
    sync::{Arc, Mutex, mpsc},
    time::Duration,
};

use pack_api::CatalogTool;

use crate::{Index, Meanings, WarmUp, dense};

/// Catalogs whose index is kept: callers with different allow-lists each
/// see a catalog of their own.
const KEPT_INDEXES: usize = 8;

/// How long a search waits for its catalog's new tools to be embedded.
const EMBED_WAIT: Duration = Duration::from_secs(3);

/// Builds and keeps the indexes of the catalogs searched lately.
pub struct Searcher {
    meanings: Option<Arc<Meanings>>,
    kept: Mutex<Vec<(u64, Arc<Index>)>>,
    embed_wait: Duration,
}

impl Searcher {
    /// Indexes by BM25, and by meaning when `meanings` is given.
    pub fn new(meanings: Option<Arc<Meanings>>) -> Self {
        Self {
            meanings,
            kept: Mutex::default(),
            embed_wait: EMBED_WAIT,
        }
    }

    /// Whether searches rank by meaning too (once the model is loaded and
    /// the catalog embedded).
    pub fn has_meanings(&self) -> bool {
        self.meanings.is_some()
    }

    /// The model's load and the embedding done since the last call, for
    /// the search that reports them.
    pub fn take_warm_up(&self) -> Option<WarmUp> {
        self.meanings.as_ref()?.take_warm_up()
    }

    /// The index of `tools`, built unless one of the same tools is kept.
    /// With a model, an index by BM25 alone (not kept) while the tools are
    /// still being embedded.
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
        let Some(index) = self.build(tools) else {
            return Arc::new(Index::new(tools));
        };
        let index = Arc::new(index);
        let mut kept = self.kept.lock().expect("kept indexes");
        if kept.len() >= KEPT_INDEXES {
            kept.remove(0);
        }
        kept.push((key, Arc::clone(&index)));
        index
    }

    /// The index to keep; `None` while the model is still embedding (or
    /// failed, which may pass).
    fn build(&self, tools: &[CatalogTool]) -> Option<Index> {
        let Some(meanings) = &self.meanings else {
            return Some(Index::new(tools));
        };
        let texts = dense::texts(tools);
        let vectors = match meanings.kept(&texts) {
            Some(vectors) => Ok(vectors),
            None => {
                let (sender, embedded) = mpsc::channel();
                let meanings = Arc::clone(meanings);
                std::thread::spawn(move || {
                    let _ = sender.send(meanings.vectors(&texts));
                });
                embedded.recv_timeout(self.embed_wait).ok()?
            }
        };
        match vectors {
            Ok(vectors) => Some(Index::with_vectors(tools, Arc::clone(meanings), vectors)),
            Err(error) => {
                tracing::warn!(%error, "the sentence model failed; this search is by BM25 alone");
                None
            }
        }
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

    /// A model that takes its time.
    struct Slow;

    impl crate::Sentences for Slow {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
            std::thread::sleep(Duration::from_millis(300));
            Ok(texts.iter().map(|_| vec![1.0]).collect())
        }

        fn knows_word(&self, _: &str) -> bool {
            false
        }
    }

    #[test]
    fn a_search_does_not_wait_for_a_slow_model_past_its_time() {
        let searcher = Searcher {
            embed_wait: Duration::from_millis(50),
            ..Searcher::new(Some(Arc::new(Meanings::new(Box::new(Slow)))))
        };
        let catalog = tools(&["read", "write"]);
        assert!(
            !searcher.index(&catalog).has_meanings(),
            "BM25 while embedding"
        );
        std::thread::sleep(Duration::from_millis(600));
        assert!(
            searcher.index(&catalog).has_meanings(),
            "the vectors were kept"
        );
    }
}
