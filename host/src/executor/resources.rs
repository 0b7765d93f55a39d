//! The resources one caller may read, as its MCP client and its code alike
//! see them: its own kept results (`packhost://results/<handle>`, until
//! they expire), then the resources of the packs it may call.

use std::sync::Arc;

use pack_api::{Owner, ResourceSpec, TemplateSpec};
use serde_json::{Value, json};

use super::{Caller, Executor};
use crate::{failure::Failure, identity::Identity, results::URI_PREFIX};

impl Executor {
    /// `identity`'s kept results, oldest first, then its packs' resources.
    /// A store that does not answer lists no kept results (and says so in
    /// the log); reading one then says why.
    pub async fn resources(&self, identity: &Identity) -> Vec<ResourceSpec> {
        let owner = Owner::new(&identity.org, &identity.user);
        let listed = self.results.list(&owner).await;
        let listed = listed.unwrap_or_else(|failure| {
            tracing::warn!(error = %failure, "kept results not listed");
            Vec::new()
        });
        let kept = listed.into_iter().map(|kept| ResourceSpec {
            uri: format!("{URI_PREFIX}{}", kept.handle),
            description: Some(format!("The whole result of `{}`", kept.tool)),
            mime_type: Some("text/plain".to_owned()),
            size: Some(kept.chars),
            name: kept.handle,
            ..ResourceSpec::default()
        });
        kept.chain(self.pack_resources(identity)).collect()
    }

    /// Kept results as one template (a handle names a whole result of the
    /// caller's own), then `identity`'s packs' templates.
    pub fn resource_templates(&self, identity: &Identity) -> Vec<TemplateSpec> {
        let kept = TemplateSpec {
            uri_template: format!("{URI_PREFIX}{{handle}}"),
            name: "kept result".to_owned(),
            description: Some(
                "The whole result of one of your calls that was too large to send whole: the \
                 call's result links it (its handle also in `_meta`), until it expires"
                    .to_owned(),
            ),
            mime_type: Some("text/plain".to_owned()),
            ..TemplateSpec::default()
        };
        std::iter::once(kept)
            .chain(self.pack_templates(identity))
            .collect()
    }

    /// Read `uri` as `caller`: a kept result of its own, or a resource of a
    /// pack it may call, as MCP's `ReadResourceResult`; `None` for any
    /// other URI (another caller's kept result included).
    pub async fn read_resource(
        self: &Arc<Self>,
        uri: &str,
        caller: &Caller,
    ) -> Option<Result<Value, Failure>> {
        if let Some(handle) = uri.strip_prefix(URI_PREFIX) {
            let owner = Owner::new(&caller.identity.org, &caller.identity.user);
            match self.results.get(&owner, handle).await {
                Ok(Some(kept)) => {
                    let contents =
                        json!({"uri": uri, "mimeType": "text/plain", "text": &*kept.text});
                    return Some(Ok(json!({ "contents": [contents] })));
                }
                Ok(None) => {}
                Err(failure) => return Some(Err(failure)),
            }
        }
        self.read_pack_resource(uri, caller).await
    }

    /// Whether `identity` may read `uri` (a kept result of its own, or what
    /// a pack it may call serves).
    pub async fn may_read(&self, identity: &Identity, uri: &str) -> bool {
        if let Some(handle) = uri.strip_prefix(URI_PREFIX) {
            let owner = Owner::new(&identity.org, &identity.user);
            let kept = self.results.get(&owner, handle).await;
            if kept.is_ok_and(|kept| kept.is_some()) {
                return true;
            }
        }
        self.serves_uri(identity, uri)
    }
}
