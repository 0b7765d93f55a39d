//! Python string literals: prefixes, quotes and escapes.

use crate::cursor::{Cursor, Parsed, Reject, bad};

/// Length of the prefix (`r`, `b`, `rb`, `f`, ...) of a string literal that
/// starts at the cursor, or `None` when no string starts here.
pub(crate) fn prefix_len(cur: &Cursor) -> Option<usize> {
    let rest = &cur.src.as_bytes()[cur.pos..];
    let len = rest
        .iter()
        .take_while(|b| b"rRbBuUfFtT".contains(b))
        .count();
    if !matches!(rest.get(len), Some(b'"' | b'\'')) {
        return None;
    }
    let prefix = cur.src[cur.pos..cur.pos + len].to_ascii_lowercase();
    let valid = [
        "", "r", "u", "b", "f", "t", "br", "rb", "fr", "rf", "tr", "rt",
    ];
    valid.contains(&prefix.as_str()).then_some(len)
}

/// Parses one string literal (prefix included) at the cursor.
///
/// f-strings and t-strings are expressions, so they are left to Python;
/// bytes have no JSON form, so they are an error.
pub(crate) fn string(cur: &mut Cursor) -> Parsed<String> {
    let start = cur.pos;
    let len = prefix_len(cur).ok_or(Reject::NotLiteral)?;
    let prefix = cur.src[start..start + len].to_ascii_lowercase();
    if prefix.contains('b') {
        return Err(bad(format!(
            "bytes literal at {} can't be sent as JSON; pass text as a normal string `\"...\"`",
            cur.at(start)
        )));
    }
    if prefix.contains('f') || prefix.contains('t') {
        return Err(Reject::NotLiteral);
    }
    let raw = prefix.contains('r');
    cur.pos += len;
    let quote = cur.src.as_bytes()[cur.pos];
    let triple = cur.peek_at(1) == Some(quote) && cur.peek_at(2) == Some(quote);
    cur.pos += if triple { 3 } else { 1 };

    let mut out = String::new();
    loop {
        let rest = &cur.src.as_bytes()[cur.pos..];
        let run = rest
            .iter()
            .position(|&b| b == quote || b == b'\\' || b == b'\n')
            .unwrap_or(rest.len());
        out.push_str(&cur.src[cur.pos..cur.pos + run]);
        cur.pos += run;
        match cur.peek() {
            None => return Err(unterminated(cur, start, quote, triple)),
            Some(b'\n') if !triple => return Err(unterminated(cur, start, quote, triple)),
            Some(b'\n') => {
                out.push('\n');
                cur.pos += 1;
            }
            Some(b'\\') if raw => {
                // A raw backslash still protects the next character from
                // ending the string; both are kept.
                out.push('\\');
                cur.pos += 1;
                if let Some(c) = cur.peek_char() {
                    out.push(c);
                    cur.pos += c.len_utf8();
                }
            }
            Some(b'\\') => escape(cur, &mut out)?,
            Some(_) => {
                let closes =
                    !triple || (cur.peek_at(1) == Some(quote) && cur.peek_at(2) == Some(quote));
                if closes {
                    cur.pos += if triple { 3 } else { 1 };
                    return Ok(out);
                }
                out.push(quote as char);
                cur.pos += 1;
            }
        }
    }
}

fn unterminated(cur: &Cursor, start: usize, quote: u8, triple: bool) -> Reject {
    let q = quote as char;
    let fix = if triple {
        format!("close it with `{q}{q}{q}`")
    } else {
        format!("close it with `{q}` on the same line (or use `{q}{q}{q}` for text spanning lines)")
    };
    bad(format!(
        "unterminated string starting at {}; {fix}",
        cur.at(start)
    ))
}

/// Decodes the escape at the cursor (which sits on the backslash) into `out`.
fn escape(cur: &mut Cursor, out: &mut String) -> Parsed<()> {
    let at = cur.pos;
    cur.pos += 1;
    // At the end of the text the string loop reports the missing quote.
    let Some(c) = cur.peek_char() else {
        return Ok(());
    };
    cur.pos += c.len_utf8();
    match c {
        '\n' => {}
        '\\' | '\'' | '"' => out.push(c),
        'a' => out.push('\x07'),
        'b' => out.push('\x08'),
        'f' => out.push('\x0c'),
        'n' => out.push('\n'),
        'r' => out.push('\r'),
        't' => out.push('\t'),
        'v' => out.push('\x0b'),
        '0'..='7' => {
            let mut value = c as u32 - '0' as u32;
            for _ in 0..2 {
                match cur.peek() {
                    Some(d @ b'0'..=b'7') => {
                        value = value * 8 + u32::from(d - b'0');
                        cur.pos += 1;
                    }
                    _ => break,
                }
            }
            // At most 0o777, far below the surrogate range.
            out.extend(char::from_u32(value));
        }
        'x' => out.push(hex_escape(cur, at, c, 2, "\\x41")?),
        'u' => out.push(hex_escape(cur, at, c, 4, "\\u00e9")?),
        'U' => out.push(hex_escape(cur, at, c, 8, "\\U0001F600")?),
        // Named escapes need Python's Unicode database; let Python resolve them.
        'N' => return Err(Reject::NotLiteral),
        // Python keeps unknown escapes such as `\d` verbatim.
        _ => {
            out.push('\\');
            out.push(c);
        }
    }
    Ok(())
}

fn hex_escape(
    cur: &mut Cursor,
    at: usize,
    letter: char,
    digits: usize,
    example: &str,
) -> Parsed<char> {
    let rest = &cur.src.as_bytes()[cur.pos..];
    let found = rest
        .iter()
        .take(digits)
        .take_while(|b| b.is_ascii_hexdigit())
        .count();
    if found < digits {
        return Err(bad(format!(
            "truncated `\\{letter}` escape at {}; `\\{letter}` takes exactly {digits} hex digits, e.g. `{example}`",
            cur.at(at)
        )));
    }
    let text = &cur.src[cur.pos..cur.pos + digits];
    cur.pos += digits;
    let value = u32::from_str_radix(text, 16).unwrap_or(u32::MAX);
    char::from_u32(value).ok_or_else(|| {
        let why = if (0xD800..=0xDFFF).contains(&value) {
            "is a lone surrogate, which JSON text can't carry; write the character itself or its full code point like `\\U0001F600`"
        } else {
            "is beyond the last Unicode code point U+10FFFF"
        };
        bad(format!("escape `\\{letter}{text}` at {} {why}", cur.at(at)))
    })
}
