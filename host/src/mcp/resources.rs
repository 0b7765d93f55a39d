//! `resources/list`, `resources/templates/list` and `resources/read`: the
//! caller's kept results, and the resources and templates of the packs it
//! may call (read by the pack), those every caller sees and those a pack
//! lists for this caller.

use pack_api::protocol::{RESOURCES_LIST, TEMPLATES_LIST};
use rmcp::{
    ErrorData, RoleServer,
    model::{
        ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
        ReadResourceResponse, ReadResourceResult,
    },
    service::RequestContext,
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::json;

use super::{
    PackhostServer,
    request::{not_mcp, protocol_error},
};
use crate::results::URI_PREFIX;

impl PackhostServer {
    /// The caller's own kept results, then its packs' resources.
    pub(super) async fn resources_list(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> ListResourcesResult {
        let caller = self.caller_for(context);
        let resources = self.executor.resources(&caller.identity).await;
        let resources = resources.iter().filter_map(|spec| as_mcp(spec, &spec.uri));
        let listed = self
            .executor
            .caller_offers(RESOURCES_LIST, "resources", &caller);
        let listed = listed.await;
        let per_caller = listed
            .iter()
            .filter_map(|item| as_mcp(item, &item["uri"].to_string()));
        ListResourcesResult::with_all_items(resources.chain(per_caller).collect())
    }

    /// Kept results as one template, then its packs' templates.
    pub(super) async fn resource_templates_list(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> ListResourceTemplatesResult {
        let caller = self.caller_for(context);
        let templates = self.executor.resource_templates(&caller.identity);
        let templates = templates
            .iter()
            .filter_map(|spec| as_mcp(spec, &spec.uri_template));
        let listed = self
            .executor
            .caller_offers(TEMPLATES_LIST, "resourceTemplates", &caller);
        let listed = listed.await;
        let per_caller = listed
            .iter()
            .filter_map(|item| as_mcp(item, &item["uriTemplate"].to_string()));
        ListResourceTemplatesResult::with_all_items(templates.chain(per_caller).collect())
    }

    /// A kept result of the caller's own, or a resource of a pack it may
    /// call; any other URI is not found alike (SEP-2164: invalid params,
    /// the URI in `data`).
    pub(super) async fn resource_read(
        &self,
        request: ReadResourceRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = self.caller_for(context);
        let uri = request.uri;
        match self.executor.read_resource(&uri, &caller).await {
            Some(read) => {
                let read = read.map_err(|failure| protocol_error(&failure))?;
                // Built anew, so that the wire's own fields (`resultType`) are set.
                let result: ReadResourceResult =
                    serde_json::from_value(read).map_err(|e| not_mcp("resource", &e))?;
                Ok(ReadResourceResult::new(result.contents).into())
            }
            None => Err(not_found(&uri)),
        }
    }
}

pub(super) fn not_found(uri: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "no resource {uri}: packhost serves kept results (`{URI_PREFIX}<handle>`) to the \
             caller that made them, until they expire, and the resources of the packs the \
             caller may call (`resources/list`, `resources/templates/list`)"
        ),
        Some(json!({ "uri": uri })),
    )
}

/// A pack's spec (MCP's keys already) as rmcp's type; one that does not fit
/// is left out and said in the log.
fn as_mcp<T: DeserializeOwned>(spec: &impl Serialize, name: &str) -> Option<T> {
    serde_json::to_value(spec)
        .and_then(serde_json::from_value)
        .inspect_err(|e| tracing::warn!(resource = name, error = %e, "resource not listed"))
        .ok()
}
