//! Removing what models wrap around code: `>>>` prompts and transcripts, and
//! Markdown code markup.

use crate::FrontError;

/// Markup inside markup (`` `code` `` in a double-backtick span, a prompt in
/// a fence in a span): more layers than this are data, not wrapping.
const MAX_LAYERS: usize = 4;

/// Normalises line ends, trims, and strips a leading `>>>` prompt (or a whole
/// `>>>`/`...` transcript) and code markup (```` ```lang ```` or `~~~` fences,
/// ``` ``code`` ```, `` `code` ``) that wraps the whole text, layer by layer.
///
/// Common indentation is removed rather than only trimming the first line,
/// so an indented block stays valid Python.
pub fn strip(command: &str) -> Result<String, FrontError> {
    strip_code(command).map(|(text, _)| text)
}

/// The language code is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Untagged code, and code tagged `python`, `py`...
    Python,
    /// Tagged `ts` or `typescript`.
    TypeScript,
    /// Tagged `js` or `javascript`.
    JavaScript,
}

/// Info strings models put on code they send to `run`.
const LANGUAGE_TAGS: &[(&str, Language)] = &[
    ("python", Language::Python),
    ("python3", Language::Python),
    ("py", Language::Python),
    ("py3", Language::Python),
    ("pycon", Language::Python),
    ("ipython", Language::Python),
    ("ts", Language::TypeScript),
    ("typescript", Language::TypeScript),
    ("js", Language::JavaScript),
    ("javascript", Language::JavaScript),
];

fn language_of(tag: &str) -> Option<Language> {
    LANGUAGE_TAGS
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(tag))
        .map(|&(_, language)| language)
}

/// [`strip`], and the language the outermost tagged fence names (Python
/// when none does).
pub fn strip_code(command: &str) -> Result<(String, Language), FrontError> {
    let text = command.replace("\r\n", "\n").replace('\r', "\n");
    let mut text = unprompt(tidy(&text));
    let mut language = None;
    for _ in 0..MAX_LAYERS {
        match unfence(&text) {
            Some((inner, tag)) => {
                language = language.or(tag.and_then(language_of));
                text = unprompt(tidy(inner));
            }
            None => break,
        }
    }
    if text.is_empty() {
        return Err(FrontError::invalid(
            "empty command; send a call like `proj.list()` or a block of Python",
        ));
    }
    Ok((text, language.unwrap_or(Language::Python)))
}

/// A leading `>>>` prompt goes. Two or more prompt lines are a transcript
/// (`pycon`): its `>>>` and `...` lines are the code, the lines between them
/// what the interpreter printed, which is dropped.
fn unprompt(text: String) -> String {
    if !text.starts_with(">>>") {
        return text;
    }
    if text.lines().filter(|line| prompted(line).is_some()).count() < 2 {
        return tidy(&text[">>>".len()..]);
    }
    let code: Vec<&str> = text.lines().filter_map(prompted).collect();
    tidy(&code.join("\n"))
}

/// The code on a transcript line: after `>>>` or `...` and one space.
fn prompted(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix(">>>")
        .or_else(|| line.strip_prefix("..."))?;
    match rest.strip_prefix(' ') {
        Some(code) => Some(code),
        None if rest.is_empty() || line.starts_with(">>>") => Some(rest),
        None => None,
    }
}

/// Drops leading blank lines and trailing whitespace, removes the indentation
/// all lines share, and trims what is left before the first character.
pub(crate) fn tidy(text: &str) -> String {
    let text = text.trim_end();
    let first_line = text
        .find(|c: char| !c.is_whitespace())
        .map_or(0, |i| text[..i].rfind('\n').map_or(0, |nl| nl + 1));
    let text = &text[first_line..];
    let indent = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| &line[..line.len() - line.trim_start_matches([' ', '\t']).len()])
        .reduce(|common, this| {
            let shared = common
                .bytes()
                .zip(this.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            &common[..shared]
        })
        .unwrap_or("");
    let dedented: Vec<&str> = text
        .lines()
        .map(|line| line.strip_prefix(indent).unwrap_or(line.trim_start()))
        .collect();
    dedented.join("\n").trim_start().to_owned()
}

/// The inside of markup wrapping all of `text`, if any, and the tag it
/// names.
fn unfence(text: &str) -> Option<(&str, Option<&str>)> {
    let mark = text.bytes().next().filter(|b| matches!(b, b'`' | b'~'))?;
    let run = text.bytes().take_while(|&b| b == mark).count();
    match text.split_once('\n') {
        Some((first, rest)) if run >= 3 => {
            let info = &first[run..];
            let tag = info.split_whitespace().next();
            fenced(mark, run, info, rest).map(|inner| (inner, tag))
        }
        _ if mark == b'`' => inline(run, text),
        _ => None,
    }
}

/// A fenced block: an info string on the opening line, then the body up to
/// a closing run at the very end. A fence line in the middle is data (say, in
/// a Python string) when the text ends with a fence; without any closing
/// fence the block runs to the end, as in Markdown.
fn fenced<'a>(mark: u8, run: usize, info: &str, rest: &'a str) -> Option<&'a str> {
    if info.contains('`') {
        return None;
    }
    let closing = rest.bytes().rev().take_while(|&b| b == mark).count();
    if closing >= run {
        return Some(&rest[..rest.len() - closing]);
    }
    let closes_early = rest.lines().any(|line| {
        let line = line.trim();
        line.len() >= run && line.bytes().all(|b| b == mark)
    });
    (!closes_early).then_some(rest)
}

/// A code span: the same run of backticks at both ends and none of that
/// exact length in between (so `` `a` and `b` `` is not one span). A
/// one-line fence may still name its language: ```` ```py x``` ````.
fn inline(run: usize, text: &str) -> Option<(&str, Option<&str>)> {
    let closing = text.bytes().rev().take_while(|&b| b == b'`').count();
    if closing != run || text.len() <= 2 * run {
        return None;
    }
    let inner = &text[run..text.len() - run];
    let same_run_inside = inner
        .split(|c| c != '`')
        .any(|backticks| backticks.len() == run);
    if same_run_inside {
        return None;
    }
    Some(match inner.split_once(' ') {
        Some((tag, code)) if run >= 3 && language_of(tag).is_some() => (code, Some(tag)),
        _ => (inner, None),
    })
}
