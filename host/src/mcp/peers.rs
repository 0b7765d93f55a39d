//! Instances that hand each other what they hold (`[http] instance` and
//! `peers`). A call held on a question stays where it stopped; a retry of
//! it that the load balancer sends to another instance is forwarded to the
//! holder, with the caller's own credentials, so what the call did before
//! its question is not done again (when the holder does not answer, the
//! call runs again where the retry landed, as without peers). A task runs
//! where it started; its `tasks/*` requests are forwarded there.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CreateTaskResult,
        InputRequiredResult,
    },
    service::RequestContext,
};
use serde::Serialize;
use serde_json::Value;

use crate::config::HttpConfig;

/// Marks a forwarded request: it is never forwarded again.
pub(crate) const FORWARDED: &str = "packhost-forwarded";

/// The headers a forwarded request keeps: who calls, and the wire.
const KEPT_HEADERS: [&str; 4] = [
    "authorization",
    "mcp-protocol-version",
    "mcp-name",
    "accept",
];

/// How long a forwarded retry may take: as long as a held call may wait
/// and then run.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(3600);

/// This instance and the others.
pub struct Peers {
    here: String,
    urls: BTreeMap<String, String>,
    http: reqwest::Client,
}

impl Peers {
    /// As `[http]` names them; `None` when it names no instance.
    pub fn of(http: &HttpConfig) -> Option<Arc<Self>> {
        let here = http.instance.clone()?;
        let client = crate::web::client()
            .timeout(FORWARD_TIMEOUT)
            .build()
            .expect("a plain HTTP client builds");
        Some(Arc::new(Self {
            here,
            urls: http.peers.clone(),
            http: client,
        }))
    }

    /// This instance's name.
    pub(super) fn here(&self) -> &str {
        &self.here
    }

    /// The answer of instance `at` to the `tools/call` with `params` that
    /// reached this one in `context`; `None` when `at` is this instance or
    /// none known, the request was forwarded already, or `at` does not
    /// answer (then the call is made here).
    pub(super) async fn call(
        &self,
        at: &str,
        context: &RequestContext<RoleServer>,
        params: &CallToolRequestParams,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        let answer = self.request(at, context, "tools/call", params).await?;
        Some(answer.and_then(|result| {
            response(result).map_err(|e| {
                let why = format!("instance `{at}` answered the retry with no call result: {e}");
                ErrorData::internal_error(why, None)
            })
        }))
    }

    /// The result of instance `at` for request `method` with `params` (and
    /// the `_meta` they came with), sent as the caller of `context` sent it
    /// here; `None` as for [`Self::call`].
    pub(super) async fn request<P: Serialize>(
        &self,
        at: &str,
        context: &RequestContext<RoleServer>,
        method: &str,
        params: &P,
    ) -> Option<Result<Value, ErrorData>> {
        let request = context.extensions.get::<http::request::Parts>()?;
        if at == self.here || request.headers.contains_key(FORWARDED) {
            return None;
        }
        let base = self.urls.get(at)?;
        let mut params = serde_json::to_value(params).ok()?;
        params["_meta"] = serde_json::to_value(&context.meta).ok()?;
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": method, "params": params,
        });
        let mut forwarded = self
            .http
            .post(format!("{}/mcp", base.trim_end_matches('/')))
            .header(FORWARDED, &self.here)
            .header("mcp-method", method)
            .json(&body);
        for name in KEPT_HEADERS {
            if let Some(value) = request.headers.get(name) {
                forwarded = forwarded.header(name, value.as_bytes());
            }
        }
        let answer = match forwarded.send().await {
            Ok(answer) => {
                tracing::info!(peer = at, method, "held there: forwarded");
                answer
            }
            Err(e) => {
                tracing::warn!(peer = at, method, error = %e, "its holder does not answer");
                return None;
            }
        };
        let reply: Value = match answer.json().await {
            Ok(reply) => reply,
            Err(e) => {
                let why = format!("instance `{at}` answered `{method}` with no JSON-RPC: {e}");
                return Some(Err(ErrorData::internal_error(why, None)));
            }
        };
        Some(match (reply.get("result"), reply.get("error")) {
            (Some(result), _) => Ok(result.clone()),
            (None, Some(error)) => Err(serde_json::from_value(error.clone()).unwrap_or_else(|e| {
                ErrorData::internal_error(format!("instance `{at}` failed `{method}`: {e}"), None)
            })),
            (None, None) => Err(ErrorData::internal_error(
                format!("instance `{at}` answered `{method}` with neither result nor error"),
                None,
            )),
        })
    }
}

/// A `tools/call` result as its `resultType` says it is.
fn response(result: Value) -> serde_json::Result<CallToolResponse> {
    Ok(match result["resultType"].as_str() {
        Some("input_required") => serde_json::from_value::<InputRequiredResult>(result)?.into(),
        Some("task") => serde_json::from_value::<CreateTaskResult>(result)?.into(),
        _ => serde_json::from_value::<CallToolResult>(result)?.into(),
    })
}
