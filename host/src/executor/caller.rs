//! One call as the executor carries it from the transport to the pack:
//! who calls, cancellation, progress, nesting and deadline.

use std::{
    future::Future,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Instant,
};

use pack_api::LogLevel;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::subscription::Subscriber;
use crate::{failure::Failure, identity::Identity};

/// Receives progress reports of one call: (progress, total, message).
pub type ProgressSink = Arc<dyn Fn(f64, Option<f64>, String) + Send + Sync>;

/// Receives the log lines packs write for one call: (pack, level, message).
pub type LogSink = Arc<dyn Fn(&str, LogLevel, &str) + Send + Sync>;

/// Questions to a call's client, as MCP's `inputRequests`: key ->
/// `{"method", "params"}` (elicitation, sampling, roots).
pub type Questions = Map<String, Value>;

/// The client's answers, as MCP's `inputResponses`: key -> the result of
/// the question of that key.
pub type Answers = Map<String, Value>;

/// Puts a call's questions to the client that made the call, the way its
/// wire asks (see `mcp::ask`); a call from code asks through the call that
/// made it.
pub trait Ask: Send + Sync {
    /// Every question answered, or why they cannot be.
    fn ask(
        &self,
        questions: Questions,
    ) -> Pin<Box<dyn Future<Output = Result<Answers, Failure>> + Send>>;

    /// As [`Self::ask`], but an answer counts only if it was given to these
    /// questions once they were asked: not one a request carried before
    /// (2026-07-28 lets a client send answers with a request, which is
    /// fine for a pack's own questions, whose keys it chose). What the
    /// host's approvals ask with, so that "yes" means a person was asked.
    fn ask_anew(
        &self,
        questions: Questions,
    ) -> Pin<Box<dyn Future<Output = Result<Answers, Failure>> + Send>> {
        self.ask(questions)
    }

    /// Tell the client that what URL elicitation `id` sent its user to do
    /// is done (`notifications/elicitation/complete`), where the wire has
    /// it; a wire without it (2026-07-28's retries) has nothing to tell.
    fn elicitation_complete(&self, _id: String) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(std::future::ready(()))
    }
}

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
    /// Where the call's questions go; `None`: no client can be asked.
    pub ask: Option<Arc<dyn Ask>>,
    /// The client session the call came in on: what an approval
    /// remembered "for this session" holds for.
    pub session: Option<SessionId>,
    /// Cancelled when the client cancels the request.
    pub cancel: CancellationToken,
    /// How many tool calls deep this call is (code mode).
    pub depth: u32,
    /// The function (`pack.function`) whose code made this call; `None`
    /// for a client's call.
    pub parent: Option<String>,
    /// When the call that made this one is cut (code mode); `None` for a
    /// call from a client, which has its pack's time limit only.
    pub deadline: Option<Instant>,
    /// Where a pack's `resources/subscribe` call reports; `None` for
    /// every other call.
    pub subscriber: Option<Arc<Subscriber>>,
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
            ask: None,
            session: None,
            cancel: CancellationToken::new(),
            depth: 0,
            parent: None,
            deadline: None,
            subscriber: None,
        }
    }
}

/// One client session, unique in the process: an id is never given twice,
/// so a new session never inherits what an ended one was allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionId(u64);

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl SessionId {
    /// An id no session had before.
    pub fn unique() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}
