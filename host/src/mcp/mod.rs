//! The MCP face of the executor (rmcp): `tools/list`, `tools/call`,
//! `resources/list` and `resources/read` of the caller's kept results,
//! `prompts/list` and `prompts/get` of its `[snippets]`, and
//! `logging/setLevel` (or a request's own `logLevel`), after which a call's
//! pack log lines go to the client that made it.
//! A tool failure is always a result with `isError: true`, never a protocol
//! error.
//!
//! MCP clients check `structuredContent` against the tool's `outputSchema`
//! (the TypeScript SDK's even on error results), so a failed call of a tool
//! with an output schema carries structured content only when it is the
//! function's own result shape and fits the schema; the error itself is in
//! `_meta["packhost/error"]`. A tool without an output schema (`run`) has
//! `{"error": …}` (or the result shape) as structured content, and the same
//! `_meta`.

use std::sync::{Arc, Mutex};

use pack_api::Owner;
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
        GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, JsonObject,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
        MetaObject, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage,
        ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
        ResourceContents, ResourceTemplate, Role, ServerCapabilities, ServerConfig,
        SubscriptionFilter, Tool, ToolAnnotations,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};
use serde_json::Value;

use self::{logging::SessionLog, notices::Notices};

mod logging;
mod notices;
use tokio_util::sync::CancellationToken;

use crate::{
    executor::{Caller, Executor, Output, RUN_TOOL},
    failure::{ERROR_META_KEY, Failure},
    identity::Identity,
    render::value_text,
    results::URI_PREFIX,
};

/// One MCP server over the shared executor.
#[derive(Clone)]
pub struct PackhostServer {
    executor: Arc<Executor>,
    identity: Identity,
    /// The tools as of an executor generation (a server pack's tools can
    /// appear later).
    tools: Arc<Mutex<Listing>>,
    /// Cancelled when the last copy of this session's server is dropped,
    /// which ends its `tools/list_changed` watcher.
    session: Arc<SessionEnd>,
    /// The log lines this session's client asked for.
    log: SessionLog,
}

struct Listing {
    generation: u64,
    tools: Arc<Vec<Tool>>,
}

impl Listing {
    fn of(executor: &Executor) -> Self {
        Self {
            generation: executor.generation(),
            tools: Arc::new(tools_of(executor)),
        }
    }
}

struct SessionEnd(CancellationToken);

impl Drop for SessionEnd {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl PackhostServer {
    /// Serve `executor`'s tools; calls run as `identity`.
    pub fn new(executor: Arc<Executor>, identity: Identity) -> Self {
        let tools = Listing::of(&executor);
        Self {
            executor,
            identity,
            tools: Arc::new(Mutex::new(tools)),
            session: Arc::new(SessionEnd(CancellationToken::new())),
            log: SessionLog::default(),
        }
    }

    /// A copy for one more client session (over HTTP), with its own end.
    pub fn for_session(&self) -> Self {
        Self {
            session: Arc::new(SessionEnd(CancellationToken::new())),
            log: SessionLog::default(),
            ..self.clone()
        }
    }

    fn listing(&self) -> std::sync::MutexGuard<'_, Listing> {
        let mut cached = self.tools.lock().unwrap_or_else(|e| e.into_inner());
        if cached.generation != self.executor.generation() {
            *cached = Listing::of(&self.executor);
        }
        cached
    }

    fn tools(&self) -> Arc<Vec<Tool>> {
        Arc::clone(&self.listing().tools)
    }

    /// Failure: `isError`, a readable text, the error in `_meta`, and
    /// structured content only where the tool's clients accept it (see the
    /// module doc), as `identity` sees the tool.
    fn failure(&self, tool: &str, failure: &Failure, identity: &Identity) -> CallToolResult {
        let mut result = CallToolResult::error(vec![ContentBlock::text(failure.text())]);
        let mut meta = MetaObject::new();
        meta.insert(ERROR_META_KEY.to_owned(), failure.error_object());
        result.meta = Some(meta);
        result.structured_content =
            match self.executor.fits_output(tool, failure.result(), identity) {
                None => Some(failure.structured()),
                Some(true) => failure.result().cloned(),
                Some(false) => None,
            };
        result
    }
}

fn tools_of(executor: &Executor) -> Vec<Tool> {
    executor
        .tools()
        .into_iter()
        .map(|info| {
            let mut tool = Tool::new(info.name, info.description, object(info.input_schema));
            tool.output_schema = info.output_schema.map(|schema| Arc::new(object(schema)));
            tool.title = info.title;
            let hints = info.annotations;
            tool.annotations = (!hints.is_empty()).then(|| {
                ToolAnnotations::from_raw(
                    None,
                    hints.read_only,
                    hints.destructive,
                    hints.idempotent,
                    hints.open_world,
                )
            });
            tool
        })
        .collect()
}

impl PackhostServer {
    /// Who sent the request: the bearer token's identity over HTTP, else
    /// `[identity]`.
    fn identity_of(&self, context: &RequestContext<RoleServer>) -> Identity {
        context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Identity>())
            .cloned()
            .unwrap_or_else(|| self.identity.clone())
    }
}

fn object(schema: Value) -> JsonObject {
    match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// Success: the value as structured content; as content, a text block (the
/// value as text, or the text the function gave) then the blocks the
/// function gave (images, resource links: see `pack_api::ContentResult`).
fn success(output: Output) -> CallToolResult {
    let mut content = Vec::new();
    let blocks = match output.content {
        None => {
            content.push(ContentBlock::text(value_text(&output.value)));
            Vec::new()
        }
        Some(given) => {
            match given.text {
                None => content.push(ContentBlock::text(value_text(&output.value))),
                Some(text) if text.is_empty() => {}
                Some(text) => content.push(ContentBlock::text(text)),
            }
            given.blocks
        }
    };
    content.extend(blocks);
    let mut result = CallToolResult::success(content);
    result.structured_content = Some(output.value);
    result
}

impl PackhostServer {
    /// A success whose text is past the results budget is kept for `owner`
    /// and answered with its preview, a link to it, and its handle in
    /// `_meta`. Reading a kept result is never kept again.
    fn kept_if_large(&self, result: CallToolResult, tool: &str, owner: &Owner) -> CallToolResult {
        let results = self.executor.results();
        let text: String = result
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
            .collect();
        if tool == READ_RESULT || !results.too_large(&text) {
            return result;
        }
        let preview = results.keep(owner, tool, text, result.structured_content.as_ref());
        let mut content = vec![ContentBlock::text(preview.text)];
        if preview.meta["handle"].is_string() {
            let link = Resource::new(preview.uri, preview.handle)
                .with_description(format!("The whole result of `{tool}`"))
                .with_mime_type("text/plain")
                .with_size(preview.chars as u64);
            content.push(ContentBlock::resource_link(link));
        }
        // Images were never in the text: they stay.
        content.extend(
            result
                .content
                .into_iter()
                .filter(|block| block.as_text().is_none()),
        );
        let mut kept = CallToolResult::success(content);
        kept.structured_content = preview.structured;
        let mut meta = result.meta.unwrap_or_default();
        meta.insert(RESULT_META_KEY.to_owned(), preview.meta);
        kept.meta = Some(meta);
        kept
    }
}

/// Where a kept result's handle is in a result's `_meta`.
pub const RESULT_META_KEY: &str = "packhost/result";

/// The one tool whose results are not kept: it reads kept ones, a page at a
/// time.
const READ_RESULT: &str = "packhost.result_read";

impl ServerHandler for PackhostServer {
    #[allow(deprecated)] // `enable_logging`: see `logging`
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_prompts()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("packhost", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Tools are pack functions named `pack.function`. The `run` tool takes a command as \
                 you would write it: `pack.function(arg, key=value)`, an alias, `$snippet k=v`, \
                 a block of Python, or a ```ts block. `packhost.search`, `packhost.describe` and \
                 `packhost.packs` find what you can call.",
        )
    }

    /// On the 2026-07-28 wire, a `subscriptions/listen` stream may carry
    /// tool list changes: the only list that changes while packhost runs
    /// (a server pack's tools appearing); its prompts are its config's, and
    /// kept results are each caller's own.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    /// One `subscriptions/listen` stream: a tool list change each time the
    /// tools change, until the client ends it.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let mut generations = self.executor.generations();
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                changed = generations.changed() => if changed.is_err() { return Ok(()) },
            }
            if subscription
                .sink()
                .notify_tool_list_changed()
                .await
                .is_err()
            {
                return Ok(());
            }
        }
    }

    /// Tell the client whenever the tools change (a server pack's tools
    /// appearing), until its session ends.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer;
        let ended = self.session.0.clone();
        let mut generations = self.executor.generations();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = ended.cancelled() => break,
                    changed = generations.changed() => if changed.is_err() { break },
                }
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let identity = self.identity_of(&context);
        let tools = self
            .tools()
            .iter()
            .filter(|t| identity.may_call(&t.name))
            .map(|tool| match &identity.allowed {
                // An allow-list: `run`'s description names only what it allows.
                Some(_) if tool.name == RUN_TOOL => {
                    let mut tool = tool.clone();
                    tool.description = Some(self.executor.run_description_for(&identity).into());
                    tool
                }
                _ => tool.clone(),
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    /// The caller's own kept results.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let identity = self.identity_of(&context);
        let owner = Owner::new(&identity.org, &identity.user);
        let resources = self
            .executor
            .results()
            .list(&owner)
            .into_iter()
            .map(|(handle, kept)| {
                Resource::new(format!("{URI_PREFIX}{handle}"), handle)
                    .with_description(format!("The whole result of `{}`", kept.tool))
                    .with_mime_type("text/plain")
                    .with_size(kept.text.chars().count() as u64)
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    /// Kept results as one template: a handle (from the result that kept
    /// it, or `resources/list`) names a whole result of the caller's own.
    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let template = ResourceTemplate::new(format!("{URI_PREFIX}{{handle}}"), "kept result")
            .with_description(
                "The whole result of one of your calls that was too large to send whole: the \
                 call's result links it (its handle also in `_meta`), until it expires",
            )
            .with_mime_type("text/plain");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    /// A kept result of the caller's own; any other URI is not found alike.
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let identity = self.identity_of(&context);
        let owner = Owner::new(&identity.org, &identity.user);
        let kept = request
            .uri
            .strip_prefix(URI_PREFIX)
            .and_then(|handle| self.executor.results().get(&owner, handle));
        match kept {
            Some(kept) => Ok(ReadResourceResult::new(vec![ResourceContents::text(
                kept.text.to_string(),
                request.uri,
            )])
            .into()),
            None => Err(ErrorData::resource_not_found(
                format!(
                    "no resource {}: packhost serves kept results (`{URI_PREFIX}<handle>`) to \
                     the caller that made them, until they expire",
                    request.uri
                ),
                None,
            )),
        }
    }

    /// The caller's `[snippets]`, as prompts: a parameter without a
    /// default is a required argument.
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let identity = self.identity_of(&context);
        let prompts = self
            .executor
            .prompts(&identity)
            .into_iter()
            .map(|(name, snippet)| {
                let arguments = snippet
                    .params
                    .iter()
                    .map(|(param, spec)| {
                        let argument =
                            PromptArgument::new(param).with_required(spec.default.is_none());
                        match &spec.description {
                            Some(description) => argument.with_description(description),
                            None => argument,
                        }
                    })
                    .collect();
                let description = Some(&snippet.description).filter(|d| !d.is_empty());
                Prompt::new(name, description, Some(arguments))
            })
            .collect();
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    /// A snippet of the caller's, rendered as one user message: the command
    /// it stands for, to give to `run`.
    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let identity = self.identity_of(&context);
        // Arguments are strings in MCP; anything else is taken as its JSON.
        let arguments = request
            .arguments
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value)| match value {
                Value::String(text) => (name, text),
                other => (name, other.to_string()),
            })
            .collect();
        let (description, text) = self
            .executor
            .prompt(&identity, &request.name, &arguments)
            .map_err(|message| ErrorData::invalid_params(message, None))?;
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
        if !description.is_empty() {
            result = result.with_description(description);
        }
        Ok(result.into())
    }

    /// From now on, this session's calls send their packs' log lines at
    /// `level` or more severe.
    #[allow(deprecated)] // see `logging`
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log.set(request.level);
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let notices = Notices::to(&context.peer);
        let progress = context
            .meta
            .get_progress_token()
            .map(|t| notices.progress(t));
        let log = self.log.forwarder(&notices, &context.meta);
        let caller = Caller {
            progress,
            log,
            cancel: context.ct.clone(),
            ..Caller::new(self.identity_of(&context), context.id.to_string())
        };
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let owner = Owner::new(&caller.identity.org, &caller.identity.user);
        let result = match self.executor.call_tool(&request.name, args, &caller).await {
            Ok(output) => self.kept_if_large(success(output), &request.name, &owner),
            Err(e) => self.failure(&request.name, &e, &caller.identity),
        };
        notices.caught_up().await;
        Ok(result.into())
    }
}
