//! Values of the wrong type in a person's words rather than serde's: one
//! wording for the host's `packs.toml` and for each pack's own `config`.

/// `key` got a value of the wrong type, in the user's words rather than
/// serde's: "`timeout_ms` must be a whole number, e.g. `timeout_ms = 60000`,
/// not the string \"60s\"". `got` and `expected` are serde's (`string
/// "60s"`, `u64`, `struct Param`).
pub fn wrong_type(key: &str, got: &str, expected: &str) -> String {
    let name = key.rsplit('.').next().unwrap_or(key);
    format!(
        "`{key}` must be {}, not {}",
        expected_in_words(name, expected),
        got_in_words(got)
    )
}

/// serde's "invalid type: string \"60s\", expected u64" (figment says "found
/// string"; "invalid value: integer `-5`" too): what was given and what was
/// expected.
pub fn invalid_type(message: &str) -> Option<(&str, &str)> {
    let rest = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))?;
    let rest = rest.strip_prefix("found ").unwrap_or(rest);
    rest.split_once(", expected ")
}

/// What fits, with an example of a valid line.
fn expected_in_words(name: &str, expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" => {
            format!("a whole number without quotes or units, e.g. `{name} = 60000`")
        }
        "f32" | "f64" => format!("a number, e.g. `{name} = 1.5`"),
        "a boolean" | "bool" => format!("`true` or `false`, e.g. `{name} = true`"),
        "a string" | "string" => format!("a quoted string, e.g. `{name} = \"text\"`"),
        "a sequence" | "sequence" => format!("a list, e.g. `{name} = [\"a\", \"b\"]`"),
        "struct Param" => format!(
            "a table, e.g. `{name} = {{ description = \"what it is\", default = \"value\" }}`"
        ),
        other if other.starts_with("struct ") || other.contains("map") => {
            format!("a table, e.g. `{name} = {{ key = \"value\" }}`")
        }
        other => other.to_owned(),
    }
}

/// What was given: `string "60s"` is the string "60s", `sequence` a list.
fn got_in_words(got: &str) -> String {
    let value = |prefix: &str| {
        got.strip_prefix(prefix)
            .map(|v| v.trim().trim_matches('`').to_owned())
    };
    if let Some(text) = value("string ") {
        format!("the string {text}")
    } else if let Some(n) = value("integer ").or_else(|| value("floating point ")) {
        format!("the number {n}")
    } else if let Some(b) = value("boolean ") {
        b
    } else {
        match got {
            "sequence" => "a list".to_owned(),
            "map" => "a table".to_owned(),
            other => other.to_owned(),
        }
    }
}

/// Where in `value` the leaf serde called `got` (`string "60s"`, `integer
/// `5``) is: its dotted key when exactly one leaf is that value.
pub fn key_of(value: &serde_json::Value, got: &str) -> Option<String> {
    fn walk(value: &serde_json::Value, path: &mut Vec<String>, got: &str, found: &mut Vec<String>) {
        use serde_json::Value;
        let shown = match value {
            Value::Object(map) => {
                for (key, inner) in map {
                    path.push(key.clone());
                    walk(inner, path, got, found);
                    path.pop();
                }
                "map".to_owned()
            }
            Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    path.push(i.to_string());
                    walk(inner, path, got, found);
                    path.pop();
                }
                "sequence".to_owned()
            }
            Value::String(s) => format!("string {s:?}"),
            Value::Bool(b) => format!("boolean `{b}`"),
            Value::Number(n) if n.is_f64() => format!("floating point `{n}`"),
            Value::Number(n) => format!("integer `{n}`"),
            Value::Null => "unit value".to_owned(),
        };
        if shown == got && !path.is_empty() {
            found.push(path.join("."));
        }
    }
    let mut found = Vec::new();
    walk(value, &mut Vec::new(), got, &mut found);
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_type_is_said_in_words_with_an_example() {
        let (got, expected) = invalid_type("invalid type: string \"60s\", expected u64").unwrap();
        assert_eq!(
            wrong_type("server.timeout_ms", got, expected),
            "`server.timeout_ms` must be a whole number without quotes or units, e.g. \
             `timeout_ms = 60000`, not the string \"60s\""
        );
        let (got, expected) =
            invalid_type("invalid type: found string \"x\", expected struct Param").unwrap();
        assert_eq!(
            wrong_type("pattern", got, expected),
            "`pattern` must be a table, e.g. `pattern = { description = \"what it is\", \
             default = \"value\" }`, not the string \"x\""
        );
        assert_eq!(
            wrong_type("enabled", "integer `1`", "a boolean"),
            "`enabled` must be `true` or `false`, e.g. `enabled = true`, not the number 1"
        );
        assert_eq!(invalid_type("unknown field `x`"), None);
    }

    #[test]
    fn the_key_of_a_wrong_value_is_found_when_it_is_the_only_one() {
        let config = serde_json::json!({"limits": {"memory_mb": "1G", "procs": 5}, "name": "1G"});
        assert_eq!(
            key_of(&config, "integer `5`").as_deref(),
            Some("limits.procs")
        );
        assert_eq!(key_of(&config, "string \"1G\""), None);
        assert_eq!(key_of(&config, "string \"2G\""), None);
    }
}
