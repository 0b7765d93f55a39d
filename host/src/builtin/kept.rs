//! Reading a kept result by handle: a page of it, the lines that match, or
//! what a JSONPath query selects.

use pack_api::text::clip_line;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Request;
use crate::{failure::Failure, tool_name::is_identifier};

// No doc comments on the argument types: they would become the schema's
// description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReadArgs {
    /// The handle of the kept result.
    handle: String,
    /// First character, 0-based.
    #[serde(default)]
    offset: usize,
    /// Characters to read; default and most: half the server's result budget.
    #[schemars(range(min = 1), extend("type" = "integer"))]
    limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GrepArgs {
    /// The handle of the kept result.
    handle: String,
    /// A regular expression (Rust syntax; `(?i)` ignores case).
    pattern: String,
    /// Most lines returned.
    #[serde(default = "default_max_matches")]
    #[schemars(range(min = 1))]
    max_matches: usize,
}

fn default_max_matches() -> usize {
    100
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SelectArgs {
    /// The handle of the kept result.
    handle: String,
    /// A JSONPath query, from `$` (the whole result).
    path: String,
}

/// `limit` characters from `offset`: at most half the result budget, so a
/// page always fits in an answer.
pub(super) fn read(request: &Request, args: ReadArgs) -> Result<Value, Failure> {
    let kept = request.kept(&args.handle)?;
    let limit = args
        .limit
        .unwrap_or(usize::MAX)
        .min(request.results.budget() / 2);
    let total = kept.text.chars().count();
    let text: String = kept.text.chars().skip(args.offset).take(limit).collect();
    let end = args.offset.saturating_add(text.chars().count());
    Ok(json!({
        "handle": args.handle,
        "tool": kept.tool,
        "text": text,
        "offset": args.offset,
        "next_offset": (end < total).then_some(end),
        "total_chars": total,
    }))
}

/// The matching lines of a kept result: of each string in it when it is
/// JSON (a file's content is one string, its lines what a model means),
/// else of its text.
pub(super) fn grep(request: &Request, args: GrepArgs) -> Result<Value, Failure> {
    let kept = request.kept(&args.handle)?;
    let pattern = regex::Regex::new(&args.pattern).map_err(|e| {
        Failure::invalid_argument(format!("`pattern` is not a regular expression: {e}"))
    })?;
    let mut found = Found {
        pattern: &pattern,
        matches: Vec::new(),
        total: 0,
        max: args.max_matches,
    };
    match serde_json::from_str::<Value>(&kept.text) {
        Ok(value) => found.walk(&value, "$".to_owned()),
        Err(_) => found.lines(&kept.text, "$"),
    }
    Ok(json!({
        "handle": args.handle,
        "truncated": found.total > found.matches.len(),
        "matches": found.matches,
        "total_matches": found.total,
    }))
}

struct Found<'a> {
    pattern: &'a regex::Regex,
    matches: Vec<Value>,
    total: usize,
    max: usize,
}

impl Found<'_> {
    fn walk(&mut self, value: &Value, path: String) {
        match value {
            Value::String(s) => self.lines(s, &path),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.walk(item, format!("{path}[{i}]"));
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    self.walk(item, format!("{path}{}", member(key)));
                }
            }
            scalar => self.lines(&scalar.to_string(), &path),
        }
    }

    fn lines(&mut self, text: &str, path: &str) {
        for (number, line) in text.lines().enumerate() {
            if !self.pattern.is_match(line) {
                continue;
            }
            self.total += 1;
            if self.matches.len() < self.max {
                let shown = clip_line(line, " […]");
                self.matches
                    .push(json!({"path": path, "line": number + 1, "text": shown}));
            }
        }
    }
}

/// `.key`, or `['key']` when it is no identifier: a JSONPath member.
fn member(key: &str) -> String {
    if is_identifier(key) {
        format!(".{key}")
    } else {
        format!(
            "[{}]",
            serde_json::to_string(key)
                .unwrap_or_default()
                .replace('"', "'")
        )
    }
}

pub(super) fn select(request: &Request, args: SelectArgs) -> Result<Value, Failure> {
    let kept = request.kept(&args.handle)?;
    let path = serde_json_path::JsonPath::parse(&args.path).map_err(|e| {
        Failure::invalid_argument(format!(
            "`path` is not a JSONPath query ({e}); e.g. `$.items[0].name`"
        ))
    })?;
    let value: Value = serde_json::from_str(&kept.text).map_err(|e| {
        Failure::invalid_argument(format!(
            "result `{}` is not JSON ({e}); read it with packhost.result_read or packhost.result_grep",
            args.handle
        ))
    })?;
    let values: Vec<&Value> = path.query(&value).all();
    Ok(json!({
        "handle": args.handle,
        "path": args.path,
        "count": values.len(),
        "values": values,
    }))
}
