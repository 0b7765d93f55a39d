//! Ranks a caller's tool catalog for a query in words. Who it is for: the
//! host's discovery functions (`packhost.search`), which hand it the tools a
//! caller may call and show the best few.
//!
//! ```
//! use catalog_search::Index;
//! # let tools: Vec<pack_api::CatalogTool> = vec![];
//! let index = Index::new(&tools);
//! let ranking = index.search("post a message to the deploys channel", 5);
//! for hit in &ranking.hits {
//!     println!("{}.{} {:.3}", tools[hit.index].pack, tools[hit.index].function, hit.score);
//! }
//! ```
//!
//! Three steps, each for what the others miss:
//! - **typos** (module `typos`): a query word nobody knows becomes the
//!   closest catalog word ("incidnet" -> "incident");
//! - **BM25** (module `lexical`): exact on names, ids and the catalog's own
//!   words, with a small vocabulary of task words;
//! - **meaning** (module `dense`), when a sentence model is given: the
//!   cosine of the query's vector with each tool's name and description,
//!   for words the catalog does not use ("who's carrying the pager" for
//!   on-call schedules).
//!
//! The two rankings are fused by reciprocal rank fusion (each tool scores
//! `1 / (K + rank)` in each list): ranks, not scores, so neither list's
//! scale has to be known, and a tool both lists like wins.
//!
//! The model can wait until a search needs it and go when unused
//! ([`Meanings::on_demand`], module `model`); what the first search after
//! such work paid is kept for it to report ([`WarmUp`]).
//!
//! Quality and cost are printed by `packhost-bench-context`, on the held-out
//! tasks of `tests/fixtures/discovery-eval.json` (tuned on the `tune` half
//! only) and on the 50 older tasks of `catalog-queries.json`.
#![deny(missing_docs)]

mod dense;
mod lexical;
mod model;
mod searcher;
mod typos;
mod vocabulary;
mod words;

use std::{collections::HashMap, sync::Arc};

use pack_api::CatalogTool;

pub use dense::{Meanings, Sentences, WarmUp};
pub use searcher::Searcher;

use dense::Dense;
use lexical::Lexical;
use typos::Typos;

/// Reciprocal rank fusion's K (how fast a lower rank stops counting) and
/// how much BM25's list counts against the model's. Chosen on the tuning
/// half (K 5, 10, 20, 60; weight 1 to 2), as the best there that keeps the
/// older 50 tasks at 46 in the top 3: the usual K of 60 flattens the top of
/// two short lists too much, and BM25 is the surer of the two on names.
const FUSION_K: f32 = 5.0;
const LEXICAL_WEIGHT: f32 = 1.25;

/// Below this best cosine the model sees nothing like the query: on the
/// tuning half 95% of tasks are above it, and questions no tool answers
/// ("order a pizza", "how tall is Everest") are below it.
const WEAK_SIMILARITY: f32 = 0.25;

/// The tools of one catalog, ready to be searched.
pub struct Index {
    lexical: Lexical,
    typos: Typos,
    dense: Option<Dense>,
}

/// One ranked tool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Position of the tool in the slice the index was built from.
    pub index: usize,
    /// Relevance: higher is better; only comparable within one search.
    pub score: f32,
}

/// The best tools for a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// Best first.
    pub hits: Vec<Hit>,
    /// Nothing matches well: the hits are guesses.
    pub weak: bool,
}

impl Index {
    /// Indexes `tools` for BM25 alone; hits refer to them by position.
    pub fn new(tools: &[CatalogTool]) -> Self {
        Self {
            lexical: Lexical::new(tools),
            typos: typos(tools),
            dense: None,
        }
    }

    /// Indexes `tools` for BM25 and for meaning, embedding those whose
    /// vectors are not kept; fails when the model does.
    pub fn with_meanings(tools: &[CatalogTool], meanings: Arc<Meanings>) -> Result<Self, String> {
        let vectors = meanings.vectors(&dense::texts(tools))?;
        Ok(Self::with_vectors(tools, meanings, vectors))
    }

    /// `tools` with their vectors, one per text of `dense::texts`.
    fn with_vectors(
        tools: &[CatalogTool],
        meanings: Arc<Meanings>,
        vectors: Vec<Arc<[f32]>>,
    ) -> Self {
        Self {
            dense: Some(Dense::new(meanings, vectors)),
            ..Self::new(tools)
        }
    }

    /// Whether the index ranks by meaning too.
    pub fn has_meanings(&self) -> bool {
        self.dense.is_some()
    }

    /// The best `limit` tools for `query`. With BM25 alone only tools that
    /// share a word with the query are found, and the ranking is weak when
    /// none does.
    pub fn search(&self, query: &str, limit: usize) -> Ranking {
        let known = |word: &str| {
            self.dense
                .as_ref()
                .is_some_and(|dense| dense.meanings().knows_word(word))
        };
        let query = self.typos.mend(query, &known);
        let lexical = self.lexical.rank(&query);
        let meaning = match &self.dense {
            Some(dense) if !query.trim().is_empty() => dense
                .meanings()
                .query(&words::without_arguments(&query))
                .inspect_err(
                    |error| tracing::warn!(%error, "the sentence model failed; BM25 alone"),
                )
                .ok()
                .map(|vector| dense.similarities(&vector)),
            _ => None,
        };
        let (mut hits, weak) = match meaning {
            None => {
                let weak = lexical.is_empty();
                (lexical, weak)
            }
            Some(similarities) => {
                let best = similarities.iter().copied().fold(f32::MIN, f32::max);
                (fuse(&lexical, &similarities), best < WEAK_SIMILARITY)
            }
        };
        hits.truncate(limit);
        Ranking { hits, weak }
    }
}

/// Reciprocal rank fusion of the BM25 ranking and the ranking by cosine.
fn fuse(lexical: &[Hit], similarities: &[f32]) -> Vec<Hit> {
    let mut by_meaning: Vec<usize> = (0..similarities.len()).collect();
    by_meaning.sort_by(|a, b| similarities[*b].total_cmp(&similarities[*a]).then(a.cmp(b)));
    let mut scores: HashMap<usize, f32> = HashMap::new();
    let ranked = lexical
        .iter()
        .enumerate()
        .map(|(rank, hit)| (rank, hit.index, LEXICAL_WEIGHT))
        .chain(
            by_meaning
                .into_iter()
                .enumerate()
                .map(|(rank, index)| (rank, index, 1.0)),
        );
    for (rank, index, weight) in ranked {
        *scores.entry(index).or_default() += weight / (FUSION_K + rank as f32 + 1.0);
    }
    best_first(scores)
}

/// Tools by score, best first; ties keep catalog order.
fn best_first(scores: HashMap<usize, f32>) -> Vec<Hit> {
    let mut hits: Vec<Hit> = scores
        .into_iter()
        .map(|(index, score)| Hit { index, score })
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
    hits
}

/// The words typos are mended with: every name, description and parameter.
fn typos(tools: &[CatalogTool]) -> Typos {
    let texts: Vec<String> = tools
        .iter()
        .map(|tool| {
            format!(
                "{} {} {} {}",
                tool.pack,
                tool.function,
                tool.description,
                lexical::parameters_text(tool)
            )
        })
        .collect();
    Typos::new(texts.iter().map(String::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(
        pack: &str,
        function: &str,
        description: &str,
        input_schema: serde_json::Value,
    ) -> CatalogTool {
        CatalogTool {
            pack: pack.into(),
            function: function.into(),
            signature: format!("{pack}.{function}()"),
            description: description.into(),
            input_schema,
            output_schema: json!(true),
            ..CatalogTool::default()
        }
    }

    #[test]
    fn a_word_in_the_name_outranks_it_in_a_parameter() {
        let tools = [
            tool(
                "mail",
                "send",
                "Send an email.",
                json!({"type": "object", "properties": {
                "to": {"type": "string", "description": "Recipient."},
                "attachments": {"type": "array", "description": "Files to attach to the message."}}}),
            ),
            tool(
                "mail",
                "get_attachment",
                "Download a file from a message.",
                json!({"type": "object"}),
            ),
        ];
        let hits = Index::new(&tools).search("attachments", 5).hits;
        assert_eq!(hits.iter().map(|h| h.index).collect::<Vec<_>>(), [1, 0]);
    }

    #[test]
    fn stemming_and_stop_words() {
        let tools = [
            tool(
                "ci",
                "rerun",
                "Rerun the failed jobs of a workflow.",
                json!({}),
            ),
            tool("ci", "cancel", "Cancel a running workflow.", json!({})),
        ];
        let index = Index::new(&tools);
        assert_eq!(index.search("which job failed", 1).hits[0].index, 0);
        assert!(index.search("the of a", 5).hits.is_empty());
        assert!(index.search("", 5).weak);
    }

    #[test]
    fn task_words_reach_catalog_words() {
        let tools = [
            tool("github", "create_issue", "Create a new issue.", json!({})),
            tool(
                "github",
                "create_pull_request",
                "Open a new pull request.",
                json!({}),
            ),
        ];
        assert_eq!(Index::new(&tools).search("open a PR", 1).hits[0].index, 1);
    }

    #[test]
    fn words_written_apart_find_a_name_written_together() {
        let tools = [
            tool("pagerduty", "list_services", "List services.", json!({})),
            tool(
                "pagerduty",
                "list_oncalls",
                "List who is scheduled now.",
                json!({}),
            ),
        ];
        let hits = Index::new(&tools).search("who is on call", 5).hits;
        assert_eq!(hits.iter().map(|h| h.index).collect::<Vec<_>>(), [1]);
    }

    /// A sentence model of a few meanings, each a set of words.
    struct Meanings3;

    impl Sentences for Meanings3 {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
            const MEANINGS: [&[&str]; 3] =
                [&["pager", "on call"], &["meeting", "event"], &["broken"]];
            Ok(texts
                .iter()
                .map(|text| {
                    let text = text.to_lowercase();
                    let mut vector: Vec<f32> = MEANINGS
                        .iter()
                        .map(|words| f32::from(u8::from(words.iter().any(|w| text.contains(w)))))
                        .collect();
                    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt().max(1.0);
                    vector.iter_mut().for_each(|x| *x /= norm);
                    vector
                })
                .collect())
        }

        fn knows_word(&self, word: &str) -> bool {
            word == "pager"
        }
    }

    fn with_meanings(tools: &[CatalogTool]) -> Index {
        Index::with_meanings(tools, Arc::new(Meanings::new(Box::new(Meanings3)))).unwrap()
    }

    #[test]
    fn meaning_finds_what_no_word_matches_and_says_when_nothing_does() {
        let tools = [
            tool("calendar", "create_event", "Create an event.", json!({})),
            tool(
                "pagerduty",
                "list_oncalls",
                "List who is on call now.",
                json!({}),
            ),
        ];
        let index = with_meanings(&tools);
        let found = index.search("who carries the pager tonight", 2);
        assert_eq!(found.hits[0].index, 1);
        assert!(!found.weak);
        // BM25 alone finds nothing, and says so.
        assert!(Index::new(&tools).search("carries the pager", 2).weak);
        let nothing = index.search("order a pizza", 2);
        assert!(nothing.weak);
        assert_eq!(nothing.hits.len(), 2, "still the best guesses");
    }

    #[test]
    fn a_tool_both_rankings_like_wins() {
        let tools = [
            tool("calendar", "create_event", "Create a meeting.", json!({})),
            tool("calendar", "delete_event", "Delete an event.", json!({})),
            tool("ci", "create_job", "Create a job.", json!({})),
        ];
        // BM25 likes both `create`s, meaning both events: the event created.
        let found = with_meanings(&tools).search("create a meeting for friday", 3);
        assert_eq!(found.hits[0].index, 0);
    }

    #[test]
    fn no_tools_no_hits() {
        assert!(Index::new(&[]).search("anything", 5).hits.is_empty());
    }
}
