//! What a request other than a tool call runs as when it calls into a pack
//! (a prompt render, a resource read, a completion): the caller a tool call
//! would be, and the pack's failure as a JSON-RPC error.

use pack_api::codes;
use rmcp::{ErrorData, RoleServer, service::RequestContext};

use super::{PackhostServer, notices::Notices, wire::answers_by_retry};
use crate::{
    executor::{Caller, SessionId},
    failure::Failure,
};

impl PackhostServer {
    /// The caller of `context`'s request: its identity, its session (a
    /// server pack serves a session on its own connection), its log lines
    /// sent as the client asked, and the client's cancellation.
    pub(super) fn caller_for(&self, context: &RequestContext<RoleServer>) -> Caller {
        Caller {
            log: self
                .log
                .forwarder(&Notices::to(&context.peer), &context.meta),
            session: self.session_of(context),
            cancel: context.ct.clone(),
            ..Caller::new(self.identity_of(context), context.id.to_string())
        }
    }

    /// The client session of `context`'s request; none on 2026-07-28,
    /// which has no sessions.
    pub(super) fn session_of(&self, context: &RequestContext<RoleServer>) -> Option<SessionId> {
        (!answers_by_retry(context)).then_some(self.session.1)
    }
}

/// A failed render, read or completion: the client's mistake (a missing
/// argument, an unknown name) as invalid params, anything else as an
/// internal error; the message and the error object as the tool call's.
pub(super) fn protocol_error(failure: &Failure) -> ErrorData {
    let data = Some(failure.error_object());
    match failure.code() {
        codes::INVALID_ARGUMENT | codes::NOT_FOUND => {
            ErrorData::invalid_params(failure.text(), data)
        }
        _ => ErrorData::internal_error(failure.text(), data),
    }
}

/// A pack's result that is not the MCP result it should be.
pub(super) fn not_mcp(what: &str, error: &serde_json::Error) -> ErrorData {
    ErrorData::internal_error(format!("the pack's {what} is not MCP's: {error}"), None)
}
