//! `$name` snippets: argument parsing, parameter checks and rendering.

use std::collections::BTreeMap;

use minijinja::{Environment, ErrorKind, UndefinedBehavior};
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::FrontError;
use crate::cursor::{Cursor, Reject, excerpt};
use crate::string::string;
use crate::strip::tidy;

/// A named command template from `packs.toml`, expanded by `$name k=v`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Snippet {
    /// What the snippet does, for listings.
    #[serde(default)]
    pub description: String,
    /// Parameters by name; every one must get a value or have a default.
    #[serde(default)]
    pub params: BTreeMap<String, Param>,
    /// A minijinja template that renders to a call or Python code.
    pub body: String,
    /// Where it is configured (`packs.toml:12`), named when it cannot
    /// render: set by the host once the file is read.
    #[serde(skip)]
    pub place: Option<String>,
}

/// One snippet parameter.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Param {
    /// Shown when the parameter is missing.
    #[serde(default)]
    pub description: Option<String>,
    /// Used when the command gives no value; without it the parameter is required.
    #[serde(default)]
    pub default: Option<Value>,
}

type Given = BTreeMap<String, Value>;

/// Expands `text` (which starts with `$`) into the snippet's rendered body.
pub(crate) fn expand(
    snippets: &BTreeMap<String, Snippet>,
    visible: impl Fn(&Snippet) -> bool,
    text: &str,
) -> Result<String, FrontError> {
    // A snippet the caller may not use is not there, as one never configured
    // (each is rendered to tell: only the one asked for, or all to list them).
    let listing = || {
        let names: Vec<&str> = snippets
            .iter()
            .filter(|(_, snippet)| visible(snippet))
            .map(|(name, _)| name.as_str())
            .collect();
        available(&names)
    };
    let name_len = text[1..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(text.len() - 1);
    let name = &text[1..1 + name_len];
    if name.is_empty() {
        return Err(FrontError::invalid(format!(
            "expected a snippet name right after `$`, as in `$name key=value`; {}",
            listing()
        )));
    }
    let mut cur = Cursor::new(text);
    cur.pos = 1 + name_len;
    if cur.peek_char().is_some_and(|c| !c.is_whitespace()) {
        return Err(FrontError::invalid(format!(
            "expected a space after `${}` at {}, then `key=value` arguments",
            excerpt(name),
            cur.at(cur.pos)
        )));
    }
    let snippet = snippets
        .get(name)
        .filter(|snippet| visible(snippet))
        .ok_or_else(|| {
            FrontError::not_found(format!(
                "unknown snippet `{}`; {}",
                excerpt(name),
                listing()
            ))
        })?;

    let first_line = text[cur.pos..].split('\n').next().unwrap_or_default();
    let given = if first_line.trim().is_empty() {
        block(&cur, name)?
    } else {
        inline(&mut cur, name)?
    };
    let context = context(name, snippet, given)?;
    let rendered = render(name, snippet, &context)?;
    if rendered.is_empty() {
        return Err(FrontError::invalid(format!(
            "snippet `{name}` rendered to empty text; its body produces no command"
        )));
    }
    Ok(rendered)
}

/// The body rendered with `context`, tidied. A body the config got wrong
/// (bad syntax, a variable that is no parameter) is the server's mistake,
/// not the caller's, and names where to fix it.
fn render(name: &str, snippet: &Snippet, context: &Given) -> Result<String, FrontError> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    let rendered = env.render_str(&snippet.body, context).map_err(|e| {
        let place = snippet.place.as_deref().unwrap_or("the config");
        match snippet.misconfigured(&e) {
            Some(why) => FrontError::misconfigured(format!(
                "snippet `{name}` is misconfigured: {why}; fix `[snippets.{name}]` at {place}"
            )),
            None => FrontError::invalid(format!(
                "snippet `{name}` failed to render with these values: {e} (its body is at {place})"
            )),
        }
    })?;
    Ok(tidy(&rendered))
}

impl Snippet {
    /// What is wrong with the body itself, found by rendering it with its
    /// defaults (and a placeholder for each parameter without one), so
    /// `packhost check` and the start refuse it rather than a caller.
    pub fn problem(&self) -> Option<String> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        let e = env.render_str(&self.body, self.placeholders()).err()?;
        self.misconfigured(&e)
    }

    /// The defaults, and `"x"` for each parameter without one.
    fn placeholders(&self) -> Given {
        self.params
            .iter()
            .map(|(name, param)| {
                let value = param.default.clone().unwrap_or_else(|| Value::from("x"));
                (name.clone(), value)
            })
            .collect()
    }

    /// The config's mistake behind render error `e`, when it is one: a
    /// syntax error, or a variable that is none of the parameters.
    fn misconfigured(&self, e: &minijinja::Error) -> Option<String> {
        let params = || {
            let names: Vec<&str> = self.params.keys().map(String::as_str).collect();
            if names.is_empty() {
                "it has none".to_owned()
            } else {
                format!("its parameters: {}", names.join(", "))
            }
        };
        match e.kind() {
            ErrorKind::SyntaxError => Some(format!(
                "its body is not a valid template: {} (line {} of the body)",
                e.detail().unwrap_or("syntax error"),
                e.line().unwrap_or(1)
            )),
            ErrorKind::UndefinedError => {
                let env = Environment::new();
                let template = env.template_from_str(&self.body).ok()?;
                let globals: Vec<&str> = env.globals().map(|(name, _)| name).collect();
                let mut unknown: Vec<String> = template
                    .undeclared_variables(false)
                    .into_iter()
                    .filter(|v| !self.params.contains_key(v) && !globals.contains(&v.as_str()))
                    .collect();
                unknown.sort();
                // The one on the failing line, else the first.
                let at = e
                    .line()
                    .and_then(|line| self.body.lines().nth(line.saturating_sub(1)))
                    .unwrap_or_default();
                let name = unknown
                    .iter()
                    .find(|v| at.contains(v.as_str()))
                    .or(unknown.first())?;
                Some(format!(
                    "its body uses `{name}`, which is none of its parameters ({}); add \
                     `{name}` to its `params` or use a parameter",
                    params()
                ))
            }
            _ => None,
        }
    }
    /// How a caller writes it, `$name` and its parameters, each with its
    /// default when it has one: `$find pattern project="packhost"`.
    pub fn usage(&self, name: &str) -> String {
        let mut usage = format!("${name}");
        for (param, spec) in &self.params {
            usage.push(' ');
            usage.push_str(param);
            if let Some(default) = &spec.default {
                usage.push_str(&format!("={default}"));
            }
        }
        usage
    }

    /// What it calls, when its body renders to a call (with its defaults,
    /// and a placeholder for each parameter without one): `pack.function`
    /// or an alias, before the alias is applied. `None` for code.
    pub fn target(&self) -> Option<String> {
        let rendered = render("", self, &self.placeholders()).ok()?;
        crate::parse_call(&rendered).ok()?.map(|call| call.target)
    }

    /// Snippet `name` as an MCP prompt's text: its body rendered with
    /// `arguments`, each read as `$name key=value` reads an unquoted value
    /// (MCP's prompt arguments are strings), defaults filled in; unknown
    /// and missing parameters refused as `$name` refuses them.
    pub fn render_prompt(
        &self,
        name: &str,
        arguments: &BTreeMap<String, String>,
    ) -> Result<String, FrontError> {
        let given = arguments
            .iter()
            .map(|(key, value)| (key.clone(), typed(value)))
            .collect();
        render(name, self, &context(name, self, given)?)
    }
}

fn available(names: &[&str]) -> String {
    if names.is_empty() {
        "no snippets are configured".to_owned()
    } else {
        format!("available: {}", names.join(", "))
    }
}

/// `$name key=value key2="two words"`: pairs separated by whitespace.
fn inline(cur: &mut Cursor, name: &str) -> Result<Given, FrontError> {
    let mut given = Given::new();
    loop {
        while let Some(c) = cur.peek_char().filter(|c| c.is_whitespace()) {
            cur.pos += c.len_utf8();
        }
        if cur.at_end() {
            return Ok(given);
        }
        let at = cur.pos;
        let Some(key) = cur.ident() else {
            return Err(FrontError::invalid(format!(
                "expected `key=value` at {} in the arguments of `${name}`, got `{}`",
                cur.at(at),
                excerpt(word(cur))
            )));
        };
        if !cur.eat(b'=') {
            return Err(FrontError::invalid(format!(
                "expected `=` right after `{key}` at {}; write `{key}=value`",
                cur.at(at),
                key = excerpt(key)
            )));
        }
        let value = if matches!(cur.peek(), Some(b'"' | b'\'')) {
            let text = quoted(cur)?;
            if cur.peek_char().is_some_and(|c| !c.is_whitespace()) {
                return Err(FrontError::invalid(format!(
                    "expected a space after the quoted value of `{}` at {}",
                    excerpt(key),
                    cur.at(cur.pos)
                )));
            }
            Value::String(text)
        } else {
            let bare = word(cur);
            if bare.is_empty() {
                return Err(no_value(cur, at, key));
            }
            cur.pos += bare.len();
            typed(bare)
        };
        insert(&mut given, key, value, name)?;
    }
}

/// `$name` alone on the first line, then one `key: value` per line.
fn block(cur: &Cursor, name: &str) -> Result<Given, FrontError> {
    let text = cur.src;
    let mut given = Given::new();
    let mut line_at = text[cur.pos..]
        .find('\n')
        .map_or(text.len(), |nl| cur.pos + nl + 1);
    while line_at < text.len() {
        let line = text[line_at..].split('\n').next().unwrap_or_default();
        let at = line_at;
        let end = at + line.len();
        line_at = end + 1;
        if line.trim().is_empty() {
            continue;
        }
        let Some((key, raw)) = line.split_once(':') else {
            return Err(FrontError::invalid(format!(
                "expected `key: value` at {} in the arguments of `${name}`, got `{}`",
                cur.at(at),
                excerpt(line.trim())
            )));
        };
        let key = key.trim();
        if Cursor::new(key).ident() != Some(key) {
            return Err(FrontError::invalid(format!(
                "expected a parameter name before `:` at {}, got `{}`",
                cur.at(at),
                excerpt(key)
            )));
        }
        let value_at = end - raw.trim_start().len();
        let raw = raw.trim();
        let value = if matches!(raw.as_bytes().first(), Some(b'"' | b'\'')) {
            let mut value_cur = Cursor::new(text);
            value_cur.pos = value_at;
            let unquoted = quoted(&mut value_cur)?;
            if value_cur.pos != value_at + raw.len() {
                return Err(FrontError::invalid(format!(
                    "unexpected text after the closing quote of `{}` at {}",
                    excerpt(key),
                    cur.at(value_cur.pos)
                )));
            }
            Value::String(unquoted)
        } else if raw.is_empty() {
            return Err(no_value(cur, at, key));
        } else {
            typed(raw)
        };
        insert(&mut given, key, value, name)?;
    }
    Ok(given)
}

/// A quoted value, with the same quoting and escapes as a Python string.
fn quoted(cur: &mut Cursor) -> Result<String, FrontError> {
    string(cur).map_err(|reject| match reject {
        Reject::Invalid(e) => e,
        Reject::NotLiteral => FrontError::invalid(format!(
            "named escapes `\\N{{...}}` are not supported in snippet arguments (at {}); write the character itself",
            cur.at(cur.pos)
        )),
    })
}

/// The whitespace-delimited word at the cursor.
fn word<'a>(cur: &Cursor<'a>) -> &'a str {
    let rest = &cur.src[cur.pos..];
    &rest[..rest.find(char::is_whitespace).unwrap_or(rest.len())]
}

fn no_value(cur: &Cursor, at: usize, key: &str) -> FrontError {
    FrontError::invalid(format!(
        "`{key}` at {} has no value; write `{key}=\"\"` for an empty string",
        cur.at(at),
        key = excerpt(key)
    ))
}

fn insert(given: &mut Given, key: &str, value: Value, name: &str) -> Result<(), FrontError> {
    if given.insert(key.to_owned(), value).is_some() {
        return Err(FrontError::invalid(format!(
            "parameter `{}` of `${name}` is given twice; give it once",
            excerpt(key)
        )));
    }
    Ok(())
}

/// Unquoted values that read as a bool, int or float take that JSON type.
/// Integers with leading zeros (`007`, zip codes) stay text.
fn typed(word: &str) -> Value {
    match word {
        "true" | "True" => return Value::Bool(true),
        "false" | "False" => return Value::Bool(false),
        _ => {}
    }
    let unsigned = word.strip_prefix(['-', '+']).unwrap_or(word);
    let has_digit = unsigned.bytes().any(|b| b.is_ascii_digit());
    if has_digit && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        if unsigned.len() == 1 || !unsigned.starts_with('0') {
            if let Ok(i) = word.parse::<i64>() {
                return Value::from(i);
            }
            if let Ok(u) = word.parse::<u64>() {
                return Value::from(u);
            }
        }
        return Value::String(word.to_owned());
    }
    let float_chars = unsigned
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    if has_digit
        && float_chars
        && let Some(n) = word.parse::<f64>().ok().and_then(Number::from_f64)
    {
        return Value::Number(n);
    }
    Value::String(word.to_owned())
}

/// Given values over defaults; unknown names and missing values are errors.
fn context(name: &str, snippet: &Snippet, mut given: Given) -> Result<Given, FrontError> {
    if let Some(unknown) = given.keys().find(|k| !snippet.params.contains_key(*k)) {
        let known = if snippet.params.is_empty() {
            "it takes no parameters".to_owned()
        } else {
            let names: Vec<&str> = snippet.params.keys().map(String::as_str).collect();
            format!("its parameters: {}", names.join(", "))
        };
        return Err(FrontError::invalid(format!(
            "snippet `{name}` has no parameter `{}`; {known}",
            excerpt(unknown)
        )));
    }
    for (param, spec) in &snippet.params {
        if given.contains_key(param) {
            continue;
        }
        let Some(default) = &spec.default else {
            let about = match spec.description.as_deref() {
                Some(d) if !d.is_empty() => format!(" ({d})"),
                _ => String::new(),
            };
            return Err(FrontError::invalid(format!(
                "snippet `{name}` needs parameter `{param}`{about}; pass it as `${name} {param}=...`"
            )));
        };
        given.insert(param.clone(), default.clone());
    }
    Ok(given)
}
