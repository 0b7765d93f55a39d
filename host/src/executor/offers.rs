//! What packs offer besides functions (MCP prompts, resources, templates
//! and completions), as one caller sees them: listed only to callers that
//! may call the pack, and rendered, read or completed by a call into the
//! pack under the reserved names of `pack_api::protocol`, through
//! [`Executor::dispatch`] (the caller's identity, the pack's time limit,
//! the client's cancellation), exactly as a function call. What packs list
//! per caller comes after the static offers (`caller_offers`).

use std::sync::Arc;

use pack_api::{
    PromptSpec, ResourceSpec, TemplateSpec,
    protocol::{COMPLETE, PROMPTS_GET, RESOURCES_READ, SIGN_IN_RETURNED},
    uri_template,
};
use serde_json::{Value, json};

use super::{
    Caller, Executor,
    registry::{PackEntry, Visible},
};
use crate::{backend::Backend, failure::Failure, identity::Identity};

impl Executor {
    /// The prompts of the packs `identity` sees, each under the name
    /// clients give it.
    pub fn pack_prompts(&self, identity: &Identity) -> Vec<(String, PromptSpec)> {
        let visible = self.visible(identity);
        visible
            .packs()
            .flat_map(|pack| {
                let prompts = pack.prompts().iter();
                prompts.map(|spec| (visible.offered_name(pack, &spec.name), spec.clone()))
            })
            .collect()
    }

    /// The resources at fixed URIs of the packs `identity` sees.
    pub fn pack_resources(&self, identity: &Identity) -> Vec<ResourceSpec> {
        let visible = self.visible(identity);
        let packs = visible.packs();
        packs
            .flat_map(|pack| pack.offers.resources.clone())
            .collect()
    }

    /// The resource templates of the packs `identity` sees.
    pub fn pack_templates(&self, identity: &Identity) -> Vec<TemplateSpec> {
        let visible = self.visible(identity);
        let packs = visible.packs();
        packs
            .flat_map(|pack| pack.offers.templates.clone())
            .collect()
    }

    /// Whether a pack `identity` sees serves `uri` (a resource's, or one
    /// that fits a template's).
    pub fn serves_uri(&self, identity: &Identity, uri: &str) -> bool {
        owner_of_uri(&self.visible(identity), uri).is_some()
    }

    /// Render pack prompt `name` (as listed) with `arguments`: MCP's
    /// `GetPromptResult`, or `None` when no pack prompt the caller sees has
    /// that name.
    pub async fn render_prompt(
        self: &Arc<Self>,
        name: &str,
        arguments: Value,
        caller: &Caller,
    ) -> Option<Result<Value, Failure>> {
        let visible = self.visible(&caller.identity);
        let Some((pack, own)) = prompt_named(&visible, name) else {
            let per_caller = self.render_caller_prompt(&visible, name, arguments, caller);
            return per_caller.await;
        };
        let args = json!({"name": own, "arguments": arguments});
        Some(self.call_reserved(pack, PROMPTS_GET, args, caller).await)
    }

    /// Read `uri` from the pack that serves it: MCP's `ReadResourceResult`,
    /// or `None` when no pack the caller sees serves it.
    pub async fn read_pack_resource(
        self: &Arc<Self>,
        uri: &str,
        caller: &Caller,
    ) -> Option<Result<Value, Failure>> {
        let visible = self.visible(&caller.identity);
        let Some(pack) = owner_of_uri(&visible, uri) else {
            return self.read_caller_resource(&visible, uri, caller).await;
        };
        let args = json!({ "uri": uri });
        Some(self.call_reserved(pack, RESOURCES_READ, args, caller).await)
    }

    /// Complete an argument of a pack prompt or template: `request` is
    /// MCP's `CompleteRequest` params; the pack gets them with the prompt's
    /// own name. `None` when no pack prompt or template the caller sees is
    /// the one referred to.
    pub async fn complete_pack(
        self: &Arc<Self>,
        mut request: Value,
        caller: &Caller,
    ) -> Option<Result<Value, Failure>> {
        let visible = self.visible(&caller.identity);
        let reference = &request["ref"];
        let pack = match reference["type"].as_str() {
            Some("ref/prompt") => {
                let named = prompt_named(&visible, reference["name"].as_str()?);
                named.map(|(pack, own)| {
                    request["ref"]["name"] = own.into();
                    pack
                })
            }
            _ => {
                let uri = reference["uri"].as_str()?;
                visible.packs().find(|pack| {
                    let templates = &pack.offers.templates;
                    templates.iter().any(|t| t.uri_template == uri)
                })
            }
        };
        match pack {
            Some(pack) => Some(self.call_reserved(pack, COMPLETE, request, caller).await),
            None => self.complete_caller(&visible, &request, caller).await,
        }
    }

    /// Hand pack `pack` the query a user's browser came back with from
    /// signing in elsewhere (`SIGN_IN_RETURNED`): the page to show, or
    /// `None` when no such pack takes sign-ins. The browser carries no
    /// token: the pack is called by nobody, and the query alone must say
    /// whose sign-in it finishes.
    pub async fn sign_in_returned(
        self: &Arc<Self>,
        pack: &str,
        query: &str,
    ) -> Option<Result<Value, Failure>> {
        let registry = self.registry();
        let pack = registry.packs.get(pack)?;
        let takes = pack
            .reserved
            .iter()
            .any(|f| f.spec.name == SIGN_IN_RETURNED);
        if !takes {
            return None;
        }
        let caller = Caller::new(Identity::nobody(), "sign-in");
        let query = json!({ "query": query });
        Some(
            self.call_reserved(pack, SIGN_IN_RETURNED, query, &caller)
                .await,
        )
    }

    /// Call reserved name `name` of `pack` as a call of one of its functions.
    pub(super) async fn call_reserved(
        self: &Arc<Self>,
        pack: &PackEntry,
        name: &str,
        args: Value,
        caller: &Caller,
    ) -> Result<Value, Failure> {
        let Some(function) = pack.reserved.iter().find(|f| f.spec.name == name) else {
            return Err(Failure::internal(format!(
                "pack `{}` offers no prompts or resources",
                pack.loaded.name
            )));
        };
        let output = self.dispatch(pack, function, args, caller).await?;
        Ok(output.value)
    }
}

/// The pack whose prompt clients call `name`, and the prompt's own name.
fn prompt_named<'v>(visible: &'v Visible<'_>, name: &str) -> Option<(&'v PackEntry, String)> {
    visible.packs().find_map(|pack| {
        let spec = pack
            .prompts()
            .iter()
            .find(|spec| visible.offered_name(pack, &spec.name) == name)?;
        Some((pack, spec.name.clone()))
    })
}

/// The pack that serves `uri`: a resource's URI first, then a template's,
/// then a server pack whose result linked it for this caller.
fn owner_of_uri<'v>(visible: &'v Visible<'_>, uri: &str) -> Option<&'v PackEntry> {
    visible
        .packs()
        .find(|pack| pack.offers.resources.iter().any(|r| r.uri == uri))
        .or_else(|| {
            visible.packs().find(|pack| {
                let templates = &pack.offers.templates;
                templates
                    .iter()
                    .any(|t| uri_template::matches(&t.uri_template, uri).is_some())
            })
        })
        .or_else(|| {
            visible.packs().find(|pack| match &pack.loaded.backend {
                Backend::Server(server) => server.linked(visible.identity(), uri),
                _ => false,
            })
        })
}

/// The server pack that serves `uri` to this caller, if a server pack does:
/// it follows the resource for subscribers on its server.
pub(super) fn server_pack_of<'v>(visible: &'v Visible<'_>, uri: &str) -> Option<&'v PackEntry> {
    owner_of_uri(visible, uri).filter(|pack| matches!(pack.loaded.backend, Backend::Server(_)))
}

impl Executor {
    /// Whether some pack is another MCP server, whose prompts and resources
    /// may change while served.
    pub fn serves_servers(&self) -> bool {
        let registry = self.registry();
        let mut packs = registry.packs.values();
        packs.any(|pack| matches!(pack.loaded.backend, Backend::Server(_)))
    }

    /// Whether a server pack serves `uri` to `identity`: a subscription to
    /// it is followed on the server.
    pub fn server_serves(&self, identity: &Identity, uri: &str) -> bool {
        server_pack_of(&self.visible(identity), uri).is_some()
    }
}
