//! The JSON Schemas of a function's arguments and result, made from its
//! Rust types the way MCP clients need them: object roots, no boolean
//! property schemas, no Rust-only number formats.

use schemars::{
    JsonSchema, Schema,
    generate::SchemaSettings,
    transform::{Transform, transform_subschemas},
};
use serde_json::{Map, Value, json};

use crate::PackError;

/// The JSON Schema of a function's arguments: what deserialising accepts (a
/// field with a serde default is optional). The host's own `packhost` pack
/// declares its arguments with it too, so every pack's schemas follow one rule.
pub fn input_schema<T: JsonSchema>() -> Result<Value, String> {
    let schema = schema_for::<T>(SchemaSettings::draft2020_12().for_deserialize());
    object_root(schema, "arguments")
}

/// The JSON Schema of a function's result: what serialising produces. A
/// field is required unless `skip_serializing_if` may leave it out; an
/// `Option` that is always written is required and may be `null`. (Schemas
/// for deserialising make every `Option` optional and every field with a
/// default optional: MCP clients that check results against them then refuse
/// results.)
pub(crate) fn output_schema<T: JsonSchema>() -> Result<Value, String> {
    let schema = schema_for::<T>(SchemaSettings::draft2020_12().for_serialize());
    object_root(schema, "result")
}

/// Inline schema without the meta keys: models read these, and the host
/// renders signatures from `properties`.
fn schema_for<T: JsonSchema>(settings: SchemaSettings) -> Value {
    let mut settings = settings
        .with_transform(ObjectProperties)
        .with_transform(StandardFormats);
    settings.inline_subschemas = true;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(object) = value.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    value
}

/// MCP's arguments and structured content are JSON objects, and clients
/// refuse a tool whose schema does not say `"type": "object"` at the root
/// (the TypeScript SDK's does). A schema without a `type` (`serde_json::Value`,
/// an enum of structs) gets it; any other type is a mistake of the pack.
fn object_root(schema: Value, what: &str) -> Result<Value, String> {
    let mut schema = match schema {
        Value::Bool(true) => Value::Object(Map::new()),
        schema => schema,
    };
    let Some(object) = schema.as_object_mut() else {
        return Err(format!(
            "its {what} schema is `{schema}`, not an object schema"
        ));
    };
    match object.get("type") {
        None => {
            object.insert("type".to_owned(), Value::from("object"));
            Ok(schema)
        }
        Some(Value::String(t)) if t == "object" => Ok(schema),
        Some(other) => Err(format!(
            "its {what} type has the JSON Schema type {other}, but MCP needs an object there: \
             use a struct (or a map)"
        )),
    }
}

/// `true` or `false` as the schema of a property becomes `{}` or
/// `{"not": {}}`: the same meaning, but the TypeScript SDK's client refuses a
/// tool whose `properties` hold a boolean (`serde_json::Value` fields).
#[derive(Clone)]
struct ObjectProperties;

impl Transform for ObjectProperties {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            for property in properties.values_mut() {
                if let Value::Bool(any) = *property {
                    *property = if any { json!({}) } else { json!({ "not": {} }) };
                }
            }
        }
        transform_subschemas(self, schema);
    }
}

/// schemars names Rust's number types in `format` (`uint64`, `int32`,
/// `double`), which JSON Schema does not define: clients that validate with
/// Ajv (the TypeScript SDK's) log a warning for each on every `tools/list`.
/// The bounds stay (`minimum: 0` for unsigned types).
#[derive(Clone)]
struct StandardFormats;

impl Transform for StandardFormats {
    fn transform(&mut self, schema: &mut Schema) {
        let numeric = |t: &Value| t == "integer" || t == "number";
        let is_number = match schema.get("type") {
            Some(Value::Array(types)) => types.iter().any(numeric),
            Some(t) => numeric(t),
            None => false,
        };
        if is_number {
            schema.remove("format");
        }
        transform_subschemas(self, schema);
    }
}

/// A `serde_json::Value` result must hold an object: structured content is
/// one.
pub(crate) fn object_result(pack: &str, function: &str, value: Value) -> Result<Value, PackError> {
    if value.is_object() {
        return Ok(value);
    }
    Err(PackError::internal(format!(
        "`{pack}.{function}` returned {}, but a result must be a JSON object \
         (MCP structured content is one)",
        kind_of(&value)
    )))
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use serde::Serialize;

    use super::*;

    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum State {
        Idle,
        Busy,
    }

    #[derive(Serialize, JsonSchema)]
    struct Inner {
        #[serde(skip_serializing_if = "Option::is_none")]
        width: Option<u64>,
    }

    /// Every way a field can be left out, be null, or vary.
    #[derive(Serialize, JsonSchema)]
    struct Output {
        text: String,
        maybe: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        notes: Vec<String>,
        #[serde(default)]
        defaulted: u32,
        any: Value,
        any_maybe: Option<Value>,
        time_ms: f64,
        state: State,
        inner: Vec<Inner>,
        map: BTreeMap<String, i64>,
    }

    fn fits(schema: &Value, value: &Value) -> Result<(), String> {
        let validator = jsonschema::draft202012::new(schema).map_err(|e| e.to_string())?;
        let errors: Vec<String> = validator
            .iter_errors(value)
            .map(|e| e.to_string())
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!("{value} against {schema}: {errors:?}"))
        }
    }

    /// Every `format` anywhere in `schema`.
    fn formats(schema: &Value) -> Vec<Value> {
        match schema {
            Value::Object(map) => map
                .iter()
                .flat_map(|(key, value)| match key.as_str() {
                    "format" => vec![value.clone()],
                    _ => formats(value),
                })
                .collect(),
            Value::Array(items) => items.iter().flat_map(formats).collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn number_schemas_name_no_rust_types() {
        for schema in [
            output_schema::<Output>().unwrap(),
            input_schema::<Output>().unwrap(),
        ] {
            assert_eq!(formats(&schema), Vec::<Value>::new(), "{schema}");
            assert_eq!(schema["properties"]["defaulted"]["minimum"], 0, "{schema}");
        }
    }

    #[test]
    fn output_schemas_describe_what_serialising_writes() {
        let schema = output_schema::<Output>().unwrap();
        assert_eq!(schema["type"], "object");
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(!required.contains(&"skipped") && !required.contains(&"notes"));
        assert!(required.contains(&"maybe") && required.contains(&"defaulted"));
        // No boolean property schemas: the TypeScript client refuses them.
        assert_eq!(schema["properties"]["any"], json!({}));
        let sparse = Output {
            text: "t".into(),
            maybe: None,
            skipped: None,
            notes: vec![],
            defaulted: 0,
            any: json!([1, "x"]),
            any_maybe: None,
            time_ms: 3.0,
            state: State::Idle,
            inner: vec![Inner { width: None }],
            map: BTreeMap::new(),
        };
        let full = Output {
            maybe: Some("m".into()),
            skipped: Some("s".into()),
            notes: vec!["n".into()],
            any_maybe: Some(json!({"k": null})),
            time_ms: 0.25,
            state: State::Busy,
            inner: vec![Inner { width: Some(3) }],
            map: BTreeMap::from([("a".to_owned(), -1)]),
            text: "t".into(),
            defaulted: 2,
            any: json!("x"),
        };
        for value in [&full, &sparse] {
            fits(&schema, &serde_json::to_value(value).unwrap()).unwrap();
        }
        // A field left out that is always written is still a mismatch.
        let mut missing = serde_json::to_value(&full).unwrap();
        missing.as_object_mut().unwrap().remove("maybe");
        assert!(fits(&schema, &missing).is_err());
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        name: String,
        #[serde(default)]
        count: u32,
        maybe: Option<String>,
        any: Value,
    }

    #[test]
    fn input_schemas_describe_what_deserialising_accepts() {
        let schema = input_schema::<Args>().unwrap();
        assert_eq!(schema["required"], json!(["name", "any"]));
        assert_eq!(schema["properties"]["any"], json!({}));
        fits(&schema, &json!({"name": "n", "any": 1})).unwrap();
    }

    #[test]
    fn results_and_arguments_are_objects() {
        // `Value` may hold an object: the schema says so, a call checks it.
        assert_eq!(output_schema::<Value>().unwrap(), json!({"type": "object"}));
        let error = output_schema::<String>().unwrap_err();
        assert!(error.contains("use a struct"), "{error}");
        assert!(output_schema::<Vec<u8>>().is_err());
        assert!(output_schema::<Option<Inner>>().is_err());
        assert!(input_schema::<u32>().is_err());
    }

    #[test]
    fn a_result_that_is_not_an_object_fails_the_call() {
        let error = object_result("p", "f", json!([1])).unwrap_err();
        assert_eq!(error.code(), "INTERNAL");
        assert!(
            error.message().contains("`p.f` returned an array"),
            "{error}"
        );
        assert!(object_result("p", "f", json!({})).is_ok());
    }
}
