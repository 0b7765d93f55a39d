//! The sections that hold no packs: `[server]`, `[http]`, `[auth]`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// `[http]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// `Host` header values accepted (DNS-rebinding guard); the bound address
    /// is always added.
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin`s accepted, e.g. `https://app.example.com:443`; a
    /// request with any other `Origin` is refused (requests without one pass).
    pub allowed_origins: Vec<String>,
    /// `false`: no sessions, every POST stands alone and a call is answered
    /// with plain JSON, so instances behind a load balancer need no sticky
    /// routing (the server cannot send anything outside a call's answer).
    pub sessions: bool,
    /// A session unused this long is closed.
    pub session_idle_secs: u64,
    /// Sessions open at once; a new one past this is refused (503).
    pub max_sessions: usize,
    /// Largest request body accepted (413 past it).
    pub max_request_bytes: usize,
    /// On SIGTERM, how long running calls may take to finish.
    pub shutdown_grace_secs: u64,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            allowed_hosts: ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec(),
            allowed_origins: Vec::new(),
            sessions: true,
            session_idle_secs: 1800,
            max_sessions: 256,
            max_request_bytes: 4 << 20,
            shutdown_grace_secs: 10,
        }
    }
}

/// `[auth]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// Bearer tokens, by their SHA-256 (`packhost token new` makes one).
    #[serde(default)]
    pub tokens: Vec<TokenConfig>,
    /// Access tokens of an OAuth 2.1 authorization server, beside the
    /// static tokens.
    #[serde(default)]
    pub oauth: Option<super::OAuthConfig>,
}

impl AuthConfig {
    /// Whether HTTP callers must authenticate.
    pub fn is_required(&self) -> bool {
        !self.tokens.is_empty() || self.oauth.is_some()
    }
}

/// `[[auth.tokens]]`: one bearer token and who it stands for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// The user every call with this token runs as.
    pub user: String,
    /// Their organisation.
    pub org: String,
    /// Hex SHA-256 of the token (the token itself is never stored).
    pub sha256: String,
    /// Tools this token may call (`pack.function`, `pack.*`, or `run`);
    /// absent: all.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// The admin of their organisation: may read its audit trail
    /// (`packhost.audit`).
    #[serde(default)]
    pub admin: bool,
}

/// `[server]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Time limit of one tool call unless the pack sets its own.
    pub timeout_ms: u64,
    /// The pack whose `run` function executes commands that are not a single
    /// call (a Python block).
    pub code_pack: String,
    /// The pack whose `execute` function runs code fenced as TypeScript or
    /// JavaScript (`code` and `language` arguments).
    pub typescript_pack: String,
    /// Where pack libraries named without a path are looked for, in order.
    pub pack_dirs: Vec<PathBuf>,
    /// What `tools/list` shows: `"all"` (every function) or `"run"` (`run`
    /// and the `packhost` pack's discovery functions: code as the whole
    /// interface). Every function stays callable either way.
    pub expose: Expose,
}

/// Which functions `tools/list` shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expose {
    /// Every function of the pack.
    #[default]
    All,
    /// None of them: they are reached through `run` and code.
    Run,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            timeout_ms: 60_000,
            code_pack: "exec_py".to_owned(),
            typescript_pack: "exec_ts".to_owned(),
            pack_dirs: default_pack_dirs(),
            expose: Expose::All,
        }
    }
}

pub(super) fn default_pack_dirs() -> Vec<PathBuf> {
    let beside_binary = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf));
    let in_home = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".packhost/packs"));
    beside_binary.into_iter().chain(in_home).collect()
}
