//! Offers listed per caller (`pack_api::protocol`'s per-caller names): one
//! handler answers every MCP method for prompts and resources, as a proxy
//! of other servers does, and a subscription reports what changed.

use std::{future::Future, sync::Arc};

use pack_api::protocol::{RESOURCE_UPDATED, SUBSCRIBED};
use serde_json::{Value, json};

use crate::{Context, PackDef, PackError, function::BoxFuture};

/// What [`PackDef::serve_offers`] keeps: state, MCP method, params and the
/// call's context in, MCP's result out.
pub(crate) type OffersHandler<S> = Arc<
    dyn Fn(Arc<S>, String, Value, Context) -> BoxFuture<Result<Value, PackError>> + Send + Sync,
>;

impl<S: Send + Sync + 'static> PackDef<S> {
    /// Serve prompts, resources and templates that differ by caller: `serve`
    /// gets the MCP method and its params, with the caller's [`Context`],
    /// and answers with MCP's result:
    /// - `prompts/list`, `resources/list`, `resources/templates/list`
    ///   (params `{}`): what this caller sees, prompts under their own names
    ///   (clients see them as `pack.name`);
    /// - `prompts/get`, `resources/read`, `completion/complete`: for names and
    ///   URIs the static offers ([`Self::prompt`], [`Self::resource`], ...)
    ///   do not serve; answer [`PackError::not_found`] for any this caller
    ///   may not see, exactly as for one that does not exist;
    /// - `resources/subscribe` (params `{"uri"}`): refuse an unknown URI at
    ///   once, call [`Context::subscribed`] once following it, then
    ///   [`Context::resource_updated`] at each change, and keep running: the
    ///   host drops the call when the caller unsubscribes;
    /// - `sign-in/returned` (params `{"query"}`, no caller): a user's browser
    ///   came back from signing in elsewhere for one of its calls
    ///   (`pack_api::protocol::SIGN_IN_RETURNED`); answer the page to show.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use pack_sdk::{Context, Empty, PackDef, PackError, Value, json};
    /// async fn serve(_: Arc<()>, method: String, params: Value, ctx: Context) -> Result<Value, PackError> {
    ///     let mine = format!("notes://{}", ctx.user());
    ///     match method.as_str() {
    ///         "resources/list" => Ok(json!({"resources": [{"uri": mine, "name": "my notes"}]})),
    ///         "resources/read" if params["uri"] == mine.as_str() => {
    ///             Ok(json!({"contents": [{"uri": mine, "text": "..."}]}))
    ///         }
    ///         "prompts/list" | "resources/templates/list" => Ok(json!({"prompts": [], "resourceTemplates": []})),
    ///         _ => Err(PackError::not_found(format!("no {method} for {params}"))),
    ///     }
    /// }
    ///
    /// PackDef::new("notes", "Each user's notes", |_: Empty, _| Ok(())).serve_offers(serve);
    /// ```
    pub fn serve_offers<F, Fut>(mut self, serve: F) -> Self
    where
        F: Fn(Arc<S>, String, Value, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, PackError>> + Send + 'static,
    {
        self.offers.per_caller = Some(Arc::new(move |state, method, params, ctx| {
            Box::pin(serve(state, method, params, ctx))
        }));
        self
    }
}

impl Context {
    /// In a `resources/subscribe` call: the resource is followed now (the
    /// client's subscribe succeeds).
    pub async fn subscribed(&self) -> Result<(), PackError> {
        self.call_tool(SUBSCRIBED, json!({})).await?;
        Ok(())
    }

    /// In a `resources/subscribe` call: the resource at `uri` (the one
    /// subscribed to) changed; its subscriber hears it.
    pub async fn resource_updated(&self, uri: &str) -> Result<(), PackError> {
        self.call_tool(RESOURCE_UPDATED, json!({ "uri": uri }))
            .await?;
        Ok(())
    }
}
