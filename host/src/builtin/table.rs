//! The `packhost` pack's functions, each declared once: name, title,
//! description, arguments (their type gives the input schema, as pack-sdk
//! gives packs theirs), result schema and handler. The manifest and the
//! dispatch both come from this table.

use std::sync::LazyLock;

use pack_api::{Annotations, FunctionSpec};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{
    Request, audit,
    catalog::{self, DescribeArgs, PacksArgs, SearchArgs},
    kept,
};
use crate::failure::Failure;

/// One function: what it says about itself and what runs it.
pub(super) struct Entry {
    spec: FunctionSpec,
    run: Handler,
}

/// A function's arguments as JSON → its result.
type Handler = Box<dyn Fn(&Request, Value) -> Result<Value, Failure> + Send + Sync>;

impl Entry {
    /// Function `name`, whose arguments are an `A`.
    fn new<A: DeserializeOwned + JsonSchema + 'static>(
        name: &str,
        title: &str,
        description: &str,
        output_schema: Value,
        run: fn(&Request, A) -> Result<Value, Failure>,
    ) -> Self {
        let mut input_schema =
            pack_sdk::input_schema::<A>().unwrap_or_else(|e| panic!("`packhost.{name}`: {e}"));
        in_order(&mut input_schema);
        Self {
            spec: FunctionSpec {
                name: name.to_owned(),
                title: Some(title.to_owned()),
                description: description.to_owned(),
                input_schema,
                output_schema,
                // They only read what the caller already has: the catalog, its results.
                annotations: Annotations {
                    read_only: Some(true),
                    destructive: Some(false),
                    idempotent: Some(true),
                    open_world: Some(false),
                },
                ..FunctionSpec::default()
            },
            run: Box::new(move |request, args| {
                // The host checked the arguments against the schema already.
                let args = serde_json::from_value(args)
                    .map_err(|e| Failure::invalid_argument(e.to_string()))?;
                run(request, args)
            }),
        }
    }

    /// Answer `request` with `args`.
    pub(super) fn run(&self, request: &Request, args: Value) -> Result<Value, Failure> {
        (self.run)(request, args)
    }
}

/// Schema keywords in the order `tools/list` has always shown them: its
/// text stays the same, byte for byte, for clients that cache it.
const ORDER: [&str; 8] = [
    "type",
    "properties",
    "minimum",
    "maximum",
    "default",
    "description",
    "required",
    "additionalProperties",
];

/// `schema`'s keywords, and its properties', in [`ORDER`].
fn in_order(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    let mut keys: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
    keys.sort_by_key(|(key, _)| ORDER.iter().position(|k| k == key).unwrap_or(ORDER.len()));
    *map = keys.into_iter().collect();
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        properties.values_mut().for_each(in_order);
    }
}

static TABLE: LazyLock<Vec<Entry>> = LazyLock::new(table);

/// The functions as the manifest lists them.
pub(super) fn specs() -> Vec<FunctionSpec> {
    TABLE.iter().map(|entry| entry.spec.clone()).collect()
}

/// Function `name`.
pub(super) fn entry(name: &str) -> Option<&'static Entry> {
    TABLE.iter().find(|entry| entry.spec.name == name)
}

fn text(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn table() -> Vec<Entry> {
    vec![
        Entry::new(
            "packs",
            "List packs",
            "List the packs you can call, each with its description and function names, the aliases, and the snippets `run` expands.",
            json!({
                "type": "object",
                "properties": {
                    "packs": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "name": text("Pack name: call its functions as `name.function`."),
                            "description": text("What the pack is for."),
                            "functions": {"type": "array", "items": {"type": "string"}},
                        },
                        "required": ["name", "description", "functions"],
                    }},
                    "aliases": {
                        "type": "object",
                        "description": "alias -> `pack.function` it calls",
                        "additionalProperties": {"type": "string"},
                    },
                    "snippets": {
                        "type": "object",
                        "description": "snippet name -> how to write it in `run` and what it does",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {
                                "usage": text("`$name param default_param=value`: give each parameter as `key=value`."),
                                "description": text("What it does."),
                            },
                            "required": ["usage", "description"],
                        },
                    },
                },
                "required": ["packs", "aliases", "snippets"],
            }),
            |request, _: PacksArgs| Ok(catalog::packs(&request.catalog)),
        ),
        Entry::new(
            "search",
            "Search functions",
            "Find the functions you can call for a task in words, best first: names, descriptions and parameters are searched.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "by_meaning": {"type": "boolean"},
                    "weak": {"type": "boolean"},
                    "closest_packs": {"type": "array", "items": {"type": "object"}},
                    "hint": {"type": "string"},
                    "note": {"type": "string"},
                    "warm_up": {"type": "object", "description": "The search model's one-off cost, on the first search to use it: `model_load_ms`, `embedded_tools`, `embedding_ms`."},
                    "results": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "name": text("`pack.function`: call it, or `packhost.describe` it."),
                            "signature": {"type": "string"},
                            "description": {"type": "string"},
                            "score": {"type": "number", "description": "Relevance, only comparable within one search."},
                        },
                        "required": ["name", "signature", "description", "score"],
                    }},
                },
                "required": ["query", "by_meaning", "weak", "results"],
            }),
            |request, args: SearchArgs| {
                Ok(catalog::search(
                    &request.searcher,
                    &request.catalog,
                    &args.query,
                    args.limit,
                ))
            },
        ),
        Entry::new(
            "describe",
            "Describe a function",
            "Describe a function (`pack.function` or an alias: signature, description, schemas, example calls) or a pack (its functions' signatures, and its prompts: render one from code as `pack.prompts.<name>(...)`).",
            json!({
                "type": "object",
                "properties": {
                    "kind": {"enum": ["function", "pack"]},
                    "name": text("`pack.function`, or the pack."),
                    "description": text("What it does."),
                    "signature": text("`pack.function(a: string, b?: integer = 3)`: the call from `run` and Python."),
                    "input_schema": {"description": "JSON Schema of the arguments."},
                    "output_schema": {"description": "JSON Schema of the result."},
                    "example": text("A call as `run` and Python take it, required arguments filled in."),
                    "example_typescript": text("The same call from TypeScript code."),
                    "title": {"type": "string"},
                    "examples": {"type": "array", "description": "Calls with what their results hold."},
                    "functions": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"signature": {"type": "string"}, "description": {"type": "string"}},
                        "required": ["signature", "description"],
                    }},
                    "prompts": {"type": "array", "description": "A pack's MCP prompts: name as listed, description, arguments."},
                },
                "required": ["kind", "name", "description"],
            }),
            |request, args: DescribeArgs| {
                catalog::describe(&request.searcher, &request.catalog, &args.name)
            },
        ),
        Entry::new(
            "result_read",
            "Read a kept result",
            "Read a kept result (its handle came with a preview) from character `offset`, `limit` characters.",
            json!({
                "type": "object",
                "properties": {
                    "handle": {"type": "string"},
                    "tool": text("The tool that returned it."),
                    "text": text("The characters read."),
                    "offset": {"type": "integer"},
                    "next_offset": {"type": ["integer", "null"], "description": "Where to read on; null at the end."},
                    "total_chars": {"type": "integer"},
                },
                "required": ["handle", "tool", "text", "offset", "next_offset", "total_chars"],
            }),
            kept::read,
        ),
        Entry::new(
            "result_grep",
            "Search a kept result",
            "The lines of a kept result that match a regular expression, with where they are (each string of a JSON result is searched line by line).",
            json!({
                "type": "object",
                "properties": {
                    "handle": {"type": "string"},
                    "matches": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "Where in the result, as JSONPath (`$.content`): a JSON result is searched string by string."},
                            "line": {"type": "integer", "description": "1-based, within that string."},
                            "text": {"type": "string"},
                        },
                        "required": ["path", "line", "text"],
                    }},
                    "total_matches": {"type": "integer"},
                    "truncated": {"type": "boolean", "description": "Whether matches were left out (past `max_matches`)."},
                },
                "required": ["handle", "matches", "total_matches", "truncated"],
            }),
            kept::grep,
        ),
        Entry::new(
            "result_select",
            "Select from a kept JSON result",
            "Select from a kept JSON result with a JSONPath query (RFC 9535), e.g. `$.items[?@.status == 'open'].id`.",
            json!({
                "type": "object",
                "properties": {
                    "handle": {"type": "string"},
                    "path": {"type": "string"},
                    "values": {"type": "array", "description": "What the query selected, in document order."},
                    "count": {"type": "integer"},
                },
                "required": ["handle", "path", "values", "count"],
            }),
            kept::select,
        ),
        Entry::new(
            "audit",
            "Read your organisation's audit trail",
            "Your organisation's audit events (an admin's only): calls, approvals, refused sign-ins and upstream credential events, the most recent first cut to `limit`, listed oldest first.",
            json!({
                "type": "object",
                "properties": {
                    "org": text("Your organisation: the only one whose events you can read."),
                    "count": {"type": "integer"},
                    "events": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "at": text("RFC 3339 UTC."),
                            "org": {"type": ["string", "null"]},
                            "user": {"type": ["string", "null"]},
                            "kind": {"enum": ["call", "approval", "sign_in_refused", "credential"]},
                            "tool": {"type": ["string", "null"], "description": "`pack.function`, or a credential's integration."},
                            "outcome": text("`ok` or an error code; accept/decline; why a sign-in was refused; granted/used/refreshed/revoked."),
                            "duration_ms": {"type": ["number", "null"]},
                            "request_id": {"type": ["string", "null"]},
                            "detail": {"type": "object"},
                        },
                        "required": ["at", "kind", "outcome", "detail"],
                    }},
                },
                "required": ["org", "count", "events"],
            }),
            audit::read,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schemas derived from the argument types read, byte for byte, as
    /// the hand-written ones `tools/list` showed before.
    #[test]
    fn argument_schemas_read_as_they_always_have() {
        let schema = |name: &str| entry(name).unwrap().spec.input_schema.to_string();
        assert_eq!(
            schema("packs"),
            r#"{"type":"object","properties":{},"additionalProperties":false}"#
        );
        assert_eq!(
            schema("search"),
            r#"{"type":"object","properties":{"query":{"type":"string","description":"What you want to do, in words."},"limit":{"type":"integer","minimum":1,"maximum":50,"default":5,"description":"Most results."}},"required":["query"],"additionalProperties":false}"#
        );
        assert_eq!(
            schema("result_read"),
            r#"{"type":"object","properties":{"handle":{"type":"string","description":"The handle of the kept result."},"offset":{"type":"integer","minimum":0,"default":0,"description":"First character, 0-based."},"limit":{"type":"integer","minimum":1,"description":"Characters to read; default and most: half the server's result budget."}},"required":["handle"],"additionalProperties":false}"#
        );
    }
}
