//! Words of tool texts and queries, as the index compares them.

use bm25::{DefaultTokenizer, Language, Tokenizer};

/// The `bm25` crate's English tokenizer (lowercase, Unicode words, stop
/// words out, Snowball stems), after identifiers are split into words, and
/// without numbers.
pub(crate) struct Words(DefaultTokenizer);

impl Words {
    pub(crate) fn new() -> Self {
        Self(DefaultTokenizer::new(Language::English))
    }

    pub(crate) fn tokenize(&self, text: &str) -> Vec<String> {
        let mut tokens = self.0.tokenize(&split_identifiers(&without_keys(text)));
        // A number in a query is an argument (`PR #91`, `1.8.2`), not what a
        // tool does; in a description it is an example or a limit.
        tokens.retain(|token| !token.chars().all(|c| c.is_ascii_digit()));
        tokens
    }
}

/// The tokenizer of the BM25 embedder, whose texts are [`Words`] already,
/// joined by spaces: words are made once per field, and a stem is not
/// stemmed again (stems are not fixed points: `databas` -> `databa`).
pub(crate) struct Stems;

impl Tokenizer for Stems {
    fn tokenize(&self, text: &str) -> Vec<String> {
        text.split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// Punctuation but `'` becomes a space and a capital after a lowercase
/// letter or a digit starts a new word: `pack.listPullRequests` -> `pack
/// list Pull Requests`. Unicode word splitting would keep `create_issue`,
/// `has:attachment` and `api.example.com` whole.
pub(crate) fn split_identifiers(text: &str) -> String {
    let mut split = String::with_capacity(text.len() + 8);
    let mut previous: Option<char> = None;
    for c in text.chars() {
        match c {
            c if c.is_ascii_punctuation() && c != '\'' => split.push(' '),
            c if c.is_uppercase()
                && previous.is_some_and(|p| p.is_lowercase() || p.is_numeric()) =>
            {
                split.push(' ');
                split.push(c);
            }
            c => split.push(c),
        }
        previous = Some(c);
    }
    split
}

/// `text` without keys such as `PROJ-12` or `INC-4521`: like a number,
/// a key is an argument, and its letters (`proj`) are no word of what a
/// tool does.
fn without_keys(text: &str) -> String {
    let is_key = |word: &str| {
        let word = word.trim_matches(|c: char| c.is_ascii_punctuation());
        word.split_once('-').is_some_and(|(letters, digits)| {
            !letters.is_empty()
                && letters.chars().all(|c| c.is_ascii_alphabetic())
                && !digits.is_empty()
                && digits.chars().all(|c| c.is_ascii_digit())
        })
    };
    text.split(' ')
        .filter(|word| !is_key(word))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `query` without its arguments (ids, numbers, paths, hosts, addresses:
/// the words holding a digit, `/`, `:`, `@`, `_` or a dot inside), for the
/// sentence model, to which `acme/web` or `203.0.113.7` is noise; the whole
/// query when nothing else is left.
pub(crate) fn without_arguments(query: &str) -> String {
    let argument = |word: &str| {
        word.chars()
            .any(|c| c.is_ascii_digit() || "/:@_".contains(c))
            || word
                .trim_end_matches(|c: char| c.is_ascii_punctuation())
                .contains('.')
    };
    let words: Vec<&str> = query.split_whitespace().filter(|w| !argument(w)).collect();
    if words.is_empty() {
        query.to_owned()
    } else {
        words.join(" ")
    }
}

/// Each pair of neighbouring words of `query` written as one, space
/// separated: people write apart what names write together ("on call" for
/// `oncalls`, "thumbs up" for `thumbsup`, "kick off" for `kickoff`).
pub(crate) fn compounds(query: &str) -> String {
    let split = split_identifiers(&without_keys(query)).to_lowercase();
    let words: Vec<&str> = split
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .map(|pair| format!("{}{}", pair[0], pair[1]))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_arguments_not_words() {
        assert_eq!(
            without_keys("mark PROJ-12 as blocking INC-4521."),
            "mark as blocking"
        );
        assert_eq!(without_keys("on-call s3 follow-up"), "on-call s3 follow-up");
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(
            split_identifiers("gh.listPullRequests"),
            "gh list Pull Requests"
        );
        assert_eq!(
            split_identifiers("create_issue v2Api"),
            "create issue v2 Api"
        );
        assert_eq!(split_identifiers("HTTPServer"), "HTTPServer");
    }

    #[test]
    fn stems_without_stop_words_or_numbers() {
        let words = Words::new();
        assert_eq!(
            words.tokenize("List the open issues of PR #91"),
            ["list", "open", "issu", "pr"]
        );
        assert_eq!(
            words.tokenize("github_list_pull_requests"),
            ["github", "list", "pull", "request"]
        );
    }

    #[test]
    fn arguments_are_left_to_bm25() {
        assert_eq!(
            without_arguments("add an A record staging.acme.com -> 203.0.113.7"),
            "add an A record ->"
        );
        assert_eq!(
            without_arguments("open prs in acme/web, then email finance@acme.com."),
            "open prs in then email"
        );
        assert_eq!(without_arguments("PD4471"), "PD4471");
    }

    #[test]
    fn neighbours_written_together() {
        assert_eq!(compounds("who is on-call"), "whois ison oncall");
        assert_eq!(compounds("one"), "");
    }
}
