//! The front of packhost's `run` tool: turns the text a model sends into a [`Plan`].
//!
//! [`Front::interpret`] runs these steps, with no I/O:
//! 1. [`strip`] normalises line ends and indentation and removes a `>>>`
//!    prompt and Markdown code markup wrapping the whole text; a fence
//!    tagged `ts`, `typescript`, `js` or `javascript` makes it code for node
//!    ([`Plan::Node`]), whatever it holds;
//! 2. a leading `!` is rejected with an explanation of the real syntax;
//! 3. `$name k=v` expands a configured [`Snippet`] through minijinja;
//! 4. [`parse_call`] recognises a single `dotted.name(literal, key=literal)`
//!    call, which runs without Python; anything else is code for a code pack;
//! 5. aliases rewrite the target of a parsed call (`ws` → `brave.web_search`);
//!    a call of a plain name that is no alias (`abs(-3)`, `max([4, 9])`) is
//!    code too: Python resolves it, and says what exists when it cannot.

#![deny(missing_docs)]

mod call;
mod cursor;
mod error;
mod literal;
mod number;
mod snippet;
mod string;
mod strip;

use std::collections::BTreeMap;

pub use call::{Call, parse_call};
pub use error::FrontError;
pub use snippet::{Param, Snippet};
pub use strip::{Language, strip, strip_code};

/// What `run` knows besides the command text.
#[derive(Debug, Clone, Default)]
pub struct Front {
    /// Call-target rewrites, e.g. `"ws"` → `"brave.web_search"`.
    pub aliases: BTreeMap<String, String>,
    /// Snippets by name, expanded by `$name`.
    pub snippets: BTreeMap<String, Snippet>,
}

/// What to do with a command.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Call one tool directly with these arguments.
    Call(Call),
    /// Hand this Python code to a code pack.
    Code(String),
    /// Hand this code, fenced as TypeScript or JavaScript, to node.
    Node(String, Language),
}

impl Front {
    /// Turns a `run` command into a plan (see the crate docs for the steps).
    pub fn interpret(&self, command: &str) -> Result<Plan, FrontError> {
        self.interpret_with(
            command,
            |name| self.aliases.get(name).map(String::as_str),
            |_| true,
        )
    }

    /// [`Self::interpret`] with `alias` (a name → its target) in place of
    /// [`Self::aliases`] and `snippet` saying which snippets are there: the
    /// aliases and snippets one caller may use. A name `alias` gives no
    /// target is no alias, so `name()` is code; a snippet `snippet` refuses
    /// is unknown.
    pub fn interpret_with<'a>(
        &self,
        command: &str,
        alias: impl Fn(&str) -> Option<&'a str>,
        snippet: impl Fn(&Snippet) -> bool,
    ) -> Result<Plan, FrontError> {
        let (text, language) = strip_code(command)?;
        if language != Language::Python {
            return Ok(Plan::Node(text, language));
        }
        if let Some(rest) = text.strip_prefix('!') {
            return Err(bang(rest));
        }
        let text = if text.starts_with('$') {
            snippet::expand(&self.snippets, snippet, &text)?
        } else {
            text
        };
        Ok(match parse_call(&text)? {
            Some(mut call) => {
                match alias(&call.target) {
                    Some(target) => call.target = target.to_owned(),
                    None if !call.target.contains('.') => return Ok(Plan::Code(text)),
                    None => {}
                }
                Plan::Call(call)
            }
            None => Plan::Code(text),
        })
    }
}

/// Models trained on other tool fronts write `!tool cmd`; say what works here,
/// and what the command would be without the prefix.
fn bang(rest: &str) -> FrontError {
    let rest = rest.trim();
    let suggestion = match rest.split_once(char::is_whitespace) {
        Some((word, tail))
            if word
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-') =>
        {
            tail.trim()
        }
        _ => rest,
    };
    let mut message =
        "commands take no `!` prefix; send a call like `pack.function(arg=value)` directly, \
         `$snippet key=value` to expand a snippet, an alias call, or a block of Python code"
            .to_owned();
    if !suggestion.is_empty() && !suggestion.contains('\n') && suggestion.len() <= 200 {
        message.push_str(&format!(" (here probably `{suggestion}`)"));
    }
    FrontError::invalid(message)
}
