//! Connections kept per key (an integration, a server pack), reused by every
//! call, replaced when they die, closed when idle.
//!
//! A request never costs a call because its connection died while idle: a
//! connection is checked before each request, and a request that certainly
//! did not reach the server (see the request ledger, `ledger.rs`) is sent
//! again on a new connection. One that may have reached it is reported as
//! failed, never sent twice: the tool may have run.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, Weak},
    time::{Duration, Instant},
};

use rmcp::{
    ServiceError,
    model::{CallToolResult, ClientRequest, JsonObject, ServerResult, Tool},
};
use serde_json::{Value, json};

use crate::{
    connection::{Connection, Lost, connect, send},
    endpoint::{Endpoint, PublicOnly},
    reason::{no_answer, transport_reason},
    relay::{Registered, Relay},
    settings::{DownstreamError, Level, PoolSettings},
    spawn::sweep_scratch,
};

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
        tokio::task::spawn_blocking(sweep_scratch);
        pool
    }

    /// The HTTP client of every connection, with its address rules: for
    /// other requests to the same servers' hosts (their sign-in).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Call `tool` with `arguments` on the server at `endpoint` (connection
    /// `key`), waiting at most `timeout` for the answer; the server's
    /// questions, logs and progress meanwhile go to `relay`. A tool that
    /// fails is a success here: its result says `isError`.
    pub async fn call_tool(
        &self,
        key: &str,
        endpoint: &Endpoint,
        tool: &str,
        arguments: JsonObject,
        timeout: Duration,
        relay: Option<Arc<dyn Relay>>,
    ) -> Result<CallToolResult, DownstreamError> {
        let params = json!({"name": tool, "arguments": arguments});
        let sent = Sent::new("tools/call", params, relay);
        self.send(key, endpoint, timeout, sent, |result| match result {
            ServerResult::CallToolResult(result) => Some(result),
            _ => None,
        })
        .await
    }

    /// Send MCP request `method` with `params` (`prompts/get`,
    /// `resources/read`, `completion/complete`, `resources/subscribe`, ...)
    /// to the server at `endpoint` (connection `key`) within `timeout`: its
    /// result. The server's questions, logs and progress meanwhile go to
    /// `relay`.
    pub async fn request(
        &self,
        key: &str,
        endpoint: &Endpoint,
        timeout: Duration,
        method: &str,
        params: Value,
        relay: Option<Arc<dyn Relay>>,
    ) -> Result<Value, DownstreamError> {
        let sent = Sent::new(method, params, relay);
        self.send(key, endpoint, timeout, sent, |result| {
            serde_json::to_value(result).ok()
        })
        .await
    }

    /// Every item of list request `method` (`tools/list`, `prompts/list`,
    /// `resources/list` or `resources/templates/list`) of the server at
    /// `endpoint`, every page within `timeout`.
    pub async fn list(
        &self,
        key: &str,
        endpoint: &Endpoint,
        timeout: Duration,
        method: &str,
    ) -> Result<Vec<Value>, DownstreamError> {
        let field = match method {
            "tools/list" => "tools",
            "prompts/list" => "prompts",
            "resources/list" => "resources",
            "resources/templates/list" => "resourceTemplates",
            other => {
                return Err(DownstreamError::Rejected(format!(
                    "`{other}` is not a list request"
                )));
            }
        };
        let pages = async {
            let mut items = Vec::new();
            let mut cursor: Option<Value> = None;
            loop {
                let params = cursor.map_or_else(|| json!({}), |c| json!({ "cursor": c }));
                let mut page = self
                    .request(key, endpoint, timeout, method, params, None)
                    .await?;
                if let Some(Value::Array(found)) = page.get_mut(field).map(Value::take) {
                    items.extend(found);
                }
                cursor = page.get("nextCursor").filter(|c| c.is_string()).cloned();
                if cursor.is_none() {
                    return Ok(items);
                }
            }
        };
        tokio::time::timeout(timeout, pages)
            .await
            .unwrap_or_else(|_| Err(no_answer(endpoint, timeout)))
    }

    /// The tools of the server at `endpoint`, every page within `timeout`.
    pub async fn list_tools(
        &self,
        key: &str,
        endpoint: &Endpoint,
        timeout: Duration,
    ) -> Result<Vec<Tool>, DownstreamError> {
        let tools = self.list(key, endpoint, timeout, "tools/list").await?;
        tools
            .into_iter()
            .map(|tool| {
                serde_json::from_value(tool).map_err(|e| {
                    DownstreamError::Upstream(format!(
                        "{}: a tool of its list is not MCP's: {e}",
                        endpoint.describe()
                    ))
                })
            })
            .collect()
    }

    /// End the subscription to `uri` on connection `key` in the background:
    /// for a subscription dropped where nothing can wait for the server.
    pub fn unsubscribe_soon(
        self: &Arc<Self>,
        key: &str,
        endpoint: &Endpoint,
        uri: &str,
        timeout: Duration,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (pool, key, endpoint) = (Arc::clone(self), key.to_owned(), endpoint.clone());
        let params = json!({ "uri": uri });
        runtime.spawn(async move {
            let ended = pool
                .request(
                    &key,
                    &endpoint,
                    timeout,
                    "resources/unsubscribe",
                    params,
                    None,
                )
                .await;
            if let Err(e) = ended {
                (pool.settings.log)(
                    Level::Debug,
                    &format!("`{key}`: unsubscribing failed: {e:?}"),
                );
            }
        });
    }

    /// Close every connection (stdio servers are stopped).
    pub fn close_all(&self) {
        self.slots_mut().clear();
    }

    /// Send `sent` to `key`'s server and take its answer with `answer`
    /// (`None`: an answer of the wrong kind) within `timeout`. A request lost
    /// with a connection that died before it reached the server is sent once
    /// more, on a new connection, in the time that is left.
    async fn send<T>(
        &self,
        key: &str,
        endpoint: &Endpoint,
        timeout: Duration,
        sent: Sent,
        answer: fn(ServerResult) -> Option<T>,
    ) -> Result<T, DownstreamError> {
        let slot = self.slot(key, endpoint);
        // One time limit for the request, sent once or twice.
        let deadline = tokio::time::Instant::now() + timeout;
        let mut resent = false;
        let (connection, error) = loop {
            let connection = self.connection(key, &slot).await?;
            let (request, relaying) = sent.on(&connection)?;
            let sending = send(&connection, request, relaying.as_ref());
            let outcome = tokio::time::timeout_at(deadline, sending).await;
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
        let connection = match tokio::time::timeout(
            self.settings.connect_timeout,
            connect(key, endpoint, &self.settings, &self.http),
        )
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

/// A request to send, and the caller its server's questions go to.
struct Sent {
    method: String,
    params: Value,
    relay: Option<Arc<dyn Relay>>,
}

impl Sent {
    fn new(method: &str, params: Value, relay: Option<Arc<dyn Relay>>) -> Self {
        Self {
            method: method.to_owned(),
            params,
            relay,
        }
    }

    /// The request as sent on `connection`: with a relay, registered there
    /// (until the returned guard drops).
    fn on(
        &self,
        connection: &Connection,
    ) -> Result<(ClientRequest, Option<Registered>), DownstreamError> {
        let registered =
            (self.relay.as_ref()).map(|relay| connection.running.register(Arc::clone(relay)));
        let request = json!({"method": self.method, "params": self.params});
        let request = serde_json::from_value(request).map_err(|e| {
            DownstreamError::Rejected(format!("`{}` is not an MCP request: {e}", self.method))
        })?;
        Ok((request, registered))
    }
}
