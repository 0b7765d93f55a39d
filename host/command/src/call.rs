//! The one-call form `dotted.name(positional..., key=value...)` with literal arguments.

use std::collections::HashSet;

use serde_json::Value;

use crate::FrontError;
use crate::cursor::{Cursor, Parsed, Reject, bad, excerpt};
use crate::literal::value;

/// A tool call parsed from the command, ready for the executor.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Dotted tool name as written, e.g. `proj.list` (after alias rewriting
    /// when it comes from [`Front::interpret`](crate::Front::interpret)).
    pub target: String,
    /// Positional arguments, in order.
    pub args: Vec<Value>,
    /// Keyword arguments, in the order written; names are unique.
    pub kwargs: Vec<(String, Value)>,
}

/// Parses `src` as exactly one call with literal arguments; aliases are not applied.
///
/// `Ok(None)` means "not such a call, run it as code": several statements,
/// an assignment, a non-literal argument, text after the closing parenthesis.
/// `Err` means it starts like a call (`name(`) but is broken: unterminated
/// string or bracket, bad escape, number out of range, nesting deeper than
/// 64 levels, duplicate keyword, positional after keyword. Runs in linear
/// time and never panics.
pub fn parse_call(src: &str) -> Result<Option<Call>, FrontError> {
    match call(&mut Cursor::new(src)) {
        Ok(call) => Ok(Some(call)),
        Err(Reject::NotLiteral) => Ok(None),
        Err(Reject::Invalid(e)) => Err(e),
    }
}

fn call(cur: &mut Cursor) -> Parsed<Call> {
    cur.skip_blank();
    let target = target(cur).ok_or(Reject::NotLiteral)?;
    cur.skip_inline();
    if cur.peek() != Some(b'(') {
        return Err(Reject::NotLiteral);
    }
    cur.opens.push(cur.pos);
    cur.pos += 1;

    let mut call = Call {
        target,
        args: Vec::new(),
        kwargs: Vec::new(),
    };
    let mut seen = HashSet::new();
    let mut first_keyword = None;
    loop {
        cur.skip_blank();
        if cur.eat(b')') {
            break;
        }
        let at = cur.pos;
        if let Some(name) = keyword(cur) {
            cur.skip_blank();
            let item = value(cur)?;
            if !seen.insert(name) {
                return Err(bad(format!(
                    "keyword argument `{}` repeated at {}; give each keyword once",
                    excerpt(name),
                    cur.at(at)
                )));
            }
            first_keyword.get_or_insert((name, at));
            call.kwargs.push((name.to_owned(), item));
        } else {
            let item = value(cur)?;
            if let Some((name, kw_at)) = first_keyword {
                return Err(bad(format!(
                    "positional argument at {} follows keyword argument `{}` at {}; put positional arguments first",
                    cur.at(at),
                    excerpt(name),
                    cur.at(kw_at)
                )));
            }
            call.args.push(item);
        }
        cur.skip_blank();
        if cur.eat(b')') {
            break;
        }
        if !cur.eat(b',') {
            return Err(cur.unexpected());
        }
    }
    cur.opens.pop();
    cur.skip_blank();
    if cur.at_end() {
        Ok(call)
    } else {
        Err(cur.unexpected())
    }
}

/// `name` or `a.b.c`; Python keywords can't be part of it (`if (x): ...`).
fn target(cur: &mut Cursor) -> Option<String> {
    let mut target = name(cur)?.to_owned();
    loop {
        cur.skip_inline();
        if !cur.eat(b'.') {
            return Some(target);
        }
        cur.skip_inline();
        target.push('.');
        target.push_str(name(cur)?);
    }
}

fn name<'a>(cur: &mut Cursor<'a>) -> Option<&'a str> {
    cur.ident().filter(|name| !KEYWORDS.contains(name))
}

/// `name=` (but not `name ==`) at the cursor, consumed; otherwise nothing moves.
fn keyword<'a>(cur: &mut Cursor<'a>) -> Option<&'a str> {
    let start = cur.pos;
    if let Some(name) = cur.ident() {
        cur.skip_blank();
        if cur.peek() == Some(b'=') && cur.peek_at(1) != Some(b'=') {
            cur.pos += 1;
            return Some(name);
        }
    }
    cur.pos = start;
    None
}

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];
