//! Python number literals as JSON numbers.

use serde_json::{Number, Value};

use crate::cursor::{Cursor, Parsed, bad, excerpt, is_ident_continue};

/// Parses the number at the cursor. `start` is where the literal began,
/// unary signs included; `negative` is what those signs add up to.
pub(crate) fn number(cur: &mut Cursor, start: usize, negative: bool) -> Parsed<Value> {
    let radix = match (cur.peek(), cur.peek_at(1)) {
        (Some(b'0'), Some(b'x' | b'X')) => 16,
        (Some(b'0'), Some(b'o' | b'O')) => 8,
        (Some(b'0'), Some(b'b' | b'B')) => 2,
        _ => return decimal(cur, start, negative),
    };
    cur.pos += 2;
    let digits = digits(cur, start, radix, true)?;
    reject_suffix(cur, start)?;
    if digits.is_empty() {
        return Err(bad(format!(
            "number `{}` at {} has no digits after its base prefix",
            excerpt(&cur.src[start..cur.pos]),
            cur.at(start)
        )));
    }
    integer(cur, start, &digits, radix, negative)
}

fn decimal(cur: &mut Cursor, start: usize, negative: bool) -> Parsed<Value> {
    let digits_start = cur.pos;
    let whole = digits(cur, start, 10, false)?;
    let mut float = false;
    if cur.eat(b'.') {
        float = true;
        digits(cur, start, 10, false)?;
    }
    if matches!(cur.peek(), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(cur.peek_at(1), Some(b'+' | b'-')));
        if cur.peek_at(1 + sign).is_some_and(|b| b.is_ascii_digit()) {
            float = true;
            cur.pos += 1 + sign;
            digits(cur, start, 10, false)?;
        }
    }
    if matches!(cur.peek(), Some(b'j' | b'J')) {
        return Err(bad(format!(
            "complex number at {} has no JSON form; pass a list like `[re, im]`",
            cur.at(start)
        )));
    }
    reject_suffix(cur, start)?;
    if !float {
        if whole.len() > 1 && whole.starts_with('0') && whole.bytes().any(|b| b != b'0') {
            return Err(bad(format!(
                "leading zeros in `{}` at {} are not allowed in Python; drop them (or write `0o...` for octal)",
                excerpt(&cur.src[start..cur.pos]),
                cur.at(start)
            )));
        }
        return integer(cur, start, &whole, 10, negative);
    }
    let clean: String = cur.src[digits_start..cur.pos]
        .chars()
        .filter(|&c| c != '_')
        .collect();
    clean
        .parse::<f64>()
        .ok()
        .map(|f| if negative { -f } else { f })
        .and_then(Number::from_f64)
        .map(Value::Number)
        .ok_or_else(|| {
            bad(format!(
                "number `{}` at {} is too large for a float; JSON has no infinity",
                excerpt(&cur.src[start..cur.pos]),
                cur.at(start)
            ))
        })
}

/// Consumes `digit (_? digit)*` and returns the digits without underscores.
/// `leading_underscore` allows the `0x_ff` form right after a base prefix.
fn digits(cur: &mut Cursor, start: usize, radix: u32, leading_underscore: bool) -> Parsed<String> {
    let mut out = String::new();
    loop {
        let skip = usize::from(cur.peek() == Some(b'_'));
        match cur.peek_at(skip) {
            Some(d)
                if (d as char).is_digit(radix)
                    && (skip == 0 || leading_underscore || !out.is_empty()) =>
            {
                out.push(d as char);
                cur.pos += skip + 1;
            }
            _ if skip == 1 => {
                return Err(bad(format!(
                    "misplaced `_` in number at {}; underscores may only sit between digits, as in `1_000`",
                    cur.at(start)
                )));
            }
            _ => return Ok(out),
        }
    }
}

/// Python rejects `1abc` or `0x1g`; so do we, naming the whole bad token.
fn reject_suffix(cur: &Cursor, start: usize) -> Parsed<()> {
    match cur.peek_char() {
        Some(c) if is_ident_continue(c) => {
            let tail = &cur.src[cur.pos..];
            let end = cur.pos
                + tail
                    .char_indices()
                    .find(|&(_, c)| !is_ident_continue(c))
                    .map_or(tail.len(), |(i, _)| i);
            Err(bad(format!(
                "invalid number `{}` at {}",
                excerpt(&cur.src[start..end]),
                cur.at(start)
            )))
        }
        _ => Ok(()),
    }
}

fn integer(cur: &Cursor, start: usize, digits: &str, radix: u32, negative: bool) -> Parsed<Value> {
    let magnitude = u64::from_str_radix(digits, radix).ok();
    let value = match magnitude {
        Some(n) if negative => 0i64.checked_sub_unsigned(n).map(Value::from),
        Some(n) => Some(i64::try_from(n).map_or(Value::from(n), Value::from)),
        None => None,
    };
    value.ok_or_else(|| {
        bad(format!(
            "integer `{}` at {} is out of range; JSON integers here must fit in 64 bits, so pass it as a string",
            excerpt(&cur.src[start..cur.pos]),
            cur.at(start)
        ))
    })
}
