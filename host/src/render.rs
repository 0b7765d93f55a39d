//! Text forms of values, schemas and lists, for results and messages.

use serde_json::Value;

/// A result as text: strings as they are, everything else as pretty JSON.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

/// `pack.function(a: string, b?: integer = 3)` from an input schema.
pub fn signature(tool: &str, input_schema: &Value) -> String {
    let required: Vec<&str> = input_schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let params: Vec<String> = input_schema["properties"]
        .as_object()
        .map(|props| {
            props
                .iter()
                .map(|(name, schema)| {
                    let optional = if required.contains(&name.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    let default = schema
                        .get("default")
                        .filter(|d| !d.is_null())
                        .map(|d| format!(" = {d}"))
                        .unwrap_or_default();
                    format!("{name}{optional}: {}{default}", type_name(schema))
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{tool}({})", params.join(", "))
}

/// The short type of a property schema: `string`, `integer`, `"a" | "b"`,
/// `array`, `object`, or `any`.
fn type_name(schema: &Value) -> String {
    // A documented enum variant is `{"type": "string", "const": "a"}`.
    if let Some(value) = schema.get("const") {
        return value.to_string();
    }
    if let Some(values) = schema["enum"].as_array() {
        return values
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    match &schema["type"] {
        Value::String(t) => t.clone(),
        // `Option<T>` is `["T", "null"]`: the null is what `?` already says.
        Value::Array(types) => {
            let types: Vec<&str> = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect();
            if types.is_empty() {
                "null".to_owned()
            } else {
                types.join(" | ")
            }
        }
        _ => match schema.get("anyOf").or_else(|| schema.get("oneOf")) {
            Some(Value::Array(options)) => {
                let names: Vec<String> = options
                    .iter()
                    .filter(|o| o["type"] != "null")
                    .map(type_name)
                    .collect();
                names.join(" | ")
            }
            _ => "any".to_owned(),
        },
    }
}

/// `a, b, c`, or `(none)`.
pub fn list<I, S>(items: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let items: Vec<String> = items.into_iter().map(|s| s.as_ref().to_owned()).collect();
    if items.is_empty() {
        "(none)".to_owned()
    } else {
        items.join(", ")
    }
}

/// `1 function`, `2 functions`: a count and its noun.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

pub use pack_api::names::{did_you_mean, no_function, suggestion};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_count_agrees_with_its_noun() {
        assert_eq!(count(1, "function"), "1 function");
        assert_eq!(count(0, "pack"), "0 packs");
        assert_eq!(count(35, "function"), "35 functions");
    }

    #[test]
    fn signature_marks_optional_and_defaults() {
        let schema = json!({
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "timeout_ms": {"type": "integer", "default": 30000},
                "mode": {"enum": ["a", "b"]},
                "cwd": {"type": ["string", "null"]},
                "language": {"oneOf": [
                    {"type": "string", "const": "typescript", "description": "TypeScript"},
                    {"type": "string", "const": "javascript", "description": "JavaScript"}
                ]}
            },
            "required": ["code"]
        });
        assert_eq!(
            signature("exec_py.run", &schema),
            r#"exec_py.run(code: string, timeout_ms?: integer = 30000, mode?: "a" | "b", cwd?: string, language?: "typescript" | "javascript")"#
        );
    }
}
