//! Results too large for a model's context, kept by the host: the client
//! gets a preview (size, shape, head) and a handle, and reads on with the
//! `packhost.result_*` functions or `resources/read`. A kept result belongs
//! to the caller that made it (organisation and user): anyone else gets
//! what an unknown handle gets. Every result expires, and what is kept is
//! bounded per user, per organisation and in all (`state_store::Bounds`).
//! They live in this process, or with `[state] database` in PostgreSQL,
//! where every instance on it reads them.
//!
//! Only what reaches an MCP client is kept: code calling tools (Python,
//! TypeScript) gets whole values, since filtering data in code is the point.

use std::{sync::Arc, time::Duration};

use pack_api::{Owner, codes};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
pub use state_store::Kept;
use state_store::{Bounds, Listed, ResultStore, State};

use crate::failure::Failure;

/// Where a kept result is a resource.
pub const URI_PREFIX: &str = "packhost://results/";

/// `[results]`: when a result is kept instead of sent, for how long, and
/// how much is kept at most.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ResultsConfig {
    /// A result whose text is longer than this many characters is kept and
    /// previewed. 0 sends every result whole.
    pub max_result_chars: usize,
    /// How long a kept result stays readable.
    pub ttl_secs: u64,
    /// The kept results' text together, at most, in bytes: past it the
    /// oldest of the organisation that holds the most are dropped.
    pub max_bytes: u64,
    /// One organisation's kept text, at most: past it its oldest go.
    pub max_bytes_per_org: u64,
    /// One organisation's kept results, at most.
    pub max_results_per_org: u64,
    /// One user's kept text, at most: past it their oldest go.
    pub max_bytes_per_user: u64,
    /// One user's kept results, at most.
    pub max_results_per_user: u64,
}

impl Default for ResultsConfig {
    fn default() -> Self {
        Self {
            max_result_chars: 20_000,
            ttl_secs: 3600,
            max_bytes: 256 << 20,
            max_bytes_per_org: 64 << 20,
            max_results_per_org: 10_000,
            max_bytes_per_user: 32 << 20,
            max_results_per_user: 1_000,
        }
    }
}

impl ResultsConfig {
    pub(crate) fn bounds(&self) -> Bounds {
        Bounds {
            bytes: self.max_bytes,
            org_bytes: self.max_bytes_per_org,
            org_count: self.max_results_per_org,
            user_bytes: self.max_bytes_per_user,
            user_count: self.max_results_per_user,
        }
    }
}

/// The kept results of the host.
pub struct Results {
    config: ResultsConfig,
    store: Arc<dyn ResultStore>,
}

/// What the client gets instead of a kept result.
pub struct Preview {
    /// The text content: what was kept, its shape and head, how to read on.
    pub text: String,
    /// The structured content, cut to fit the budget the way the text is:
    /// long strings end early with a marker, long arrays keep their first
    /// items. It keeps the value's shape, so it still fits the tool's output
    /// schema (no schema grows for it).
    pub structured: Option<Value>,
    /// What the client's `_meta` says of the kept result: handle, URI,
    /// size, shape, expiry.
    pub meta: Value,
    /// The handle's resource URI.
    pub uri: String,
    /// The handle.
    pub handle: String,
    /// Characters kept.
    pub chars: usize,
}

impl Results {
    /// Kept results as `config` bounds them, where `state` lives.
    pub fn new(config: ResultsConfig, state: &Arc<State>) -> Arc<Self> {
        let store = state.results(config.bounds());
        Arc::new(Self { config, store })
    }

    /// Whether `text` is past the budget, so it is to be kept.
    pub fn too_large(&self, text: &str) -> bool {
        self.config.max_result_chars > 0 && text.chars().count() > self.config.max_result_chars
    }

    /// The most characters one answer sends.
    pub fn budget(&self) -> usize {
        match self.config.max_result_chars {
            0 => usize::MAX,
            budget => budget,
        }
    }

    /// Keep `text` (with `value`, what it was made from, for its shape) for
    /// `owner`; the preview to send instead. A text larger than a bound
    /// allows, or that the store failed to keep, is not kept: its preview
    /// says so.
    pub async fn keep(
        &self,
        owner: &Owner,
        tool: &str,
        text: String,
        value: Option<&Value>,
    ) -> Preview {
        let chars = text.chars().count();
        let head: String = text.chars().take(self.head_chars()).collect();
        let shape = value.map_or_else(|| text_shape(&text), |v| shape(v, 0));
        let handle = new_handle();
        let uri = format!("{URI_PREFIX}{handle}");
        let ttl = Duration::from_secs(self.config.ttl_secs);
        let kept = Kept {
            owner: owner.clone(),
            tool: tool.to_owned(),
            text: text.into(),
        };
        // Why it is not kept, when it is not.
        let unkept = match self.store.keep(&handle, &kept, ttl).await {
            Ok(true) => None,
            Ok(false) => Some("more than this server keeps".to_owned()),
            Err(e) => {
                tracing::warn!(tool, error = %e, "a large result was not kept");
                Some(format!(
                    "more than this server sends at once, and could not be kept ({e})"
                ))
            }
        };
        let stored = unkept.is_none();
        let budget = self.config.max_result_chars;
        let next = head.chars().count();
        let text = if stored {
            format!(
                "The result of `{tool}` is {chars} characters, more than this server sends at once \
                 ({budget}): it is kept as `{handle}` for {} minutes (also the resource {uri}).\n\
                 Shape: {shape}\nThe first {next} characters:\n{head}\n[…]\n\
                 Read on with packhost.result_read(handle=\"{handle}\", offset={next}); search it with \
                 packhost.result_grep(handle=\"{handle}\", pattern=\"regex\"); select from JSON with \
                 packhost.result_select(handle=\"{handle}\", path=\"$.key[0]\").",
                ttl.as_secs() / 60
            )
        } else {
            let why = unkept.unwrap_or_default();
            format!(
                "The result of `{tool}` is {chars} characters, {why}; only its start is shown. \
                 Shape: {shape}\n{head}\n[…]\nAsk for less (a page, a filter), or filter it in \
                 code (`run` a Python or TypeScript block)."
            )
        };
        let meta = json!({
            "handle": stored.then_some(&handle),
            "uri": stored.then_some(&uri),
            "tool": tool,
            "chars": chars,
            "shape": shape,
            "expires_in_secs": stored.then_some(ttl.as_secs()),
        });
        let marker = if stored {
            format!("kept as {handle}")
        } else {
            "not kept".to_owned()
        };
        let structured = value.map(|v| shrink(v, self.config.max_result_chars, &marker));
        Preview {
            text,
            structured,
            meta,
            uri,
            handle,
            chars,
        }
    }

    /// `handle`'s result if `owner` made it and it has not expired; `None`
    /// alike for unknown, expired and another caller's.
    pub async fn get(&self, owner: &Owner, handle: &str) -> Result<Option<Kept>, Failure> {
        self.store.get(owner, handle).await.map_err(unavailable)
    }

    /// `owner`'s kept results, oldest first.
    pub async fn list(&self, owner: &Owner) -> Result<Vec<Listed>, Failure> {
        self.store.list(owner).await.map_err(unavailable)
    }

    /// How much of a kept result its preview shows.
    fn head_chars(&self) -> usize {
        (self.config.max_result_chars / 4).clamp(200, 2000)
    }
}

/// The store could not be reached: says which and what to do.
fn unavailable(e: state_store::StoreError) -> Failure {
    Failure::new(codes::UPSTREAM_ERROR, e.to_string())
        .with_help("kept results are in `[state] database`; try again once it answers")
}

/// `r` and 16 random hex digits: not guessable, so a handle seen in a log
/// reveals nothing by itself (and owners are checked anyway).
fn new_handle() -> String {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the system has randomness");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("r{hex}")
}

/// A short description of a value's structure, two levels deep.
fn shape(value: &Value, depth: usize) -> String {
    match value {
        Value::Object(map) if depth < 2 => {
            let fields: Vec<String> = map
                .iter()
                .take(12)
                .map(|(key, v)| format!("{key}: {}", shape(v, depth + 1)))
                .collect();
            let more = map.len().saturating_sub(12);
            let more = if more > 0 {
                format!(", … {more} more")
            } else {
                String::new()
            };
            format!("{{{}{more}}}", fields.join(", "))
        }
        Value::Object(map) => format!("object ({} keys)", map.len()),
        Value::Array(items) => match items.first() {
            Some(first) if depth < 2 => format!(
                "array of {}, first: {}",
                items.len(),
                shape(first, depth + 1)
            ),
            _ => format!("array of {}", items.len()),
        },
        Value::String(s) => format!(
            "string ({} chars, {} lines)",
            s.chars().count(),
            s.lines().count()
        ),
        Value::Number(_) => "number".to_owned(),
        Value::Bool(_) => "boolean".to_owned(),
        Value::Null => "null".to_owned(),
    }
}

/// `value` with strings and arrays cut, shorter and shorter, until its
/// JSON text fits `budget` characters (or cannot shrink further).
fn shrink(value: &Value, budget: usize, marker: &str) -> Value {
    let (mut chars, mut items) = (budget / 4, 50);
    loop {
        let cut = cut(value, chars, items, marker);
        let small = chars <= 40 && items <= 1;
        if small || crate::render::value_text(&cut).chars().count() <= budget {
            return cut;
        }
        (chars, items) = ((chars / 2).max(40), (items / 2).max(1));
    }
}

fn cut(value: &Value, chars: usize, items: usize, marker: &str) -> Value {
    match value {
        Value::String(s) if s.chars().count() > chars => {
            let head: String = s.chars().take(chars).collect();
            Value::String(format!(
                "{head}[… {} more chars, {marker}]",
                s.chars().count() - chars
            ))
        }
        Value::Array(all) => Value::Array(
            all.iter()
                .take(items)
                .map(|item| cut(item, chars, items, marker))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, v)| (key.clone(), cut(v, chars, items, marker)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn text_shape(text: &str) -> String {
    format!("text ({} lines)", text.lines().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(max_bytes: u64) -> Arc<Results> {
        let config = ResultsConfig {
            max_result_chars: 100,
            max_bytes,
            ..ResultsConfig::default()
        };
        Results::new(config, &State::open(None))
    }

    #[tokio::test]
    async fn a_kept_result_is_its_owners_alone() {
        let results = results(1 << 20);
        let ada = Owner::new("acme", "ada");
        let preview = results.keep(&ada, "proj.read", "x".repeat(500), None).await;
        assert!(
            preview
                .text
                .contains(&format!("kept as `{}`", preview.handle))
        );
        let kept = results.get(&ada, &preview.handle).await.unwrap().unwrap();
        assert_eq!(&*kept.text, "x".repeat(500));
        let bo = Owner::new("acme", "bo");
        assert!(results.get(&bo, &preview.handle).await.unwrap().is_none());
        assert_eq!(results.list(&ada).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_result_past_the_bounds_is_previewed_and_not_kept() {
        let results = results(1000);
        let ada = Owner::new("acme", "ada");
        let huge = results.keep(&ada, "t", "z".repeat(5000), None).await;
        assert!(results.get(&ada, &huge.handle).await.unwrap().is_none());
        assert!(huge.text.contains("more than this server keeps"));
        assert_eq!(huge.meta["handle"], Value::Null);
    }

    #[test]
    fn a_preview_keeps_the_values_shape_within_the_budget() {
        let value =
            json!({"content": "a".repeat(5000), "lines": 3, "items": vec![json!({"id": 1}); 500]});
        let cut = shrink(&value, 1000, "kept as r1");
        assert!(
            crate::render::value_text(&cut).chars().count() <= 1000,
            "{cut}"
        );
        assert_eq!(cut["lines"], 3);
        assert!(
            cut["content"]
                .as_str()
                .unwrap()
                .ends_with("more chars, kept as r1]")
        );
        assert_eq!(cut["items"][0], json!({"id": 1}));
        assert!(cut["items"].as_array().unwrap().len() < 500);
    }

    #[test]
    fn shapes_say_sizes_and_keys() {
        let value = json!({"content": "a\nb", "items": [{"id": 1}], "n": 3});
        assert_eq!(
            shape(&value, 0),
            "{content: string (3 chars, 2 lines), items: array of 1, first: object (1 keys), n: number}"
        );
    }
}
