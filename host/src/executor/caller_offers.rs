//! Offers that packs list per caller (`offers_per_caller` in a manifest,
//! `pack_api::protocol`): listed by asking each such pack the caller may
//! call, with the caller's context, and served by asking those packs in
//! turn, a pack answering `NOT_FOUND` leaving it to the next.

use std::sync::Arc;

use futures_util::future::join_all;
use pack_api::{
    codes,
    protocol::{COMPLETE, PROMPTS_GET, RESOURCES_LIST, RESOURCES_READ, TEMPLATES_LIST},
};
use serde_json::{Value, json};

use super::{
    Caller, Executor,
    registry::{PackEntry, Visible},
};
use crate::failure::Failure;

/// The packs `visible` holds that list their offers per caller.
pub(super) fn per_caller<'v>(visible: &'v Visible<'_>) -> impl Iterator<Item = &'v PackEntry> {
    visible
        .packs()
        .filter(|pack| pack.loaded.manifest.offers_per_caller)
}

impl Executor {
    /// What the packs `caller` may call list for it under `method` (one of
    /// `protocol`'s lists): the items of their results' `key` (MCP's list
    /// result), prompts under the names clients give them. A pack that
    /// fails lists nothing, which the log says.
    pub async fn caller_offers(
        self: &Arc<Self>,
        method: &str,
        key: &str,
        caller: &Caller,
    ) -> Vec<Value> {
        let visible = self.visible(&caller.identity);
        let asked = per_caller(&visible).map(|pack| async move {
            let listed = self.call_reserved(pack, method, json!({}), caller).await;
            (pack, listed)
        });
        let mut items = Vec::new();
        for (pack, listed) in join_all(asked).await {
            let name = &pack.loaded.name;
            let listed = match listed {
                Ok(mut listed) => listed[key].take(),
                Err(failure) => {
                    tracing::warn!(pack = %name, method, error = %failure.text(), "lists nothing");
                    continue;
                }
            };
            let Value::Array(listed) = listed else {
                tracing::warn!(pack = %name, method, "lists nothing: its result has no `{key}` array");
                continue;
            };
            items.extend(listed.into_iter().map(|mut item| {
                if let Some(own) = item["name"].as_str().filter(|_| key == "prompts") {
                    item["name"] = visible.offered_name(pack, own).into();
                }
                item
            }));
        }
        items
    }

    /// The resources and templates `caller` may read, as code lists them:
    /// [`Self::resources`] and [`Self::resource_templates`], then those
    /// packs list for it.
    pub(super) async fn all_resources(
        self: &Arc<Self>,
        caller: &Caller,
    ) -> (Vec<Value>, Vec<Value>) {
        let identity = &caller.identity;
        let mut resources = as_json(self.resources(identity).await);
        resources.extend(
            self.caller_offers(RESOURCES_LIST, "resources", caller)
                .await,
        );
        let mut templates = as_json(self.resource_templates(identity));
        let listed = self.caller_offers(TEMPLATES_LIST, "resourceTemplates", caller);
        templates.extend(listed.await);
        (resources, templates)
    }

    /// Render prompt `name` (as listed) of a per-caller pack.
    pub(super) async fn render_caller_prompt(
        self: &Arc<Self>,
        visible: &Visible<'_>,
        name: &str,
        arguments: Value,
        caller: &Caller,
    ) -> Option<Result<Value, Failure>> {
        self.first_serving(visible, PROMPTS_GET, caller, |pack| {
            let own = visible.own_name(pack, name)?;
            Some(json!({"name": own, "arguments": arguments}))
        })
        .await
    }

    /// Read `uri` from a per-caller pack.
    pub(super) async fn read_caller_resource(
        self: &Arc<Self>,
        visible: &Visible<'_>,
        uri: &str,
        caller: &Caller,
    ) -> Option<Result<Value, Failure>> {
        self.first_serving(visible, RESOURCES_READ, caller, |_| {
            Some(json!({ "uri": uri }))
        })
        .await
    }

    /// Complete an argument of a per-caller pack's prompt (named as
    /// listed) or template: `request` is MCP's `CompleteRequest` params.
    pub(super) async fn complete_caller(
        self: &Arc<Self>,
        visible: &Visible<'_>,
        request: &Value,
        caller: &Caller,
    ) -> Option<Result<Value, Failure>> {
        let prompt = request["ref"]["name"].as_str().unwrap_or_default();
        let is_prompt = request["ref"]["type"] == "ref/prompt";
        self.first_serving(visible, COMPLETE, caller, |pack| {
            let mut request = request.clone();
            if is_prompt {
                request["ref"]["name"] = visible.own_name(pack, prompt)?.into();
            }
            Some(request)
        })
        .await
    }

    /// The first answer to `method` of the per-caller packs `visible`
    /// holds, in name order, that is not `NOT_FOUND`; each asked with the
    /// arguments `args_for` gives it (`None`: not this pack's). `None` when
    /// no pack serves it.
    async fn first_serving(
        self: &Arc<Self>,
        visible: &Visible<'_>,
        method: &str,
        caller: &Caller,
        args_for: impl Fn(&PackEntry) -> Option<Value>,
    ) -> Option<Result<Value, Failure>> {
        for pack in per_caller(visible) {
            let Some(args) = args_for(pack) else {
                continue;
            };
            match self.call_reserved(pack, method, args, caller).await {
                Err(failure) if failure.code() == codes::NOT_FOUND => {}
                answered => return Some(answered),
            }
        }
        None
    }
}

/// Specs (MCP's keys already) as JSON.
fn as_json<T: serde::Serialize>(specs: Vec<T>) -> Vec<Value> {
    let json = specs.iter().map(serde_json::to_value);
    json.filter_map(Result::ok).collect()
}
