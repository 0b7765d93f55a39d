//! `[search]`: how `packhost.search` ranks.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[search]`: BM25 alone, or fused with a sentence model's meaning.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    /// The folder of a sentence model (all-MiniLM-L6-v2: `config.json`,
    /// `model.safetensors`, `tokenizer.json`), installed by `./dev run`.
    /// Unset: BM25 alone.
    pub model: Option<PathBuf>,
    /// Seconds without a search after which the model is unloaded (the
    /// tools' vectors stay); the next search loads it again.
    pub model_idle_secs: u64,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            model: None,
            model_idle_secs: 600,
        }
    }
}
