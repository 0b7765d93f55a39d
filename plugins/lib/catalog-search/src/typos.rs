//! Typos in a query, mended with the catalog's own words: "incidnet" ->
//! "incident", "pagerdty" -> "pagerduty", "slak chanels" -> "slack
//! channels". Neither BM25 nor a sentence model finds a tool by a word it
//! has never seen, and a model's word pieces of a misspelt word mean
//! something else.
//!
//! A query word is mended only when nothing knows it: not the catalog, not
//! the dictionary (the sentence model's vocabulary, when there is one), not
//! after an English ending or a `re`/`un` prefix is taken off or an ending
//! put on ("rotations", "patching", "reschedule", "schedule" of
//! "schedules"). It becomes the catalog word closest to it by
//! edit distance (a swap of two neighbours counts one): one edit for words
//! of up to six letters, two for longer ones, never the first letter (typos
//! seldom change it, and "grep" is not "rep"); ties go to the word the
//! catalog uses most. Words of fewer than four letters stay.

use std::collections::HashMap;

use pack_api::names::edit_distance;

use crate::words::split_identifiers;

/// Words shorter than this are left as written: at three letters one edit
/// reaches too many words.
const SHORTEST: usize = 4;

/// Words up to this long get one edit; longer ones two.
const ONE_EDIT_UP_TO: usize = 6;

/// Endings taken off a word to see whether its stem is known.
const ENDINGS: [&str; 11] = [
    "s", "es", "ed", "d", "ing", "er", "r", "ly", "ation", "ions", "ies",
];

/// Prefixes taken off for the same reason.
const PREFIXES: [&str; 2] = ["re", "un"];

/// The catalog's words with how often each is used.
pub(crate) struct Typos {
    counts: HashMap<String, usize>,
}

impl Typos {
    /// The words of `texts` (names, descriptions, parameters).
    pub(crate) fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut counts = HashMap::new();
        for text in texts {
            for word in words(text) {
                *counts.entry(word).or_default() += 1;
            }
        }
        Self { counts }
    }

    /// `query` with each unknown word replaced by its closest catalog word;
    /// `known` is the dictionary beyond the catalog.
    pub(crate) fn mend(&self, query: &str, known: &dyn Fn(&str) -> bool) -> String {
        let mut mended = String::with_capacity(query.len());
        let mut word = String::new();
        for c in query.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_alphabetic() {
                word.push(c);
                continue;
            }
            if !word.is_empty() {
                let lower = word.to_ascii_lowercase();
                match self.correction(&lower, known) {
                    Some(correct) => mended.push_str(correct),
                    None => mended.push_str(&word),
                }
                word.clear();
            }
            mended.push(c);
        }
        mended.pop();
        mended
    }

    fn correction(&self, word: &str, known: &dyn Fn(&str) -> bool) -> Option<&str> {
        if word.len() < SHORTEST || self.knows(word, known) {
            return None;
        }
        let limit = if word.len() <= ONE_EDIT_UP_TO { 1 } else { 2 };
        let first = word.as_bytes()[0];
        self.counts
            .iter()
            .filter(|(candidate, _)| {
                candidate.as_bytes()[0] == first && candidate.len().abs_diff(word.len()) <= limit
            })
            .filter_map(|(candidate, count)| {
                let distance = edit_distance(word, candidate);
                (distance <= limit).then_some((distance, std::cmp::Reverse(*count), candidate))
            })
            .min()
            .map(|(_, _, candidate)| candidate.as_str())
    }

    fn knows(&self, word: &str, known: &dyn Fn(&str) -> bool) -> bool {
        let is_word = |w: &str| self.counts.contains_key(w) || known(w);
        // The catalog's "schedules" knows "schedule".
        if is_word(word)
            || ENDINGS
                .iter()
                .any(|ending| is_word(&format!("{word}{ending}")))
        {
            return true;
        }
        let stem_known = |stem: &str| {
            let doubled = stem.len() > 2
                && stem.as_bytes()[stem.len() - 1] == stem.as_bytes()[stem.len() - 2];
            is_word(stem)
                || is_word(&format!("{stem}e"))
                || is_word(&format!("{stem}y"))
                || (doubled && is_word(&stem[..stem.len() - 1]))
        };
        ENDINGS
            .iter()
            .filter_map(|ending| word.strip_suffix(ending))
            .any(|stem| stem.len() >= 2 && stem_known(stem))
            || PREFIXES
                .iter()
                .filter_map(|prefix| word.strip_prefix(prefix))
                .any(|rest| rest.len() >= SHORTEST && self.knows(rest, known))
    }
}

/// Lowercase ASCII words of `text`, identifiers split (`listPullRequests`).
fn words(text: &str) -> impl Iterator<Item = String> {
    split_identifiers(text)
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect::<Vec<_>>()
        .into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typos() -> Typos {
        Typos::new([
            "pagerduty_list_schedules List on-call schedules and rotation layers.",
            "slack_list_channels List channels of the workspace.",
            "pagerduty_get_incident Get an incident by id.",
            "github_search_code Search code with grep-like queries.",
        ])
    }

    #[test]
    fn mends_typos_with_catalog_words() {
        let none = |_: &str| false;
        assert_eq!(
            typos().mend("detials of incidnet PD4471", &none),
            "detials of incident PD4471"
        );
        assert_eq!(typos().mend("slak chanels!", &none), "slack channels!");
        assert_eq!(
            typos().mend("the pagerdty rotations", &none),
            "the pagerduty rotations"
        );
    }

    #[test]
    fn leaves_known_and_short_words() {
        let none = |_: &str| false;
        // Known by their stems, or by the dictionary.
        assert_eq!(
            typos().mend("listing schedule PR", &none),
            "listing schedule PR"
        );
        assert_eq!(typos().mend("relisted", &none), "relisted");
        assert_eq!(typos().mend("creps", &|w: &str| w == "creps"), "creps");
        assert_eq!(typos().mend("greb", &none), "grep");
        // Not "rep": the first letter stays.
        assert_eq!(typos().mend("crep", &none), "crep");
    }
}
