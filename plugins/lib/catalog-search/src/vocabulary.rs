//! How people ask for a tool versus how tools are named: each task word
//! adds the words catalogs use for it to a query. General to tool catalogs
//! (verbs of reading and writing, the usual abbreviations, what a kind of
//! service calls its things), never to one service's product names.

use std::collections::HashMap;

use crate::words::Words;

/// Task word -> catalog words. Keys are compared stemmed, so one form
/// covers its inflections ("changed", "changes").
const TASK_WORDS: &[(&str, &str)] = &[
    // Reading.
    ("find", "search list get"),
    ("look", "search get"),
    ("lookup", "search get"),
    ("show", "get list"),
    ("fetch", "get"),
    ("check", "get"),
    // Writing.
    ("make", "create"),
    ("new", "create"),
    ("add", "create"),
    ("write", "create"),
    ("setup", "create"),
    ("change", "update diff"),
    ("edit", "update"),
    ("modify", "update"),
    ("rename", "update"),
    ("remove", "delete"),
    ("erase", "delete"),
    ("kill", "cancel terminate"),
    ("stop", "cancel"),
    ("retry", "rerun"),
    ("restart", "rerun"),
    ("kickoff", "trigger start"),
    ("launch", "trigger start"),
    ("answer", "reply"),
    ("respond", "reply"),
    ("response", "reply"),
    ("tell", "send message"),
    ("notify", "send message"),
    ("ping", "send message"),
    ("silence", "mute"),
    ("snooze", "mute ignore"),
    // Abbreviations.
    // The stemmer keeps a plural without a vowel: "prs" stays "prs".
    ("pr", "pull request"),
    ("prs", "pull request"),
    ("mr", "pull request"),
    ("dm", "direct message"),
    ("dms", "direct message"),
    ("repo", "repository"),
    // What kinds of services call their things.
    ("bug", "issue"),
    ("ticket", "issue"),
    ("doc", "page document"),
    ("article", "page"),
    ("wiki", "page space"),
    ("chat", "message channel"),
    ("email", "message mail"),
    ("mail", "message email"),
    ("link", "url"),
    ("alert", "monitor"),
    ("alarm", "monitor alert"),
    ("graph", "metric timeseries"),
    ("chart", "metric timeseries"),
    ("crash", "error exception"),
    ("exception", "error"),
    ("schedule", "calendar event"),
    ("meeting", "event calendar"),
    ("agenda", "upcoming event"),
    ("pay", "payment"),
    ("paid", "payment"),
    ("charge", "payment"),
    ("unpaid", "open"),
    ("outstanding", "open"),
    ("build", "pipeline workflow job"),
    ("domain", "zone dns"),
    ("people", "user"),
    ("person", "user"),
    ("file", "object attachment"),
    ("folder", "directory prefix"),
];

/// [`TASK_WORDS`] by stem.
pub(crate) struct Vocabulary(HashMap<String, &'static str>);

impl Vocabulary {
    pub(crate) fn new(words: &Words) -> Self {
        let mut by_stem = HashMap::new();
        for (task_word, catalog_words) in TASK_WORDS {
            for stem in words.tokenize(task_word) {
                by_stem.insert(stem, *catalog_words);
            }
        }
        Self(by_stem)
    }

    /// Whether `token` is a task word.
    pub(crate) fn knows(&self, token: &str) -> bool {
        self.0.contains_key(token)
    }

    /// The catalog words for the task words among `tokens`, space separated.
    pub(crate) fn expand(&self, tokens: &[String]) -> String {
        tokens
            .iter()
            .filter_map(|token| self.0.get(token).copied())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_word_is_one_word_that_is_not_a_stop_word() {
        let words = Words::new();
        for (task_word, _) in TASK_WORDS {
            assert_eq!(
                words.tokenize(task_word).len(),
                1,
                "task word `{task_word}`"
            );
        }
    }

    #[test]
    fn inflections_are_expanded_too() {
        let words = Words::new();
        let vocabulary = Vocabulary::new(&words);
        assert_eq!(
            vocabulary.expand(&words.tokenize("PRs changed")),
            "pull request update diff"
        );
    }
}
