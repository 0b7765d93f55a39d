//! Traffic that leaves the host: which addresses are not public
//! ([`address`]), what a downstream MCP server's URL may be
//! ([`downstream`]), and the egress proxy for confined children, the one
//! way out of a sandbox that may connect to its loopback port and nothing
//! else.
//!
//! The proxy
//! listens on `127.0.0.1:<free port>` on the runtime that starts it and
//! serves HTTP `CONNECT` tunnels and plain-HTTP requests in absolute form
//! (one per connection), to the [`Allow`]ed host names and ports only. It
//! resolves the name itself, refuses when any address is one of the machine
//! or its networks ([`address::refused`]), and connects to the address it
//! checked: no second lookup a DNS rebinding could answer differently. A
//! refusal is a `403` with a one-line reason. Connections are bounded in
//! number and idle time; dropping the [`Proxy`] ends them all.
#![deny(missing_docs)]

pub mod address;
pub mod downstream;
mod head;

use std::{
    io,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::Semaphore,
    task::{JoinHandle, JoinSet},
    time::timeout,
};

/// The host names and ports a proxy reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allow {
    hosts: Vec<String>,
    ports: Vec<u16>,
}

impl Allow {
    /// `hosts` (names or address literals, compared without case or a
    /// trailing dot) on any of `ports`.
    pub fn new(
        hosts: impl IntoIterator<Item = String>,
        ports: impl IntoIterator<Item = u16>,
    ) -> Self {
        let hosts = hosts
            .into_iter()
            .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
            .collect();
        let mut ports: Vec<u16> = ports.into_iter().collect();
        ports.sort_unstable();
        ports.dedup();
        Self { hosts, ports }
    }

    fn check(&self, host: &str, port: u16) -> Result<(), String> {
        if self.hosts.iter().any(|h| h == host) && self.ports.contains(&port) {
            return Ok(());
        }
        let ports: Vec<String> = self.ports.iter().map(u16::to_string).collect();
        Err(format!(
            "{host}:{port} is not allowed (allowed: {} on ports {})",
            self.hosts.join(", "),
            ports.join(", ")
        ))
    }
}

/// How much a proxy serves.
#[derive(Debug, Clone)]
pub struct Bounds {
    /// Connections served at once; more wait in the listen queue.
    pub connections: usize,
    /// Time a client has to send its request head, and the proxy to resolve
    /// and connect.
    pub setup: Duration,
    /// A connection with no byte either way for this long is closed.
    pub idle: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            connections: 32,
            setup: Duration::from_secs(30),
            idle: Duration::from_secs(120),
        }
    }
}

/// The largest request head read.
const MAX_HEAD: usize = 16 * 1024;

/// Refusals kept for [`Proxy::refusals`]: the first ones tell the story.
const KEPT_REFUSALS: usize = 16;

/// A running proxy; dropping it closes the listener and every connection.
pub struct Proxy {
    port: u16,
    rules: Arc<Rules>,
    task: JoinHandle<()>,
}

/// What every connection of a proxy shares.
struct Rules {
    allow: Allow,
    bounds: Bounds,
    refusals: Mutex<Vec<String>>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// A proxy on `127.0.0.1:<free port>`, served on the current tokio
    /// runtime (call it inside one) until dropped.
    pub fn start(allow: Allow, bounds: Bounds) -> io::Result<Self> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        let port = listener.local_addr()?.port();
        let rules = Arc::new(Rules {
            allow,
            bounds,
            refusals: Mutex::default(),
        });
        let task = tokio::spawn(serve(listener, rules.clone()));
        Ok(Self { port, rules, task })
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its URL, as proxy settings take it.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What it refused so far (the first few), one line each: a client
    /// such as npm shows only the status.
    pub fn refusals(&self) -> Vec<String> {
        self.rules
            .refusals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

async fn serve(listener: TcpListener, rules: Arc<Rules>) {
    let permits = Arc::new(Semaphore::new(rules.bounds.connections));
    // Owned here: when the proxy's task is aborted, they all go with it.
    let mut connections = JoinSet::new();
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        match listener.accept().await {
            Ok((client, _)) => {
                let rules = rules.clone();
                connections.spawn(async move {
                    let _permit = permit;
                    handle(client, &rules).await;
                });
            }
            // Out of descriptors, say: wait rather than spin.
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
        while connections.try_join_next().is_some() {}
    }
}

impl Rules {
    fn keep(&self, refusal: &Refusal) {
        let mut kept = self.refusals.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < KEPT_REFUSALS {
            kept.push(refusal.line());
        }
    }
}

/// Why a request was not served: its status and a one-line reason.
struct Refusal(&'static str, String);

const BAD_REQUEST: &str = "400 Bad Request";
const FORBIDDEN: &str = "403 Forbidden";
const BAD_GATEWAY: &str = "502 Bad Gateway";
const GATEWAY_TIMEOUT: &str = "504 Gateway Timeout";

impl Refusal {
    fn line(&self) -> String {
        format!("packhost egress: {}", self.1)
    }

    fn response(&self) -> String {
        let body = format!("{}\n", self.line());
        format!(
            "HTTP/1.1 {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.0,
            body.len()
        )
    }
}

async fn handle(mut client: TcpStream, rules: &Rules) {
    let opened = timeout(rules.bounds.setup, open(&mut client, &rules.allow))
        .await
        .unwrap_or_else(|_| {
            Err(Refusal(
                GATEWAY_TIMEOUT,
                "timed out before the connection was open".into(),
            ))
        });
    match opened {
        Ok(upstream) => {
            let _ = splice(client, upstream, rules.bounds.idle).await;
        }
        Err(refusal) => {
            rules.keep(&refusal);
            let _ = client.write_all(refusal.response().as_bytes()).await;
            let _ = client.shutdown().await;
            // Bytes the client sent that were never read would make the
            // kernel reset the connection, losing the answer: drain a little.
            let (mut rest, mut sink) = ((&mut client).take(4 * MAX_HEAD as u64), tokio::io::sink());
            let _ = timeout(
                Duration::from_secs(1),
                tokio::io::copy(&mut rest, &mut sink),
            )
            .await;
        }
    }
}

/// Read the request, check it, and connect: the upstream connection, with
/// the client told (CONNECT) or the request sent on (plain HTTP).
async fn open(client: &mut TcpStream, allow: &Allow) -> Result<TcpStream, Refusal> {
    let (head, early) = read_head(client).await?;
    let request = head::parse(&head).map_err(|e| Refusal(BAD_REQUEST, e))?;
    allow
        .check(&request.host, request.port)
        .map_err(|e| Refusal(FORBIDDEN, e))?;
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host((request.host.as_str(), request.port))
        .await
        .map_err(|e| Refusal(BAD_GATEWAY, format!("cannot resolve {}: {e}", request.host)))?
        .collect();
    if let Some((ip, why)) = addresses
        .iter()
        .find_map(|a| address::refused(a.ip()).map(|why| (a.ip(), why)))
    {
        let reason = match request.host.parse::<IpAddr>() {
            Ok(_) => format!("{ip} is {why}"),
            Err(_) => format!("{} resolves to {ip}, {why}", request.host),
        };
        return Err(Refusal(FORBIDDEN, reason));
    }
    let mut failure = format!("{} has no address", request.host);
    for address in addresses {
        match TcpStream::connect(address).await {
            Ok(mut upstream) => {
                let sent = match &request.forward {
                    None => {
                        client
                            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                            .await
                    }
                    Some(head) => upstream.write_all(head.as_bytes()).await,
                };
                sent.and(upstream.write_all(&early).await)
                    .map_err(|e| Refusal(BAD_GATEWAY, e.to_string()))?;
                return Ok(upstream);
            }
            Err(e) => failure = format!("cannot connect to {address}: {e}"),
        }
    }
    Err(Refusal(BAD_GATEWAY, failure))
}

/// The head up to its blank line, and what the client sent after it.
async fn read_head(client: &mut TcpStream) -> Result<(String, Vec<u8>), Refusal> {
    let mut buffer = Vec::with_capacity(1024);
    loop {
        let end = buffer.windows(4).position(|w| w == b"\r\n\r\n");
        if let Some(end) = end.filter(|&end| end <= MAX_HEAD) {
            let early = buffer.split_off(end + 4);
            buffer.truncate(end);
            let head = String::from_utf8(buffer)
                .map_err(|_| Refusal(BAD_REQUEST, "the request head is not UTF-8".into()))?;
            return Ok((head, early));
        }
        if buffer.len() > MAX_HEAD {
            return Err(Refusal(
                BAD_REQUEST,
                format!("request head over {MAX_HEAD} bytes"),
            ));
        }
        let mut chunk = [0; 2048];
        match client.read(&mut chunk).await {
            Ok(0) | Err(_) => {
                return Err(Refusal(
                    BAD_REQUEST,
                    "the connection closed mid-request".into(),
                ));
            }
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Copy both ways until both are done, or neither moved for `idle`.
async fn splice(client: TcpStream, upstream: TcpStream, idle: Duration) -> io::Result<()> {
    let activity = Activity::new();
    let (client_read, client_write) = client.into_split();
    let (upstream_read, upstream_write) = upstream.into_split();
    tokio::try_join!(
        pump(client_read, upstream_write, &activity, idle),
        pump(upstream_read, client_write, &activity, idle),
    )?;
    Ok(())
}

/// When either direction last moved.
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let now = self.start.elapsed().as_millis() as u64;
        self.last_ms.store(now, Ordering::Relaxed);
    }

    fn quiet_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
}

/// One direction: a quiet read waits on while the other direction moves
/// (a download's request side is silent).
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    activity: &Activity,
    idle: Duration,
) -> io::Result<()> {
    let mut buffer = vec![0; 16 * 1024];
    loop {
        let n = match timeout(idle, from.read(&mut buffer)).await {
            Ok(read) => read?,
            Err(_) if activity.quiet_for() < idle => continue,
            Err(_) => return Err(io::ErrorKind::TimedOut.into()),
        };
        if n == 0 {
            return to.shutdown().await;
        }
        activity.touch();
        timeout(idle, to.write_all(&buffer[..n]))
            .await
            .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
        activity.touch();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn proxy(bounds: Bounds) -> Proxy {
        let allow = Allow::new(
            ["localhost", "10.1.2.3", "169.254.169.254", "::1"].map(String::from),
            [80, 443],
        );
        Proxy::start(allow, bounds).unwrap()
    }

    /// Send `request` and read the answer to its end.
    async fn ask(proxy: &Proxy, request: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", proxy.port()))
            .await
            .unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn the_machine_its_networks_and_other_hosts_are_refused_with_a_reason() {
        let proxy = proxy(Bounds::default()).await;
        for (request, status, reason) in [
            (
                "CONNECT localhost:443 HTTP/1.1\r\n\r\n",
                403,
                "localhost resolves to",
            ),
            (
                "CONNECT ::1:443 HTTP/1.1\r\n\r\n",
                400,
                "is not a host and port",
            ),
            (
                "CONNECT [::1]:443 HTTP/1.1\r\n\r\n",
                403,
                "::1 is a loopback address (::1)",
            ),
            (
                "CONNECT 10.1.2.3:443 HTTP/1.1\r\n\r\n",
                403,
                "10.1.2.3 is a private address (RFC 1918)",
            ),
            (
                "CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n",
                403,
                "a link-local address",
            ),
            (
                "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n",
                403,
                "a link-local address",
            ),
            (
                "CONNECT localhost:22 HTTP/1.1\r\n\r\n",
                403,
                "localhost:22 is not allowed",
            ),
            (
                "CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n",
                403,
                "127.0.0.1:443 is not allowed",
            ),
            (
                "CONNECT example.org:443 HTTP/1.1\r\n\r\n",
                403,
                "example.org:443 is not allowed (allowed: localhost, 10.1.2.3, 169.254.169.254, ::1 on ports 80, 443)",
            ),
            (
                "GET /index.html HTTP/1.1\r\n\r\n",
                400,
                "only http:// URLs and CONNECT",
            ),
        ] {
            let answer = ask(&proxy, request).await;
            let mut lines = answer.lines();
            let status_line = lines.next().unwrap_or_default();
            assert!(
                status_line.starts_with(&format!("HTTP/1.1 {status} ")),
                "{request:?}: {answer}"
            );
            let body = lines.last().unwrap_or_default();
            assert!(
                body.starts_with("packhost egress: ") && body.contains(reason),
                "{request:?}: {answer}"
            );
            assert_eq!(proxy.refusals().last().map(String::as_str), Some(body));
        }
    }

    #[tokio::test]
    async fn a_silent_client_is_closed_and_past_the_bound_others_wait() {
        let setup = Duration::from_millis(300);
        let proxy = proxy(Bounds {
            connections: 1,
            setup,
            ..Bounds::default()
        })
        .await;
        let started = Instant::now();
        let silent = ask(&proxy, "");
        let waiting = async {
            // After the silent one holds the only place.
            tokio::time::sleep(Duration::from_millis(50)).await;
            ask(&proxy, "CONNECT 10.1.2.3:443 HTTP/1.1\r\n\r\n").await
        };
        let (silent, waiting) = tokio::join!(silent, waiting);
        assert!(silent.starts_with("HTTP/1.1 504 "), "{silent}");
        assert!(waiting.starts_with("HTTP/1.1 403 "), "{waiting}");
        assert!(started.elapsed() >= setup, "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn an_oversized_head_is_refused() {
        let proxy = proxy(Bounds::default()).await;
        let request = format!(
            "GET http://localhost/ HTTP/1.1\r\nX: {}\r\n\r\n",
            "y".repeat(MAX_HEAD)
        );
        let answer = ask(&proxy, &request).await;
        assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    }
}
