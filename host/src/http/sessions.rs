//! The session guard: an HTTP session belongs to the caller that opened
//! it. Every later request naming it (POST, GET and its resumption, DELETE,
//! a JSON-RPC response to the server's question) must come from the same
//! principal (the same static token, or the same OAuth user), or it is answered exactly as a session that
//! does not exist: a session id is never authentication, and a refusal
//! tells a stranger nothing an unknown id would not.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use axum::{
    body::Body,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

/// Who a request comes from: the digest of its static token, or its OAuth
/// user's (`auth::Authenticated::principal`); the same for every request of
/// a server without authentication.
pub(super) type Principal = [u8; 32];

/// The principal of a server without tokens: everyone is the one local
/// caller.
pub(super) const ANYONE: Principal = [0; 32];

/// Which principal opened each session rmcp keeps.
pub(super) struct Sessions {
    manager: Arc<LocalSessionManager>,
    owners: Mutex<HashMap<String, Opener>>,
}

struct Opener {
    principal: Principal,
    org: String,
}

impl Sessions {
    pub(super) fn new(manager: Arc<LocalSessionManager>) -> Self {
        Self {
            manager,
            owners: Mutex::default(),
        }
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<String, Opener>> {
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `principal` may name session `id`: only the session's
    /// opener may, and an id this host never gave out is nobody's.
    pub(super) fn admits(&self, id: &str, principal: &Principal) -> bool {
        self.owners()
            .get(id)
            .is_some_and(|opener| opener.principal == *principal)
    }

    /// `principal` (of organisation `org`) opened session `id`. Sessions
    /// rmcp has closed since (expired, deleted) are forgotten here, after
    /// rmcp forgot them, so an open session never lacks its owner.
    pub(super) async fn opened(&self, id: &str, principal: Principal, org: &str) {
        let open = self.manager.sessions.read().await;
        let mut owners = self.owners();
        owners.retain(|id, _| open.contains_key(id.as_str()));
        let opener = Opener {
            principal,
            org: org.to_owned(),
        };
        owners.insert(id.to_owned(), opener);
    }

    /// Session `id` was ended (DELETE).
    pub(super) fn closed(&self, id: &str) {
        self.owners().remove(id);
    }

    /// Sessions open now, all of them.
    pub(super) async fn open(&self) -> usize {
        self.manager.sessions.read().await.len()
    }

    /// Sessions open now that `principal` opened.
    pub(super) async fn open_by(&self, principal: &Principal) -> usize {
        let open = self.manager.sessions.read().await;
        self.owners()
            .iter()
            .filter(|(id, opener)| opener.principal == *principal && open.contains_key(id.as_str()))
            .count()
    }

    /// Sessions open now that callers of organisation `org` opened.
    pub(super) async fn open_of(&self, org: &str) -> usize {
        let open = self.manager.sessions.read().await;
        self.owners()
            .iter()
            .filter(|(id, opener)| opener.org == org && open.contains_key(id.as_str()))
            .count()
    }
}

/// What a request naming a session it may not use gets: rmcp's own answer
/// for a session that does not exist, word for word.
pub(super) fn unknown() -> Response {
    (
        StatusCode::NOT_FOUND,
        Body::from("Not Found: Session not found"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_session_admits_its_opener_only_and_ends_for_everyone() {
        let manager = Arc::new(LocalSessionManager::default());
        let sessions = Sessions::new(Arc::clone(&manager));
        let (ada, bob) = ([1; 32], [2; 32]);
        sessions.opened("s1", ada, "acme").await;
        assert!(sessions.admits("s1", &ada));
        assert!(!sessions.admits("s1", &bob), "another token of any org");
        assert!(!sessions.admits("s2", &ada), "an id never given out");
        assert!(!sessions.admits("s1", &ANYONE));
        sessions.closed("s1");
        assert!(!sessions.admits("s1", &ada));
    }

    #[tokio::test]
    async fn sessions_rmcp_closed_are_forgotten_and_not_counted() {
        let manager = Arc::new(LocalSessionManager::default());
        let sessions = Sessions::new(Arc::clone(&manager));
        sessions.opened("gone", [1; 32], "acme").await;
        // rmcp never opened (or has closed) "gone": the next opening drops it.
        sessions.opened("also-gone", [1; 32], "acme").await;
        assert!(!sessions.owners().contains_key("gone"));
        assert_eq!(sessions.open_of("acme").await, 0);
        assert_eq!(sessions.open().await, 0);
    }
}
