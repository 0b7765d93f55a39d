//! Code mode's channel, for every pack that runs code (Python, TypeScript):
//! the code calls tools over a private socket, one JSON object a line each
//! way. The code sends `{"type": "call", "id", "tool", "args": [...],
//! "kwargs": {...}}` (its arguments as written: the host binds and checks
//! them); the pack answers `{"id", "ok": value}` or `{"id", "error": {code,
//! message, help?}}`. Any other line is the code's last word, its answer.
//! Calls are served side by side (`Promise.all` in TypeScript), each reply
//! sent as it is ready.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::{
    io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, Lines},
    task::JoinSet,
};
use tokio_util::sync::CancellationToken;

use crate::Context;

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

/// Serve the code's tool calls with `ctx`'s identity until it sends a line
/// that is not a call (returned: its answer), or until its process is
/// `gone` and what it wrote before going is read. Calls still running then
/// are abandoned (dropped, which cancels them in the host).
pub async fn serve<R, W>(
    reader: R,
    mut writer: W,
    ctx: &Context,
    gone: &CancellationToken,
) -> Option<String>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = reader.lines();
    let mut calls = JoinSet::new();
    loop {
        tokio::select! {
            line = next_line(&mut lines, gone) => {
                let line = line?;
                let Ok(call) = serde_json::from_str::<ToolCall>(&line) else {
                    return Some(line);
                };
                let ctx = ctx.clone();
                calls.spawn(async move { reply(call, &ctx).await });
            }
            Some(Ok(reply)) = calls.join_next() => {
                if writer.write_all(reply.as_bytes()).await.is_err() {
                    return None;
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

/// The reply line to one call.
async fn reply(call: ToolCall, ctx: &Context) -> String {
    let reply = match ctx.call_with(&call.tool, &call.args, &call.kwargs).await {
        Ok(value) => json!({ "id": call.id, "ok": value }),
        Err(error) => json!({ "id": call.id, "error": error.into_wire() }),
    };
    reply.to_string() + "\n"
}
