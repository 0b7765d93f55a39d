//! The integration types, and what of them may be shown.

use std::{collections::BTreeMap, fmt, path::PathBuf};

use pack_sandbox::Mode;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Shown instead of a secret in `Debug` output.
const HIDDEN: &str = "<hidden>";

/// How packhost reaches an integration's MCP server.
///
/// Serialized with a `type` tag: `{"type": "stdio", "command": …}`,
/// `{"type": "http", "url": …}`; the maps and `args` may be left out.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Transport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program to run.
        command: String,
        /// Its arguments (shown in listings).
        #[serde(default)]
        args: Vec<String>,
        /// Environment variables set for it; the values are secrets
        /// (listings show the names only).
        #[serde(default)]
        env: BTreeMap<String, String>,
        /// Its own sandbox rules beyond its pack's.
        #[serde(default)]
        sandbox: Sandbox,
    },
    /// A Streamable HTTP MCP endpoint.
    Http {
        /// The endpoint, `http` or `https`, without `user:password@`.
        url: String,
        /// Headers sent with every request; the values are secrets
        /// (listings show the names only).
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    /// `"stdio"` or `"http"`, as stored and listed.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

/// A stdio integration's own sandbox rules, the host admin's (`packhost
/// integrations add --read/--write/--limits/--sandbox`), on top of its
/// pack's `sandbox`, `read`, `write` and `limits`. Not in
/// [`Integration::summary`]: host paths are the admin's business, not the
/// organisation's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Sandbox {
    /// `off`: its server runs unconfined (a warning is logged when it
    /// starts), whatever the pack's mode.
    pub mode: Mode,
    /// Also readable (absolute paths).
    pub read: Vec<PathBuf>,
    /// Also writable (absolute paths).
    pub write: Vec<PathBuf>,
    /// Limits that replace the pack's, by name (`memory_mb` → 512).
    pub limits: BTreeMap<String, u64>,
}

/// The credentials sent to an integration, stored server-side and never
/// listed. Serialized with a `type` tag: `{"type": "bearer", "token": …}`,
/// `{"type": "header", "name": …, "value": …}`, `{"type": "per_user"}`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Auth {
    /// `Authorization: Bearer <token>`.
    Bearer {
        /// The token (secret).
        token: String,
    },
    /// `<name>: <value>`, e.g. `X-Api-Key`.
    Header {
        /// The header's name.
        name: String,
        /// The header's value (secret).
        value: String,
    },
    /// Each user signs in at the server's authorization server (OAuth 2.1,
    /// authorization code with PKCE) the first time they call it, and is
    /// then `Authorization: Bearer` with their own token
    /// ([`CredentialRepository`](crate::CredentialRepository)). HTTP only.
    PerUser {
        /// packhost's client id there; `None`: packhost registers itself
        /// (RFC 7591) at each sign-in.
        #[serde(default)]
        client_id: Option<String>,
        /// That client's secret (secret), when it is a confidential one.
        #[serde(default)]
        client_secret: Option<String>,
        /// The scopes to ask for; `None`: those the server's metadata lists.
        #[serde(default)]
        scope: Option<String>,
        /// The account a user signs in with there must be theirs: the
        /// token's `sub` must be their packhost user (an upstream that
        /// trusts the same identity provider), so a sign-in link opened by
        /// someone else stores nothing.
        #[serde(default)]
        same_user: bool,
    },
}

impl Auth {
    /// What listings show: `bearer`, `header:<name>` or `per_user`.
    pub fn label(&self) -> String {
        match self {
            Auth::Bearer { .. } => "bearer".to_owned(),
            Auth::Header { name, .. } => format!("header:{name}"),
            Auth::PerUser { .. } => "per_user".to_owned(),
        }
    }
}

/// A stored integration, secrets included: hand it to the code that
/// connects, and show [`Integration::summary`] to everyone else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Integration {
    /// `int_` and 16 lowercase hex digits.
    pub id: String,
    /// The organisation it belongs to.
    pub organization_id: String,
    /// Unique within the organisation: letters, digits, `_`, `.`, `-`.
    pub name: String,
    /// Whether `remote_mcp` connects to it.
    pub enabled: bool,
    /// How to reach it.
    pub transport: Transport,
    /// The credentials sent to it, if any.
    pub auth: Option<Auth>,
    /// The per-request timeout; `None` for the caller's default.
    pub timeout_ms: Option<u64>,
    /// When it was added: RFC 3339, UTC, microseconds.
    pub created_at: String,
    /// When it last changed, same format.
    pub updated_at: String,
}

impl Integration {
    /// JSON for listings: every field but the secrets. `auth` is `"bearer"`,
    /// `"header:<name>"` or `null`; an HTTP transport shows its header
    /// names (`headers`), a stdio one its env names (`env`), never their
    /// values:
    ///
    /// ```json
    /// {"id": "int_…", "organization_id": "acme", "name": "github",
    ///  "enabled": true, "transport": "http",
    ///  "url": "https://…/mcp", "headers": ["X-Org"],
    ///  "auth": "bearer", "timeout_ms": 30000,
    ///  "created_at": "…Z", "updated_at": "…Z"}
    /// ```
    ///
    /// A stdio integration has `"command"`, `"args"` and `"env"` in place
    /// of `"url"` and `"headers"`.
    pub fn summary(&self) -> Value {
        let mut summary = json!({
            "id": self.id,
            "organization_id": self.organization_id,
            "name": self.name,
            "enabled": self.enabled,
            "transport": self.transport.kind(),
        });
        let fields = summary.as_object_mut().expect("a JSON object");
        match &self.transport {
            Transport::Stdio {
                command, args, env, ..
            } => {
                fields.insert("command".into(), json!(command));
                fields.insert("args".into(), json!(args));
                fields.insert("env".into(), json!(env.keys().collect::<Vec<_>>()));
            }
            Transport::Http { url, headers } => {
                fields.insert("url".into(), json!(url));
                fields.insert("headers".into(), json!(headers.keys().collect::<Vec<_>>()));
            }
        }
        fields.insert("auth".into(), json!(self.auth.as_ref().map(Auth::label)));
        fields.insert("timeout_ms".into(), json!(self.timeout_ms));
        fields.insert("created_at".into(), json!(self.created_at));
        fields.insert("updated_at".into(), json!(self.updated_at));
        summary
    }
}

/// What [`IntegrationRepository::add`](crate::IntegrationRepository::add)
/// takes: an integration before it has an id, state and timestamps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewIntegration {
    /// The organisation it belongs to (non-empty).
    pub organization_id: String,
    /// Unique within the organisation: letters, digits, `_`, `.`, `-`.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// The credentials sent to it, if any.
    pub auth: Option<Auth>,
    /// The per-request timeout; `None` for the caller's default.
    pub timeout_ms: Option<u64>,
}

/// A map whose values are secrets: `Debug` shows the keys only.
struct KeysOnly<'a>(&'a BTreeMap<String, String>);

impl fmt::Debug for KeysOnly<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|key| (key, HIDDEN)))
            .finish()
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                sandbox,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &KeysOnly(env))
                .field("sandbox", sandbox)
                .finish(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &KeysOnly(headers))
                .finish(),
        }
    }
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Bearer { .. } => f.debug_struct("Bearer").field("token", &HIDDEN).finish(),
            Auth::Header { name, .. } => f
                .debug_struct("Header")
                .field("name", name)
                .field("value", &HIDDEN)
                .finish(),
            Auth::PerUser {
                client_id,
                client_secret,
                scope,
                same_user,
            } => f
                .debug_struct("PerUser")
                .field("client_id", client_id)
                .field("client_secret", &client_secret.as_ref().map(|_| HIDDEN))
                .field("scope", scope)
                .field("same_user", same_user)
                .finish(),
        }
    }
}
