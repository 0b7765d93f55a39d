//! `packhost serve --http ADDR`: MCP over streamable HTTP at `/mcp` (rmcp's
//! server transport under axum), bearer tokens → identity, sessions bound
//! to their opener ([`sessions`]), bodies checked as JSON-RPC ([`jsonrpc`]),
//! OAuth's protected resource metadata and challenges ([`bearer`]),
//! `/healthz` (alive), `/readyz` (ready for calls: the shared state
//! answers), `/metrics` (the caller's organisation's), a cap on sessions,
//! and a graceful stop on SIGTERM.

mod bearer;
mod callback;
mod jsonrpc;
mod sessions;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Router,
    body::Body,
    extract::{Request, State},
    http::{Method, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
    serve::ListenerExt as _,
};
use futures_util::StreamExt as _;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use self::sessions::{ANYONE, Principal, Sessions};
use crate::{
    audit::Event,
    auth::{Authenticated, Authenticator, Refused},
    config::Config,
    executor::Executor,
    exit::Error,
    identity::Identity,
    mcp::PackhostServer,
    shutdown,
};

/// The header naming a request's session.
const SESSION_HEADER: &str = "mcp-session-id";

/// Shared by the middleware and the side routes.
#[derive(Clone)]
struct AppState {
    executor: Arc<Executor>,
    auth: Arc<Authenticator>,
    /// `[identity]`: who calls when no authentication is configured.
    anonymous: Identity,
    sessions: Arc<Sessions>,
    /// How many sessions may be open: in all, per organisation, per caller.
    session_caps: SessionCaps,
    max_request_bytes: usize,
    /// Answers to POST requests not yet written whole. A call's result
    /// leaves the executor before its SSE stream carries it to the client:
    /// a stop that ended the sessions when the executor had nothing running
    /// dropped such results.
    answering: TaskTracker,
}

/// Serve until SIGTERM/SIGINT, then let running calls finish and their
/// answers be written (up to the grace period) before closing every
/// session.
pub async fn serve(
    executor: &Arc<Executor>,
    config: &Config,
    addr: SocketAddr,
    insecure: bool,
) -> Result<(), Error> {
    let auth = Arc::new(Authenticator::new(&config.auth));
    if !addr.ip().is_loopback() && auth.is_open() && !insecure {
        return Err(format!(
            "refusing to serve on {addr} without authentication: add [[auth.tokens]] to the \
             config (`packhost token new --user U --org O` prints one) or [auth.oauth], bind a \
             loopback address, or pass --insecure"
        )
        .into());
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr()?;
    let http = &config.http;
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(Duration::from_secs(http.session_idle_secs));
    let sessions = Arc::new(sessions);
    let stop_sessions = CancellationToken::new();
    // The server's own address is always a valid Host and Origin (a page it
    // serves itself); anything else must be configured.
    let port = bound.port();
    let mut hosts = http.allowed_hosts.clone();
    hosts.extend([bound.ip().to_string(), bound.to_string()]);
    // This instance as the others name it: they forward retries here.
    let mine = http.instance.as_ref().and_then(|name| http.peers.get(name));
    let authority = mine.and_then(|url| url.parse::<http::Uri>().ok()?.authority().cloned());
    hosts.extend(authority.map(|a| a.to_string()));
    let mut origins = http.allowed_origins.clone();
    origins.push(format!("http://{bound}"));
    if bound.ip().is_loopback() {
        origins.extend([
            format!("http://localhost:{port}"),
            format!("http://127.0.0.1:{port}"),
        ]);
    }
    let transport = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(http.max_request_bytes)
        .with_cancellation_token(stop_sessions.clone())
        .with_legacy_session_mode(http.sessions)
        // Without sessions a plain request-response call is answered with
        // JSON: no SSE framing, one write.
        .with_json_response(!http.sessions);
    let peers = crate::mcp::Peers::of(http);
    let server = PackhostServer::new(Arc::clone(executor), config.identity.clone(), peers)?;
    let mcp = StreamableHttpService::new(
        move || Ok(server.for_session()),
        Arc::clone(&sessions),
        transport,
    );
    let sessions = Arc::new(Sessions::new(sessions));
    let described = auth.describe();
    if let Some(oauth) = auth.oauth() {
        oauth.start();
    }
    let metadata = bearer::metadata_routes(auth.oauth());
    let state = AppState {
        executor: Arc::clone(executor),
        auth,
        anonymous: config.identity.clone(),
        sessions,
        session_caps: SessionCaps {
            max_sessions: http.max_sessions,
            max_sessions_per_org: http.max_sessions_per_org,
            max_sessions_per_caller: http.max_sessions_per_caller,
        },
        max_request_bytes: http.max_request_bytes,
        answering: TaskTracker::new(),
    };
    let answering = state.answering.clone();
    let guarded = Router::new()
        .route_service("/mcp", mcp)
        .route("/metrics", get(metrics))
        .layer(middleware::from_fn_with_state(state.clone(), guard));
    let app = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .route("/oauth/callback/{pack}", get(callback::returned))
        .merge(metadata)
        .merge(guarded)
        .with_state(state);
    tracing::info!("serving MCP at http://{bound}/mcp (auth: {described})");
    let grace = Duration::from_secs(http.shutdown_grace_secs);
    let executor = Arc::clone(executor);
    // Responses go out in several small writes (headers, SSE event, end of
    // stream); with Nagle on, a kept-alive connection waits ~40 ms for the
    // client's delayed ACK before the last one.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set: {e}");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown::stop_signal().await;
            tracing::info!("stopping: no new connections; waiting for running calls");
            let deadline = tokio::time::Instant::now() + grace;
            while (executor.running() > 0 || !answering.is_empty())
                && tokio::time::Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            // Open SSE streams would keep the server up forever: end them.
            stop_sessions.cancel();
        })
        .await?;
    Ok(())
}

/// Authenticate (when tokens or OAuth are configured), keep each session
/// to its opener, check POSTed bodies, and cap new sessions.
async fn guard(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let (principal, org, scopes) = if state.auth.is_open() {
        (ANYONE, state.anonymous.org.clone(), None)
    } else {
        let authorization = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let Authenticated {
            identity,
            principal,
            scopes,
        } = match state.auth.authenticate(authorization).await {
            Ok(caller) => caller,
            Err(refused) => {
                let refusal = refused.refusal;
                state
                    .executor
                    .audit()
                    .record_if_room(|| refused_sign_in(refused));
                return bearer::unauthorized(state.auth.oauth(), refusal);
            }
        };
        let org = identity.org.clone();
        request.extensions_mut().insert(identity);
        (principal, org, scopes)
    };
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .map(|id| id.to_str().unwrap_or_default().to_owned());
    if let Some(id) = &session
        && !state.sessions.admits(id, &principal)
    {
        return sessions::unknown();
    }
    match *request.method() {
        Method::POST => {
            let sender = Sender {
                principal,
                org: &org,
                scopes: scopes.as_deref(),
            };
            post(&state, request, next, session.is_none(), sender).await
        }
        Method::DELETE => {
            let response = next.run(request).await;
            match session {
                Some(id) if response.status().is_success() => {
                    state.sessions.closed(&id);
                    // The official clients take 200 or 204 as "ended" (rmcp
                    // says 202, and the Python SDK warns of a failure).
                    StatusCode::NO_CONTENT.into_response()
                }
                _ => response,
            }
        }
        _ => next.run(request).await,
    }
}

/// The audit event of a refused sign-in: under the organisation its token
/// names when the issuer signed it, else host-level.
fn refused_sign_in(refused: Refused) -> Event {
    let (org, user) = match &refused.signed_for {
        Some((org, user)) => (Some(org.as_str()), user.as_deref()),
        None => (None, None),
    };
    Event::sign_in_refused(org, user, refused.method, refused.reason, &refused.why)
}

#[derive(Clone, Copy)]
struct SessionCaps {
    max_sessions: usize,
    max_sessions_per_org: usize,
    max_sessions_per_caller: usize,
}

/// Which bound a new session of `sender` would pass, if any: the caller's,
/// its organisation's (both only where callers sign in), the host's.
async fn session_cap(state: &AppState, sender: &Sender<'_>) -> Option<String> {
    let caps = &state.session_caps;
    let signed_in = sender.principal != ANYONE;
    if signed_in && state.sessions.open_by(&sender.principal).await >= caps.max_sessions_per_caller
    {
        let cap = caps.max_sessions_per_caller;
        return Some(format!(
            "you have {cap} sessions open (`max_sessions_per_caller`)"
        ));
    }
    if signed_in && state.sessions.open_of(sender.org).await >= caps.max_sessions_per_org {
        let cap = caps.max_sessions_per_org;
        return Some(format!(
            "your organisation has {cap} sessions open (`max_sessions_per_org`)"
        ));
    }
    if state.sessions.open().await >= caps.max_sessions {
        return Some(format!("too many open sessions ({})", caps.max_sessions));
    }
    None
}

/// Who sends a POST: the principal sessions are bound to, their
/// organisation, and the scopes of their access token (`None` for a static
/// token or none).
struct Sender<'a> {
    principal: Principal,
    org: &'a str,
    scopes: Option<&'a [String]>,
}

/// A POST: its body checked, a tool the caller's scopes do not allow
/// refused with 403 (OAuth), a new session counted against the cap and
/// recorded as the caller's, and an SSE answer counted until it is written
/// whole.
async fn post(
    state: &AppState,
    request: Request,
    next: Next,
    opens_session: bool,
    sender: Sender<'_>,
) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, state.max_request_bytes).await else {
        let too_large = format!(
            "Payload Too Large: request body exceeds {} bytes",
            state.max_request_bytes
        );
        return (StatusCode::PAYLOAD_TOO_LARGE, too_large).into_response();
    };
    let revision = parts.headers.get("mcp-protocol-version");
    if let Some(refused) = jsonrpc::check(&body, revision.and_then(|v| v.to_str().ok())) {
        return refused;
    }
    if let (Some(oauth), Some(granted)) = (state.auth.oauth(), sender.scopes)
        && let Some(identity) = parts.extensions.get::<Identity>()
        && let Some(refused) = bearer::scope_check(oauth, &state.executor, identity, granted, &body)
    {
        return refused;
    }
    let request = Request::from_parts(parts, Body::from(body));
    if opens_session && let Some(full) = session_cap(state, &sender).await {
        return json_error(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("{full}; close one (HTTP DELETE) or wait for idle ones to expire"),
        );
    }
    let answering = state.answering.token();
    let response = next.run(request).await;
    if opens_session
        && let Some(id) = response.headers().get(SESSION_HEADER)
        && let Ok(id) = id.to_str()
    {
        state
            .sessions
            .opened(id, sender.principal, sender.org)
            .await;
    }
    let streamed = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|kind| kind.as_bytes().starts_with(b"text/event-stream"));
    if !streamed {
        return response;
    }
    // Counted until the stream is written whole (or the client leaves).
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _answering = &answering;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// A JSON-RPC error body (no id: the request was not read).
fn json_error(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32000, "message": message },
    });
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from(body.to_string()),
    )
        .into_response()
}

/// Whether a load balancer may send calls here: the packs are loaded (they
/// are before the host listens) and the shared state answers. The reason
/// goes to the log only: the endpoint is open to anyone.
async fn ready(State(state): State<AppState>) -> Response {
    let not_ready = |body: &'static str| (StatusCode::SERVICE_UNAVAILABLE, body).into_response();
    if let Err(e) = state.executor.state().reachable().await {
        tracing::warn!(error = %e, "not ready");
        return not_ready("not ready: the shared state database does not answer\n");
    }
    if let Some((pack, why)) = state.executor.unready_pack().await {
        tracing::warn!(pack, error = why, "not ready");
        return not_ready("not ready: a pack cannot serve calls\n");
    }
    "ready\n".into_response()
}

/// The caller's organisation's figures only.
async fn metrics(State(state): State<AppState>, request: Request) -> Response {
    let org = request
        .extensions()
        .get::<Identity>()
        .unwrap_or(&state.anonymous)
        .org
        .clone();
    let sessions = state.sessions.open_of(&org).await;
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.executor.metrics().render(&org, sessions),
    )
        .into_response()
}
