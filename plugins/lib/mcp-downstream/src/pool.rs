//! Connections kept per key (an integration, a server pack), reused by every
//! call, replaced when they die, closed when idle.
//!
//! A request never costs a call because its connection died while idle: a
//! connection is checked before each request, and a request that certainly
//! did not reach the server (see [`Ledger`]) is sent again on a new
//! connection. One that may have reached it is reported as failed, never
//! sent twice: the tool may have run.

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    future::Future,
    io,
    os::unix::process::ExitStatusExt as _,
    path::{Path, PathBuf},
    process::Stdio,
    sync::{Arc, Mutex, Weak},
    time::{Duration, Instant},
};

use http::{HeaderName, HeaderValue};
use pack_process::{Bound, Confined, EnvAllowList, Exit, Mode, Policy, ProcessGroup, Sandbox};
use rmcp::{
    RoleClient, ServiceError, ServiceExt as _,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
        ClientRequest, JsonObject, JsonRpcMessage, ListToolsRequest, PaginatedRequestParams,
        RequestId, ServerResult, Tool,
    },
    service::{
        ClientInitializeError, Peer, PeerRequestOptions, RunningService, RxJsonRpcMessage,
        TxJsonRpcMessage,
    },
    transport::{
        DynamicTransportError, StreamableHttpClientTransport, Transport,
        async_rw::AsyncRwTransport,
        streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError},
    },
};
use tempfile::TempDir;
use tokio::{
    io::{AsyncBufReadExt as _, BufReader},
    process::{ChildStdin, ChildStdout},
};

use crate::{
    Confinement, check_url, confine,
    endpoint::{Endpoint, PublicOnly, check_public_literal},
};

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

/// Why a downstream request gave no result. The host and `remote_mcp` turn
/// it into their failed call: `Rejected` as the tool's own error,
/// `Upstream` as `UPSTREAM_ERROR`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DownstreamError {
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
    /// Confines stdio servers; the machine is checked at the first one.
    sandbox: Sandbox,
    unconfined: Sandbox,
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
    /// What became of each request written to a stdio server. None over
    /// HTTP: there only a request rmcp never queued counts as unsent, as
    /// any POST that was started may have reached the server.
    ledger: Option<Arc<Ledger>>,
    /// The end of a stdio server's stderr: why it died.
    stderr: Option<Arc<StderrTail>>,
    /// A confined server's own folder; removed after its process is killed
    /// (fields drop in order).
    _scratch: Option<TempDir>,
}

/// The last lines a stdio server wrote to stderr, its secrets already
/// replaced: what an error about a server that would not start or died
/// says of why (the server's own reason: a missing setting, a crash).
#[derive(Default)]
struct StderrTail(Mutex<VecDeque<String>>);

impl StderrTail {
    const LINES: usize = 5;
    const CHARS: usize = 600;

    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == Self::LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// `"; its stderr ends: …"` (lines joined by ` | `, at most
    /// [`Self::CHARS`] characters, the last ones), or nothing.
    fn said(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let joined = lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" | ");
        let count = joined.chars().count();
        match count {
            0 => String::new(),
            _ if count <= Self::CHARS => format!("; its stderr ends: {joined}"),
            _ => {
                let last: String = joined.chars().skip(count - Self::CHARS).collect();
                format!("; its stderr ends: …{last}")
            }
        }
    }
}

/// `line` with each of `secrets` (longest first) replaced by `***`.
fn scrub(line: &str, secrets: &[String]) -> String {
    secrets.iter().fold(line.to_owned(), |line, secret| {
        line.replace(secret.as_str(), "***")
    })
}

impl Connection {
    /// Whether a request sent now can reach a live server. Asked before
    /// each request, so a wrong "no" costs a reconnect, never a replay.
    fn is_alive(&self) -> bool {
        if self.service.peer().is_transport_closed() {
            return false;
        }
        self.child.as_ref().is_none_or(|child| {
            // Also false while a killed server's threads are still ending.
            child.lock().unwrap_or_else(|e| e.into_inner()).is_running()
        })
    }

    /// The bound of its sandbox a stdio server passed, if that is how it
    /// ended. A killed process is reaped a moment after its pipes close,
    /// so this waits for that a little.
    async fn exceeded(&self) -> Option<Bound> {
        let child = self.child.as_ref()?;
        for _ in 0..25 {
            {
                let mut group = child.lock().unwrap_or_else(|e| e.into_inner());
                if let Ok(Some(status)) = group.try_wait() {
                    let exit = match (status.code(), status.signal()) {
                        (Some(code), _) => Exit::Code(code),
                        (None, Some(signal)) => Exit::Signal(signal),
                        (None, None) => return None,
                    };
                    return group.exceeded(exit);
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }
}

/// What became of each request written to a stdio server, to tell a request
/// lost with its connection that certainly did not reach the server from
/// one that may have.
///
/// rmcp alone cannot tell them apart once a request is queued:
/// `Peer::send_request_with_option` fails (`TransportClosed`) only if its
/// service loop had ended before the request was queued; after that, a
/// request still queued when the loop ends (the server's stdout closed), one
/// being written, and one the server read before dying all end the same way,
/// as `TransportClosed` (its answer's sender dropped), or as `TransportSend`
/// if the loop saw the write fail before it ended. So the transport
/// ([`StdioTransport`]) records, per request id, whether it took the request
/// and how its write ended; the caller settles the id when it stops waiting.
/// Taking and settling are one lock apart: a request settled before the
/// transport took it is never written.
#[derive(Default)]
struct Ledger(Mutex<HashMap<RequestId, Fate>>);

enum Fate {
    /// The transport took it: it may have reached the server.
    Written,
    /// Its write failed before its last byte, into a pipe nobody can read
    /// again (see [`StdioTransport`]): the server cannot have read it.
    Unread,
    /// Its caller stopped waiting before the transport took it.
    Withdrawn,
}

impl Ledger {
    fn fates(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Fate>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The transport is about to write request `id`: `false` if its caller
    /// has stopped waiting (then it must not be written).
    fn take(&self, id: &RequestId) -> bool {
        let mut fates = self.fates();
        if let Some(Fate::Withdrawn) = fates.remove(id) {
            return false;
        }
        // The handshake's `initialize` stays recorded: nobody settles it.
        fates.insert(id.clone(), Fate::Written);
        true
    }

    /// The write of request `id` failed and nothing can ever read it.
    fn unread(&self, id: &RequestId) {
        if let Some(fate @ Fate::Written) = self.fates().get_mut(id) {
            *fate = Fate::Unread;
        }
    }

    /// The caller stops waiting for request `id`: whether it may have
    /// reached the server. One not taken yet never will be.
    fn settle(&self, id: &RequestId) -> bool {
        let mut fates = self.fates();
        match fates.remove(id) {
            Some(Fate::Written) => true,
            Some(Fate::Unread | Fate::Withdrawn) => false,
            None => {
                fates.insert(id.clone(), Fate::Withdrawn);
                false
            }
        }
    }
}

/// rmcp's newline-delimited stdio transport, keeping a [`Ledger`].
///
/// A write that fails with a broken pipe or on a closed transport counts as
/// unread: a broken pipe means every reader of the server's stdin had closed
/// it, and an anonymous pipe never gets a reader again; the write failed
/// before the message's last byte, its newline (the transport writes one
/// message at a time, under a lock), so the server held at most an
/// unterminated line, which MCP's stdio transport does not take as a
/// message. Any other failure counts as maybe read.
struct StdioTransport {
    inner: AsyncRwTransport<RoleClient, ChildStdout, ChildStdin>,
    ledger: Arc<Ledger>,
}

impl Transport<RoleClient> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let id = match &item {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let send = id
            .as_ref()
            .is_none_or(|id| self.ledger.take(id))
            .then(|| self.inner.send(item));
        let ledger = Arc::clone(&self.ledger);
        async move {
            let Some(send) = send else {
                return Err(io::Error::other(
                    "the caller stopped waiting before the request was written",
                ));
            };
            let result = send.await;
            if let (Err(error), Some(id)) = (&result, &id)
                && matches!(
                    error.kind(),
                    io::ErrorKind::BrokenPipe | io::ErrorKind::NotConnected
                )
            {
                ledger.unread(id);
            }
            result
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Why a request gave no answer, and whether it certainly never reached the
/// server (then it may be sent again).
struct Lost {
    error: ServiceError,
    unsent: bool,
}

/// Send `request` on `connection` and wait for the answer.
async fn send(connection: &Connection, request: ClientRequest) -> Result<ServerResult, Lost> {
    let peer = connection.service.peer();
    // An error here: the service loop never got the request.
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .map_err(|error| Lost {
            error,
            unsent: true,
        })?;
    let mut waiting = Waiting {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
        ledger: connection.ledger.clone(),
    };
    let result = handle.await_response().await;
    let reached = waiting.settle();
    result.map_err(|error| Lost {
        error,
        unsent: !reached,
    })
}

/// A request waiting for its answer. Dropped while waiting (the call timed
/// out or was cancelled), it tells the server to stop
/// (`notifications/cancelled`, as rmcp's own `call_tool` does) if the
/// request may have reached it; if not, it is never written.
struct Waiting {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    ledger: Option<Arc<Ledger>>,
}

impl Waiting {
    /// Stop waiting: whether the request may have reached the server.
    fn settle(&mut self) -> bool {
        let Some(id) = self.id.take() else {
            return true;
        };
        self.ledger.as_ref().is_none_or(|ledger| ledger.settle(&id))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let Some(id) = self.id.clone() else {
            return;
        };
        if !self.settle() {
            return;
        }
        let peer = self.peer.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let reason = "request abandoned by the caller".to_owned();
                let cancelled = CancelledNotificationParam::new(Some(id), Some(reason));
                let _ = peer.notify_cancelled(cancelled).await;
            });
        }
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
            sandbox: Sandbox::new(Mode::On),
            unconfined: Sandbox::new(Mode::Off),
        });
        tokio::spawn(close_idle(Arc::downgrade(&pool)));
        tokio::task::spawn_blocking(sweep_scratch);
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
    ) -> Result<CallToolResult, DownstreamError> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        self.request(key, endpoint, timeout, request, |result| match result {
            ServerResult::CallToolResult(result) => Some(result),
            _ => None,
        })
        .await
    }

    /// The tools of the server at `endpoint`, every page within `timeout`.
    pub async fn list_tools(
        &self,
        key: &str,
        endpoint: &Endpoint,
        timeout: Duration,
    ) -> Result<Vec<Tool>, DownstreamError> {
        let pages = async {
            let mut tools = Vec::new();
            let mut cursor = None;
            loop {
                let params = PaginatedRequestParams::default().with_cursor(cursor);
                let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
                let page = self
                    .request(key, endpoint, timeout, request, |result| match result {
                        ServerResult::ListToolsResult(page) => Some(page),
                        _ => None,
                    })
                    .await?;
                tools.extend(page.tools);
                cursor = page.next_cursor;
                if cursor.is_none() {
                    return Ok(tools);
                }
            }
        };
        tokio::time::timeout(timeout, pages)
            .await
            .unwrap_or_else(|_| Err(no_answer(endpoint, timeout)))
    }

    /// Close every connection (stdio servers are stopped).
    pub fn close_all(&self) {
        self.slots_mut().clear();
    }

    /// Send `request` to `key`'s server and take its answer with `answer`
    /// (`None`: an answer of the wrong kind) within `timeout`. A request lost
    /// with a connection that died before it reached the server is sent once
    /// more, on a new connection, in the time that is left.
    async fn request<T>(
        &self,
        key: &str,
        endpoint: &Endpoint,
        timeout: Duration,
        request: ClientRequest,
        answer: fn(ServerResult) -> Option<T>,
    ) -> Result<T, DownstreamError> {
        let slot = self.slot(key, endpoint);
        // One time limit for the request, sent once or twice.
        let deadline = tokio::time::Instant::now() + timeout;
        let mut resent = false;
        let (connection, error) = loop {
            let connection = self.connection(key, &slot).await?;
            let outcome =
                tokio::time::timeout_at(deadline, send(&connection, request.clone())).await;
            *slot.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
            let lost = match outcome {
                Ok(Ok(result)) => match answer(result) {
                    Some(value) => return Ok(value),
                    None => Lost {
                        error: ServiceError::UnexpectedResponse,
                        unsent: false,
                    },
                },
                Ok(Err(lost)) => lost,
                Err(_) => return Err(no_answer(endpoint, timeout)),
            };
            if let ServiceError::McpError(error) = lost.error {
                return Err(DownstreamError::Rejected(error.message.into_owned()));
            }
            // The connection is suspect: the next request starts a fresh one.
            let mut current = slot.connection.lock().await;
            if current
                .as_ref()
                .is_some_and(|c| Arc::ptr_eq(c, &connection))
            {
                *current = None;
            }
            drop(current);
            if !lost.unsent || resent {
                break (connection, lost.error);
            }
            resent = true;
            (self.settings.log)(
                Level::Info,
                &format!(
                    "`{key}` ({}): the connection died before the request was sent; sending it on a new one",
                    endpoint.describe()
                ),
            );
        };
        let dead = matches!(
            error,
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
        ) && !connection.is_alive();
        let bound = if dead {
            connection.exceeded().await
        } else {
            None
        };
        let said = match &connection.stderr {
            Some(tail) if dead => tail.said(),
            _ => String::new(),
        };
        let reason = match (error, bound) {
            (_, Some(bound)) => format!("the server passed {bound} and was ended{said}"),
            _ if dead => format!("the server closed the connection (it may have crashed){said}"),
            (ServiceError::UnexpectedResponse, _) => {
                "the server sent a malformed response".to_owned()
            }
            (ServiceError::TransportSend(error), _) => transport_reason(&error),
            (other, _) => other.to_string(),
        };
        (self.settings.log)(
            Level::Warn,
            &format!("`{key}` ({}): {reason}", endpoint.describe()),
        );
        Err(DownstreamError::Upstream(format!(
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

    async fn connection(&self, key: &str, slot: &Slot) -> Result<Arc<Connection>, DownstreamError> {
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
                Ok(Err(reason)) => return Err(DownstreamError::Upstream(reason)),
                Err(_) => {
                    return Err(DownstreamError::Upstream(format!(
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
            Endpoint::Stdio {
                command,
                args,
                env,
                confinement,
            } => {
                let (mut group, scratch) = self
                    .spawn(command, args, env, confinement)
                    .map_err(|e| format!("{describe}: {e}"))?;
                let (Some(stdout), Some(stdin), Some(stderr)) =
                    (group.take_stdout(), group.take_stdin(), group.take_stderr())
                else {
                    return Err(format!("{describe}: its pipes could not be opened"));
                };
                let tail = Arc::new(StderrTail::default());
                let stderr = tokio::spawn(forward_stderr(
                    key.to_owned(),
                    stderr,
                    Arc::clone(&self.settings.log),
                    endpoint.secrets(),
                    Arc::clone(&tail),
                ));
                let ledger = Arc::new(Ledger::default());
                let transport = StdioTransport {
                    inner: AsyncRwTransport::new_client(stdout, stdin),
                    ledger: Arc::clone(&ledger),
                };
                let service = match ().serve(transport).await {
                    Ok(service) => service,
                    Err(e) => {
                        return Err(match ended(&mut group, stderr).await {
                            Some(why) => {
                                format!("{describe}: the sandbox refused to start it: {why}")
                            }
                            None => format!("{}{}", handshake_failed(&e), tail.said()),
                        });
                    }
                };
                Ok(Connection {
                    service,
                    child: Some(Mutex::new(group)),
                    ledger: Some(ledger),
                    stderr: Some(tail),
                    _scratch: scratch,
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
                    ledger: None,
                    stderr: None,
                    _scratch: None,
                })
            }
        }
    }
}

impl Pool {
    /// Start a stdio server in its own process group: confined, in a fresh
    /// scratch folder that is its `HOME`, `TMPDIR` and working directory;
    /// or, with `sandbox = "off"`, as the host's user in the host's folder.
    fn spawn(
        &self,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        confinement: &Confinement,
    ) -> Result<(ProcessGroup, Option<TempDir>), String> {
        let (mut confined, extra, scratch) = match confinement.mode {
            Mode::Off => {
                // The policy is not applied with the sandbox off.
                let policy = Policy::new([], Path::new("."));
                let confined = self.unconfined.command(&policy, Path::new(command))?;
                (confined, env.clone(), None)
            }
            Mode::On => {
                let scratch = tempfile::Builder::new()
                    .prefix("server-")
                    .tempdir_in(scratch_root()?)
                    .map_err(|e| format!("cannot make the server's scratch folder: {e}"))?;
                let plan = confine::plan(confinement, command, args, env, scratch.path())
                    .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                let mut confined: Confined = self.sandbox.command(&plan.policy, &plan.program)?;
                confined.command.current_dir(scratch.path());
                let own = scratch.path().display().to_string();
                let mut extra =
                    BTreeMap::from([("HOME".to_owned(), own.clone()), ("TMPDIR".to_owned(), own)]);
                extra.extend(env.clone());
                (confined, extra, Some(scratch))
            }
        };
        let cmd = &mut confined.command;
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        EnvAllowList::default().apply(cmd, &extra);
        let group =
            ProcessGroup::spawn(confined).map_err(|e| format!("cannot start `{command}`: {e}"))?;
        Ok((group, scratch))
    }
}

/// Where the scratch folders of this host's confined servers are made:
/// one folder per host process, so the folders of a host that was killed
/// before it could remove them are known by its pid ([`sweep_scratch`]).
fn scratch_root() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt as _;
    let root = std::env::temp_dir()
        .join("packhost-mcp")
        .join(std::process::id().to_string());
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&root)
        .map_err(|e| format!("cannot make {}: {e}", root.display()))?;
    Ok(root)
}

/// Remove the scratch folders of hosts that are gone (killed, so they
/// could not remove them).
fn sweep_scratch() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir().join("packhost-mcp")) else {
        return;
    };
    for entry in entries.flatten() {
        let gone = entry
            .file_name()
            .to_str()
            .and_then(|pid| pid.parse::<u32>().ok())
            .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
        if gone {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Wait a little for a server whose handshake failed to end and its stderr
/// to be read to its end (for its last lines); the reason the sandbox's
/// helper refused to start it, if it did: its exit code says it refused,
/// its first stderr line says why.
async fn ended(
    group: &mut ProcessGroup,
    stderr: tokio::task::JoinHandle<Option<String>>,
) -> Option<String> {
    let grace = Duration::from_secs(1);
    let status = tokio::time::timeout(grace, group.wait()).await.ok()?.ok()?;
    let refusal = tokio::time::timeout(grace, stderr).await.ok()?.ok()?;
    refusal.filter(|_| status.code() == Some(pack_sandbox::SETUP_FAILED))
}

fn no_answer(endpoint: &Endpoint, timeout: Duration) -> DownstreamError {
    DownstreamError::Upstream(format!(
        "{} gave no answer within {} ms",
        endpoint.describe(),
        timeout.as_millis()
    ))
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

/// A stdio server's stderr, line by line, into the log and its `tail`,
/// `secrets` replaced (before lines are capped, so no part of one is left;
/// capped so a server cannot make the host hold a huge line). Returns the
/// sandbox's reason when its first line is the helper refusing to start
/// the server.
async fn forward_stderr(
    key: String,
    stderr: tokio::process::ChildStderr,
    log: Log,
    secrets: Vec<String>,
    tail: Arc<StderrTail>,
) -> Option<String> {
    const MAX_LINE: usize = 2000;
    let mut lines = BufReader::new(stderr).lines();
    let mut refusal = None;
    let mut first = true;
    while let Ok(Some(line)) = lines.next_line().await {
        let line: String = scrub(&line, &secrets).chars().take(MAX_LINE).collect();
        if first && let Some(why) = line.strip_prefix(pack_sandbox::SETUP_FAILED_PREFIX) {
            refusal = Some(why.to_owned());
        }
        first = false;
        log(Level::Debug, &format!("`{key}` stderr: {line}"));
        tail.push(line);
    }
    refusal
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_keeps_its_last_lines_capped_and_without_secrets() {
        let endpoint = Endpoint::Stdio {
            command: "server".to_owned(),
            args: Vec::new(),
            env: BTreeMap::from([
                ("SHORT".to_owned(), "abc".to_owned()),
                ("LONG".to_owned(), "abcdef".to_owned()),
                ("EMPTY".to_owned(), String::new()),
            ]),
            confinement: Confinement::default(),
        };
        let secrets = endpoint.secrets();
        assert_eq!(scrub("key abcdef, abc", &secrets), "key ***, ***");
        let tail = StderrTail::default();
        assert_eq!(tail.said(), "");
        for n in 0..7 {
            tail.push(format!("line {n}"));
        }
        assert_eq!(
            tail.said(),
            "; its stderr ends: line 2 | line 3 | line 4 | line 5 | line 6"
        );
        tail.push("x".repeat(2 * StderrTail::CHARS));
        let said = tail.said();
        assert!(said.ends_with(&"x".repeat(StderrTail::CHARS)), "{said}");
        assert!(said.len() < 3 * StderrTail::CHARS, "{said}");
    }

    #[test]
    fn the_ledger_tells_unsent_requests_from_maybe_sent_ones() {
        let ledger = Ledger::default();
        let id = |n| RequestId::Number(n);
        // Written, then answered or lost: it may have reached the server.
        assert!(ledger.take(&id(1)));
        assert!(ledger.settle(&id(1)));
        // Its write broke the pipe: it cannot have.
        assert!(ledger.take(&id(2)));
        ledger.unread(&id(2));
        assert!(!ledger.settle(&id(2)));
        // Given up before the transport took it: it is never written.
        assert!(!ledger.settle(&id(3)));
        assert!(!ledger.take(&id(3)));
        // Nothing is left behind.
        assert!(ledger.fates().is_empty());
    }
}
