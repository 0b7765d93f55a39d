//! Connections kept per key (an integration, a server pack), reused by every
//! call, replaced when they die, closed when idle.

use std::{
    collections::HashMap,
    future::Future,
    process::Stdio,
    sync::{Arc, Mutex, Weak},
    time::{Duration, Instant},
};

use http::{HeaderName, HeaderValue};
use pack_process::{EnvAllowList, ProcessGroup};
use rmcp::{
    RoleClient, ServiceError, ServiceExt as _,
    model::{CallToolRequestParams, CallToolResult, JsonObject, Tool},
    service::{ClientInitializeError, Peer, RunningService},
    transport::{
        DynamicTransportError, StreamableHttpClientTransport,
        streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError},
    },
};
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::endpoint::{Endpoint, PublicOnly, check_public_literal, check_url};

/// How loud a pool message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// A downstream server's own stderr.
    Debug,
    /// Connections opened and closed.
    Info,
    /// Connections lost.
    Warn,
}

/// Where the pool's messages go (the host's log, or a pack's).
pub type Log = Arc<dyn Fn(Level, &str) + Send + Sync>;

/// Limits and rules of a [`Pool`].
#[derive(Clone)]
pub struct PoolSettings {
    /// Starting a server and the MCP handshake, together.
    pub connect_timeout: Duration,
    /// A connection unused this long is closed (its process stopped).
    pub idle_ttl: Duration,
    /// Connections open at once; past it the least recently used is closed.
    pub max_connections: usize,
    /// Refuse HTTP endpoints on private and loopback addresses.
    pub forbid_private_addresses: bool,
    /// Where messages go.
    pub log: Log,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(20),
            idle_ttl: Duration::from_secs(600),
            max_connections: 64,
            forbid_private_addresses: false,
            log: Arc::new(|_, _| {}),
        }
    }
}

/// Why a downstream request gave no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The server answered with an error (a JSON-RPC error such as an
    /// unknown tool): its answer, to hand on as it is.
    Rejected(String),
    /// The connection failed: the server could not be started or reached,
    /// closed the connection, answered garbage, or not in time. A short
    /// reason without credentials.
    Upstream(String),
}

/// Pooled connections to downstream MCP servers.
pub struct Pool {
    settings: PoolSettings,
    /// Built once: no redirects followed, optionally public addresses only.
    http: reqwest::Client,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
}

/// One key's connection; its lock is held only while connecting, so a server
/// that is slow to start delays its own callers and nobody else's.
struct Slot {
    endpoint: Endpoint,
    connection: tokio::sync::Mutex<Option<Arc<Connection>>>,
    last_used: Mutex<Instant>,
}

struct Connection {
    service: RunningService<RoleClient, ()>,
    /// A stdio server's process group: killed when the connection is dropped.
    child: Option<Mutex<ProcessGroup>>,
}

impl Connection {
    fn is_alive(&self) -> bool {
        if self.service.peer().is_transport_closed() {
            return false;
        }
        self.child
            .as_ref()
            .is_none_or(|child| child.lock().unwrap_or_else(|e| e.into_inner()).is_running())
    }
}

impl Pool {
    /// A pool with `settings`; must be made inside a tokio runtime, which
    /// closes idle connections in the background.
    pub fn new(settings: PoolSettings) -> Arc<Self> {
        // reqwest is built without a default crypto provider; an `Err` means
        // one is installed already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        // No idle connection reuse, as rmcp's own default client: on a
        // reused connection, a server that leaves Nagle on (packhost did
        // until it set TCP_NODELAY) holds the end of each SSE answer ~40 ms
        // for the client's delayed ACK.
        let mut http = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(settings.connect_timeout);
        if settings.forbid_private_addresses {
            http = http.dns_resolver(Arc::new(PublicOnly)).no_proxy();
        }
        let pool = Arc::new(Self {
            http: http
                .build()
                .expect("an HTTP client without TLS options builds"),
            settings,
            slots: Mutex::default(),
        });
        tokio::spawn(close_idle(Arc::downgrade(&pool)));
        pool
    }

    /// Call `tool` with `arguments` on the server at `endpoint` (connection
    /// `key`), waiting at most `timeout` for the answer. A tool that fails
    /// is a success here: its result says `isError`.
    pub async fn call_tool(
        &self,
        key: &str,
        endpoint: &Endpoint,
        tool: &str,
        arguments: JsonObject,
        timeout: Duration,
    ) -> Result<CallToolResult, Failure> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        self.request(key, endpoint, timeout, move |peer| async move {
            peer.call_tool(params).await
        })
        .await
    }

    /// The tools of the server at `endpoint`.
    pub async fn list_tools(
        &self,
        key: &str,
        endpoint: &Endpoint,
        timeout: Duration,
    ) -> Result<Vec<Tool>, Failure> {
        self.request(key, endpoint, timeout, |peer| async move {
            peer.list_all_tools().await
        })
        .await
    }

    /// Close every connection (stdio servers are stopped).
    pub fn close_all(&self) {
        self.slots_mut().clear();
    }

    async fn request<T, F, Fut>(
        &self,
        key: &str,
        endpoint: &Endpoint,
        timeout: Duration,
        send: F,
    ) -> Result<T, Failure>
    where
        F: FnOnce(Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let slot = self.slot(key, endpoint);
        let connection = self.connection(key, &slot).await?;
        let outcome = tokio::time::timeout(timeout, send(connection.service.peer().clone())).await;
        *slot.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        let error = match outcome {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) => error,
            Err(_) => {
                return Err(Failure::Upstream(format!(
                    "{} gave no answer within {} ms",
                    endpoint.describe(),
                    timeout.as_millis()
                )));
            }
        };
        if let ServiceError::McpError(error) = error {
            return Err(Failure::Rejected(error.message.into_owned()));
        }
        // The connection is suspect: the next call starts a fresh one.
        let mut current = slot.connection.lock().await;
        if current
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, &connection))
        {
            *current = None;
        }
        let reason = match error {
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
                if !connection.is_alive() =>
            {
                "the server closed the connection (it may have crashed)".to_owned()
            }
            ServiceError::UnexpectedResponse => "the server sent a malformed response".to_owned(),
            ServiceError::TransportSend(error) => transport_reason(&error),
            other => other.to_string(),
        };
        (self.settings.log)(
            Level::Warn,
            &format!("`{key}` ({}): {reason}", endpoint.describe()),
        );
        Err(Failure::Upstream(format!(
            "{}: {reason}",
            endpoint.describe()
        )))
    }

    fn slots_mut(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The slot of `key`, new when the endpoint changed (an edited
    /// integration gets a new connection).
    fn slot(&self, key: &str, endpoint: &Endpoint) -> Arc<Slot> {
        let mut slots = self.slots_mut();
        if let Some(slot) = slots.get(key).filter(|s| &s.endpoint == endpoint) {
            return Arc::clone(slot);
        }
        if !slots.contains_key(key) && slots.len() >= self.settings.max_connections {
            let oldest = slots
                .iter()
                .min_by_key(|(_, s)| *s.last_used.lock().unwrap_or_else(|e| e.into_inner()))
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                slots.remove(&oldest);
            }
        }
        let slot = Arc::new(Slot {
            endpoint: endpoint.clone(),
            connection: tokio::sync::Mutex::new(None),
            last_used: Mutex::new(Instant::now()),
        });
        slots.insert(key.to_owned(), Arc::clone(&slot));
        slot
    }

    async fn connection(&self, key: &str, slot: &Slot) -> Result<Arc<Connection>, Failure> {
        let mut current = slot.connection.lock().await;
        if let Some(connection) = current.as_ref().filter(|c| c.is_alive()) {
            return Ok(Arc::clone(connection));
        }
        let endpoint = &slot.endpoint;
        let restarted = current.take().is_some();
        let connection =
            match tokio::time::timeout(self.settings.connect_timeout, self.connect(key, endpoint))
                .await
            {
                Ok(Ok(connection)) => Arc::new(connection),
                Ok(Err(reason)) => return Err(Failure::Upstream(reason)),
                Err(_) => {
                    return Err(Failure::Upstream(format!(
                        "{} did not complete the MCP handshake within {} ms",
                        endpoint.describe(),
                        self.settings.connect_timeout.as_millis()
                    )));
                }
            };
        let verb = if restarted {
            "reconnected"
        } else {
            "connected"
        };
        (self.settings.log)(
            Level::Info,
            &format!("`{key}`: {verb} to {}", endpoint.describe()),
        );
        *current = Some(Arc::clone(&connection));
        Ok(connection)
    }

    async fn connect(&self, key: &str, endpoint: &Endpoint) -> Result<Connection, String> {
        let describe = endpoint.describe();
        let handshake_failed = |e: &ClientInitializeError| {
            let reason = match e {
                ClientInitializeError::TransportError { error, .. } => transport_reason(error),
                other => other.to_string(),
            };
            format!("{describe}: MCP handshake failed: {reason}")
        };
        match endpoint {
            Endpoint::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                EnvAllowList::default().apply(&mut cmd, env);
                let mut group = ProcessGroup::spawn(&mut cmd)
                    .map_err(|e| format!("{describe}: cannot start `{command}`: {e}"))?;
                let child = group.child();
                let (Some(stdout), Some(stdin), Some(stderr)) =
                    (child.stdout.take(), child.stdin.take(), child.stderr.take())
                else {
                    return Err(format!("{describe}: its pipes could not be opened"));
                };
                tokio::spawn(forward_stderr(
                    key.to_owned(),
                    stderr,
                    Arc::clone(&self.settings.log),
                ));
                let service = ().serve((stdout, stdin)).await.map_err(|e| handshake_failed(&e))?;
                Ok(Connection {
                    service,
                    child: Some(Mutex::new(group)),
                })
            }
            Endpoint::Http { url, headers } => {
                let parsed = check_url(url)?;
                if self.settings.forbid_private_addresses {
                    check_public_literal(&parsed)?;
                }
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let name = HeaderName::try_from(name.as_str())
                        .map_err(|_| format!("{describe}: header name `{name}` is not valid"))?;
                    let value = HeaderValue::try_from(value.as_str()).map_err(|_| {
                        format!("{describe}: the value of header `{name}` is not valid")
                    })?;
                    custom.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                let transport =
                    StreamableHttpClientTransport::with_client(self.http.clone(), config);
                let service = ().serve(transport).await.map_err(|e| handshake_failed(&e))?;
                Ok(Connection {
                    service,
                    child: None,
                })
            }
        }
    }
}

/// Why a transport failed, in a few words.
fn transport_reason(error: &DynamicTransportError) -> String {
    // The HTTP client's own error hides its cause from the chain.
    match error
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        Some(StreamableHttpError::Client(e)) => root_cause(e),
        _ => root_cause(error),
    }
}

/// The innermost error of a chain ("connection refused", a TLS alert): the
/// outer layers name rmcp's and reqwest's types, which tell a reader nothing.
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// A stdio server's stderr, line by line, into the log (lines capped: a
/// server cannot make the host hold a huge line).
async fn forward_stderr(key: String, stderr: tokio::process::ChildStderr, log: Log) {
    const MAX_LINE: usize = 2000;
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line: String = line.chars().take(MAX_LINE).collect();
        log(Level::Debug, &format!("`{key}` stderr: {line}"));
    }
}

/// Every so often, drop the slots nobody used for the idle TTL; a call still
/// running on one keeps its connection until it ends.
async fn close_idle(pool: Weak<Pool>) {
    let period = {
        let Some(pool) = pool.upgrade() else { return };
        (pool.settings.idle_ttl / 2).clamp(Duration::from_millis(100), Duration::from_secs(30))
    };
    loop {
        tokio::time::sleep(period).await;
        let Some(pool) = pool.upgrade() else { return };
        let ttl = pool.settings.idle_ttl;
        let mut closed = Vec::new();
        pool.slots_mut().retain(|key, slot| {
            let idle = slot
                .last_used
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .elapsed();
            let keep = idle < ttl;
            if !keep {
                closed.push(key.clone());
            }
            keep
        });
        for key in closed {
            (pool.settings.log)(Level::Info, &format!("`{key}`: closed after being idle"));
        }
    }
}
