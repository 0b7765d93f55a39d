//! The `packhost` pack: the host's own functions, served like any pack's
//! (listed, validated, callable from `run` and from code): what a caller can
//! call, found on demand instead of read from a long tool list. Every answer
//! comes from the caller's own catalog, so nothing outside its allow-list
//! is ever shown.

use std::time::Duration;

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RErr, ROk, RStr},
};
use async_ffi::{FfiFuture, FutureExt as _};
use pack_api::{
    CallContextBox, CallResult, Catalog, CatalogTool, FunctionSpec, Manifest, Pack, Pack_TO,
    WireError, codes,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{loader::LoadedPack, render::did_you_mean};

/// The pack's call name.
pub const PACK: &str = "packhost";

/// The `packhost` pack, ready for the registry.
pub fn pack() -> LoadedPack {
    LoadedPack {
        name: PACK.to_owned(),
        origin: "built into the host".to_owned(),
        manifest: Manifest {
            name: PACK.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            description: "Find what you can call: list packs, describe a function".to_owned(),
            functions: functions(),
        },
        instance: Pack_TO::from_value(Discovery, TD_Opaque),
        timeout: Duration::from_secs(10),
    }
}

fn functions() -> Vec<FunctionSpec> {
    let spec = |name: &str, description: &str, input: Value, output: Value| FunctionSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: input,
        output_schema: output,
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
                    "functions": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"signature": {"type": "string"}, "description": {"type": "string"}},
                        "required": ["signature", "description"],
                    }},
                },
                "required": ["kind", "name", "description"],
            }),
        ),
    ]
}

struct Discovery;

impl Pack for Discovery {
    fn call(
        &self,
        function: RStr<'_>,
        args_json: RStr<'_>,
        ctx: CallContextBox,
    ) -> FfiFuture<CallResult> {
        let catalog: Catalog = serde_json::from_str(&ctx.catalog()).unwrap_or_default();
        let args: Value = serde_json::from_str(args_json.as_str()).unwrap_or(Value::Null);
        let answer = match function.as_str() {
            "packs" => Ok(packs(&catalog)),
            "describe" => parse::<DescribeArgs>(args).and_then(|a| describe(&catalog, &a.name)),
            other => Err(Box::new(WireError::new(
                codes::UNKNOWN_FUNCTION,
                format!("the packhost pack has no function `{other}`"),
            ))),
        };
        let result = match answer {
            Ok(value) => ROk(value.to_string().into()),
            Err(error) => RErr(serde_json::to_string(&error).unwrap_or_default().into()),
        };
        async move { result }.into_ffi()
    }

    fn shutdown(&self) -> FfiFuture<()> {
        async {}.into_ffi()
    }
}

#[derive(Deserialize)]
struct DescribeArgs {
    name: String,
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
        return Ok(json!({
            "kind": "function",
            "name": target,
            "description": tool.description,
            "signature": tool.signature,
            "input_schema": tool.input_schema,
            "output_schema": tool.output_schema,
            "example": example,
            "example_typescript": example_typescript,
        }));
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
