//! Arguments: positional ones bound to parameters in schema order, then all
//! checked against the input schema, with errors that show the signature.

use packhost_command::Call;
use serde_json::{Map, Value};

use super::registry::Function;
use crate::error::CallError;

/// Positional arguments take the parameters in schema order.
pub(super) fn bind(function: &Function, call: Call) -> Result<Value, CallError> {
    if call.args.len() > function.params.len() {
        return Err(CallError::TooManyPositional {
            target: call.target,
            max: function.params.len(),
            got: call.args.len(),
            signature: function.signature.clone(),
        });
    }
    let mut args = Map::new();
    for (name, value) in function.params.iter().zip(call.args) {
        args.insert(name.clone(), value);
    }
    for (name, value) in call.kwargs {
        if args.contains_key(&name) {
            return Err(CallError::TwoValues {
                target: call.target,
                name,
                signature: function.signature.clone(),
            });
        }
        args.insert(name, value);
    }
    Ok(Value::Object(args))
}

/// Check `args` against the input schema; the error shows the signature.
pub(super) fn validate(function: &Function, args: Value) -> Result<Value, CallError> {
    let args = match args {
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    let Some(validator) = function.input_validator() else {
        return Ok(args);
    };
    let problems: Vec<String> = validator.iter_errors(&args).map(|e| describe(&e)).collect();
    if problems.is_empty() {
        return Ok(args);
    }
    Err(CallError::BadArguments {
        tool: function.tool().to_owned(),
        problems,
        signature: function.signature.clone(),
    })
}

fn describe(error: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind as Kind;
    let at = error.instance_path().to_string();
    let name = at.trim_start_matches('/').replace('/', ".");
    match error.kind() {
        Kind::Required { property } => {
            format!(
                "missing required argument `{}`",
                property.as_str().unwrap_or_default()
            )
        }
        Kind::AdditionalProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|u| format!("`{u}`")).collect();
            format!("unknown argument {}", names.join(", "))
        }
        Kind::Type { .. } if name.is_empty() => {
            format!(
                "arguments must be an object of named values, got {}",
                error.instance()
            )
        }
        _ if name.is_empty() => error.to_string(),
        _ => format!("`{name}`: {error}"),
    }
}
