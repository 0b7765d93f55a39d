//! Each user's own sign-in to an integration's MCP server (an integration
//! whose auth is `per_user`), so the server acts as that user and no other.
//!
//! Who it is for: the `remote_mcp` pack, which asks for a user's token
//! before each call ([`Credentials::bearer`]), starts a sign-in when there
//! is none ([`Credentials::begin`]: the URL the user is sent to), and
//! finishes it ([`Credentials::finish`]) when the authorization server
//! sends the user's browser back to the host's callback endpoint, which
//! hands the query to the pack (one process, one SQLite library on the
//! database file: two copies in one process would not see each other's
//! writes).
//!
//! - OAuth 2.1 authorization code with PKCE (S256), the resource named
//!   (RFC 8707); endpoints discovered from the server's protected resource
//!   metadata (RFC 9728) and its authorization server's metadata
//!   (RFC 8414); packhost registers itself (RFC 7591) unless the admin gave
//!   it a client.
//! - A sign-in is bound to the user and the integration it was started
//!   for: its `state` is 256 random bits kept only as a digest, good once,
//!   for [`SIGN_IN_LIFETIME`].
//! - Tokens are sealed (AES-256-GCM) under a key from the environment
//!   ([`Key`]), bound to their (organisation, user, integration) row, and
//!   refreshed shortly before they expire; a refresh the server refuses
//!   forgets them, so the user is asked again.
//! - No token, verifier, code or client secret is ever in a message, an
//!   error or a `Debug`.

mod discover;
mod flow;
mod http;
mod seal;
mod tokens;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use integrations_store::Store;

pub use crate::{
    flow::{Finished, SignIn, Upstream},
    seal::{KEY_FILE_VAR, KEY_VAR, Key},
    tokens::Bearer,
};

/// How long a user has to finish a sign-in once they were sent to it.
pub const SIGN_IN_LIFETIME: Duration = Duration::from_secs(600);

/// The path of packhost's callback endpoint, under its public URL and
/// before `/<pack>`: where the authorization server sends the user's
/// browser back, and the host hands the query to that pack.
pub const CALLBACK_PATH: &str = "/oauth/callback";

/// What went wrong. Each holds one sentence that never contains a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OAuthError {
    /// packhost is not set up for per-user sign-in (no key, no public URL).
    Config(String),
    /// The server or its authorization server could not be used.
    Upstream(String),
    /// A callback that matches no sign-in under way: unknown, used or
    /// expired. Says nothing more, to anyone.
    UnknownSignIn,
    /// The account signed in with is not the user's the sign-in was made
    /// for (an integration with `same_user`): nothing was stored.
    WrongUser,
    /// The integrations database failed.
    Store(String),
}

impl std::fmt::Display for OAuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OAuthError::Config(why) | OAuthError::Upstream(why) | OAuthError::Store(why) => {
                f.write_str(why)
            }
            OAuthError::UnknownSignIn => {
                f.write_str("this sign-in link is not valid: it expired or was used already")
            }
            OAuthError::WrongUser => {
                f.write_str("the account signed in with is not the user's this link was made for")
            }
        }
    }
}

impl std::error::Error for OAuthError {}

impl From<integrations_store::StoreError> for OAuthError {
    fn from(e: integrations_store::StoreError) -> Self {
        OAuthError::Store(format!("integrations database: {e}"))
    }
}

/// Whose tokens: (organisation, user, integration).
type Owner = (String, String, String);

/// Users' credentials to the integrations that act per user.
pub struct Credentials {
    store: Arc<dyn Store>,
    key: Key,
    http: reqwest::Client,
    /// One refresh at a time per user and integration: a refresh token
    /// that rotates is good once.
    refreshing: Mutex<HashMap<Owner, Arc<tokio::sync::Mutex<()>>>>,
}

impl Credentials {
    /// Credentials in `store`, sealed with `key`, reaching authorization
    /// servers through `http` (whose address rules apply to them too).
    pub fn new(store: Arc<dyn Store>, key: Key, http: reqwest::Client) -> Self {
        Self {
            store,
            key,
            http,
            refreshing: Mutex::default(),
        }
    }
}
