//! Connections from packhost to other MCP servers, shared by the
//! `remote_mcp` pack (integrations) and the host's `kind = "mcp"` packs.
//!
//! - An [`Endpoint`] is a stdio child (started in its own process group with
//!   an allow-listed environment, confined by the sandbox as its
//!   [`Confinement`] says) or a streamable HTTP URL (no redirects followed;
//!   optionally public addresses only).
//! - A [`Pool`] keeps one connection per key and reuses it for every call;
//!   a connection whose server died is replaced on the next call (which is
//!   sent to the new server when it certainly never reached the dead one,
//!   and fails otherwise: a call is never sent twice), an idle one is
//!   closed, an HTTP session the server forgot is re-initialised by rmcp's
//!   client.
//! - packhost declares sampling, elicitation and roots to every server; a
//!   server's questions, log messages and progress during a request go to
//!   that request's [`Relay`] (its caller), what it says outside requests
//!   to [`PoolSettings::events`]. Callers give each of their own a
//!   connection ([`lane`]), since nothing else tells whose a question is.
//! - Every failure is sorted: [`DownstreamError::Rejected`] is the server's own
//!   answer (a JSON-RPC error), [`DownstreamError::Upstream`] the connection's fault.
#![deny(missing_docs)]

mod client;
mod confine;
mod connection;
mod content;
mod endpoint;
mod ledger;
mod pool;
mod reason;
mod relay;
mod settings;
mod spawn;
mod stderr;
mod transport;

pub use confine::Confinement;
pub use content::{linked_uris, log_line};
pub use egress::downstream::check_url;
pub use endpoint::{Endpoint, is_private};
pub use pack_process::{Limits, Mode};
pub use pool::Pool;
pub use relay::{Event, Events, Refusal, Relay, lane};
pub use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
pub use settings::{DownstreamError, Level, Log, PoolSettings};

/// The text blocks of a tool result, one per line: what a failed tool said.
pub fn text_of(result: &CallToolResult) -> String {
    let lines: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect();
    lines.join("\n")
}
