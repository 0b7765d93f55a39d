//! The `packhost` pack: the host's own functions, served like any pack's
//! (listed, validated, callable from `run` and from code): what a caller can
//! call, found on demand instead of read from a long tool list, and the
//! results too large to send, read by handle. Every answer comes from the
//! caller's own catalog and results, so nothing outside its allow-list, and
//! nobody else's result, is ever shown.

use std::{sync::Arc, time::Duration};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RErr, ROk, RStr},
};
use async_ffi::{FfiFuture, FutureExt as _};
use pack_api::{
    Annotations, CallContextBox, CallResult, Catalog, CatalogTool, FunctionSpec, Manifest, Owner,
    Pack, Pack_TO, WireError, codes,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{
    loader::LoadedPack,
    render::did_you_mean,
    results::{Kept, Results},
};

/// The pack's call name.
pub use crate::tool_name::HOST_PACK as PACK;

/// Its functions that find the others: listed whatever `expose` says.
pub const DISCOVERY: [&str; 3] = ["search", "describe", "packs"];

/// The `packhost` pack over the host's kept `results`, ready for the
/// registry.
pub fn pack(results: Arc<Results>) -> LoadedPack {
    LoadedPack {
        name: PACK.to_owned(),
        origin: "built into the host".to_owned(),
        manifest: Manifest {
            name: PACK.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            description: "Find what you can call (search, describe, list packs) and read results kept by handle".to_owned(),
            functions: functions(),
        },
        instance: Pack_TO::from_value(HostPack { results }, TD_Opaque),
        timeout: Duration::from_secs(10),
    }
}

fn functions() -> Vec<FunctionSpec> {
    // They only read what the caller already has: the catalog, its results.
    let reads = Annotations {
        read_only: Some(true),
        destructive: Some(false),
        idempotent: Some(true),
        open_world: Some(false),
    };
    let spec = |name: &str, description: &str, input: Value, output: Value| FunctionSpec {
        name: name.to_owned(),
        title: Some(title(name).to_owned()),
        description: description.to_owned(),
        input_schema: input,
        output_schema: output,
        annotations: reads,
        ..FunctionSpec::default()
    };
    let text = |description: &str| json!({"type": "string", "description": description});
    vec![
        spec(
            "packs",
            "List the packs you can call, each with its description and function names, and the aliases.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
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
                },
                "required": ["packs", "aliases"],
            }),
        ),
        spec(
            "search",
            "Find the functions you can call for a task in words, best first: names, descriptions and parameters are searched.",
            json!({
                "type": "object",
                "properties": {
                    "query": text("What you want to do, in words."),
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5, "description": "Most results."},
                },
                "required": ["query"],
                "additionalProperties": false,
            }),
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
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
                "required": ["query", "results"],
            }),
        ),
        spec(
            "describe",
            "Describe a function (`pack.function` or an alias: signature, description, schemas, example calls) or a pack (its functions' signatures).",
            json!({
                "type": "object",
                "properties": {"name": text("`pack.function`, an alias, or a pack name.")},
                "required": ["name"],
                "additionalProperties": false,
            }),
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
                },
                "required": ["kind", "name", "description"],
            }),
        ),
        spec(
            "result_read",
            "Read a kept result (its handle came with a preview) from character `offset`, `limit` characters.",
            json!({
                "type": "object",
                "properties": {
                    "handle": text("The handle of the kept result."),
                    "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "First character, 0-based."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Characters to read; default and most: half the server's result budget."},
                },
                "required": ["handle"],
                "additionalProperties": false,
            }),
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
        ),
        spec(
            "result_grep",
            "The lines of a kept result that match a regular expression, with where they are (each string of a JSON result is searched line by line).",
            json!({
                "type": "object",
                "properties": {
                    "handle": text("The handle of the kept result."),
                    "pattern": text("A regular expression (Rust syntax; `(?i)` ignores case)."),
                    "max_matches": {"type": "integer", "minimum": 1, "default": 100, "description": "Most lines returned."},
                },
                "required": ["handle", "pattern"],
                "additionalProperties": false,
            }),
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
        ),
        spec(
            "result_select",
            "Select from a kept JSON result with a JSONPath query (RFC 9535), e.g. `$.items[?@.status == 'open'].id`.",
            json!({
                "type": "object",
                "properties": {
                    "handle": text("The handle of the kept result."),
                    "path": text("A JSONPath query, from `$` (the whole result)."),
                },
                "required": ["handle", "path"],
                "additionalProperties": false,
            }),
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
        ),
    ]
}

/// Each function's title, for people.
fn title(function: &str) -> &'static str {
    match function {
        "packs" => "List packs",
        "search" => "Search functions",
        "describe" => "Describe a function",
        "result_read" => "Read a kept result",
        "result_grep" => "Search a kept result",
        "result_select" => "Select from a kept JSON result",
        _ => "",
    }
}

struct HostPack {
    results: Arc<Results>,
}

impl Pack for HostPack {
    fn call(
        &self,
        function: RStr<'_>,
        args_json: RStr<'_>,
        ctx: CallContextBox,
    ) -> FfiFuture<CallResult> {
        let results = Arc::clone(&self.results);
        let function = function.as_str().to_owned();
        let args: Value = serde_json::from_str(args_json.as_str()).unwrap_or(Value::Null);
        async move {
            // Searching megabytes of a kept result is blocking work.
            let work = tokio::task::spawn_blocking(move || answer(&results, &function, args, &ctx));
            let answer = work.await.unwrap_or_else(|e| {
                Err(Box::new(WireError::new(
                    codes::INTERNAL,
                    format!("the packhost pack failed: {e}"),
                )))
            });
            match answer {
                Ok(value) => ROk(value.to_string().into()),
                Err(error) => RErr(serde_json::to_string(&error).unwrap_or_default().into()),
            }
        }
        .into_ffi()
    }

    fn shutdown(&self) -> FfiFuture<()> {
        async {}.into_ffi()
    }
}

fn answer(
    results: &Results,
    function: &str,
    args: Value,
    ctx: &CallContextBox,
) -> Result<Value, Box<WireError>> {
    let catalog = || -> Catalog { serde_json::from_str(&ctx.catalog()).unwrap_or_default() };
    let kept = |handle: &str| {
        let owner = Owner::new(ctx.org().as_str(), ctx.user().as_str());
        results
            .get(&owner, handle)
            .ok_or_else(|| unknown_result(handle))
    };
    match function {
        "packs" => Ok(packs(&catalog())),
        "search" => parse::<SearchArgs>(args).map(|a| search(&catalog(), &a.query, a.limit)),
        "describe" => parse::<DescribeArgs>(args).and_then(|a| describe(&catalog(), &a.name)),
        "result_read" => parse::<ReadArgs>(args).and_then(|a| {
            let limit = a.limit.unwrap_or(usize::MAX).min(results.budget() / 2);
            Ok(read(&a.handle, &*kept(&a.handle)?, a.offset, limit))
        }),
        "result_grep" => parse::<GrepArgs>(args).and_then(|a| grep(&a, &*kept(&a.handle)?)),
        "result_select" => parse::<SelectArgs>(args).and_then(|a| select(&a, &*kept(&a.handle)?)),
        other => Err(Box::new(WireError::new(
            codes::UNKNOWN_FUNCTION,
            format!("the packhost pack has no function `{other}`"),
        ))),
    }
}

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    #[serde(default = "default_limit")]
    limit: usize,
}

fn default_limit() -> usize {
    5
}

/// The caller's best functions for `query` (an index of its own catalog:
/// nothing else can be found).
fn search(catalog: &Catalog, query: &str, limit: usize) -> Value {
    let index = catalog_search::Index::new(&catalog.tools);
    let results: Vec<Value> = index
        .search(query, limit)
        .into_iter()
        .map(|hit| {
            let tool = &catalog.tools[hit.index];
            json!({
                "name": format!("{}.{}", tool.pack, tool.function),
                "signature": tool.signature,
                "description": tool.description,
                "score": hit.score,
            })
        })
        .collect();
    json!({"query": query, "results": results})
}

#[derive(Deserialize)]
struct DescribeArgs {
    name: String,
}

#[derive(Deserialize)]
struct ReadArgs {
    handle: String,
    #[serde(default)]
    offset: usize,
    limit: Option<usize>,
}

#[derive(Deserialize)]
struct GrepArgs {
    handle: String,
    pattern: String,
    #[serde(default = "default_max_matches")]
    max_matches: usize,
}

fn default_max_matches() -> usize {
    100
}

#[derive(Deserialize)]
struct SelectArgs {
    handle: String,
    path: String,
}

/// Longest line `result_grep` returns whole.
const MAX_LINE_CHARS: usize = 500;

fn unknown_result(handle: &str) -> Box<WireError> {
    let mut error = WireError::new(
        codes::NOT_FOUND,
        format!("no kept result `{handle}`: it is unknown or has expired"),
    );
    error.help = Some("call the tool again for a fresh result and handle".to_owned());
    Box::new(error)
}

fn read(handle: &str, kept: &Kept, offset: usize, limit: usize) -> Value {
    let total = kept.text.chars().count();
    let text: String = kept.text.chars().skip(offset).take(limit).collect();
    let end = offset.saturating_add(text.chars().count());
    json!({
        "handle": handle,
        "tool": kept.tool,
        "text": text,
        "offset": offset,
        "next_offset": (end < total).then_some(end),
        "total_chars": total,
    })
}

/// The matching lines of a kept result: of each string in it when it is
/// JSON (a file's content is one string, its lines what a model means),
/// else of its text.
fn grep(args: &GrepArgs, kept: &Kept) -> Result<Value, Box<WireError>> {
    let pattern = regex::Regex::new(&args.pattern).map_err(|e| {
        Box::new(WireError::new(
            codes::INVALID_ARGUMENT,
            format!("`pattern` is not a regular expression: {e}"),
        ))
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
                let mut shown: String = line.chars().take(MAX_LINE_CHARS).collect();
                if shown.len() < line.len() {
                    shown.push_str(" […]");
                }
                self.matches
                    .push(json!({"path": path, "line": number + 1, "text": shown}));
            }
        }
    }
}

/// `.key`, or `['key']` when it is no identifier: a JSONPath member.
fn member(key: &str) -> String {
    if crate::tool_name::is_identifier(key) {
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

fn select(args: &SelectArgs, kept: &Kept) -> Result<Value, Box<WireError>> {
    let invalid = |message: String| Box::new(WireError::new(codes::INVALID_ARGUMENT, message));
    let path = serde_json_path::JsonPath::parse(&args.path).map_err(|e| {
        invalid(format!(
            "`path` is not a JSONPath query ({e}); e.g. `$.items[0].name`"
        ))
    })?;
    let value: Value = serde_json::from_str(&kept.text).map_err(|e| {
        invalid(format!(
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

/// The host checked the arguments against the schema already.
fn parse<T: for<'de> Deserialize<'de>>(args: Value) -> Result<T, Box<WireError>> {
    serde_json::from_value(args)
        .map_err(|e| Box::new(WireError::new(codes::INVALID_ARGUMENT, e.to_string())))
}

fn packs(catalog: &Catalog) -> Value {
    let packs: Vec<Value> = catalog
        .packs
        .iter()
        .map(|(name, description)| {
            let functions: Vec<&str> = catalog
                .tools
                .iter()
                .filter(|t| &t.pack == name)
                .map(|t| t.function.as_str())
                .collect();
            json!({"name": name, "description": description, "functions": functions})
        })
        .collect();
    json!({"packs": packs, "aliases": catalog.aliases})
}

fn describe(catalog: &Catalog, name: &str) -> Result<Value, Box<WireError>> {
    let target = catalog.aliases.get(name).map_or(name, String::as_str);
    let tool = catalog
        .tools
        .iter()
        .find(|t| format!("{}.{}", t.pack, t.function) == target);
    if let Some(tool) = tool {
        let (example, example_typescript) = examples(tool);
        let mut described = json!({
            "kind": "function",
            "name": target,
            "description": tool.description,
            "signature": tool.signature,
            "input_schema": tool.input_schema,
            "output_schema": tool.output_schema,
            "example": example,
            "example_typescript": example_typescript,
        });
        if let Some(title) = &tool.title {
            described["title"] = json!(title);
        }
        if !tool.examples.is_empty() {
            described["examples"] = json!(tool.examples);
        }
        return Ok(described);
    }
    if let Some(description) = catalog.packs.get(name) {
        let functions: Vec<Value> = catalog
            .tools
            .iter()
            .filter(|t| t.pack == name)
            .map(|t| json!({"signature": t.signature, "description": t.description}))
            .collect();
        return Ok(json!({
            "kind": "pack",
            "name": name,
            "description": description,
            "functions": functions,
        }));
    }
    let known = catalog
        .tools
        .iter()
        .map(|t| format!("{}.{}", t.pack, t.function))
        .chain(catalog.aliases.keys().cloned())
        .chain(catalog.packs.keys().cloned());
    let known: Vec<String> = known.collect();
    let mut error = WireError::new(
        codes::NOT_FOUND,
        format!(
            "nothing you can call is named `{name}`; {}packs: {}",
            did_you_mean(name, known.iter().map(String::as_str)),
            catalog.packs.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
    );
    error.help =
        Some("search with `packhost.search(query)`, or list with `packhost.packs()`".into());
    Err(Box::new(error))
}

/// A call of `tool` as `run` takes it and as TypeScript writes it, each
/// required argument filled with a placeholder of its type (or its schema's
/// own example or default).
fn examples(tool: &CatalogTool) -> (String, String) {
    let schema = &tool.input_schema;
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let filled: Vec<(&str, Value)> = required
        .iter()
        .map(|name| (*name, placeholder(name, &schema["properties"][name])))
        .collect();
    let name = format!("{}.{}", tool.pack, tool.function);
    let python: Vec<String> = filled
        .iter()
        .map(|(key, value)| format!("{key}={}", python_literal(value)))
        .collect();
    let typescript: Vec<String> = filled
        .iter()
        .map(|(key, value)| format!("{key}: {value}"))
        .collect();
    let typescript = if typescript.is_empty() {
        format!("await {name}()")
    } else {
        format!("await {name}({{ {} }})", typescript.join(", "))
    };
    (format!("{name}({})", python.join(", ")), typescript)
}

fn placeholder(name: &str, schema: &Value) -> Value {
    if let Some(example) = schema["examples"].as_array().and_then(|e| e.first()) {
        return example.clone();
    }
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    let kind = match &schema["type"] {
        Value::Array(types) => types
            .iter()
            .find(|t| *t != "null")
            .cloned()
            .unwrap_or_default(),
        other => other.clone(),
    };
    match kind.as_str() {
        Some("integer" | "number") => json!(0),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => json!(format!("<{name}>")),
    }
}

fn python_literal(value: &Value) -> String {
    match value {
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Null => "None".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        let tool = CatalogTool {
            pack: "proj".into(),
            function: "read".into(),
            signature: "proj.read(name: string, path: string, offset?: integer = 0)".into(),
            description: "Read a file.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "path": {"type": "string", "examples": ["README.md"]},
                    "offset": {"type": "integer", "default": 0},
                },
                "required": ["name", "path"],
            }),
            output_schema: json!({"type": "object"}),
            ..CatalogTool::default()
        };
        Catalog {
            tools: vec![tool],
            packs: [("proj".to_owned(), "Project files".to_owned())].into(),
            aliases: [("r".to_owned(), "proj.read".to_owned())].into(),
            ..Catalog::default()
        }
    }

    #[test]
    fn a_function_is_described_with_calls_to_copy() {
        let described = describe(&catalog(), "r").unwrap();
        assert_eq!(described["name"], "proj.read");
        assert_eq!(
            described["example"],
            "proj.read(name=\"<name>\", path=\"README.md\")"
        );
        assert_eq!(
            described["example_typescript"],
            "await proj.read({ name: \"<name>\", path: \"README.md\" })"
        );
        let pack = describe(&catalog(), "proj").unwrap();
        assert_eq!(pack["kind"], "pack");
        assert_eq!(pack["functions"][0]["description"], "Read a file.");
    }

    #[test]
    fn an_unknown_name_says_the_closest() {
        let error = describe(&catalog(), "proj.raed").unwrap_err();
        assert_eq!(error.code, codes::NOT_FOUND);
        assert!(
            error.message.contains("did you mean `proj.read`?"),
            "{}",
            error.message
        );
    }
}
