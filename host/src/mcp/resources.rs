//! `resources/list`, `resources/templates/list` and `resources/read`: the
//! caller's kept results, and the resources and templates of the packs it
//! may call (read by the pack), those every caller sees and those a pack
//! lists for this caller.

use pack_api::{
    Owner,
    protocol::{RESOURCES_LIST, TEMPLATES_LIST},
};
use rmcp::{
    ErrorData, RoleServer,
    model::{
        ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
        ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
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
        let identity = &caller.identity;
        let owner = Owner::new(&identity.org, &identity.user);
        let kept = self
            .executor
            .results()
            .list(&owner)
            .into_iter()
            .map(|(handle, kept)| {
                Resource::new(format!("{URI_PREFIX}{handle}"), handle)
                    .with_description(format!("The whole result of `{}`", kept.tool))
                    .with_mime_type("text/plain")
                    .with_size(kept.text.chars().count() as u64)
            });
        let packs = self.executor.pack_resources(identity);
        let packs = packs.iter().filter_map(|spec| as_mcp(spec, &spec.uri));
        let listed = self
            .executor
            .caller_offers(RESOURCES_LIST, "resources", &caller);
        let listed = listed.await;
        let per_caller = listed
            .iter()
            .filter_map(|item| as_mcp(item, &item["uri"].to_string()));
        ListResourcesResult::with_all_items(kept.chain(packs).chain(per_caller).collect())
    }

    /// Kept results as one template (a handle, from the result that kept
    /// it or `resources/list`, names a whole result of the caller's own),
    /// then its packs' templates.
    pub(super) async fn resource_templates_list(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> ListResourceTemplatesResult {
        let kept = ResourceTemplate::new(format!("{URI_PREFIX}{{handle}}"), "kept result")
            .with_description(
                "The whole result of one of your calls that was too large to send whole: the \
                 call's result links it (its handle also in `_meta`), until it expires",
            )
            .with_mime_type("text/plain");
        let caller = self.caller_for(context);
        let templates = self.executor.pack_templates(&caller.identity);
        let packs = templates
            .iter()
            .filter_map(|spec| as_mcp(spec, &spec.uri_template));
        let listed = self
            .executor
            .caller_offers(TEMPLATES_LIST, "resourceTemplates", &caller);
        let listed = listed.await;
        let per_caller = listed
            .iter()
            .filter_map(|item| as_mcp(item, &item["uriTemplate"].to_string()));
        let templates = std::iter::once(kept).chain(packs).chain(per_caller);
        ListResourceTemplatesResult::with_all_items(templates.collect())
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
        let owner = Owner::new(&caller.identity.org, &caller.identity.user);
        let uri = request.uri;
        let kept = uri
            .strip_prefix(URI_PREFIX)
            .and_then(|handle| self.executor.results().get(&owner, handle));
        if let Some(kept) = kept {
            let contents = ResourceContents::text(kept.text.to_string(), uri);
            return Ok(ReadResourceResult::new(vec![contents]).into());
        }
        match self.executor.read_pack_resource(&uri, &caller).await {
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
