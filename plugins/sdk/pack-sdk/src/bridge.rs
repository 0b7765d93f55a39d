//! Code mode's channel, for every pack that runs code (Python, TypeScript):
//! the code calls tools over a private socket, one JSON object a line each
//! way. The code sends `{"type": "call", "id", "tool", "args": [...],
//! "kwargs": {...}}` (its arguments as written: the host binds and checks
//! them); the pack answers `{"id", "ok": value}` or `{"id", "error": {code,
//! message, help?}}`. Any other line is the code's answer (its value).
//! Calls are served side by side (`Promise.all` in TypeScript), each reply
//! sent as it is ready. What the code builds its namespaces from is
//! [`bindings`].

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::{
    io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, Lines},
    task::JoinSet,
};
use tokio_util::sync::CancellationToken;

use crate::{Context, catalogs::Outline};

/// After the code's process is gone, its last lines may still be in the
/// socket.
const LAST_WORDS: Duration = Duration::from_millis(100);

/// A tool call from the code.
#[derive(Deserialize)]
struct ToolCall {
    id: u64,
    tool: String,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
}

/// What code needs to bind every tool and prompt the caller may reach,
/// without the schemas (typed declarations are generated apart): `{tools:
/// [{pack, function, signature, description}], prompts: [{pack, name,
/// listed, description, arguments: [{name, description?, required}]}],
/// aliases, projects}`. Code renders a prompt by its `listed` name
/// (`pack_api::protocol::PROMPTS_GET`).
pub fn bindings(catalog: &Outline) -> Value {
    let tools: Vec<Value> = catalog
        .tools
        .iter()
        .map(|t| {
            json!({
                "pack": t.pack,
                "function": t.function,
                "signature": t.signature,
                "description": t.description,
            })
        })
        .collect();
    let prompts: Vec<Value> = catalog
        .prompts
        .iter()
        .map(|p| {
            json!({
                "pack": p.pack,
                "name": p.spec.name,
                "listed": p.listed(),
                "description": p.spec.description.as_deref().unwrap_or_default(),
                "arguments": p.spec.arguments,
            })
        })
        .collect();
    json!({
        "tools": tools,
        "prompts": prompts,
        "aliases": catalog.aliases,
        "projects": catalog.projects,
    })
}

/// `object` (a JSON object) as text with `key` set to `raw`, JSON text
/// written before (a catalog's [`bindings`](crate::SharedCatalog::bindings)),
/// copied in rather than parsed and written again.
pub fn object_with(object: &Value, key: &str, raw: &str) -> String {
    let mut text = object.to_string();
    debug_assert!(text.ends_with('}'), "not a JSON object: {text}");
    text.pop();
    if text.len() > 1 {
        text.push(',');
    }
    text.push_str(&Value::from(key).to_string());
    text.push(':');
    text.push_str(raw);
    text.push('}');
    text
}

/// When serving ends besides the code's process being gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// At the answer: it ends the call (Python's runner answers last).
    Answer,
    /// Only when the process is gone: code may still call tools after its
    /// answer (node runs until its event loop is empty).
    Gone,
}

/// Serve the code's tool calls with `ctx`'s identity until `until`, or until
/// its process is `gone` and what it wrote before going is read. Returns the
/// code's answer, if it sent one. Calls still running then are abandoned
/// (dropped, which cancels them in the host).
pub async fn serve<R, W>(
    reader: R,
    mut writer: W,
    ctx: &Context,
    gone: &CancellationToken,
    until: Until,
) -> Option<String>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = reader.lines();
    let mut calls = JoinSet::new();
    let mut answer = None;
    loop {
        tokio::select! {
            line = next_line(&mut lines, gone) => {
                let Some(line) = line else {
                    return answer;
                };
                let Some(call) = served(&line, ctx) else {
                    if until == Until::Answer {
                        return Some(line);
                    }
                    answer.get_or_insert(line);
                    continue;
                };
                calls.spawn(call);
            }
            Some(Ok(reply)) = calls.join_next() => {
                if writer.write_all(reply.as_bytes()).await.is_err() {
                    return answer;
                }
            }
        }
    }
}

async fn next_line<R: AsyncBufRead + Unpin>(
    lines: &mut Lines<R>,
    gone: &CancellationToken,
) -> Option<String> {
    let line = tokio::select! {
        line = lines.next_line() => line,
        () = gone.cancelled() => tokio::time::timeout(LAST_WORDS, lines.next_line())
            .await
            .unwrap_or(Ok(None)),
    };
    line.ok().flatten()
}

/// When `line` is a tool call of the code's, its serving with `ctx`'s
/// identity, which ends in the reply line; `None` for any other line (the
/// code's own). For a pack that reads the channel itself.
pub fn served(line: &str, ctx: &Context) -> Option<impl Future<Output = String> + Send + 'static> {
    let call = serde_json::from_str::<ToolCall>(line).ok()?;
    let ctx = ctx.clone();
    Some(async move { reply(call, &ctx).await })
}

/// The reply line to one call.
async fn reply(call: ToolCall, ctx: &Context) -> String {
    let reply = match ctx.call_with(&call.tool, &call.args, &call.kwargs).await {
        Ok(value) => json!({ "id": call.id, "ok": value }),
        Err(error) => json!({ "id": call.id, "error": error.into_wire() }),
    };
    reply.to_string() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_with_adds_the_raw_text_under_its_key() {
        let raw = r#"{"tools":[{"pack":"proj"}]}"#;
        let text = object_with(&json!({"code": "1+1", "n": 2}), "bind\"ings", raw);
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back,
            json!({"code": "1+1", "n": 2, "bind\"ings": {"tools": [{"pack": "proj"}]}})
        );
        let alone: Value = serde_json::from_str(&object_with(&json!({}), "b", "[1]")).unwrap();
        assert_eq!(alone, json!({"b": [1]}));
    }
}
