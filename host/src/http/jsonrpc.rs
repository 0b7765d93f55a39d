//! A POSTed body checked before rmcp reads it, so bad input gets the
//! JSON-RPC error the spec names instead of rmcp's answers: text with HTTP
//! 415 for a body it cannot read (JSON nested past serde's depth limit
//! among them), and "method not found" for a known method whose params do
//! not fit (rmcp then reads it as a custom request).

// Logging and resource subscriptions are deprecated by 2026-07-28, and
// 2025-11-25 clients still send them.
#![allow(deprecated)]

use axum::{
    body::Body,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use rmcp::model::{
    self as m, CallToolRequest, CallToolRequestParams, CancelTaskParams, CancelTaskRequest,
    ClientJsonRpcMessage, ClientRequest, CompleteRequest, CompleteRequestParams, ConstString as _,
    DiscoverRequest, DiscoverRequestParams, GetPromptRequest, GetPromptRequestParams,
    GetSkillRequest, GetSkillRequestParams, GetTaskParams, GetTaskRequest, InitializeRequest,
    InitializeRequestParams, ListPromptsRequest, ListResourceTemplatesRequest,
    ListResourcesRequest, ListSkillsRequest, ListToolsRequest, PaginatedRequestParams, PingRequest,
    ProtocolVersion, ReadResourceDirectoryRequest, ReadResourceDirectoryRequestParams,
    ReadResourceRequest, ReadResourceRequestParams, SetLevelRequest, SetLevelRequestParams,
    SubscribeRequest, SubscribeRequestParams, SubscriptionsListenRequest,
    SubscriptionsListenRequestParams, UnsubscribeRequest, UnsubscribeRequestParams,
    UpdateTaskParams, UpdateTaskRequest,
};
use serde::{Deserialize as _, de::DeserializeOwned};
use serde_json::{Value, json};

const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;
const INVALID_PARAMS: i32 = -32602;

/// Methods 2026-07-28 removed: a request of that revision naming one is
/// answered "method not found" (by rmcp), whatever its params.
const REMOVED: [&str; 5] = [
    m::InitializeResultMethod::VALUE,
    m::PingRequestMethod::VALUE,
    m::SetLevelRequestMethod::VALUE,
    m::SubscribeRequestMethod::VALUE,
    m::UnsubscribeRequestMethod::VALUE,
];

/// The JSON-RPC error `body` earns, or `None` when rmcp may read it;
/// `revision`: the request's `MCP-Protocol-Version` header.
pub(super) fn check(body: &[u8], revision: Option<&str>) -> Option<Response> {
    let message: Value = match serde_json::from_slice(body) {
        Ok(message) => message,
        Err(e) => {
            return Some(error(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                PARSE_ERROR,
                &unreadable(&e),
            ));
        }
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let request = match ClientJsonRpcMessage::deserialize(&message) {
        Ok(ClientJsonRpcMessage::Request(request)) => request.request,
        Ok(_) => return None,
        Err(e) => {
            let text = format!(
                "not a JSON-RPC 2.0 request, notification or response ({e}): send \
                 {{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"…\", \"params\": {{…}}}}"
            );
            return Some(error(StatusCode::BAD_REQUEST, &id, INVALID_REQUEST, &text));
        }
    };
    // A known method read as a custom request: its params did not fit.
    let ClientRequest::CustomRequest(custom) = request else {
        return None;
    };
    let method = custom.method.as_str();
    if !(REMOVED.contains(&method) && stateless(&message, revision))
        && let Some((_, typed)) = KNOWN.iter().find(|(known, _)| *known == method)
        && let Err(why) = typed(&message)
    {
        let text = format!("invalid params of `{method}`: {why}");
        return Some(error(StatusCode::OK, &id, INVALID_PARAMS, &text));
    }
    None
}

/// Whether `message` is of a revision without `initialize` (2026-07-28
/// and later), by its header, else its `_meta`.
fn stateless(message: &Value, revision: Option<&str>) -> bool {
    let meta = || message.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion");
    let version = revision.map(Value::from).or_else(|| meta().cloned());
    version
        .and_then(|version| ProtocolVersion::deserialize(version).ok())
        .is_some_and(|version| !version.has_initialize())
}

/// Why a body is not JSON, in words.
fn unreadable(e: &serde_json::Error) -> String {
    if e.to_string().starts_with("recursion limit exceeded") {
        "the body nests arrays and objects more than 128 levels deep; send it flatter".to_owned()
    } else {
        format!("the body is not JSON: {e}")
    }
}

/// A request method rmcp knows, and the check of a message against its
/// typed request.
type Typed = (&'static str, fn(&Value) -> Result<(), String>);

/// Every method of `ClientRequest` but custom ones, read as rmcp reads it
/// and by its params alone (which name the field that does not fit: a
/// whole request reads its params flattened, which loses the field).
const KNOWN: [Typed; 21] = [
    (m::PingRequestMethod::VALUE, fits::<PingRequest, Value>),
    (
        m::InitializeResultMethod::VALUE,
        fits::<InitializeRequest, InitializeRequestParams>,
    ),
    (
        m::DiscoverRequestMethod::VALUE,
        fits::<DiscoverRequest, DiscoverRequestParams>,
    ),
    (
        m::CompleteRequestMethod::VALUE,
        fits::<CompleteRequest, CompleteRequestParams>,
    ),
    (
        m::SetLevelRequestMethod::VALUE,
        fits::<SetLevelRequest, SetLevelRequestParams>,
    ),
    (
        m::GetPromptRequestMethod::VALUE,
        fits::<GetPromptRequest, GetPromptRequestParams>,
    ),
    (
        m::ListPromptsRequestMethod::VALUE,
        fits::<ListPromptsRequest, Paginated>,
    ),
    (
        m::ListResourcesRequestMethod::VALUE,
        fits::<ListResourcesRequest, Paginated>,
    ),
    (
        m::ListResourceTemplatesRequestMethod::VALUE,
        fits::<ListResourceTemplatesRequest, Paginated>,
    ),
    (
        m::ReadResourceRequestMethod::VALUE,
        fits::<ReadResourceRequest, ReadResourceRequestParams>,
    ),
    (
        m::SubscriptionsListenRequestMethod::VALUE,
        fits::<SubscriptionsListenRequest, SubscriptionsListenRequestParams>,
    ),
    (
        m::SubscribeRequestMethod::VALUE,
        fits::<SubscribeRequest, SubscribeRequestParams>,
    ),
    (
        m::UnsubscribeRequestMethod::VALUE,
        fits::<UnsubscribeRequest, UnsubscribeRequestParams>,
    ),
    (
        m::CallToolRequestMethod::VALUE,
        fits::<CallToolRequest, CallToolRequestParams>,
    ),
    (
        m::ListToolsRequestMethod::VALUE,
        fits::<ListToolsRequest, Paginated>,
    ),
    (
        m::GetTaskMethod::VALUE,
        fits::<GetTaskRequest, GetTaskParams>,
    ),
    (
        m::UpdateTaskMethod::VALUE,
        fits::<UpdateTaskRequest, UpdateTaskParams>,
    ),
    (
        m::CancelTaskMethod::VALUE,
        fits::<CancelTaskRequest, CancelTaskParams>,
    ),
    (
        m::ListSkillsRequestMethod::VALUE,
        fits::<ListSkillsRequest, Paginated>,
    ),
    (
        m::GetSkillRequestMethod::VALUE,
        fits::<GetSkillRequest, GetSkillRequestParams>,
    ),
    (
        m::ReadResourceDirectoryRequestMethod::VALUE,
        fits::<ReadResourceDirectoryRequest, ReadResourceDirectoryRequestParams>,
    ),
];

/// The params of the listings, which may be left out.
type Paginated = Option<PaginatedRequestParams>;

/// Whether `message` reads as request type `R`; else which field of its
/// params (read as `P`) does not, and why (`` `uri`: invalid type: integer
/// `42`, expected a string ``).
fn fits<R: DeserializeOwned, P: DeserializeOwned>(message: &Value) -> Result<(), String> {
    let Err(whole) = R::deserialize(message) else {
        return Ok(());
    };
    let params = message.get("params").unwrap_or(&Value::Null);
    match serde_path_to_error::deserialize::<_, P>(params) {
        Err(e) if e.path().to_string() != "." => Err(format!("`{}`: {}", e.path(), e.inner())),
        Err(e) => Err(e.inner().to_string()),
        Ok(_) => Err(whole.to_string()),
    }
}

fn error(status: StatusCode, id: &Value, code: i32, message: &str) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    });
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from(body.to_string()),
    )
        .into_response()
}
