//! BM25 over names, descriptions and parameters: exact on names, ids and
//! the words the catalog itself uses.
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
//! few hundred short ones; probly-search has per-field boosts but no
//! stemming and no release since 2024.

use std::collections::{HashMap, HashSet};

use bm25::{Embedder, EmbedderBuilder, Scorer};
use pack_api::CatalogTool;

use crate::{
    Hit, best_first,
    vocabulary::Vocabulary,
    words::{self, Stems, Words},
};

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

/// BM25 over the tools of one catalog.
pub(crate) struct Lexical {
    embedder: Embedder<u32, Stems>,
    scorer: Scorer<usize>,
    words: Words,
    vocabulary: Vocabulary,
}

impl Lexical {
    /// Indexes `tools`; hits refer to them by position.
    pub(crate) fn new(tools: &[CatalogTool]) -> Self {
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

    /// The tools that share a word with `query`, best first; ties keep
    /// catalog order. A query of only stop words finds nothing.
    pub(crate) fn rank(&self, query: &str) -> Vec<Hit> {
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
        best_first(scores)
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
pub(crate) fn parameters_text(tool: &CatalogTool) -> String {
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
