//! A real OpenID provider for the OAuth tests (`tests/oauth/provider.mjs`,
//! oidc-provider from npm) and a packhost that accepts its tokens.

use std::{
    path::PathBuf,
    process::Stdio,
    time::{SystemTime, UNIX_EPOCH},
};

use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::http::{HttpHost, web_client};

/// One client registered at the provider: its tokens say `sub` =
/// `client_id` and `org`, and it may ask for `scope`.
#[derive(Clone)]
pub struct Client {
    /// Its id, the `sub` of its tokens.
    pub client_id: String,
    /// Its organisation, the `org` claim of its tokens.
    pub org: String,
    /// The scopes it may be granted, space-separated.
    pub scope: String,
}

impl Client {
    /// Client `client_id` of `org`, which may be granted `scope`.
    pub fn new(client_id: &str, org: &str, scope: &str) -> Self {
        Self {
            client_id: client_id.to_owned(),
            org: org.to_owned(),
            scope: scope.to_owned(),
        }
    }

    /// Its secret at the provider.
    pub fn secret(&self) -> String {
        format!("{}-secret", self.client_id)
    }
}

/// A running provider.
pub struct Provider {
    /// Killed when the provider is dropped.
    _child: tokio::process::Child,
    /// `http://127.0.0.1:<port>`, its issuer identifier.
    pub issuer: String,
    /// Keeps its spec file.
    _dir: TempDir,
}

impl Provider {
    /// Start one with `clients`, which may be granted `scopes`.
    pub async fn start(clients: &[Client], scopes: &[&str]) -> Self {
        Self::start_with_users(clients, &[], scopes).await
    }

    /// [`Self::start`], and `users` (login, organisation) may sign in at
    /// its pages for clients that register themselves.
    pub async fn start_with_users(
        clients: &[Client],
        users: &[(&str, &str)],
        scopes: &[&str],
    ) -> Self {
        Self::launch(json!({
            "clients": clients.iter().map(|c| json!({
                "client_id": c.client_id,
                "client_secret": c.secret(),
                "org": c.org,
                "scope": c.scope,
            })).collect::<Vec<_>>(),
            "users": users.iter().copied().collect::<std::collections::BTreeMap<_, _>>(),
            "scopes": scopes,
        }))
        .await
    }

    /// One where `users` (login, organisation) sign in, and whose access
    /// and refresh tokens last `access_ttl` and `refresh_ttl` seconds.
    pub async fn for_users(
        users: &[(&str, &str)],
        scopes: &[&str],
        (access_ttl, refresh_ttl): (u64, u64),
    ) -> Self {
        Self::launch(json!({
            "clients": [],
            "users": users.iter().copied().collect::<std::collections::BTreeMap<_, _>>(),
            "scopes": scopes,
            "access_ttl": access_ttl,
            "refresh_ttl": refresh_ttl,
        }))
        .await
    }

    async fn launch(spec: Value) -> Self {
        let dir = TempDir::new().expect("temp dir");
        let spec_path = dir.path().join("provider.json");
        std::fs::write(&spec_path, spec.to_string()).expect("write the provider's spec");
        let mut child = tokio::process::Command::new("node")
            .arg(script("oauth/provider.mjs"))
            .arg(&spec_path)
            .env("PACKHOST_TEST_OIDC_PROVIDER", oidc_provider())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.path().join("stderr.log")).expect("log"))
            .kill_on_drop(true)
            .spawn()
            .expect("start node");
        let stdout = child.stdout.take().expect("its stdout");
        let mut first = String::new();
        let mut stdout = BufReader::new(stdout);
        let read = stdout.read_line(&mut first);
        tokio::time::timeout(std::time::Duration::from_secs(30), read)
            .await
            .expect("the provider started within 30 s")
            .expect("read its first line");
        // The provider prints notices on stdout later; a closed pipe would
        // end it.
        tokio::spawn(async move { tokio::io::copy(&mut stdout, &mut tokio::io::sink()).await });
        let line: Value = serde_json::from_str(&first).unwrap_or_else(|_| {
            panic!(
                "the provider did not start: {first}\n{}",
                std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default()
            )
        });
        Self {
            _child: child,
            issuer: line["issuer"].as_str().expect("issuer").to_owned(),
            _dir: dir,
        }
    }

    /// An access token for `client` by the client_credentials grant, bound
    /// to `resource`, with `scope` (space-separated).
    pub async fn token(&self, client: &Client, scope: &str, resource: &str) -> String {
        let response = web_client()
            .post(format!("{}/token", self.issuer))
            .basic_auth(&client.client_id, Some(client.secret()))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!(
                "grant_type=client_credentials&scope={}&resource={}",
                encode(scope),
                encode(resource)
            ))
            .send()
            .await
            .expect("POST /token");
        let body: Value = response.json().await.expect("a JSON token response");
        body["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no access token: {body}"))
            .to_owned()
    }

    /// A new signing key, used from now on; the old one stays published
    /// when `keep_old`. Its key id.
    pub async fn rotate(&self, keep_old: bool) -> String {
        let answer = self
            .test_endpoint("rotate", json!({ "keep_old": keep_old }))
            .await;
        answer["kid"].as_str().expect("kid").to_owned()
    }

    /// A token the provider did not issue (see `provider.mjs`): `claims`
    /// under `header`, signed as `sign` says.
    pub async fn forge(&self, header: Value, claims: Value, sign: &str) -> String {
        let body = json!({ "header": header, "claims": claims, "sign": sign });
        let answer = self.test_endpoint("forge", body).await;
        answer["token"].as_str().expect("token").to_owned()
    }

    async fn test_endpoint(&self, name: &str, body: Value) -> Value {
        web_client()
            .post(format!("{}/test/{name}", self.issuer))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .unwrap_or_else(|e| panic!("/test/{name}: {e}"))
            .json()
            .await
            .expect("JSON")
    }
}

/// What [`Upstream`] recorded of one call: who, with which token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamCall {
    /// The token's `sub`.
    pub sub: String,
    /// The whole token.
    pub token: String,
}

/// An MCP server that acts as each user (`tests/oauth/upstream.mjs`): it
/// takes the provider's tokens for itself only, and records every call.
pub struct Upstream {
    _child: tokio::process::Child,
    /// Its MCP endpoint.
    pub url: String,
    calls: tokio::sync::mpsc::UnboundedReceiver<UpstreamCall>,
}

impl Upstream {
    /// Start one whose users sign in at `issuer`.
    pub async fn start(issuer: &str) -> Self {
        let mut child = tokio::process::Command::new("node")
            .arg(script("oauth/upstream.mjs"))
            .arg(issuer)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start node");
        let mut lines = BufReader::new(child.stdout.take().expect("its stdout")).lines();
        let first = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
            .await
            .expect("the upstream started within 30 s")
            .expect("read its first line")
            .expect("a first line");
        let line: Value = serde_json::from_str(&first).expect("its address as JSON");
        let (sender, calls) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let call: Value = serde_json::from_str(&line).expect("a call as JSON");
                let text = |name: &str| call[name].as_str().expect(name).to_owned();
                let _ = sender.send(UpstreamCall {
                    sub: text("sub"),
                    token: text("token"),
                });
            }
        });
        Self {
            _child: child,
            url: line["url"].as_str().expect("url").to_owned(),
            calls,
        }
    }

    /// The calls it recorded since the last look.
    pub fn calls(&mut self) -> Vec<UpstreamCall> {
        std::iter::from_fn(|| self.calls.try_recv().ok()).collect()
    }
}

/// `login` signs in at the authorization page `url` (as a browser would):
/// the URL the provider sends the browser back to, under `back`.
pub async fn sign_in(url: &str, login: &str, back: &str) -> String {
    let output = tokio::process::Command::new("node")
        .arg(script("oauth/browser.mjs"))
        .args([url, login, back])
        .output()
        .await
        .expect("run node");
    assert!(
        output.status.success(),
        "signing in failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .trim()
        .to_owned()
}

/// Now, in seconds since the epoch (for `exp`, `nbf`, `iat`).
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64
}

/// A packhost on `config` (which names `[auth.oauth]` with
/// `resource = "{resource}"`, filled in here) at a free loopback port.
pub async fn start_host(config: &str) -> (HttpHost, String) {
    let port = crate::downstream::free_port();
    let addr = format!("127.0.0.1:{port}");
    let resource = format!("http://{addr}/mcp");
    let dir = TempDir::new().expect("temp dir");
    let config = config.replace("{resource}", &resource);
    std::fs::write(dir.path().join("packs.toml"), config).expect("write config");
    let host = HttpHost::start_at(dir, &addr, &[], &[]).await;
    (host, resource)
}

/// A file under `tests/`.
pub fn script(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The oidc-provider package `./dev test` installs and names in
/// `PACKHOST_TEST_OIDC_PROVIDER`.
pub fn oidc_provider() -> String {
    std::env::var("PACKHOST_TEST_OIDC_PROVIDER").expect(
        "PACKHOST_TEST_OIDC_PROVIDER is not set: run the tests with `./dev test`, which installs \
         oidc-provider",
    )
}

/// `text` percent-encoded for a form body.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
