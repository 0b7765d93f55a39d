//! A server's tool result as the pack's value and content.

use mcp_downstream::{CallToolResult, ContentBlock};
use pack_api::codes;
use serde_json::{Value, json};

use super::ServerTool;
use crate::failure::Failure;

/// A downstream result as a pack value. Without an output schema: see
/// [`value_of`]. With one (the host lists it as the tool's): the structured
/// content, or for servers that predate it the text when it is a JSON
/// object (the spec's advice for compatibility), and only when it fits the
/// schema; else the server broke its own contract (`UPSTREAM_ERROR`, with the
/// server's text).
pub(super) fn checked_value(
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
pub(super) fn value_of(result: CallToolResult) -> Value {
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
pub(super) fn content_of(result: &CallToolResult) -> (Option<String>, Vec<ContentBlock>) {
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
