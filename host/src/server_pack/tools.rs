//! A server's tools as the pack's functions.

use std::sync::Arc;

use mcp_downstream::Tool;
use pack_api::{Annotations, FunctionSpec};
use serde_json::{Value, json};

use super::{Served, ServerTool, names::served_names};

/// The server's tools as functions of pack `pack`; records the name each
/// stands for.
pub(crate) fn functions(pack: &str, tools: &[Tool], served: &Served) -> Vec<FunctionSpec> {
    let mut map = served.tools.write().unwrap_or_else(|e| e.into_inner());
    map.clear();
    let tool_names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    tools
        .iter()
        .zip(served_names(pack, "tools", &tool_names))
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
