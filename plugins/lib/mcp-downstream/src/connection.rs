//! One connection to a downstream server: opened (a stdio server started,
//! or an HTTP session), checked before each request, and a request sent on
//! it, told apart when lost as certainly unsent or maybe sent.

use std::{
    collections::HashMap,
    os::unix::process::ExitStatusExt as _,
    sync::{Arc, Mutex},
    time::Duration,
};

use http::{HeaderName, HeaderValue};
use pack_process::{Bound, Exit, ProcessGroup};
use rmcp::{
    RoleClient, ServiceError, ServiceExt as _,
    model::{CancelledNotificationParam, ClientRequest, RequestId, ServerResult},
    service::{ClientInitializeError, Peer, PeerRequestOptions, RunningService},
    transport::{
        StreamableHttpClientTransport, async_rw::AsyncRwTransport,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use tempfile::TempDir;

use crate::{
    check_url,
    client::Client,
    endpoint::{Endpoint, check_public_literal},
    ledger::Ledger,
    reason::transport_reason,
    relay::{Registered, Running},
    settings::PoolSettings,
    spawn::{ended, spawn},
    stderr::{StderrTail, forward_stderr},
    transport::{InOrder, StdioTransport},
};

pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, Client>,
    /// Its requests whose questions, logs and progress go to a caller.
    pub(crate) running: Arc<Running>,
    /// A stdio server's process group: killed when the connection is dropped.
    pub(crate) child: Option<Mutex<ProcessGroup>>,
    /// What became of each request written to a stdio server. None over
    /// HTTP: there only a request rmcp never queued counts as unsent, as
    /// any POST that was started may have reached the server.
    pub(crate) ledger: Option<Arc<Ledger>>,
    /// The end of a stdio server's stderr: why it died.
    pub(crate) stderr: Option<Arc<StderrTail>>,
    /// A confined server's own folder; removed after its process is killed
    /// (fields drop in order).
    pub(crate) _scratch: Option<TempDir>,
}

impl Connection {
    /// Whether a request sent now can reach a live server. Asked before
    /// each request, so a wrong "no" costs a reconnect, never a replay.
    pub(crate) fn is_alive(&self) -> bool {
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
    pub(crate) async fn exceeded(&self) -> Option<Bound> {
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

/// Why a request gave no answer, and whether it certainly never reached the
/// server (then it may be sent again).
pub(crate) struct Lost {
    pub(crate) error: ServiceError,
    pub(crate) unsent: bool,
}

/// Send `request` on `connection` and wait for the answer; `relaying`
/// learns its progress token.
pub(crate) async fn send(
    connection: &Connection,
    request: ClientRequest,
    relaying: Option<&Registered>,
) -> Result<ServerResult, Lost> {
    let peer = connection.service.peer();
    // An error here: the service loop never got the request.
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .map_err(|error| Lost {
            error,
            unsent: true,
        })?;
    if let Some(relaying) = relaying {
        relaying.sent_with(handle.progress_token.clone());
    }
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

/// Open a connection to `key`'s server at `endpoint`: a stdio server
/// started, or an HTTP session through `http`; the MCP handshake done.
pub(crate) async fn connect(
    key: &str,
    endpoint: &Endpoint,
    settings: &PoolSettings,
    http: &reqwest::Client,
) -> Result<Connection, String> {
    let describe = endpoint.describe();
    let running = Arc::new(Running::default());
    let client = Client {
        key: key.to_owned(),
        running: Arc::clone(&running),
        events: Arc::clone(&settings.events),
    };
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
            let (mut group, scratch) =
                spawn(command, args, env, confinement).map_err(|e| format!("{describe}: {e}"))?;
            let (Some(stdout), Some(stdin), Some(stderr)) =
                (group.take_stdout(), group.take_stdin(), group.take_stderr())
            else {
                return Err(format!("{describe}: its pipes could not be opened"));
            };
            let tail = Arc::new(StderrTail::default());
            let stderr = tokio::spawn(forward_stderr(
                key.to_owned(),
                stderr,
                Arc::clone(&settings.log),
                endpoint.secrets(),
                Arc::clone(&tail),
            ));
            let ledger = Arc::new(Ledger::default());
            let transport = InOrder {
                inner: StdioTransport {
                    inner: AsyncRwTransport::new_client(stdout, stdin),
                    ledger: Arc::clone(&ledger),
                },
                running: Arc::clone(&running),
            };
            let service = match client.serve(transport).await {
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
            hear_every_log(&service).await;
            Ok(Connection {
                service,
                running,
                child: Some(Mutex::new(group)),
                ledger: Some(ledger),
                stderr: Some(tail),
                _scratch: scratch,
            })
        }
        Endpoint::Http { url, headers } => {
            let parsed = check_url(url)?;
            if settings.forbid_private_addresses {
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
            let config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
            let transport = InOrder {
                inner: StreamableHttpClientTransport::with_client(http.clone(), config),
                running: Arc::clone(&running),
            };
            let service = client
                .serve(transport)
                .await
                .map_err(|e| handshake_failed(&e))?;
            hear_every_log(&service).await;
            Ok(Connection {
                service,
                running,
                child: None,
                ledger: None,
                stderr: None,
                _scratch: None,
            })
        }
    }
}

/// Ask a server that logs for all its messages: packhost hands each on at
/// the level its own client asked for. One that refuses logs at its own.
#[allow(deprecated)] // logging is the 2025-11-25 servers' (see relay.rs)
async fn hear_every_log(service: &RunningService<RoleClient, Client>) {
    let peer = service.peer();
    let logs = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.logging.is_some());
    if logs {
        let all = rmcp::model::SetLevelRequestParams::new(rmcp::model::LoggingLevel::Debug);
        let _ = peer.set_level(all).await;
    }
}
