//! A position in the command text, shared by the literal and call parsers.

use crate::FrontError;

/// Why parsing stopped short of a value.
pub(crate) enum Reject {
    /// Valid-looking Python that is not a plain literal: hand it to the code pack.
    NotLiteral,
    /// Broken input: report it instead of letting Python guess.
    Invalid(FrontError),
}

pub(crate) type Parsed<T> = Result<T, Reject>;

/// Shorthand for an `INVALID_ARGUMENT` rejection.
pub(crate) fn bad(message: impl Into<String>) -> Reject {
    Reject::Invalid(FrontError::invalid(message))
}

/// Byte offset into `src`; it only ever moves by whole characters, so every
/// offset it hands out is a char boundary.
pub(crate) struct Cursor<'a> {
    pub(crate) src: &'a str,
    pub(crate) pos: usize,
    /// Offsets of the brackets that are open right now, innermost last.
    pub(crate) opens: Vec<usize>,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Self {
            src,
            pos: 0,
            opens: Vec::new(),
        }
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    pub(crate) fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.src.as_bytes().get(self.pos + ahead).copied()
    }

    pub(crate) fn peek_char(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.src.len()
    }

    pub(crate) fn eat(&mut self, byte: u8) -> bool {
        let hit = self.peek() == Some(byte);
        if hit {
            self.pos += 1;
        }
        hit
    }

    /// Spaces, tabs and backslash-newline continuations: what Python allows
    /// between tokens outside brackets.
    pub(crate) fn skip_inline(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\x0c') => self.pos += 1,
                Some(b'\\') if self.peek_at(1) == Some(b'\n') => self.pos += 2,
                _ => return,
            }
        }
    }

    /// Everything Python ignores inside brackets: also newlines and comments.
    pub(crate) fn skip_blank(&mut self) {
        loop {
            self.skip_inline();
            match self.peek() {
                Some(b'\n' | b'\r') => self.pos += 1,
                Some(b'#') => {
                    let rest = &self.src[self.pos..];
                    self.pos += rest.find('\n').unwrap_or(rest.len());
                }
                _ => return,
            }
        }
    }

    /// A Python identifier (Unicode letters, digits, `_`; not starting with a digit).
    pub(crate) fn ident(&mut self) -> Option<&'a str> {
        let rest = &self.src[self.pos..];
        let mut chars = rest.char_indices();
        match chars.next() {
            Some((_, c)) if is_ident_start(c) => {}
            _ => return None,
        }
        let len = chars
            .find(|&(_, c)| !is_ident_continue(c))
            .map_or(rest.len(), |(i, _)| i);
        self.pos += len;
        Some(&rest[..len])
    }

    /// What a parser says when the next token doesn't fit: at the end of the
    /// text a bracket is left open, a stray closing bracket is unbalanced,
    /// anything else is some other Python.
    pub(crate) fn unexpected(&self) -> Reject {
        let Some(found @ (b')' | b']' | b'}')) = self.peek() else {
            return if self.at_end() {
                self.eof()
            } else {
                Reject::NotLiteral
            };
        };
        let found = found as char;
        let message = match self.opens.last() {
            Some(&open) => format!(
                "`{found}` at {} doesn't match the `{}` opened at {}; close that with `{}` first",
                self.at(self.pos),
                self.src.as_bytes()[open] as char,
                self.at(open),
                self.closer(open)
            ),
            None => format!("unmatched `{found}` at {}; remove it", self.at(self.pos)),
        };
        bad(message)
    }

    /// `line:column` (1-based, columns in characters) of a byte offset.
    pub(crate) fn at(&self, offset: usize) -> String {
        let before = &self.src[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
        let column = before[line_start..].chars().count() + 1;
        format!("{line}:{column}")
    }

    /// The error for running out of text inside a bracket.
    pub(crate) fn eof(&self) -> Reject {
        bad(match self.opens.last() {
            Some(&open) => format!(
                "unexpected end of the command: the `{}` opened at {} is never closed; add `{}`",
                self.src.as_bytes()[open] as char,
                self.at(open),
                self.closer(open)
            ),
            None => "unexpected end of the command".to_owned(),
        })
    }

    fn closer(&self, open: usize) -> char {
        match self.src.as_bytes()[open] {
            b'[' => ']',
            b'{' => '}',
            _ => ')',
        }
    }
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

pub(crate) fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Shortens a quoted excerpt so huge inputs don't produce huge messages.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX: usize = 40;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
