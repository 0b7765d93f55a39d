//! What a downstream server sends packhost besides answers: its questions
//! (sampling, elicitation, roots), log messages and progress during a
//! request, which go to the caller of that request ([`Relay`]), and its
//! notifications outside any request ([`Event`]).
//!
//! A server's request names no request of ours (MCP gives it no such link,
//! and stdio has no streams to tell requests apart), so a question is
//! routed by the connection it came on: callers give each of their own a
//! connection ("lane", see [`lane`]), and a question on a lane goes to the
//! oldest request running on it for that caller that is not already
//! waiting for an answer (a server asks one question at a time in a
//! request: a request still waiting cannot be asking again, and a later
//! request's question must not queue behind it). A question with no request
//! running is refused, never guessed.

use std::{
    future::Future,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use rmcp::model::{ProgressToken, ServerNotification};
use serde_json::Value;

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
    /// Questions of the server relayed to it and not answered yet.
    asking: usize,
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
            asking: 0,
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

    /// Where a question of the server goes: the oldest request not waiting
    /// for an answer already (the oldest of all if every one is), counted
    /// as asking while the returned [`Asking`] lives.
    pub(crate) fn asker(self: &Arc<Self>) -> Option<(Arc<dyn Relay>, Asking)> {
        let mut requests = self.lock();
        let free = requests.iter().position(|r| r.asking == 0).unwrap_or(0);
        let request = requests.get_mut(free)?;
        request.asking += 1;
        let asking = Asking {
            running: Arc::clone(self),
            id: request.id,
        };
        Some((Arc::clone(&request.relay), asking))
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

/// A question relayed to a request and not answered yet.
pub(crate) struct Asking {
    running: Arc<Running>,
    id: u64,
}

impl Drop for Asking {
    fn drop(&mut self) {
        let mut requests = self.running.lock();
        if let Some(request) = requests.iter_mut().find(|r| r.id == self.id) {
            request.asking -= 1;
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.running.lock().retain(|r| r.id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request's relay that only says which request it is.
    struct Named(&'static str);

    impl Relay for Named {
        fn ask(&self, _: Value) -> Pin<Box<dyn Future<Output = Result<Value, Refusal>> + Send>> {
            let name = Value::from(self.0);
            Box::pin(async move { Ok(name) })
        }
        fn log(&self, _: Value) {}
        fn progress(&self, _: f64, _: Option<f64>, _: Option<String>) {}
    }

    async fn name(relay: &Arc<dyn Relay>) -> Value {
        relay.ask(Value::Null).await.unwrap()
    }

    #[tokio::test]
    async fn a_question_goes_to_the_oldest_request_not_waiting_for_an_answer() {
        let running = Arc::new(Running::default());
        let _first = running.register(Arc::new(Named("first")));
        let _second = running.register(Arc::new(Named("second")));
        let (relay, waiting) = running.asker().unwrap();
        assert_eq!(name(&relay).await, "first");
        // The first still waits for its answer: the next question is the
        // second's, not queued behind the first's.
        let (relay, _) = running.asker().unwrap();
        assert_eq!(name(&relay).await, "second");
        drop(waiting);
        let (relay, _) = running.asker().unwrap();
        assert_eq!(name(&relay).await, "first");
    }

    #[test]
    fn owners_never_share_a_lane() {
        assert_eq!(lane("fx", &["acme", "ann", "3"]), "fx@acme/ann/3");
        assert_ne!(lane("fx", &["a/b", "c"]), lane("fx", &["a", "b/c"]));
        assert_ne!(lane("fx", &["a%2Fb", "c"]), lane("fx", &["a/b", "c"]));
    }
}
