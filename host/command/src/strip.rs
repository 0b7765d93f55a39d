//! Removing what models wrap around code: `>>>` prompts and Markdown code markup.

use crate::FrontError;

/// Normalises line ends, trims, and strips a leading `>>>` prompt and code
/// markup (```` ```lang ```` fences, ``` ``code`` ```, `` `code` ``) that wraps
/// the whole text, then a prompt inside the fence.
///
/// Common indentation is removed rather than only trimming the first line,
/// so an indented block stays valid Python.
pub fn strip(command: &str) -> Result<String, FrontError> {
    let text = command.replace("\r\n", "\n").replace('\r', "\n");
    let text = unprompt(tidy(&text));
    let text = match unfence(&text) {
        Some(inner) => unprompt(tidy(inner)),
        None => text,
    };
    if text.is_empty() {
        return Err(FrontError::invalid(
            "empty command; send a call like `proj.list()` or a block of Python",
        ));
    }
    Ok(text)
}

fn unprompt(text: String) -> String {
    match text.strip_prefix(">>>") {
        Some(rest) => tidy(rest),
        None => text,
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

/// The inside of markup wrapping all of `text`, if any.
fn unfence(text: &str) -> Option<&str> {
    let run = text.bytes().take_while(|&b| b == b'`').count();
    if run == 0 {
        return None;
    }
    match text.split_once('\n') {
        Some((first, rest)) if run >= 3 => fenced(run, &first[run..], rest),
        _ => inline(run, text),
    }
}

/// A fenced block: an info string on the opening line, then the body up to
/// a closing run at the very end. A fence line in the middle is data (say, in
/// a Python string) when the text ends with a fence; without any closing
/// fence the block runs to the end, as in Markdown.
fn fenced<'a>(run: usize, info: &str, rest: &'a str) -> Option<&'a str> {
    if info.contains('`') {
        return None;
    }
    let closing = rest.bytes().rev().take_while(|&b| b == b'`').count();
    if closing >= run {
        return Some(&rest[..rest.len() - closing]);
    }
    let closes_early = rest.lines().any(|line| {
        let line = line.trim();
        line.len() >= run && line.bytes().all(|b| b == b'`')
    });
    (!closes_early).then_some(rest)
}

/// A code span: the same run of backticks at both ends and none of that
/// exact length in between (so `` `a` and `b` `` is not one span).
fn inline(run: usize, text: &str) -> Option<&str> {
    let closing = text.bytes().rev().take_while(|&b| b == b'`').count();
    if closing != run || text.len() <= 2 * run {
        return None;
    }
    let inner = &text[run..text.len() - run];
    let same_run_inside = inner
        .split(|c| c != '`')
        .any(|backticks| backticks.len() == run);
    (!same_run_inside).then_some(inner)
}
