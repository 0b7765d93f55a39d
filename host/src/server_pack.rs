//! A server pack's calls: one tool of another MCP server per function,
//! called directly through the connection pool, its result turned into the
//! pack's value (and the server's own content blocks, passed on).

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
    time::Duration,
};

use mcp_downstream::{
    CallToolResult, ContentBlock, DownstreamError as Downstream, Endpoint, JsonObject, Pool, Tool,
};
use pack_api::{Annotations, FunctionSpec, codes};
use serde_json::{Value, json};

use crate::{
    failure::Failure,
    output::{Content, Output},
    tool_name::identifier,
};

/// Function name → the server's tool (see [`function_names`]).
pub(crate) type Names = Arc<RwLock<HashMap<String, ServerTool>>>;

/// Why the server has not answered yet (its last failure), while it has
/// not: what a call to the pack says meanwhile.
pub(crate) type Unanswered = Arc<RwLock<Option<String>>>;

/// One tool of the server.
#[derive(Clone)]
pub(crate) struct ServerTool {
    /// Its name on the server.
    name: String,
    /// Its output schema, when it declares one: results are checked against
    /// it, since MCP clients refuse a result that does not fit.
    output: Option<Arc<jsonschema::Validator>>,
}

/// A server pack as the executor calls it.
pub struct ServerPack {
    name: String,
    endpoint: Endpoint,
    pool: Arc<Pool>,
    names: Names,
    unanswered: Unanswered,
    timeout: Duration,
}

impl ServerPack {
    /// Pack `name`, served by the server at `endpoint` through `pool`;
    /// `names` holds its tools once known, `unanswered` why they are not.
    pub(crate) fn new(
        name: String,
        endpoint: Endpoint,
        pool: Arc<Pool>,
        names: Names,
        unanswered: Unanswered,
        timeout: Duration,
    ) -> Self {
        Self {
            name,
            endpoint,
            pool,
            names,
            unanswered,
            timeout,
        }
    }

    /// Why its server has not answered yet, while it has not.
    pub fn unanswered(&self) -> Option<String> {
        self.unanswered
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Call the tool that is function `function`.
    pub async fn call(&self, function: &str, args: Value) -> Result<Output, Failure> {
        let tool = self
            .names
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(function)
            .cloned()
            .unwrap_or_else(|| ServerTool {
                name: function.to_owned(),
                output: None,
            });
        let args = match args {
            Value::Object(args) => args,
            _ => JsonObject::default(),
        };
        let called = self
            .pool
            .call_tool(&self.name, &self.endpoint, &tool.name, args, self.timeout)
            .await;
        match called {
            Ok(result) if result.is_error != Some(true) => {
                let (text, blocks) = content_of(&result);
                let value = match &tool.output {
                    None => value_of(result),
                    Some(output) => checked_value(result, &tool, output)?,
                };
                Ok(Output {
                    value,
                    content: Some(Content { text, blocks }),
                })
            }
            Ok(result) => Err(Failure::new(
                codes::EXECUTION_ERROR,
                mcp_downstream::text_of(&result),
            )),
            Err(Downstream::Rejected(message)) => {
                Err(Failure::new(codes::EXECUTION_ERROR, message))
            }
            Err(Downstream::Upstream(reason)) => Err(Failure::new(codes::UPSTREAM_ERROR, reason)
                .with_help(format!(
                    "check the server of `[packs.{}]`; the next call reconnects",
                    self.name
                ))),
        }
    }

    /// Close its connections.
    pub fn shutdown(&self) {
        self.pool.close_all();
    }
}

/// The server's tools as functions of pack `pack`; records the name each
/// stands for.
pub(crate) fn functions(pack: &str, tools: &[Tool], names: &Names) -> Vec<FunctionSpec> {
    let mut map = names.write().unwrap_or_else(|e| e.into_inner());
    map.clear();
    let tool_names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    tools
        .iter()
        .zip(function_names(pack, &tool_names))
        .map(|(tool, function)| {
            let output = tool.output_schema.as_ref().and_then(|schema| {
                jsonschema::validator_for(&Value::Object((**schema).clone()))
                    .map_err(|e| {
                        tracing::warn!(tool = %tool.name, error = %e, "the server's output schema does not compile; its results are not checked")
                    })
                    .ok()
                    .map(Arc::new)
            });
            map.insert(
                function.clone(),
                ServerTool {
                    name: tool.name.to_string(),
                    output,
                },
            );
            let hints = tool.annotations.as_ref();
            FunctionSpec {
                name: function,
                description: tool.description.as_deref().unwrap_or_default().to_owned(),
                input_schema: Value::Object((*tool.input_schema).clone()),
                output_schema: tool.output_schema.as_ref().map_or_else(
                    || json!({"type": "object"}),
                    |s| Value::Object((**s).clone()),
                ),
                // The server's own title and hints, as it gave them.
                title: tool
                    .title
                    .clone()
                    .or_else(|| hints.and_then(|a| a.title.clone())),
                annotations: hints.map_or_else(Annotations::default, |a| Annotations {
                    read_only: a.read_only_hint,
                    destructive: a.destructive_hint,
                    idempotent: a.idempotent_hint,
                    open_world: a.open_world_hint,
                }),
                content: true,
                ..FunctionSpec::default()
            }
        })
        .collect()
}

/// The function name of each tool, in the server's order: `_` for each
/// character an identifier cannot hold, so `run` can call it (`get-sum` →
/// `get_sum`). When tools come to one name, every one stays reachable: a
/// tool whose name is that identifier already keeps it (its name works as
/// the server documents it; else the first listed does), the others get
/// `_2`, `_3`, ... in the server's order (the first name free), and a
/// warning names both tools.
fn function_names(pack: &str, tools: &[&str]) -> Vec<String> {
    let plain: Vec<String> = tools.iter().map(|tool| identifier(tool)).collect();
    // Function name → the tool that has it.
    let mut holders: HashMap<String, &str> = tools
        .iter()
        .zip(&plain)
        .filter(|(tool, name)| **tool == name.as_str())
        .map(|(tool, name)| (name.clone(), *tool))
        .collect();
    tools
        .iter()
        .zip(plain)
        .map(|(tool, name)| match holders.get(&name).copied() {
            None => {
                holders.insert(name.clone(), tool);
                name
            }
            Some(holder) if holder == *tool => name,
            Some(holder) => {
                let free = (2..)
                    .map(|n| format!("{name}_{n}"))
                    .find(|candidate| !holders.contains_key(candidate))
                    .expect("some suffix is free");
                tracing::warn!(
                    pack,
                    "tools `{holder}` and `{tool}` of the server both make `{name}`: `{holder}` \
                     keeps it, `{tool}` is served as `{pack}.{free}`"
                );
                holders.insert(free.clone(), tool);
                free
            }
        })
        .collect()
}

/// A downstream result as a pack value. Without an output schema: see
/// [`value_of`]. With one (the host lists it as the tool's): the structured
/// content, or for servers that predate it the text when it is a JSON
/// object (the spec's advice for compatibility), and only when it fits the
/// schema; else the server broke its own contract (`UPSTREAM_ERROR`, with the
/// server's text).
fn checked_value(
    result: CallToolResult,
    tool: &ServerTool,
    output: &jsonschema::Validator,
) -> Result<Value, Failure> {
    let text = mcp_downstream::text_of(&result);
    let value = result
        .structured_content
        .filter(Value::is_object)
        .or_else(|| serde_json::from_str(&text).ok().filter(Value::is_object));
    let Some(value) = value else {
        return Err(Failure::new(
            codes::UPSTREAM_ERROR,
            format!(
                "tool `{}` declares an output schema but its result has no structured content; it said: {text}",
                tool.name
            ),
        ));
    };
    let misfit = output
        .iter_errors(&value)
        .next()
        .map(|e| format!("at `{}`: {e}", e.instance_path()));
    match misfit {
        None => Ok(value),
        Some(e) => Err(Failure::new(
            codes::UPSTREAM_ERROR,
            format!(
                "the result of tool `{}` does not fit its own output schema ({e}); it said: {value}",
                tool.name
            ),
        )),
    }
}

/// A downstream result as a pack value: its structured content when it has
/// one, else its text, with images as `{mime, data_base64}` and other blocks
/// as they are (what code mode gets; clients get the server's own blocks,
/// see [`content_of`]).
fn value_of(result: CallToolResult) -> Value {
    if let Some(structured) = result.structured_content.filter(Value::is_object) {
        return structured;
    }
    let mut text = Vec::new();
    let mut images = Vec::new();
    let mut other = Vec::new();
    for block in result.content {
        match block {
            ContentBlock::Text(t) => text.push(t.text),
            ContentBlock::Image(i) => {
                images.push(json!({"mime": i.mime_type, "data_base64": i.data}));
            }
            block => other.push(serde_json::to_value(block).unwrap_or(Value::Null)),
        }
    }
    let mut value = json!({ "text": text.join("\n") });
    if !images.is_empty() {
        value["images"] = Value::Array(images);
    }
    if !other.is_empty() {
        value["content"] = Value::Array(other);
    }
    value
}

/// What the server's result shows, passed on as it is: its text blocks as
/// one text, its other blocks (images, audio, resource links, embedded
/// resources) after it. Without text, structured content is shown as text
/// (as for any function); a result with neither has only its blocks.
fn content_of(result: &CallToolResult) -> (Option<String>, Vec<ContentBlock>) {
    let blocks = result
        .content
        .iter()
        .filter(|block| block.as_text().is_none())
        .cloned()
        .collect();
    let text = mcp_downstream::text_of(result);
    let structured = result
        .structured_content
        .as_ref()
        .is_some_and(Value::is_object);
    let text = (!text.is_empty() || !structured).then_some(text);
    (text, blocks)
}

#[cfg(test)]
mod tests {
    use super::function_names;

    #[test]
    fn tools_that_come_to_one_name_all_stay_reachable() {
        assert_eq!(
            function_names("fx", &["get-sum", "get_sum", "echo", "get.sum"]),
            ["get_sum_2", "get_sum", "echo", "get_sum_3"]
        );
        // Without an identifier among them, the first listed keeps the name;
        // a suffix never takes the name of another tool.
        assert_eq!(
            function_names("fx", &["a-b", "a_b_2", "a.b"]),
            ["a_b", "a_b_2", "a_b_3"]
        );
    }
}
