//! Values and schemas checked as the official MCP clients check them: a
//! result against its function's output schema, a manifest's schemas and
//! examples, content blocks.

use jsonschema::Validator;
use pack_api::Example;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::{PackDef, PackError, schema::output_schema};

/// `value` (an `R`) against the output schema the SDK lists for a function
/// returning `R`.
pub fn check_result<R: Serialize + JsonSchema>(value: &R) -> Result<(), String> {
    let value = serde_json::to_value(value).map_err(|e| format!("not JSON: {e}"))?;
    check_value::<R>(&value)
}

/// The result shape a failure carries ([`PackError::with_result`]) against
/// the output schema of `R`, the function's result type. A failure without
/// one passes.
pub fn check_failure<R: JsonSchema>(error: &PackError) -> Result<(), String> {
    match error.clone().into_wire().result {
        Some(value) => check_value::<R>(&value),
        None => Ok(()),
    }
}

fn check_value<R: JsonSchema>(value: &Value) -> Result<(), String> {
    let schema = output_schema::<R>()?;
    let validator = validator(&schema)?;
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("at `{}`: {e}", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{value} does not fit the output schema of `{}` {schema}: {}",
            std::any::type_name::<R>(),
            errors.join("; ")
        ))
    }
}

/// Every function of the pack `build` makes: its schemas are object schemas
/// that compile (draft 2020-12), with no boolean property schemas (which the
/// TypeScript SDK's client refuses); its examples' arguments fit its input
/// schema; its annotations do not contradict each other (read-only yet
/// destructive).
pub fn check_manifest<S: Send + Sync + 'static>(build: fn() -> PackDef<S>) -> Result<(), String> {
    let manifest = build().manifest("0.0.0");
    for function in &manifest.functions {
        let at = format!("`{}.{}`", manifest.name, function.name);
        for (what, schema) in [
            ("input", &function.input_schema),
            ("output", &function.output_schema),
        ] {
            check_schema(schema).map_err(|e| format!("{at} {what} schema: {e}"))?;
        }
        let input = validator(&function.input_schema)?;
        for (n, Example { args, .. }) in function.examples.iter().enumerate() {
            let problems: Vec<String> = input.iter_errors(args).map(|e| e.to_string()).collect();
            if !problems.is_empty() {
                return Err(format!(
                    "{at} example {}: its arguments {args} do not fit the input schema: {}",
                    n + 1,
                    problems.join("; ")
                ));
            }
        }
        let hints = &function.annotations;
        if hints.read_only == Some(true) && hints.destructive == Some(true) {
            return Err(format!("{at} is said to be read-only and destructive"));
        }
    }
    Ok(())
}

/// `block` is an MCP content block: `text`, `image`, `audio`,
/// `resource_link` or `resource`, with the keys its type needs.
pub fn check_block(block: &Value) -> Result<(), String> {
    let needs: &[&str] = match block["type"].as_str() {
        Some("text") => &["text"],
        Some("image" | "audio") => &["data", "mimeType"],
        Some("resource_link") => &["uri", "name"],
        Some("resource") => &["resource"],
        _ => {
            return Err(format!(
                "{block} is not an MCP content block (`type` text, image, audio, resource_link or resource)"
            ));
        }
    };
    match needs.iter().find(|key| block.get(**key).is_none()) {
        None => Ok(()),
        Some(key) => Err(format!("content block {block} has no `{key}`")),
    }
}

/// A tool's input or output schema as the official MCP clients take it: an
/// object schema (`"type": "object"` at the root), object schemas under
/// `properties` (the TypeScript client refuses a whole `tools/list` with a
/// boolean there), and it compiles (draft 2020-12).
pub fn check_schema(schema: &Value) -> Result<(), String> {
    if schema["type"] != "object" {
        return Err(format!("the root is not \"type\": \"object\": {schema}"));
    }
    if let Some(properties) = schema.get("properties") {
        let Some(properties) = properties.as_object() else {
            return Err(format!("`properties` is not an object: {schema}"));
        };
        if let Some((name, _)) = properties.iter().find(|(_, s)| !s.is_object()) {
            return Err(format!(
                "property `{name}` has a boolean schema, not an object: {schema}"
            ));
        }
    }
    validator(schema).map(drop)
}

pub(super) fn validator(schema: &Value) -> Result<Validator, String> {
    jsonschema::draft202012::new(schema).map_err(|e| format!("the schema does not compile: {e}"))
}
