//! `packhost-bench-http`: `proj.list` over streamable HTTP with 1, 16 and 64
//! concurrent clients (p50, p99, calls/s), beside the same load on one stdio
//! connection in the same run; and signed in with an OAuth access token of a
//! real OpenID provider beside a static token (`PACKHOST_TEST_OIDC_PROVIDER`,
//! which `./dev bench` sets); and with the audit trail on beside off.
//!
//! The clients share the machine's 2 cores with the host, so the figures
//! that count come from a lean client (one kept-alive HTTP/1.1 connection,
//! prepared request bytes, every answer read and checked) that costs the
//! cores little; rows with rmcp's full client follow for comparison.
//!
//! Usage: `packhost-bench-http [--calls N]` (calls per client, default 200).

use std::{
    future::Future,
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{Request, client::conn::http1::SendRequest, header::HeaderValue};
use packhost_tests::{
    TestHost,
    bench::{Row, arg, ms, percentile, print_table},
    http::{HttpHost, token},
    is_error,
    oauth::{self, Provider},
};
use rmcp::{RoleClient, model::CallToolRequestParams, service::RunningService};

type RmcpClient = RunningService<RoleClient, packhost_tests::Recorder>;

fn config() -> String {
    format!(
        "[packs.proj]\n[projects]\nbench = \"{}\"\n",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Something that can make one timed `proj.list` call.
trait Caller: Send + 'static {
    fn list(&mut self) -> impl Future<Output = Duration> + Send;
}

impl Caller for Arc<RmcpClient> {
    async fn list(&mut self) -> Duration {
        let started = Instant::now();
        let result = self
            .call_tool(CallToolRequestParams::new("proj.list"))
            .await
            .expect("tools/call");
        assert!(!is_error(&result));
        started.elapsed()
    }
}

/// An MCP client over one kept-alive HTTP/1.1 connection, speaking the
/// session protocol (initialize, then calls with the session id).
struct LeanClient {
    sender: SendRequest<Full<Bytes>>,
    host: HeaderValue,
    /// `Bearer <token>`, when the host asks who calls.
    authorization: Option<HeaderValue>,
    session: Option<HeaderValue>,
    next_id: u64,
}

impl LeanClient {
    async fn connect(base: &str, token: Option<&str>) -> Self {
        let authority = base.trim_start_matches("http://");
        let tcp = tokio::net::TcpStream::connect(authority)
            .await
            .expect("connect");
        tcp.set_nodelay(true).expect("TCP_NODELAY");
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
                .await
                .expect("HTTP handshake");
        tokio::spawn(connection);
        let mut client = Self {
            sender,
            host: HeaderValue::from_str(authority).expect("authority"),
            authorization: token
                .map(|token| HeaderValue::from_str(&format!("Bearer {token}")).expect("a token")),
            session: None,
            next_id: 0,
        };
        let headers = client
            .post(r#""method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}"#)
            .await;
        client.session = headers.get("mcp-session-id").cloned();
        client
            .notify(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        client
    }

    fn request(&self, body: String) -> Request<Full<Bytes>> {
        let mut request = Request::post("/mcp")
            .header("host", &self.host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        if let Some(authorization) = &self.authorization {
            request = request.header("authorization", authorization);
        }
        request.body(Full::new(Bytes::from(body))).expect("request")
    }

    async fn send(&mut self, body: String) -> hyper::Response<hyper::body::Incoming> {
        // The previous answer was read to its end, so this waits for nothing
        // but hyper's bookkeeping.
        self.sender.ready().await.expect("connection ready");
        let request = self.request(body);
        self.sender.send_request(request).await.expect("POST")
    }

    async fn notify(&mut self, body: &str) {
        let response = self.send(body.to_owned()).await;
        assert!(response.status().is_success(), "{}", response.status());
        response.into_body().collect().await.expect("body");
    }

    /// POST a request with `fields` after its id, check that the answer is
    /// a success, and return its headers.
    async fn post(&mut self, fields: &str) -> hyper::HeaderMap {
        self.next_id += 1;
        let id = self.next_id;
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},{fields}}}"#);
        let response = self.send(body).await;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.expect("body").to_bytes();
        assert!(parts.status.is_success(), "{}: {body:?}", parts.status);
        // An SSE stream (a priming event, then the answer) or plain JSON.
        let text = std::str::from_utf8(&body).expect("UTF-8 answer");
        let answer = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .chain(text.starts_with('{').then_some(text))
            .map(str::trim)
            .filter(|data| !data.is_empty())
            .find_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
            .expect("a JSON-RPC answer");
        assert_eq!(answer["id"], id, "{answer}");
        let result = answer.get("result").unwrap_or_else(|| panic!("{answer}"));
        assert_ne!(result["isError"], true, "{answer}");
        parts.headers
    }
}

impl Caller for LeanClient {
    async fn list(&mut self) -> Duration {
        let started = Instant::now();
        self.post(r#""method":"tools/call","params":{"name":"proj.list","arguments":{}}"#)
            .await;
        started.elapsed()
    }
}

/// `clients` tasks each making `calls` calls on its own client (or the same
/// one); returns every latency and the wall time.
async fn load<C: Caller>(clients: Vec<C>, calls: usize) -> (Vec<Duration>, Duration) {
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(calls);
                for _ in 0..calls {
                    samples.push(client.list().await);
                }
                samples
            })
        })
        .collect();
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await.expect("load task"));
    }
    (samples, started.elapsed())
}

/// CPU time a process's live threads have used so far, in nanoseconds
/// from `/proc/<pid>/task/*/schedstat` (`/proc/<pid>/stat` counts 10 ms
/// ticks, too coarse for a 1-client run).
fn cpu_time(pid: u32) -> Duration {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten();
    let nanos: u64 = tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
}

/// CPU per call of the host and of this client process over one load.
struct CpuCost {
    host: Duration,
    client: Duration,
}

fn row(
    name: String,
    samples: &[Duration],
    wall: Duration,
    cpu: &CpuCost,
    target: &str,
    reference: &str,
) -> Row {
    let rate = samples.len() as f64 / wall.as_secs_f64();
    let calls = samples.len().max(1) as u32;
    Row {
        metric: name,
        value: format!(
            "p50 {} · p99 {} · {rate:.0} calls/s · CPU per call: host {} µs, client {} µs",
            ms(percentile(samples, 0.5)),
            ms(percentile(samples, 0.99)),
            (cpu.host / calls).as_micros(),
            (cpu.client / calls).as_micros()
        ),
        target: target.to_owned(),
        reference: reference.to_owned(),
        ratio: "-".to_owned(),
    }
}

/// One load: every latency, the wall time and the CPU each side spent.
struct Measured {
    samples: Vec<Duration>,
    wall: Duration,
    cpu: CpuCost,
}

impl Measured {
    fn rate(&self) -> f64 {
        self.samples.len() as f64 / self.wall.as_secs_f64()
    }

    fn p50(&self) -> Duration {
        percentile(&self.samples, 0.5)
    }

    fn row(&self, name: String, target: &str, reference: &str) -> Row {
        row(name, &self.samples, self.wall, &self.cpu, target, reference)
    }
}

/// Run `clients` on the host.
async fn measure<C: Caller>(http: &HttpHost, clients: Vec<C>, calls: usize) -> Measured {
    let (host_before, client_before) = (cpu_time(http.child.id()), cpu_time(std::process::id()));
    let (samples, wall) = load(clients, calls).await;
    let cpu = CpuCost {
        host: cpu_time(http.child.id()) - host_before,
        client: cpu_time(std::process::id()) - client_before,
    };
    Measured { samples, wall, cpu }
}

/// `clients` lean clients connected to `http` (as `token`'s caller when
/// given), one call each made.
async fn lean_clients(http: &HttpHost, clients: usize, token: Option<&str>) -> Vec<LeanClient> {
    let mut connected = Vec::new();
    for _ in 0..clients {
        connected.push(LeanClient::connect(&http.base, token).await);
    }
    connected[0].list().await; // warm-up
    connected
}

#[tokio::main]
async fn main() {
    let calls = arg("--calls", 200);
    let sessions = HttpHost::start(&config(), &[]).await;
    let stateless = HttpHost::start(&format!("{}[http]\nsessions = false\n", config()), &[]).await;
    let stdio = TestHost::start(&config()).await;
    let stdio_client = Arc::new(stdio.client);
    let (mut with_sessions, mut without_sessions, mut rmcp_rows) =
        (Vec::new(), Vec::new(), Vec::new());
    for (clients, target) in [(1, "-"), (16, "≥ 5000 calls/s"), (64, "p99 ≤ 10 ms")] {
        let (reference, reference_wall) =
            load(vec![Arc::clone(&stdio_client); clients], calls).await;
        let rate = reference.len() as f64 / reference_wall.as_secs_f64();
        let stdio_text = format!(
            "stdio, {clients} concurrent: p50 {} · p99 {} · {rate:.0} calls/s",
            ms(percentile(&reference, 0.5)),
            ms(percentile(&reference, 0.99))
        );
        let name = format!("{clients} client(s) × {calls} calls");
        let lean = lean_clients(&sessions, clients, None).await;
        with_sessions.push(measure(&sessions, lean, calls).await.row(
            format!("HTTP, {name}"),
            target,
            &stdio_text,
        ));
        let lean = lean_clients(&stateless, clients, None).await;
        without_sessions.push(measure(&stateless, lean, calls).await.row(
            format!("HTTP, `sessions = false`, {name}"),
            target,
            &stdio_text,
        ));
        let mut rmcp = Vec::new();
        for _ in 0..clients {
            rmcp.push(Arc::new(sessions.client(None).await.expect("connect")));
        }
        rmcp[0].list().await; // warm-up
        rmcp_rows.push(measure(&sessions, rmcp, calls).await.row(
            format!("HTTP with rmcp's client, {name}"),
            "-",
            "-",
        ));
    }
    with_sessions.extend(without_sessions);
    with_sessions.extend(rmcp_rows);
    with_sessions.extend(signed_in(calls).await);
    with_sessions.extend(audited(calls).await);
    print_table(
        &format!("HTTP benchmark: proj.list, {calls} calls per client"),
        &with_sessions,
    );
}

/// The same load signed in on one host that accepts both, with a static
/// token and with an access token of a real OpenID provider (oidc-provider,
/// as the OAuth tests start it): what checking an access token's signature
/// and claims adds (issue #38: within 10%).
async fn signed_in(calls: usize) -> Vec<Row> {
    let client = oauth::Client::new("bench", "acme", "tools:proj");
    let provider = Provider::start(std::slice::from_ref(&client), &["tools:proj"]).await;
    let (static_token, entry) = token("bench", "acme", &["proj.*"]);
    let config = format!(
        "{}{entry}\n[auth.oauth]\nissuer = \"{}\"\nresource = \"{{resource}}\"\norg_claim = \"org\"\n\
         [auth.oauth.scopes]\n\"tools:proj\" = [\"proj.*\"]\n",
        config(),
        provider.issuer
    );
    let (host, resource) = oauth::start_host(&config).await;
    let access = provider.token(&client, "tools:proj", &resource).await;
    let mut rows = Vec::new();
    for clients in [1, 16] {
        let name = format!("{clients} client(s) × {calls} calls");
        let lean = lean_clients(&host, clients, Some(&static_token)).await;
        let with_static = measure(&host, lean, calls).await;
        let lean = lean_clients(&host, clients, Some(&access)).await;
        let with_oauth = measure(&host, lean, calls).await;
        let mut row = with_oauth.row(
            format!("HTTP, an OAuth access token, {name}"),
            "≥ 0.9× static token calls/s",
            &format!(
                "static token: p50 {} · {:.0} calls/s",
                ms(with_static.p50()),
                with_static.rate()
            ),
        );
        row.ratio = format!("{:.2}x", with_oauth.rate() / with_static.rate());
        rows.push(row);
    }
    rows
}

/// The same load on a host that keeps the audit trail (`[audit]`, a SQLite
/// file) beside one that does not: what recording every call costs the
/// call path (the writer works in the background; issue #38: never slow
/// the call path).
async fn audited(calls: usize) -> Vec<Row> {
    let plain = HttpHost::start(&config(), &[]).await;
    // Relative: in the host's own temporary directory, its working one.
    let audited = HttpHost::start(
        &format!("{}[audit]\ndatabase = \"audit.db\"\n", config()),
        &[],
    )
    .await;
    let mut rows = Vec::new();
    for clients in [1, 16] {
        let name = format!("{clients} client(s) × {calls} calls");
        let lean = lean_clients(&plain, clients, None).await;
        let without = measure(&plain, lean, calls).await;
        let lean = lean_clients(&audited, clients, None).await;
        let with = measure(&audited, lean, calls).await;
        let mut row = with.row(
            format!("HTTP, audit trail on, {name}"),
            "≥ 0.9× without",
            &format!(
                "without: p50 {} · {:.0} calls/s",
                ms(without.p50()),
                without.rate()
            ),
        );
        row.ratio = format!("{:.2}x", with.rate() / without.rate());
        rows.push(row);
    }
    rows
}
