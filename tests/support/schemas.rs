//! Every `tools/call` result checked the way the official MCP clients check
//! it, so that a result rmcp's client takes but theirs refuse fails a test.
//!
//! Python `mcp` 1.x (`ClientSession.call_tool`): on a result that is not an
//! error, a tool with an `outputSchema` must return `structuredContent` and it
//! must validate (jsonschema, draft 2020-12 unless the schema says
//! otherwise). The TypeScript SDK (`Client.callTool`, 1.32): the same, and
//! `structuredContent` is validated whenever it is present, on error results
//! too; `structuredContent` must be an object; `tools/list` itself is refused
//! when a schema's root is not `"type": "object"` or a property's schema is
//! not an object (`true`).
//!
//! Tests call tools through [`call_tool`] (rmcp clients; [`crate::TestHost`]
//! and the HTTP clients use it) or check raw JSON-RPC answers with
//! [`check_raw_call`]; both end in [`check_result`].

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, atomic::Ordering},
};

use pack_sdk::testing::check_schema;
use rmcp::{
    RoleClient,
    model::{CallToolRequestParams, CallToolResult, Tool},
    service::{RunningService, ServiceError},
};
use serde_json::Value;

use crate::Recorder;

/// What a client learned from `tools/list`: each tool's output schema.
#[derive(Clone, Debug, Default)]
pub struct Schemas(Arc<Mutex<Listed>>);

#[derive(Debug, Default)]
struct Listed {
    /// `tools_changed` when the list was fetched; `None`: never fetched.
    at: Option<usize>,
    tools: HashMap<String, Option<Value>>,
}

/// Schema of `tool`: `None` when it is not listed (or has no output schema).
type Lookup = Option<Option<Value>>;

impl Schemas {
    fn lookup(&self, tool: &str, changed: usize) -> Option<Lookup> {
        let listed = self.0.lock().unwrap_or_else(|e| e.into_inner());
        (listed.at == Some(changed)).then(|| listed.tools.get(tool).cloned())
    }

    fn store(&self, tools: &[Tool], changed: usize) {
        let mut listed = self.0.lock().unwrap_or_else(|e| e.into_inner());
        listed.at = Some(changed);
        listed.tools = tools
            .iter()
            .map(|t| {
                let schema = t
                    .output_schema
                    .as_ref()
                    .map(|s| Value::Object((**s).clone()));
                (t.name.to_string(), schema)
            })
            .collect();
    }
}

/// Fetch `tools/list` into the client's cache, checking every tool as the
/// TypeScript client would; the `tools_changed` count it is valid for, or
/// `None` when the list cannot be had (the host went away).
async fn refresh(client: &RunningService<RoleClient, Recorder>) -> Option<usize> {
    let recorder = client.service();
    let changed = recorder.tools_changed.load(Ordering::SeqCst);
    let tools = client.list_all_tools().await.ok()?;
    for tool in &tools {
        let json = serde_json::to_value(tool).expect("a tool is JSON");
        if let Err(e) = check_tool(&json) {
            panic!("tools/list: {e}");
        }
    }
    recorder.schemas.store(&tools, changed);
    Some(changed)
}

/// `tools/call` through an rmcp client whose handler is a [`Recorder`];
/// the result is checked against the tool's output schema from `tools/list`
/// (fetched once, again when the tools changed or the name is not in it).
/// A mismatch panics.
pub async fn call_tool(
    client: &RunningService<RoleClient, Recorder>,
    params: CallToolRequestParams,
) -> Result<CallToolResult, ServiceError> {
    let recorder = client.service();
    let name = params.name.to_string();
    // Listed before the call when nothing is known yet: a host may end its
    // session right after answering (SIGTERM tests).
    if recorder
        .schemas
        .lookup(&name, recorder.tools_changed.load(Ordering::SeqCst))
        .is_none()
    {
        refresh(client).await;
    }
    let result = client.call_tool(params).await?;
    let changed = recorder.tools_changed.load(Ordering::SeqCst);
    let schema = match recorder.schemas.lookup(&name, changed) {
        Some(Some(schema)) => schema,
        // Not listed (an unknown tool, one that appeared since) or listed
        // before a change: ask again.
        _ => match refresh(client).await {
            Some(at) => recorder.schemas.lookup(&name, at).flatten().flatten(),
            None => None,
        },
    };
    let json = serde_json::to_value(&result).expect("a result is JSON");
    if let Err(e) = check_result(&name, schema.as_ref(), &json) {
        panic!("{e}");
    }
    Ok(result)
}

/// A raw JSON-RPC `tools/call` answer for `name` checked against the output
/// schemas of a raw `tools/list` answer (both whole messages). Panics on a
/// mismatch.
#[track_caller]
pub fn check_raw_call(tools_list: &Value, name: &str, answer: &Value) {
    let tools = tools_list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("not a tools/list answer: {tools_list}"));
    for tool in tools {
        if let Err(e) = check_tool(tool) {
            panic!("tools/list: {e}");
        }
    }
    let schema = tools
        .iter()
        .find(|t| t["name"] == name)
        .and_then(|t| t.get("outputSchema"));
    if let Some(result) = answer.get("result")
        && let Err(e) = check_result(name, schema, result)
    {
        panic!("{e}");
    }
}

/// One tool of `tools/list` as the TypeScript client parses it: input and
/// output schemas (when there) are objects with `"type": "object"` and
/// object schemas under `properties`; the output schema compiles.
pub fn check_tool(tool: &Value) -> Result<(), String> {
    let name = &tool["name"];
    for key in ["inputSchema", "outputSchema"] {
        let Some(schema) = tool.get(key) else {
            if key == "inputSchema" {
                return Err(format!("tool {name} has no inputSchema"));
            }
            continue;
        };
        check_schema(schema).map_err(|e| format!("tool {name}: the {key}: {e}"))?;
    }
    Ok(())
}

/// One `tools/call` result (its JSON) for tool `name` against the tool's
/// output schema, by the rules of both official clients (module doc).
pub fn check_result(
    name: &str,
    output_schema: Option<&Value>,
    result: &Value,
) -> Result<(), String> {
    let fail = |why: String| {
        Err(format!(
            "the result of `{name}` would fail the official MCP clients: {why}\nresult: {result}"
        ))
    };
    if !result["content"].is_array() {
        return fail("`content` is not an array".into());
    }
    let is_error = result["isError"] == true;
    let structured = result.get("structuredContent");
    if let Some(structured) = structured
        && !structured.is_object()
    {
        return fail("`structuredContent` is not an object".into());
    }
    let Some(schema) = output_schema else {
        return Ok(());
    };
    let Some(structured) = structured else {
        return if is_error {
            Ok(())
        } else {
            fail("the tool has an outputSchema, but the result has no structuredContent".into())
        };
    };
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the outputSchema of `{name}` does not compile: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(structured)
        .map(|e| format!("at `{}`: {e}", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        let kind = if is_error { "error result" } else { "result" };
        fail(format!(
            "the {kind}'s structuredContent does not match the outputSchema ({})\nschema: {schema}",
            errors.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    }

    #[test]
    fn the_rules_of_both_clients() {
        let s = schema();
        let ok = |r: Value| check_result("t", Some(&s), &r);
        assert!(ok(json!({"content": [], "structuredContent": {"n": 1}})).is_ok());
        // Success without structured content, or not fitting: refused.
        assert!(ok(json!({"content": []})).is_err());
        assert!(ok(json!({"content": [], "structuredContent": {"n": "1"}})).is_err());
        // Errors: without structured content fine, with it validated.
        assert!(ok(json!({"content": [], "isError": true})).is_ok());
        let error = json!({"content": [], "isError": true, "structuredContent": {"error": {}}});
        assert!(ok(error.clone()).is_err());
        // No output schema: anything that is an object.
        assert!(check_result("run", None, &error).is_ok());
        let scalar = json!({"content": [], "structuredContent": 3});
        assert!(check_result("run", None, &scalar).is_err());
    }

    #[test]
    fn tools_the_typescript_client_refuses() {
        let input = json!({"type": "object"});
        assert!(check_tool(&json!({"name": "t", "inputSchema": input})).is_ok());
        let any_output = json!({"name": "t", "inputSchema": input, "outputSchema": {}});
        assert!(check_tool(&any_output).is_err());
        let boolean_property =
            json!({"name": "t", "inputSchema": {"type": "object", "properties": {"v": true}}});
        assert!(check_tool(&boolean_property).is_err());
    }
}
