//! Meaning, for the words BM25 cannot match: a sentence model's vector of
//! each tool's name and description, compared with the query's by cosine
//! ("who's carrying the pager" is near "list who is on call").
//!
//! Vectors are kept per text, so a catalog that changes (a server pack comes
//! or goes, another caller's allow-list) costs only its new tools.

use std::{
    collections::{HashMap, HashSet},
    path::Path,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use pack_api::CatalogTool;

use crate::{
    model::{InUse, Load, Model},
    words::split_identifiers,
};

/// A sentence model: one unit-length vector per text.
pub trait Sentences: Send + Sync {
    /// The vectors of `texts`, in order, all of one length and of norm 1.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String>;
    /// Whether `word` (lowercase) is a word of the model's vocabulary: a
    /// dictionary for mending typos.
    fn knows_word(&self, word: &str) -> bool;
}

impl Sentences for sentence_embedding::Model {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        sentence_embedding::Model::embed(self, texts).map_err(|e| e.to_string())
    }

    fn knows_word(&self, word: &str) -> bool {
        sentence_embedding::Model::knows_word(self, word)
    }
}

/// Texts kept before the cache starts again: 384 floats each, about 30 MB.
const KEPT_TEXTS: usize = 20_000;

/// A sentence model with the vectors of the texts it has seen. The vectors
/// outlive an unloaded model: loading it again costs no embedding.
pub struct Meanings {
    model: Model,
    kept: Mutex<HashMap<String, Arc<[f32]>>>,
    /// Held while texts are embedded, so that two searches of one new
    /// catalog embed it once.
    embedding: Mutex<()>,
    unreported: Mutex<WarmUp>,
}

/// One-off work done for searches (loading the model, embedding tools),
/// not yet reported by one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WarmUp {
    /// Loading the model, when it was loaded.
    pub model_load: Option<Duration>,
    /// Tools embedded.
    pub embedded: usize,
    /// Embedding them.
    pub embedding: Duration,
}

impl Meanings {
    /// Vectors of `sentences`, kept per text.
    pub fn new(sentences: Box<dyn Sentences>) -> Self {
        Self::with(Model::loaded(sentences))
    }

    /// Vectors of the all-MiniLM-L6-v2 in `dir` ([`sentence_embedding`]),
    /// loaded now.
    pub fn load(dir: &Path) -> Result<Self, sentence_embedding::LoadError> {
        Ok(Self::new(Box::new(sentence_embedding::Model::load(dir)?)))
    }

    /// Vectors of the all-MiniLM-L6-v2 in `dir`, checked now (cheaply,
    /// [`sentence_embedding::Model::check`]), loaded when a search first
    /// needs it and dropped after `idle` unused; `settle` runs after each
    /// one-off piece of work (a load, tools embedded, an unload).
    pub fn on_demand(
        dir: &Path,
        idle: Duration,
        settle: fn(),
    ) -> Result<Self, sentence_embedding::LoadError> {
        sentence_embedding::Model::check(dir)?;
        let dir = dir.to_owned();
        let load: Load = Box::new(move || {
            let model = sentence_embedding::Model::load(&dir).map_err(|e| e.to_string())?;
            Ok(Box::new(model) as Box<dyn Sentences>)
        });
        Ok(Self::with(Model::on_demand(load, idle, settle)))
    }

    fn with(model: Model) -> Self {
        Self {
            model,
            kept: Mutex::default(),
            embedding: Mutex::default(),
            unreported: Mutex::default(),
        }
    }

    /// Whether the model is in memory now.
    pub fn is_loaded(&self) -> bool {
        self.model.is_loaded()
    }

    /// The work done since the last call, if any.
    pub fn take_warm_up(&self) -> Option<WarmUp> {
        let warm_up = std::mem::take(&mut *self.unreported.lock().expect("warm-up"));
        (warm_up != WarmUp::default()).then_some(warm_up)
    }

    /// The model for one use; its load, when this use loads it, is
    /// reported by the next search.
    fn hold(&self) -> Result<InUse, String> {
        let (held, load) = self.model.hold()?;
        if let Some(took) = load {
            tracing::info!(ms = took.as_millis() as u64, "search model loaded");
            self.unreported.lock().expect("warm-up").model_load = Some(took);
        }
        Ok(held)
    }

    /// Whether `word` is in the model's vocabulary; a model that does not
    /// load knows no word.
    pub(crate) fn knows_word(&self, word: &str) -> bool {
        self.hold().is_ok_and(|model| model.knows_word(word))
    }

    pub(crate) fn query(&self, query: &str) -> Result<Vec<f32>, String> {
        let mut vectors = self.hold()?.embed(&[query])?;
        vectors
            .pop()
            .ok_or_else(|| "the model gave no vector".to_owned())
    }

    /// The vector of each of `texts`, if every one is kept.
    pub(crate) fn kept(&self, texts: &[String]) -> Option<Vec<Arc<[f32]>>> {
        let kept = self.kept.lock().expect("vector cache");
        texts.iter().map(|text| kept.get(text).cloned()).collect()
    }

    /// The vector of each of `texts`, embedding only those not kept.
    pub(crate) fn vectors(&self, texts: &[String]) -> Result<Vec<Arc<[f32]>>, String> {
        let _embedding = self.embedding.lock().expect("embedding");
        if let Some(vectors) = self.kept(texts) {
            return Ok(vectors);
        }
        let missing: Vec<&str> = {
            let kept = self.kept.lock().expect("vector cache");
            let mut missing: Vec<&str> = texts
                .iter()
                .filter(|t| !kept.contains_key(*t))
                .map(String::as_str)
                .collect();
            missing.sort_unstable();
            missing.dedup();
            missing
        };
        let model = self.hold()?;
        let started = Instant::now();
        let embedded = model.embed(&missing)?;
        drop(model);
        {
            let mut unreported = self.unreported.lock().expect("warm-up");
            unreported.embedded += missing.len();
            unreported.embedding += started.elapsed();
        }
        let mut kept = self.kept.lock().expect("vector cache");
        if kept.len() + embedded.len() > KEPT_TEXTS {
            let wanted: HashSet<&String> = texts.iter().collect();
            kept.retain(|text, _| wanted.contains(text));
        }
        for (text, vector) in missing.iter().zip(embedded) {
            kept.insert((*text).to_owned(), vector.into());
        }
        drop(kept);
        self.model.settle();
        self.kept(texts)
            .ok_or_else(|| "the model gave fewer vectors than texts".to_owned())
    }
}

/// The tools' vectors, with the model that made them.
pub(crate) struct Dense {
    meanings: Arc<Meanings>,
    vectors: Vec<Arc<[f32]>>,
}

impl Dense {
    /// The tools' vectors, one per text of [`texts`].
    pub(crate) fn new(meanings: Arc<Meanings>, vectors: Vec<Arc<[f32]>>) -> Self {
        Self { meanings, vectors }
    }

    pub(crate) fn meanings(&self) -> &Meanings {
        &self.meanings
    }

    /// Every tool's cosine with `query`, by position.
    pub(crate) fn similarities(&self, query: &[f32]) -> Vec<f32> {
        self.vectors
            .iter()
            .map(|vector| vector.iter().zip(query).map(|(a, b)| a * b).sum())
            .collect()
    }
}

/// What the model reads of each tool, in order.
pub(crate) fn texts(tools: &[CatalogTool]) -> Vec<String> {
    tools.iter().map(text).collect()
}

/// What the model reads of a tool: its name in words, then its
/// description. The parameters are left out: on the tuning half they made
/// the ranking worse (their words are about arguments, not the task).
fn text(tool: &CatalogTool) -> String {
    let pack = split_identifiers(&tool.pack).replace('_', " ");
    let function = split_identifiers(&tool.function).replace('_', " ");
    // A server's tool often repeats its pack: `github.github_create_issue`.
    let function = function
        .strip_prefix(&format!("{pack} "))
        .unwrap_or(&function);
    format!("{pack} {function}. {}", tool.description)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_reads_as_its_name_in_words_then_its_description() {
        let tool = |pack: &str, function: &str| CatalogTool {
            pack: pack.into(),
            function: function.into(),
            description: "Does it.".into(),
            ..CatalogTool::default()
        };
        assert_eq!(
            text(&tool("github", "github_create_issue")),
            "github create issue. Does it."
        );
        assert_eq!(
            text(&tool("gh", "listPullRequests")),
            "gh list Pull Requests. Does it."
        );
    }
}
