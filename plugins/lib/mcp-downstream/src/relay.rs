//! What a downstream server sends packhost besides answers: its questions
//! (sampling, elicitation, roots), log messages and progress during a
//! request, which go to the caller of that request ([`Relay`]), and its
//! notifications outside any request ([`Event`]).
//!
//! A server's request names no request of ours (MCP gives it no such link,
//! and stdio has no streams to tell requests apart), so a question is
//! routed by the connection it came on: callers give each of their own a
//! connection ("lane", see [`lane`]), and a question on a lane goes to the
//! oldest request running on it for that caller. A question with no request
//! running is refused, never guessed.

// Sampling, roots and logging are deprecated by 2026-07-28, and the
// servers behind packhost speak 2025-11-25, which has them.
#![allow(deprecated)]

use std::{
    future::Future,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientInfo, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
        ElicitResult, ListRootsResult, LoggingMessageNotificationParam, ProgressToken,
        ResourceUpdatedNotificationParam, ServerNotification,
    },
    service::{NotificationContext, RequestContext},
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

/// Where a downstream server's questions, log messages and progress during
/// one request go: the caller of that request.
pub trait Relay: Send + Sync {
    /// Put the server's question (`{"method", "params"}`: one MCP request
    /// of `elicitation/create`, `sampling/createMessage` or `roots/list`)
    /// to the caller: its answer (the request's result), or why not.
    fn ask(&self, question: Value) -> Pin<Box<dyn Future<Output = Result<Value, Refusal>> + Send>>;
    /// A `notifications/message` the server sent (its params).
    fn log(&self, params: Value);
    /// Progress of the request.
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>);
}

/// Why a question was not answered: the server gets it as the JSON-RPC
/// error of its request.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// JSON-RPC error code.
    pub code: i32,
    /// What went wrong.
    pub message: String,
    /// The error's data.
    pub data: Option<Value>,
}

/// What a server says outside any request of a caller, with the key of the
/// connection it came on (see `PoolSettings::events`).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Its tool list changed.
    ToolsChanged,
    /// Its prompt list changed.
    PromptsChanged,
    /// Its resource list changed.
    ResourcesChanged,
    /// A resource subscribed to on this connection changed.
    ResourceUpdated(String),
    /// A log message (`notifications/message` params) sent while no
    /// request ran.
    Log(Value),
}

/// Where a pool's [`Event`]s go: (connection key, event).
pub type Events = Arc<dyn Fn(&str, Event) + Send + Sync>;

/// The connection key of `base` (an integration, a server pack) for one
/// caller, `owner` its parts (organisation, user, session): the caller's own
/// connection, so that the server's questions and whatever it keeps per
/// session (roots, answers) never mix callers. Readable in logs
/// (`fx@acme/ann/3`); a part's own `/` and `%` are escaped, so two owners
/// never share a key.
pub fn lane(base: &str, owner: &[&str]) -> String {
    let parts: Vec<String> = owner
        .iter()
        .map(|part| part.replace('%', "%25").replace('/', "%2F"))
        .collect();
    format!("{base}@{}", parts.join("/"))
}

/// The requests running on one connection with a [`Relay`], oldest first,
/// with the progress token rmcp gave each (it sets its own on every
/// request).
#[derive(Default)]
pub(crate) struct Running {
    requests: Mutex<Vec<Request>>,
}

struct Request {
    id: u64,
    token: Option<ProgressToken>,
    relay: Arc<dyn Relay>,
}

/// A request's place in [`Running`]; leaves it when dropped.
pub(crate) struct Registered {
    running: Arc<Running>,
    id: u64,
}

impl Running {
    /// Add a request relaying to `relay`.
    pub(crate) fn register(self: &Arc<Self>, relay: Arc<dyn Relay>) -> Registered {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let request = Request {
            id,
            token: None,
            relay,
        };
        self.lock().push(request);
        Registered {
            running: Arc::clone(self),
            id,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Request>> {
        self.requests.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn oldest(&self) -> Option<Arc<dyn Relay>> {
        self.lock().first().map(|r| Arc::clone(&r.relay))
    }

    fn by_token(&self, token: &ProgressToken) -> Option<Arc<dyn Relay>> {
        let requests = self.lock();
        let found = requests.iter().find(|r| r.token.as_ref() == Some(token));
        found.map(|r| Arc::clone(&r.relay))
    }
}

impl Registered {
    /// The request went out with progress token `token`.
    pub(crate) fn sent_with(&self, token: ProgressToken) {
        let mut requests = self.running.lock();
        if let Some(request) = requests.iter_mut().find(|r| r.id == self.id) {
            request.token = Some(token);
        }
    }
}

impl Running {
    /// Hand `notification` to the request it belongs to: whether it did
    /// (a progress report of a running request, or a log message while one
    /// runs).
    pub(crate) fn took(&self, notification: &ServerNotification) -> bool {
        match notification {
            ServerNotification::ProgressNotification(notice) => {
                let params = &notice.params;
                let Some(relay) = self.by_token(&params.progress_token) else {
                    return false;
                };
                relay.progress(params.progress, params.total, params.message.clone());
                true
            }
            ServerNotification::LoggingMessageNotification(notice) => {
                let Some(relay) = self.oldest() else {
                    return false;
                };
                relay.log(serde_json::to_value(&notice.params).unwrap_or_default());
                true
            }
            _ => false,
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.running.lock().retain(|r| r.id != self.id);
    }
}

/// packhost as a downstream server's client: it declares what its own
/// clients may answer, and hands on what the server sends.
pub(crate) struct Client {
    pub(crate) key: String,
    pub(crate) running: Arc<Running>,
    pub(crate) events: Events,
}

impl Client {
    async fn relay<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: P,
    ) -> Result<R, ErrorData> {
        let Some(relay) = self.running.oldest() else {
            return Err(ErrorData::invalid_request(
                format!(
                    "packhost hands a server's `{method}` to the client whose request is running \
                     on this connection, and none is"
                ),
                None,
            ));
        };
        let question = json!({"method": method, "params": params});
        let answer = relay.ask(question).await.map_err(|refusal| {
            ErrorData::new(
                rmcp::model::ErrorCode(refusal.code),
                refusal.message,
                refusal.data,
            )
        })?;
        serde_json::from_value(answer).map_err(|e| {
            ErrorData::internal_error(format!("the client's answer to `{method}`: {e}"), None)
        })
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientInfo {
        let mut info = ClientInfo::default();
        // Everything packhost's clients may answer; a caller that cannot
        // gets the server's question refused.
        info.capabilities = serde_json::from_value(json!({
            "sampling": {},
            "elicitation": {"form": {}, "url": {}},
            "roots": {"listChanged": true},
        }))
        .expect("MCP client capabilities");
        info.client_info.name = "packhost".to_owned();
        info
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.relay("sampling/createMessage", params).await
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.relay("roots/list", json!({})).await
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.relay("elicitation/create", params).await
    }

    /// A log message no running request took (see [`Running::took`]).
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let params = serde_json::to_value(params).unwrap_or_default();
        (self.events)(&self.key, Event::Log(params));
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        (self.events)(&self.key, Event::ResourceUpdated(params.uri));
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        (self.events)(&self.key, Event::ToolsChanged);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        (self.events)(&self.key, Event::PromptsChanged);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        (self.events)(&self.key, Event::ResourcesChanged);
    }
}

#[cfg(test)]
mod tests {
    use super::lane;

    #[test]
    fn owners_never_share_a_lane() {
        assert_eq!(lane("fx", &["acme", "ann", "3"]), "fx@acme/ann/3");
        assert_ne!(lane("fx", &["a/b", "c"]), lane("fx", &["a", "b/c"]));
        assert_ne!(lane("fx", &["a%2Fb", "c"]), lane("fx", &["a/b", "c"]));
    }
}
