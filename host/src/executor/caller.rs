//! Who calls: identity, allow-list, cancellation, progress and deadline, as
//! the transport hands them to the executor and the executor to packs.

use std::{sync::Arc, time::Instant};

use tokio_util::sync::CancellationToken;

use crate::tool_name::ToolName;

/// Receives progress reports of one call: (progress, total, message).
pub type ProgressSink = Arc<dyn Fn(f64, Option<f64>, String) + Send + Sync>;

/// Who is calling and how to reach back: given by the transport.
#[derive(Clone)]
pub struct Caller {
    /// User id handed to packs.
    pub user: String,
    /// Organisation id handed to packs.
    pub org: String,
    /// The request id, for logs.
    pub request_id: String,
    /// Where progress goes, when the client asked for it.
    pub progress: Option<ProgressSink>,
    /// Cancelled when the client cancels the request.
    pub cancel: CancellationToken,
    /// How many tool calls deep this call is (code mode).
    pub depth: u32,
    /// The tools this caller may use; `None`: all.
    pub allowed: Option<Arc<ToolFilter>>,
    /// When the call that made this one is cut (code mode); `None` for a
    /// call from a client, which has its pack's time limit only.
    pub deadline: Option<Instant>,
}

impl Caller {
    pub(super) fn may_call(&self, tool: &str) -> bool {
        self.allowed
            .as_ref()
            .is_none_or(|filter| filter.allows(tool))
    }
}

/// A token's allow-list: `pack.function`, `pack.*`, `run`, or `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFilter(Vec<String>);

impl ToolFilter {
    /// Allow what `patterns` name.
    pub fn new(patterns: Vec<String>) -> Self {
        Self(patterns)
    }

    /// Whether `tool` (`pack.function` or `run`) is allowed.
    pub fn allows(&self, tool: &str) -> bool {
        self.0.iter().any(|pattern| {
            pattern == "*"
                || pattern == tool
                || pattern
                    .strip_suffix(".*")
                    .is_some_and(|pack| ToolName::parse(tool).is_some_and(|name| name.pack == pack))
        })
    }
}
