//! Ranks a caller's tool catalog for a query in words. Who it is for: the
//! host's discovery functions (`packhost.search`), which hand it the tools a
//! caller may call and show the best few.
//!
//! ```
//! use catalog_search::Index;
//! # let tools: Vec<pack_api::CatalogTool> = vec![];
//! let index = Index::new(&tools);
//! for hit in index.search("post a message to the deploys channel", 5) {
//!     println!("{}.{} {:.2}", tools[hit.index].pack, tools[hit.index].function, hit.score);
//! }
//! ```
//!
//! A tool is one BM25 document of three fields, weighted by repeating
//! their words (BM25F's weighted term frequency: one length and one rarity
//! per word across fields), name 3 > description 2 > parameters 1:
//! - the name: `pack` and `function`, split into words on punctuation and
//!   camelCase (`github_create_issue`, `listPullRequests`);
//! - the description;
//! - the parameters: the names, descriptions and enum values of the input
//!   schema's top-level `properties`.
//!
//! Words are lowercased, English stop words dropped, the rest stemmed
//! (Snowball: "issues" finds "issue", "merged" finds "merge"), numbers
//! dropped (`PR #91`: an argument, not what a tool does). A query also gets
//! its neighbouring words written together ("on call" finds `oncalls`) and,
//! at a lower weight, the catalog words for its task words from a small
//! vocabulary ("find" -> search list get, "PR" -> pull request, "alert" ->
//! monitor; module `vocabulary`), where the task word itself counts less.
//!
//! The ranking is the [`bm25`] crate: BM25 with an English tokenizer
//! (Unicode words, NLTK stop words, Snowball stemming), a handful of small
//! dependencies, no I/O, maintained (2.3.2, September 2025). Tantivy was the
//! alternative: a search engine with a schema, segments, a writer and
//! mmap'd or RAM directories, built for millions of documents, not for a
//! few hundred short ones indexed per call; probly-search has per-field
//! boosts but no stemming and no release since 2024.
//!
//! Quality, on `tests/fixtures/catalog-200.json` (245 tools of 16 services)
//! and its 50 tasks written before tuning (`tests/queries.rs`): the intended
//! tool is first for 37 and in the top 3 for 46. Without the vocabulary it
//! is 26 and 36: most misses of plain BM25 are words the catalog does not
//! use ("PR", "chat", "wiki", "find"). The vocabulary and the weights were
//! tuned on those tasks, so expect fewer on wording they have not seen.
//!
//! Cost: building per call is fine. For those 245 tools, building the index
//! takes about 5 ms and a query under 0.1 ms (release build, one core of a
//! shared 2-core EPYC; up to three times that while the machine compiles).
#![deny(missing_docs)]

mod vocabulary;
mod words;

use std::collections::{HashMap, HashSet};

use bm25::{Embedder, EmbedderBuilder, Scorer};
use pack_api::CatalogTool;

use vocabulary::Vocabulary;
use words::{Stems, Words};

/// How much a match in each field counts: a tool is named for what it does;
/// its description says more, with more words that are not the point; its
/// parameters say what it needs, not what it is for.
const NAME_WEIGHT: usize = 3;
const DESCRIPTION_WEIGHT: usize = 2;
const PARAMETERS_WEIGHT: usize = 1;

/// How much a task word of the vocabulary, and each catalog word it adds,
/// counts against another word the caller wrote.
const EXPANSION_WEIGHT: f32 = 0.7;

/// BM25's length normalisation (0 none, 1 full) and term saturation.
const B: f32 = 0.5;
const K1: f32 = 1.2;

/// The tools of one catalog, ready to be searched.
pub struct Index {
    embedder: Embedder<u32, Stems>,
    scorer: Scorer<usize>,
    words: Words,
    vocabulary: Vocabulary,
}

/// One ranked tool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Position of the tool in the slice the index was built from.
    pub index: usize,
    /// Relevance: higher is better; only comparable within one search.
    pub score: f32,
}

impl Index {
    /// Indexes `tools`; hits refer to them by position.
    pub fn new(tools: &[CatalogTool]) -> Self {
        let words = Words::new();
        let documents: Vec<String> = tools.iter().map(|tool| document(&words, tool)).collect();
        let corpus: Vec<&str> = documents.iter().map(String::as_str).collect();
        let embedder = EmbedderBuilder::with_tokenizer_and_fit_to_corpus(Stems, &corpus)
            .b(B)
            .k1(K1)
            .build();
        let mut scorer = Scorer::new();
        for (index, document) in documents.iter().enumerate() {
            scorer.upsert(&index, embedder.embed(document));
        }
        let vocabulary = Vocabulary::new(&words);
        Self {
            embedder,
            scorer,
            words,
            vocabulary,
        }
    }

    /// The best `limit` tools for `query`, best first; ties keep catalog
    /// order. Tools that share no word with the query are left out, so a
    /// query of only stop words finds nothing.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let mut tokens = self
            .words
            .tokenize(&format!("{query} {}", words::compounds(query)));
        let mut seen = HashSet::new();
        tokens.retain(|token| seen.insert(token.clone()));
        // Task words ("find", "PR") say less than the caller's other words,
        // and so do the catalog words they stand for.
        let (vague, plain): (Vec<String>, Vec<String>) = tokens
            .into_iter()
            .partition(|token| self.vocabulary.knows(token));
        let added = self.words.tokenize(&self.vocabulary.expand(&vague));
        let mut scores: HashMap<usize, f32> = HashMap::new();
        for (tokens, weight) in [
            (plain, 1.0),
            (vague, EXPANSION_WEIGHT),
            (added, EXPANSION_WEIGHT),
        ] {
            let query = self.embedder.embed(&tokens.join(" "));
            for found in self.scorer.matches(&query) {
                *scores.entry(found.id).or_default() += weight * found.score;
            }
        }
        let mut hits: Vec<Hit> = scores
            .into_iter()
            .map(|(index, score)| Hit { index, score })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        hits.truncate(limit);
        hits
    }
}

/// The words of a tool, each field's repeated by its weight (BM25F's
/// weighted term frequency, with one document length and one rarity per
/// word across fields).
fn document(words: &Words, tool: &CatalogTool) -> String {
    let fields = [
        (format!("{} {}", tool.pack, tool.function), NAME_WEIGHT),
        (tool.description.clone(), DESCRIPTION_WEIGHT),
        (parameters_text(tool), PARAMETERS_WEIGHT),
    ];
    let mut document = String::new();
    for (text, weight) in fields {
        let stems = words.tokenize(&text).join(" ");
        for _ in 0..weight {
            document.push_str(&stems);
            document.push(' ');
        }
    }
    document
}

/// Name, description and enum values of each top-level property of the
/// input schema.
fn parameters_text(tool: &CatalogTool) -> String {
    let Some(properties) = tool
        .input_schema
        .get("properties")
        .and_then(|p| p.as_object())
    else {
        return String::new();
    };
    let mut text = String::new();
    for (name, schema) in properties {
        text.push_str(name);
        text.push(' ');
        if let Some(description) = schema.get("description").and_then(|d| d.as_str()) {
            text.push_str(description);
            text.push(' ');
        }
        for value in schema
            .get("enum")
            .and_then(|e| e.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(value) = value.as_str() {
                text.push_str(value);
                text.push(' ');
            }
        }
    }
    text
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
        let hits = Index::new(&tools).search("attachments", 5);
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
        assert_eq!(index.search("which job failed", 1)[0].index, 0);
        assert!(index.search("the of a", 5).is_empty());
        assert!(index.search("", 5).is_empty());
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
        assert_eq!(Index::new(&tools).search("open a PR", 1)[0].index, 1);
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
        let hits = Index::new(&tools).search("who is on call", 5);
        assert_eq!(hits.iter().map(|h| h.index).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn no_tools_no_hits() {
        assert!(Index::new(&[]).search("anything", 5).is_empty());
    }
}
