//! Checks for a pack's own tests (feature `test-support`): results as MCP
//! clients check them.
//!
//! The official MCP clients validate a tool's structured content against the
//! `outputSchema` it listed, on success and (the TypeScript SDK) on failure
//! too. The schemas come from your types, so a mismatch is a value the types
//! allow but the schema does not describe; these catch it in a unit test:
//!
//! ```ignore
//! #[test]
//! fn results_fit_their_schemas() {
//!     pack_sdk::testing::check_manifest(my_pack).unwrap();
//!     pack_sdk::testing::check_result(&Output { notes: vec![], ..sample() }).unwrap();
//! }
//! ```

use jsonschema::Validator;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::{PackDef, PackError, def::output_schema};

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
/// TypeScript SDK's client refuses).
pub fn check_manifest<S: Send + Sync + 'static>(build: fn() -> PackDef<S>) -> Result<(), String> {
    let manifest = build().manifest("0.0.0");
    for function in &manifest.functions {
        for (what, schema) in [
            ("input", &function.input_schema),
            ("output", &function.output_schema),
        ] {
            let at = format!("`{}.{}` {what} schema", manifest.name, function.name);
            if schema["type"] != "object" {
                return Err(format!("{at} is not an object schema: {schema}"));
            }
            let properties = schema["properties"].as_object().into_iter().flatten();
            if let Some((name, _)) = properties.into_iter().find(|(_, s)| !s.is_object()) {
                return Err(format!("{at}: property `{name}` has a boolean schema"));
            }
            validator(schema).map_err(|e| format!("{at}: {e}"))?;
        }
    }
    Ok(())
}

fn validator(schema: &Value) -> Result<Validator, String> {
    jsonschema::draft202012::new(schema).map_err(|e| format!("the schema does not compile: {e}"))
}
