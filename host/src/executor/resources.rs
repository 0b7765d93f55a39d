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
    pub fn resources(&self, identity: &Identity) -> Vec<ResourceSpec> {
        let owner = Owner::new(&identity.org, &identity.user);
        let kept = self
            .results
            .list(&owner)
            .into_iter()
            .map(|(handle, kept)| ResourceSpec {
                uri: format!("{URI_PREFIX}{handle}"),
                description: Some(format!("The whole result of `{}`", kept.tool)),
                mime_type: Some("text/plain".to_owned()),
                size: Some(kept.text.chars().count() as u64),
                name: handle,
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
        let owner = Owner::new(&caller.identity.org, &caller.identity.user);
        let kept = uri
            .strip_prefix(URI_PREFIX)
            .and_then(|handle| self.results.get(&owner, handle));
        if let Some(kept) = kept {
            let contents = json!({"uri": uri, "mimeType": "text/plain", "text": &*kept.text});
            return Some(Ok(json!({ "contents": [contents] })));
        }
        self.read_pack_resource(uri, caller).await
    }

    /// Whether `identity` may read `uri` (a kept result of its own, or what
    /// a pack it may call serves).
    pub fn may_read(&self, identity: &Identity, uri: &str) -> bool {
        let owner = Owner::new(&identity.org, &identity.user);
        let kept = uri
            .strip_prefix(URI_PREFIX)
            .is_some_and(|handle| self.results.get(&owner, handle).is_some());
        kept || self.serves_uri(identity, uri)
    }
}
