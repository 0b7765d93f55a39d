//! packhost as the client of a downstream server: what it declares, and
//! where the server's questions and notices go (see [`crate::relay`]).

// Sampling, roots and logging are deprecated by 2026-07-28, and the
// servers behind packhost speak 2025-11-25, which has them.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientInfo, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
        ElicitResult, ListRootsResult, LoggingMessageNotificationParam,
        ResourceUpdatedNotificationParam,
    },
    service::{NotificationContext, RequestContext},
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::json;

use crate::relay::{Event, Events, Running};

/// packhost as a downstream server's client: it declares what its own
/// clients may answer, and hands on what the server sends.
pub(crate) struct Client {
    pub(crate) key: String,
    pub(crate) running: Arc<Running>,
    pub(crate) events: Events,
}

impl Client {
    async fn relay<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: P,
    ) -> Result<R, ErrorData> {
        let Some((relay, _asking)) = self.running.asker() else {
            return Err(ErrorData::invalid_request(
                format!(
                    "packhost hands a server's `{method}` to the client whose request is running \
                     on this connection, and none is"
                ),
                None,
            ));
        };
        let question = json!({"method": method, "params": params});
        let answer = relay.ask(question).await.map_err(|refusal| {
            ErrorData::new(
                rmcp::model::ErrorCode(refusal.code),
                refusal.message,
                refusal.data,
            )
        })?;
        serde_json::from_value(answer).map_err(|e| {
            ErrorData::internal_error(format!("the client's answer to `{method}`: {e}"), None)
        })
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientInfo {
        let mut info = ClientInfo::default();
        // Everything packhost's clients may answer; a caller that cannot
        // gets the server's question refused.
        info.capabilities = serde_json::from_value(json!({
            "sampling": {},
            "elicitation": {"form": {}, "url": {}},
            "roots": {"listChanged": true},
        }))
        .expect("MCP client capabilities");
        info.client_info.name = "packhost".to_owned();
        info
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.relay("sampling/createMessage", params).await
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.relay("roots/list", json!({})).await
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.relay("elicitation/create", params).await
    }

    /// A log message no running request took (see [`Running::took`]).
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let params = serde_json::to_value(params).unwrap_or_default();
        (self.events)(&self.key, Event::Log(params));
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        (self.events)(&self.key, Event::ResourceUpdated(params.uri));
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        (self.events)(&self.key, Event::ToolsChanged);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        (self.events)(&self.key, Event::PromptsChanged);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        (self.events)(&self.key, Event::ResourcesChanged);
    }
}
