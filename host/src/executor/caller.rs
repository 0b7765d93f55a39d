//! One call as the executor carries it from the transport to the pack:
//! who calls, cancellation, progress, nesting and deadline.

use std::{sync::Arc, time::Instant};

use pack_api::LogLevel;
use tokio_util::sync::CancellationToken;

use crate::identity::Identity;

/// Receives progress reports of one call: (progress, total, message).
pub type ProgressSink = Arc<dyn Fn(f64, Option<f64>, String) + Send + Sync>;

/// Receives the log lines packs write for one call: (pack, level, message).
pub type LogSink = Arc<dyn Fn(&str, LogLevel, &str) + Send + Sync>;

/// Who is calling and how to reach back: given by the transport.
#[derive(Clone)]
pub struct Caller {
    /// Who calls and what it may call.
    pub identity: Identity,
    /// The request id, for logs.
    pub request_id: String,
    /// Where progress goes, when the client asked for it.
    pub progress: Option<ProgressSink>,
    /// Where the call's log lines go besides the host's log, when the
    /// client asked for them (`logging/setLevel`).
    pub log: Option<LogSink>,
    /// Cancelled when the client cancels the request.
    pub cancel: CancellationToken,
    /// How many tool calls deep this call is (code mode).
    pub depth: u32,
    /// When the call that made this one is cut (code mode); `None` for a
    /// call from a client, which has its pack's time limit only.
    pub deadline: Option<Instant>,
}

impl Caller {
    /// A client's call as `identity`, request `request_id`: not nested, not
    /// cancelled, no progress asked for.
    pub fn new(identity: Identity, request_id: impl Into<String>) -> Self {
        Self {
            identity,
            request_id: request_id.into(),
            progress: None,
            log: None,
            cancel: CancellationToken::new(),
            depth: 0,
            deadline: None,
        }
    }
}
