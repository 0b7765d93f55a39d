//! Python literal expressions (strings, numbers, constants, containers) as JSON.

use serde_json::{Map, Value};

use crate::cursor::{Cursor, Parsed, Reject, bad};
use crate::number::number;
use crate::string::{prefix_len, string};

/// How deeply lists, tuples and dicts may nest inside one argument. The limit
/// keeps recursion bounded whatever the input.
const MAX_DEPTH: usize = 64;

/// Parses one literal at the cursor. Only called inside brackets, where
/// newlines and comments between tokens are allowed.
pub(crate) fn value(cur: &mut Cursor) -> Parsed<Value> {
    let start = cur.pos;
    match cur.peek() {
        None | Some(b')' | b']' | b'}') => Err(cur.unexpected()),
        Some(b'[') => {
            open(cur)?;
            let mut items = Vec::new();
            rest_of_sequence(cur, b']', &mut items)?;
            Ok(Value::Array(items))
        }
        Some(b'(') => tuple(cur),
        Some(b'{') => dict(cur),
        Some(b'-' | b'+') => signed(cur),
        Some(b'0'..=b'9') => number(cur, start, false),
        Some(b'.') if cur.peek_at(1).is_some_and(|b| b.is_ascii_digit()) => {
            number(cur, start, false)
        }
        _ if prefix_len(cur).is_some() => strings(cur),
        _ => match cur.ident() {
            Some("True") => Ok(Value::Bool(true)),
            Some("False") => Ok(Value::Bool(false)),
            Some("None") => Ok(Value::Null),
            _ => Err(Reject::NotLiteral),
        },
    }
}

/// Adjacent string literals concatenate, as in Python.
fn strings(cur: &mut Cursor) -> Parsed<Value> {
    let mut text = string(cur)?;
    loop {
        cur.skip_blank();
        if prefix_len(cur).is_none() {
            return Ok(Value::String(text));
        }
        text.push_str(&string(cur)?);
    }
}

/// Unary `-`/`+` only count in front of a number; `-x` is left to Python.
fn signed(cur: &mut Cursor) -> Parsed<Value> {
    let start = cur.pos;
    let mut negative = false;
    loop {
        match cur.peek() {
            Some(b'-') => negative = !negative,
            Some(b'+') => {}
            _ => break,
        }
        cur.pos += 1;
        cur.skip_blank();
    }
    match cur.peek() {
        None => Err(cur.eof()),
        Some(b'0'..=b'9') => number(cur, start, negative),
        Some(b'.') if cur.peek_at(1).is_some_and(|b| b.is_ascii_digit()) => {
            number(cur, start, negative)
        }
        _ => Err(Reject::NotLiteral),
    }
}

fn open(cur: &mut Cursor) -> Parsed<()> {
    // The call's own parenthesis is the first open bracket.
    if cur.opens.len() > MAX_DEPTH {
        return Err(bad(format!(
            "arguments nest deeper than {MAX_DEPTH} levels at {}; flatten the data or send Python code",
            cur.at(cur.pos)
        )));
    }
    cur.opens.push(cur.pos);
    cur.pos += 1;
    Ok(())
}

/// Items up to `close`, after the opening bracket or a comma.
fn rest_of_sequence(cur: &mut Cursor, close: u8, items: &mut Vec<Value>) -> Parsed<()> {
    loop {
        cur.skip_blank();
        if cur.eat(close) {
            break;
        }
        items.push(value(cur)?);
        cur.skip_blank();
        if cur.eat(close) {
            break;
        }
        if !cur.eat(b',') {
            return Err(cur.unexpected());
        }
    }
    cur.opens.pop();
    Ok(())
}

/// `()` is empty, `(x)` is just `x`, `(x,)` and `(x, y)` are arrays.
fn tuple(cur: &mut Cursor) -> Parsed<Value> {
    open(cur)?;
    cur.skip_blank();
    if cur.eat(b')') {
        cur.opens.pop();
        return Ok(Value::Array(Vec::new()));
    }
    let first = value(cur)?;
    cur.skip_blank();
    if cur.eat(b')') {
        cur.opens.pop();
        return Ok(first);
    }
    if !cur.eat(b',') {
        return Err(cur.unexpected());
    }
    let mut items = vec![first];
    rest_of_sequence(cur, b')', &mut items)?;
    Ok(Value::Array(items))
}

fn dict(cur: &mut Cursor) -> Parsed<Value> {
    let brace = cur.pos;
    open(cur)?;
    let mut map = Map::new();
    cur.skip_blank();
    if !cur.eat(b'}') {
        let first_at = cur.pos;
        let first = value(cur)?;
        cur.skip_blank();
        if matches!(cur.peek(), Some(b',' | b'}')) {
            return Err(bad(format!(
                "set literal at {} has no JSON form; use a list `[...]`",
                cur.at(brace)
            )));
        }
        let mut key = (first_at, first);
        loop {
            if !cur.eat(b':') {
                return Err(cur.unexpected());
            }
            cur.skip_blank();
            let item = value(cur)?;
            map.insert(key_text(cur, key)?, item);
            cur.skip_blank();
            if cur.eat(b'}') {
                break;
            }
            if !cur.eat(b',') {
                return Err(cur.unexpected());
            }
            cur.skip_blank();
            if cur.eat(b'}') {
                break;
            }
            key = (cur.pos, value(cur)?);
            cur.skip_blank();
        }
    }
    cur.opens.pop();
    Ok(Value::Object(map))
}

/// JSON keys are strings; numbers and booleans become their JSON text, as
/// Python's `json.dumps` does.
fn key_text(cur: &Cursor, (at, key): (usize, Value)) -> Parsed<String> {
    let kind = match key {
        Value::String(s) => return Ok(s),
        Value::Number(n) => return Ok(n.to_string()),
        Value::Bool(b) => return Ok(b.to_string()),
        Value::Null => "None",
        Value::Array(_) => "a tuple or list",
        Value::Object(_) => "a dict",
    };
    Err(bad(format!(
        "dict key at {} is {kind}; JSON object keys must be strings (numbers and booleans are converted)",
        cur.at(at)
    )))
}
