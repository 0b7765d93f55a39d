//! The sections that hold no packs: `[server]`, `[http]`, `[auth]`.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use crate::error::{ConfigCode, ConfigProblem};

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
    /// Sessions one organisation's callers may have open at once (with
    /// tokens or OAuth): one organisation never takes them all.
    pub max_sessions_per_org: usize,
    /// Sessions one caller (a token, an OAuth user) may have open at once.
    pub max_sessions_per_caller: usize,
    /// Largest request body accepted (413 past it).
    pub max_request_bytes: usize,
    /// On SIGTERM, how long running calls may take to finish.
    pub shutdown_grace_secs: u64,
    /// This instance's name among `peers`, when several instances run.
    pub instance: Option<String>,
    /// Every instance by name → its base URL as the others reach it: a
    /// retry that reaches one instance for a call held on another is
    /// forwarded there, so the call goes on where it stopped.
    pub peers: BTreeMap<String, String>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            allowed_hosts: ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec(),
            allowed_origins: Vec::new(),
            sessions: true,
            session_idle_secs: 1800,
            max_sessions: 256,
            max_sessions_per_org: 64,
            max_sessions_per_caller: 16,
            max_request_bytes: 4 << 20,
            shutdown_grace_secs: 10,
            instance: None,
            peers: BTreeMap::new(),
        }
    }
}

impl HttpConfig {
    /// Everything wrong with `instance` and `peers`, one problem each.
    pub(crate) fn problems(&self) -> Vec<ConfigProblem> {
        let mut problems = Vec::new();
        let value = |what: String| ConfigProblem::new(ConfigCode::Value, what);
        if let Some(instance) = &self.instance
            && !self.peers.contains_key(instance)
        {
            problems.push(
                value(format!(
                    "`http.instance` is `{instance}`, which `http.peers` does not name"
                ))
                .with_fix(format!(
                    "add `{instance} = \"http://<address the other instances reach it at>\"` \
                     to `[http.peers]`"
                )),
            );
        }
        if self.instance.is_none() && !self.peers.is_empty() {
            problems.push(
                value("`http.peers` is set, but not which of them this instance is".to_owned())
                    .with_fix("set `http.instance` (or PACKHOST_HTTP__INSTANCE) to its name"),
            );
        }
        for (name, url) in &self.peers {
            let http = url.starts_with("http://") || url.starts_with("https://");
            if !http || url.parse::<http::Uri>().is_err() {
                problems.push(value(format!(
                    "`http.peers.{name}` is `{url}`: give the instance's base URL, such as \
                     `http://10.0.0.11:8080`"
                )));
            }
        }
        problems
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
