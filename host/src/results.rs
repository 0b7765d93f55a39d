//! Results too large for a model's context, kept by the host: the client
//! gets a preview (size, shape, head) and a handle, and reads on with the
//! `packhost.result_*` functions or `resources/read`. A kept result belongs
//! to the caller that made it (organisation and user): anyone else gets
//! what an unknown handle gets. Memory is bounded (the oldest go first) and
//! every result expires.
//!
//! Only what reaches an MCP client is kept: code calling tools (Python,
//! TypeScript) gets whole values, since filtering data in code is the point.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use pack_api::Owner;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Where a kept result is a resource.
pub const URI_PREFIX: &str = "packhost://results/";

/// `[results]`: when a result is kept instead of sent, and for how long.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ResultsConfig {
    /// A result whose text is longer than this many characters is kept and
    /// previewed. 0 sends every result whole.
    pub max_result_chars: usize,
    /// How long a kept result stays readable.
    pub ttl_secs: u64,
    /// The kept results' text together, at most, in bytes: past it the
    /// oldest are dropped.
    pub max_bytes: usize,
}

impl Default for ResultsConfig {
    fn default() -> Self {
        Self {
            max_result_chars: 20_000,
            ttl_secs: 3600,
            max_bytes: 256 << 20,
        }
    }
}

/// One kept result.
pub struct Kept {
    /// Who made it.
    pub owner: Owner,
    /// The tool that returned it.
    pub tool: String,
    /// Its text, as the client would have got it.
    pub text: Arc<str>,
    expires: Instant,
}

/// The kept results of the host.
pub struct Results {
    config: ResultsConfig,
    store: Mutex<Store>,
}

#[derive(Default)]
struct Store {
    by_handle: HashMap<String, Arc<Kept>>,
    /// Handles in the order they were kept, which is also expiry order.
    order: VecDeque<String>,
    bytes: usize,
}

impl Store {
    fn drop_oldest(&mut self) {
        if let Some(handle) = self.order.pop_front()
            && let Some(kept) = self.by_handle.remove(&handle)
        {
            self.bytes -= kept.text.len();
        }
    }

    fn expire(&mut self, now: Instant) {
        while let Some(oldest) = self.order.front() {
            match self.by_handle.get(oldest) {
                Some(kept) if kept.expires > now => break,
                _ => self.drop_oldest(),
            }
        }
    }
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
    /// An empty store with `config`'s bounds.
    pub fn new(config: ResultsConfig) -> Arc<Self> {
        Arc::new(Self {
            config,
            store: Mutex::new(Store::default()),
        })
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
    /// `owner`; the preview to send instead. A text larger than the whole
    /// store is not kept: its preview says so.
    pub fn keep(&self, owner: &Owner, tool: &str, text: String, value: Option<&Value>) -> Preview {
        let chars = text.chars().count();
        let head: String = text.chars().take(self.head_chars()).collect();
        let shape = value.map_or_else(|| text_shape(&text), |v| shape(v, 0));
        let handle = new_handle();
        let uri = format!("{URI_PREFIX}{handle}");
        let ttl = Duration::from_secs(self.config.ttl_secs);
        let stored = text.len() <= self.config.max_bytes;
        if stored {
            let now = Instant::now();
            let mut store = lock(&self.store);
            store.expire(now);
            while store.bytes + text.len() > self.config.max_bytes {
                store.drop_oldest();
            }
            store.bytes += text.len();
            store.order.push_back(handle.clone());
            let kept = Kept {
                owner: owner.clone(),
                tool: tool.to_owned(),
                text: text.into(),
                expires: now + ttl,
            };
            store.by_handle.insert(handle.clone(), Arc::new(kept));
        }
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
            format!(
                "The result of `{tool}` is {chars} characters, more than this server keeps; only \
                 its start is shown. Shape: {shape}\n{head}\n[…]\nAsk for less (a page, a filter), \
                 or filter it in code (`run` a Python or TypeScript block)."
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
    pub fn get(&self, owner: &Owner, handle: &str) -> Option<Arc<Kept>> {
        let mut store = lock(&self.store);
        store.expire(Instant::now());
        store
            .by_handle
            .get(handle)
            .filter(|kept| &kept.owner == owner)
            .cloned()
    }

    /// `owner`'s kept results, oldest first: `(handle, kept)`.
    pub fn list(&self, owner: &Owner) -> Vec<(String, Arc<Kept>)> {
        let mut store = lock(&self.store);
        store.expire(Instant::now());
        let store = &*store;
        store
            .order
            .iter()
            .filter_map(|handle| Some((handle.clone(), Arc::clone(store.by_handle.get(handle)?))))
            .filter(|(_, kept)| &kept.owner == owner)
            .collect()
    }

    /// How much of a kept result its preview shows.
    fn head_chars(&self) -> usize {
        (self.config.max_result_chars / 4).clamp(200, 2000)
    }
}

fn lock(store: &Mutex<Store>) -> std::sync::MutexGuard<'_, Store> {
    store.lock().unwrap_or_else(|e| e.into_inner())
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

    fn results(max_bytes: usize) -> Arc<Results> {
        Results::new(ResultsConfig {
            max_result_chars: 100,
            ttl_secs: 3600,
            max_bytes,
        })
    }

    #[test]
    fn a_kept_result_is_its_owners_alone() {
        let results = results(1 << 20);
        let ada = Owner::new("acme", "ada");
        let preview = results.keep(&ada, "proj.read", "x".repeat(500), None);
        assert!(
            preview
                .text
                .contains(&format!("kept as `{}`", preview.handle))
        );
        assert_eq!(
            &*results.get(&ada, &preview.handle).unwrap().text,
            "x".repeat(500)
        );
        for other in [Owner::new("acme", "bo"), Owner::new("evil", "ada")] {
            assert!(results.get(&other, &preview.handle).is_none());
            assert!(results.list(&other).is_empty());
        }
        assert_eq!(results.list(&ada).len(), 1);
    }

    #[test]
    fn memory_is_bounded_by_dropping_the_oldest() {
        let results = results(1000);
        let ada = Owner::new("acme", "ada");
        let handles: Vec<String> = (0..10)
            .map(|_| results.keep(&ada, "t", "y".repeat(300), None).handle)
            .collect();
        assert!(lock(&results.store).bytes <= 1000);
        assert!(results.get(&ada, &handles[0]).is_none());
        assert!(results.get(&ada, &handles[9]).is_some());
        let huge = results.keep(&ada, "t", "z".repeat(5000), None);
        assert!(results.get(&ada, &huge.handle).is_none());
        assert!(huge.text.contains("more than this server keeps"));
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
