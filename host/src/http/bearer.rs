//! What HTTP says about bearer tokens: the protected resource metadata
//! (RFC 9728) at `/.well-known/oauth-protected-resource` and its
//! path-suffixed form, 401 with the challenge that points at it, and 403
//! `insufficient_scope` for a `tools/call` of a tool the caller's scopes do
//! not allow but another scope would (a client can then step up). Calls
//! made from `run` or code are refused by the allow-list inside the call,
//! as for static tokens.

use axum::{
    Router,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use serde_json::Value;

use super::{AppState, json_error};
use crate::{
    auth::{Refusal, oauth::Verifier},
    executor::Executor,
    identity::Identity,
};

/// The metadata document's routes, when OAuth is configured: the bare
/// well-known path and the one RFC 9728 derives from the resource URI.
pub(super) fn metadata_routes(oauth: Option<&Verifier>) -> Router<AppState> {
    let Some(oauth) = oauth else {
        return Router::new();
    };
    let document = oauth.metadata().to_string();
    let suffixed = url::Url::parse(&oauth.metadata_url())
        .map(|url| url.path().to_owned())
        .unwrap_or_default();
    // Public, and read by browser-based clients from other origins.
    let serve = move || {
        let document = document.clone();
        async move {
            (
                [
                    (header::CONTENT_TYPE, "application/json"),
                    (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
                ],
                document,
            )
        }
    };
    let bare = "/.well-known/oauth-protected-resource";
    let mut routes = Router::new().route(bare, get(serve.clone()));
    if suffixed != bare && !suffixed.is_empty() {
        routes = routes.route(&suffixed, get(serve));
    }
    routes
}

/// 401: no token, or one that is not valid. With OAuth the challenge names
/// the metadata; the body says no more than the header.
pub(super) fn unauthorized(oauth: Option<&Verifier>, refusal: Refusal) -> Response {
    let had_token = refusal == Refusal::Invalid;
    let message = if had_token {
        "the bearer token is not valid"
    } else {
        "missing bearer token: send `Authorization: Bearer <token>`"
    };
    let challenge = oauth.map_or_else(
        || "Bearer realm=\"packhost\"".to_owned(),
        |oauth| oauth.unauthorized_challenge(had_token),
    );
    challenged(StatusCode::UNAUTHORIZED, message, &challenge)
}

/// 403 when `body` is a `tools/call` of a tool `identity` (granted
/// `granted`) may not call and a configured scope would allow.
pub(super) fn scope_check(
    oauth: &Verifier,
    executor: &Executor,
    identity: &Identity,
    granted: &[String],
    body: &[u8],
) -> Option<Response> {
    let tool = tool_called(body)?;
    if executor.may_call(identity, &tool) {
        return None;
    }
    let scope = oauth.scope_for(&tool)?;
    let message = format!("this call needs scope `{scope}`: ask the authorization server for it");
    let challenge = oauth.insufficient_scope_challenge(granted, scope);
    Some(challenged(StatusCode::FORBIDDEN, &message, &challenge))
}

/// The tool a JSON-RPC `tools/call` body names.
fn tool_called(body: &[u8]) -> Option<String> {
    let message: Value = serde_json::from_slice(body).ok()?;
    if message.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    Some(message.get("params")?.get("name")?.as_str()?.to_owned())
}

fn challenged(status: StatusCode, message: &str, challenge: &str) -> Response {
    let mut response = json_error(status, message);
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response.into_response()
}
