//! The real `packhost serve --http` on a free loopback port, and MCP clients
//! for it.

use std::{
    path::Path,
    process::{Child, Stdio},
    time::Duration,
};

use rmcp::{
    RoleClient, ServiceExt as _,
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::{Recorder, packhost_cli, packhost_command};

/// An HTTP client for packhost. It keeps connections alive: packhost sets
/// TCP_NODELAY, so a reused connection does not wait ~40 ms on delayed ACK
/// for the end of an SSE response. The workspace builds reqwest with rustls
/// but without a default crypto provider (see `mcp-downstream`), so one is
/// installed first: a client built without it panics.
pub fn web_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .build()
        .expect("an HTTP client with default options builds")
}

/// An MCP client of the endpoint `url`, with `token` as bearer when given.
pub async fn client_at(
    url: &str,
    token: Option<&str>,
) -> Result<RunningService<RoleClient, Recorder>, String> {
    Recorder::default()
        .serve(transport(url, token))
        .await
        .map_err(|e| e.to_string())
}

fn transport(url: &str, token: Option<&str>) -> StreamableHttpClientTransport<reqwest::Client> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    StreamableHttpClientTransport::with_client(web_client(), config)
}

/// A running `packhost serve --http 127.0.0.1:0`.
pub struct HttpHost {
    /// The host process.
    pub child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// Holds `packs.toml` and `stderr.log`.
    pub dir: TempDir,
}

impl HttpHost {
    /// Start on `config` with `args` after `serve --http 127.0.0.1:0`; waits
    /// until the host says where it listens.
    pub async fn start(config: &str, args: &[&str]) -> Self {
        let dir = TempDir::new().expect("temp dir");
        std::fs::write(dir.path().join("packs.toml"), config).expect("write config");
        Self::start_in(dir, args, &[]).await
    }

    /// Start in `dir`, which holds `packs.toml`, with `env` added to the
    /// host's (otherwise cleared) environment.
    pub async fn start_in(dir: TempDir, args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_at(dir, "127.0.0.1:0", args, env).await
    }

    /// [`Self::start_in`] on address `addr` (a config that names the
    /// host's own URL needs its port before it starts).
    pub async fn start_at(dir: TempDir, addr: &str, args: &[&str], env: &[(&str, &str)]) -> Self {
        let log = dir.path().join("stderr.log");
        let child = packhost_command(dir.path())
            .args(["serve", "--http", addr])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("spawn packhost");
        let mut host = Self {
            child,
            base: String::new(),
            dir,
        };
        // Waited for here so that a host that never comes up is killed by
        // `Drop` when the wait panics.
        host.base = wait_for_address(&log).await;
        host
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// A raw POST of `body` to the MCP endpoint with the headers streamable
    /// HTTP asks for, to add to and send.
    pub fn post(&self, body: impl Into<reqwest::Body>) -> reqwest::RequestBuilder {
        web_client()
            .post(self.url())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
    }

    /// The params of a stateless (2026-07-28) `tools/call` of `name` with
    /// `arguments`, from a client declaring `capabilities`; `retry`: the
    /// answers (`inputResponses`) and `requestState` of a retry.
    pub fn stateless_params(
        name: &str,
        arguments: Value,
        capabilities: Value,
        retry: Option<(Value, &str)>,
    ) -> Value {
        let mut params = json!({
            "name": name,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "packhost-tests", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            },
        });
        if let Some((answers, state)) = retry {
            params["inputResponses"] = answers;
            params["requestState"] = json!(state);
        }
        params
    }

    /// The POST of a stateless (2026-07-28) `tools/call` with `params`, as
    /// `token`'s caller when given, ready to send.
    pub fn stateless_request(
        &self,
        token: Option<&str>,
        params: &Value,
    ) -> reqwest::RequestBuilder {
        let name = params["name"].as_str().unwrap_or_default();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let request = self
            .post(body.to_string())
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", name);
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// A stateless (2026-07-28) `tools/call` with `params` (their `_meta`
    /// must say the protocol version and client capabilities), as
    /// `token`'s caller when given: every JSON-RPC message of the answer in
    /// order, the response last (one message for a JSON answer, the
    /// stream's for SSE).
    pub async fn stateless_call(&self, token: Option<&str>, params: &Value) -> Vec<Value> {
        let text = self
            .stateless_request(token, params)
            .send()
            .await
            .expect("POST")
            .text()
            .await
            .expect("a body");
        let events: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .filter(|data| !data.is_empty())
            .collect();
        let messages = if events.is_empty() {
            vec![text.as_str()]
        } else {
            events
        };
        messages
            .into_iter()
            .map(|m| {
                serde_json::from_str(m).unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {text}"))
            })
            .collect()
    }

    /// An MCP client, with `token` as bearer when given.
    pub async fn client(
        &self,
        token: Option<&str>,
    ) -> Result<RunningService<RoleClient, Recorder>, String> {
        client_at(&self.url(), token).await
    }

    /// An MCP client of the stateless 2026-07-28 wire (`server/discover`,
    /// no session).
    pub async fn stateless_client(&self) -> Result<RunningService<RoleClient, Recorder>, String> {
        self.stateless_client_as(None).await
    }

    /// [`Self::stateless_client`] with bearer `token`.
    pub async fn stateless_client_as(
        &self,
        token: Option<&str>,
    ) -> Result<RunningService<RoleClient, Recorder>, String> {
        use rmcp::{
            model::ProtocolVersion,
            service::{ClientLifecycleMode, ClientServiceExt as _},
        };
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        Recorder::default()
            .serve_with_lifecycle(self.transport(token), lifecycle)
            .await
            .map_err(|e| e.to_string())
    }

    fn transport(&self, token: Option<&str>) -> StreamableHttpClientTransport<reqwest::Client> {
        transport(&self.url(), token)
    }

    /// The text of `/metrics`, as `token`'s caller when given.
    pub async fn metrics(&self, token: Option<&str>) -> String {
        let request = web_client().get(format!("{}/metrics", self.base));
        let request = match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        request
            .send()
            .await
            .and_then(|response| response.error_for_status())
            .expect("GET /metrics")
            .text()
            .await
            .expect("the /metrics body")
    }

    /// What the host logged so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }

    /// SIGTERM, as a service manager stops it.
    pub fn terminate(&self) {
        // SAFETY: sending a signal to our own child.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
    }
}

/// A 2025-11-25 session opened by hand with raw JSON-RPC, so that anyone
/// (any token, or none) can send requests naming it, as an attacker holding
/// its id would.
pub struct RawSession {
    /// The `Mcp-Session-Id` the host gave.
    pub id: String,
    url: String,
}

/// The protocol revision raw sessions speak.
const SESSION_REVISION: &str = "2025-11-25";

impl HttpHost {
    /// Open a session as `token`'s caller, declaring `capabilities`.
    pub async fn open_session(&self, token: Option<&str>, capabilities: Value) -> RawSession {
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": SESSION_REVISION,
            "capabilities": capabilities,
            "clientInfo": {"name": "raw-session", "version": "1"},
        }});
        let mut request = self.post(initialize.to_string());
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("POST initialize");
        let id = response
            .headers()
            .get("mcp-session-id")
            .unwrap_or_else(|| panic!("no session id: {response:?}\n{}", self.stderr()))
            .to_str()
            .expect("an ASCII session id")
            .to_owned();
        drop(response);
        let session = RawSession {
            id,
            url: self.url(),
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let sent = session.post(token, &initialized).send().await.unwrap();
        assert_eq!(sent.status(), 202, "{}", sent.text().await.unwrap());
        session
    }
}

impl RawSession {
    fn with(
        &self,
        request: reqwest::RequestBuilder,
        token: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let request = request
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", SESSION_REVISION);
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// A session of `host` named `id`, whether or not it exists.
    pub fn named(id: &str, host: &HttpHost) -> Self {
        Self {
            id: id.to_owned(),
            url: host.url(),
        }
    }

    /// POST `message` naming this session, as `token`'s caller.
    pub fn post(&self, token: Option<&str>, message: &Value) -> reqwest::RequestBuilder {
        self.post_body(token, message.to_string())
    }

    /// POST `body`, whatever it holds, naming this session.
    pub fn post_body(&self, token: Option<&str>, body: String) -> reqwest::RequestBuilder {
        let request = web_client()
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        self.with(request, token)
    }

    /// GET this session's stream (resumed after `last_event_id`), as
    /// `token`'s caller.
    pub fn get(&self, token: Option<&str>, last_event_id: Option<&str>) -> reqwest::RequestBuilder {
        let mut request = web_client()
            .get(&self.url)
            .header("accept", "text/event-stream");
        if let Some(last) = last_event_id {
            request = request.header("last-event-id", last);
        }
        self.with(request, token)
    }

    /// DELETE this session, as `token`'s caller.
    pub fn delete(&self, token: Option<&str>) -> reqwest::RequestBuilder {
        self.with(web_client().delete(&self.url), token)
    }
}

/// Whether JSON-RPC `message` is the response to request `id` (not a
/// request of the server's that reuses the number).
pub fn is_response_to(message: &Value, id: &Value) -> bool {
    message.get("method").is_none() && message["id"] == *id
}

/// The events of a streamed (SSE) answer, read as they come.
pub struct Events {
    response: reqwest::Response,
    buffer: String,
}

/// One event of a stream: its id, and its JSON-RPC message.
#[derive(Debug)]
pub struct Event {
    /// The event's `id:`.
    pub id: Option<String>,
    /// Its `data:`, read as JSON.
    pub message: Value,
}

impl Events {
    /// The events of `response` (which must be a stream).
    pub fn of(response: reqwest::Response) -> Self {
        let kind = response.headers().get("content-type").cloned();
        assert!(
            kind.is_some_and(|kind| kind.as_bytes().starts_with(b"text/event-stream")),
            "not a stream: {response:?}"
        );
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event carrying a message, within 60 s; `None` at the
    /// stream's end.
    pub async fn next(&mut self) -> Option<Event> {
        tokio::time::timeout(Duration::from_secs(60), self.next_now())
            .await
            .expect("the stream's next event within 60 s")
    }

    async fn next_now(&mut self) -> Option<Event> {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let field = |name: &str| {
                    event
                        .lines()
                        .find_map(|line| line.strip_prefix(name))
                        .map(|v| v.trim().to_owned())
                };
                let Some(data) = field("data:").filter(|d| !d.is_empty()) else {
                    continue;
                };
                let message = serde_json::from_str(&data)
                    .unwrap_or_else(|e| panic!("not JSON ({e}): {data}"));
                return Some(Event {
                    id: field("id:"),
                    message,
                });
            }
            let chunk = self.response.chunk().await.expect("read the stream")?;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// The response to request `id`, past the events before it.
    pub async fn response(&mut self, id: &Value) -> Value {
        let mut passed = Vec::new();
        while let Some(event) = self.next().await {
            if is_response_to(&event.message, id) {
                return event.message;
            }
            passed.push(event);
        }
        panic!("the stream ended without the response to {id}: {passed:#?}");
    }
}

impl Drop for HttpHost {
    /// Stop the host as an admin would (SIGTERM: it ends its servers'
    /// processes), killing it if it has not ended within 5 s.
    fn drop(&mut self) {
        // SAFETY: signalling our own child, which has not been waited for.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn wait_for_address(log: &Path) -> String {
    for _ in 0..200 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(rest) = text.split("serving MCP at ").nth(1) {
            let url = rest.split_whitespace().next().unwrap_or_default();
            return url.trim_end_matches("/mcp").to_owned();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "packhost never said where it listens:\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// `ph_` + 64 hex digits and its SHA-256, made with `packhost token new`.
pub fn token(user: &str, org: &str, tools: &[&str]) -> (String, String) {
    let mut args = vec!["token", "new", "--user", user, "--org", org];
    for tool in tools {
        args.extend(["--tool", tool]);
    }
    let output = packhost_cli("", &args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let token = stdout
        .split("it is not stored): ")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let entry = stdout
        .split_once("add to packs.toml:\n")
        .unwrap()
        .1
        .trim()
        .to_owned();
    assert!(
        !entry.contains(&token),
        "the config line must not hold the token"
    );
    (token, entry)
}
