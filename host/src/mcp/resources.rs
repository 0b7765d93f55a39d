//! `resources/list`, `resources/templates/list`, `resources/read` and
//! `resources/subscribe`: the caller's kept results, and the resources and
//! templates of the packs it may call (read by the pack).

use pack_api::Owner;
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
    pub(super) fn resources_list(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> ListResourcesResult {
        let identity = self.identity_of(context);
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
        let packs = self.executor.pack_resources(&identity);
        let packs = packs.iter().filter_map(|spec| as_mcp(spec, &spec.uri));
        ListResourcesResult::with_all_items(kept.chain(packs).collect())
    }

    /// Kept results as one template (a handle, from the result that kept
    /// it or `resources/list`, names a whole result of the caller's own),
    /// then its packs' templates.
    pub(super) fn resource_templates_list(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> ListResourceTemplatesResult {
        let kept = ResourceTemplate::new(format!("{URI_PREFIX}{{handle}}"), "kept result")
            .with_description(
                "The whole result of one of your calls that was too large to send whole: the \
                 call's result links it (its handle also in `_meta`), until it expires",
            )
            .with_mime_type("text/plain");
        let templates = self.executor.pack_templates(&self.identity_of(context));
        let packs = templates
            .iter()
            .filter_map(|spec| as_mcp(spec, &spec.uri_template));
        ListResourceTemplatesResult::with_all_items(std::iter::once(kept).chain(packs).collect())
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

    /// Subscribe to a resource the caller may read. Packs cannot yet say
    /// that a resource changed, so no update is ever sent: what is served
    /// is accepted, and nothing is kept per session.
    pub(super) fn resource_subscribe(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let identity = self.identity_of(context);
        let owner = Owner::new(&identity.org, &identity.user);
        let kept = uri
            .strip_prefix(URI_PREFIX)
            .is_some_and(|handle| self.executor.results().get(&owner, handle).is_some());
        if kept || self.executor.serves_uri(&identity, uri) {
            Ok(())
        } else {
            Err(not_found(uri))
        }
    }
}

fn not_found(uri: &str) -> ErrorData {
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
