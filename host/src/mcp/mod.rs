//! The MCP face of the executor (rmcp): `tools/list`, `tools/call`,
//! resources (the caller's kept results and its packs': resources.rs),
//! prompts (its `[snippets]` and its packs': prompts.rs), completions
//! (completion.rs), and
//! `logging/setLevel` (or a request's own `logLevel`), after which a call's
//! pack log lines go to the client that made it, and the tasks extension
//! (`tasks`).
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

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use pack_api::{Owner, TaskSupport};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
        CompleteRequestParams, CompleteResult, ContentBlock, GetPromptRequestParams,
        GetPromptResponse, GetTaskParams, GetTaskResult, Implementation, JsonObject,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
        MetaObject, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
        Resource, ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter,
        Tool, ToolAnnotations, UnsubscribeRequestParams, UpdateTaskParams,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};
use serde_json::Value;
use state_store::HeldTask;

use self::{
    ask::missing,
    logging::SessionLog,
    notices::Notices,
    rounds::{HELD_FOR, Retry, Rounds, Step},
    states::States,
    tasks::Tasks,
    wire::{answers_by_retry, asking, capabilities_of},
};

mod ask;
mod completion;
mod logging;
mod notices;
mod peers;
mod prompts;
mod request;
mod resources;
mod rounds;
mod states;
mod subscriptions;
mod tasks;
mod wire;
pub use peers::Peers;
pub use states::STATE_KEY_VARIABLE;
use tokio_util::sync::CancellationToken;

use crate::{
    executor::{Caller, Executor, Output, RUN_TOOL, SessionId, ToolInfo},
    failure::{ERROR_META_KEY, Failure},
    identity::Identity,
    render::value_text,
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
    /// Tool calls waiting for their client's answers (2026-07-28).
    rounds: Arc<Rounds<Result<Output, Failure>>>,
    /// Prompt renders waiting for their client's answers (2026-07-28).
    prompt_rounds: Arc<Rounds<Option<Result<Value, Failure>>>>,
    /// Calls running as tasks, every session's.
    tasks: Arc<Tasks>,
    /// The pack resources this session follows.
    subscriptions: Arc<subscriptions::Subscriptions>,
    /// The other instances, which hand each other retries of held calls.
    peers: Option<Arc<Peers>>,
}

struct Listing {
    generation: u64,
    tools: Arc<Vec<Tool>>,
    /// The tools whose calls may run as tasks.
    task_support: HashMap<String, TaskSupport>,
}

impl Listing {
    fn of(executor: &Executor) -> Self {
        let generation = executor.generation();
        let tools = executor.tools();
        Self {
            generation,
            task_support: tasks::support_of(&tools),
            tools: Arc::new(tools_of(tools)),
        }
    }
}

/// A session's end, and its id (approvals remembered for the session).
struct SessionEnd(CancellationToken, SessionId);

impl Drop for SessionEnd {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl PackhostServer {
    /// Serve `executor`'s tools; calls run as `identity`. Fails when the
    /// key that signs the states of requests taking several rounds
    /// ([`STATE_KEY_VARIABLE`]) is unusable.
    /// With `peers`, it hands them the retries of calls they hold.
    pub fn new(
        executor: Arc<Executor>,
        identity: Identity,
        peers: Option<Arc<Peers>>,
    ) -> Result<Self, String> {
        let tools = Listing::of(&executor);
        let spent = executor.state().spent_states();
        let states = Arc::new(States::new(HELD_FOR, spent)?);
        let here = peers.as_ref().map(|peers| peers.here().to_owned());
        Ok(Self {
            executor,
            identity,
            tools: Arc::new(Mutex::new(tools)),
            session: Arc::new(SessionEnd(CancellationToken::new(), SessionId::unique())),
            log: SessionLog::default(),
            rounds: Arc::new(Rounds::new(Arc::clone(&states), here.clone())),
            prompt_rounds: Arc::new(Rounds::new(states, here)),
            tasks: Arc::default(),
            subscriptions: Arc::default(),
            peers,
        })
    }

    /// A copy for one more client session (over HTTP), with its own end.
    pub fn for_session(&self) -> Self {
        Self {
            session: Arc::new(SessionEnd(CancellationToken::new(), SessionId::unique())),
            log: SessionLog::default(),
            subscriptions: Arc::default(),
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

fn tools_of(tools: Vec<ToolInfo>) -> Vec<Tool> {
    tools
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
            tasks::declare(&mut tool, info.task_support);
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

    fn owner_of(&self, context: &RequestContext<RoleServer>) -> Owner {
        let identity = self.identity_of(context);
        Owner::new(&identity.org, &identity.user)
    }

    /// The answer of the instance holding the call a retry resumes, when
    /// that is another instance that answers.
    async fn held_elsewhere(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        binding: &str,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        let (peers, sealed) = (self.peers.as_ref()?, request.request_state.as_deref()?);
        let at = self
            .rounds
            .holder(sealed, &self.owner_of(context), binding)?;
        peers.call(&at, context, request).await
    }

    /// `response`, a task's instance recorded first when it is one and
    /// instances are named, so that the others send its `tasks/*` here.
    async fn announced(&self, response: CallToolResponse, identity: &Identity) -> CallToolResponse {
        if let (CallToolResponse::Task(created), Some(peers)) = (&response, &self.peers) {
            let owner = Owner::new(&identity.org, &identity.user);
            let holders = self.executor.state().task_holders();
            let id = &created.task.task_id;
            let recorded = holders.record(id, &owner, peers.here(), tasks::KEPT).await;
            if let Err(e) = recorded {
                tracing::warn!(task = %id, error = %e, "other instances will not find this task");
            }
        }
        response
    }

    /// Task `id` of the caller of `context` as the database records it,
    /// when instances are named.
    async fn held_task(&self, id: &str, context: &RequestContext<RoleServer>) -> Option<HeldTask> {
        self.peers.as_ref()?;
        let holders = self.executor.state().task_holders();
        holders.holder(id, &self.owner_of(context)).await.ok()?
    }

    /// The answer of the instance running task `held` to `method` with
    /// `params`, when another instance runs it.
    async fn task_elsewhere<P: serde::Serialize>(
        &self,
        method: &str,
        held: Option<HeldTask>,
        params: &P,
        context: &RequestContext<RoleServer>,
    ) -> Option<Result<Value, ErrorData>> {
        let (peers, held) = (self.peers.as_ref()?, held?);
        peers.request(&held.instance, context, method, params).await
    }

    /// A call's outcome as the client gets it.
    async fn answer(
        &self,
        tool: &str,
        outcome: Result<Output, Failure>,
        identity: &Identity,
    ) -> CallToolResult {
        match outcome {
            Ok(output) => {
                let owner = Owner::new(&identity.org, &identity.user);
                self.kept_if_large(success(output), tool, &owner).await
            }
            Err(e) => self.failure(tool, &e, identity),
        }
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
    async fn kept_if_large(
        &self,
        result: CallToolResult,
        tool: &str,
        owner: &Owner,
    ) -> CallToolResult {
        let results = self.executor.results();
        let text: String = result
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
            .collect();
        if tool == READ_RESULT || !results.too_large(&text) {
            return result;
        }
        let structured = result.structured_content.as_ref();
        let preview = results.keep(owner, tool, text, structured).await;
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
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_prompts()
            .enable_completions()
            .enable_logging()
            .enable_tasks()
            .build();
        // Only a server pack's prompts and resources change while serving.
        if self.executor.serves_servers() {
            capabilities.resources.get_or_insert_default().list_changed = Some(true);
            capabilities.prompts.get_or_insert_default().list_changed = Some(true);
        }
        ServerConfig::new(capabilities)
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
    /// kept results are each caller's own. And updates of the resources it
    /// names (see `subscriptions`).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let uris = requested.resource_subscriptions.clone().unwrap_or_default();
        let mut filter = SubscriptionFilter::builder().tools_list_changed();
        if requested.prompts_list_changed == Some(true) {
            filter = filter.prompts_list_changed();
        }
        if requested.resources_list_changed == Some(true) {
            filter = filter.resources_list_changed();
        }
        Some(filter.resource_subscriptions(uris).build())
    }

    /// One `subscriptions/listen` stream: a tool list change each time the
    /// tools change, prompt and resource list changes (when it asked for
    /// them) each time a pack's offers do, and the updates of the resources
    /// it follows, until the client ends it.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let _followed = self.follow_listened(&subscription).await;
        let mut generations = self.executor.generations();
        let mut offers = self.executor.offer_changes();
        let sink = subscription.sink();
        let accepted = subscription.accepted();
        loop {
            let sent = tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                changed = generations.changed() => match changed {
                    Ok(()) => sink.notify_tool_list_changed().await,
                    Err(_) => return Ok(()),
                },
                changed = offers.changed() => match changed {
                    Ok(()) => offers_changed(sink, accepted).await,
                    Err(_) => return Ok(()),
                },
            };
            if sent.is_err() {
                return Ok(());
            }
        }
    }

    /// Tell the client whenever the tools change (a server pack's tools
    /// appearing), and the prompts and resources (a server pack's lists
    /// changing), until its session ends.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer;
        let ended = self.session.0.clone();
        let mut generations = self.executor.generations();
        let mut offers = self.executor.offer_changes();
        tokio::spawn(async move {
            loop {
                let sent = tokio::select! {
                    () = ended.cancelled() => break,
                    changed = generations.changed() => match changed {
                        Ok(()) => peer.notify_tool_list_changed().await,
                        Err(_) => break,
                    },
                    changed = offers.changed() => match changed {
                        Ok(()) => match peer.notify_prompt_list_changed().await {
                            Ok(()) => peer.notify_resource_list_changed().await,
                            failed => failed,
                        },
                        Err(_) => break,
                    },
                };
                if sent.is_err() {
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
            .filter(|t| self.executor.may_call(&identity, &t.name))
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

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(self.resources_list(&context).await)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(self.resource_templates_list(&context).await)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.resource_read(request, &context).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resource_subscribe(&request.uri, &context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resource_unsubscribe(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(self.prompts_list(&context).await)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.prompt_get(request, &context).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.completion(request, &context).await
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
        let identity = self.identity_of(&context);
        let capabilities = capabilities_of(&context);
        let needs = self.executor.needs(&request.name, &identity);
        if let Some(error) = missing(&capabilities, &needs) {
            return Err(error);
        }
        let support = self.task_support(&request.name, &identity);
        let as_task = tasks::runs_as_task(&request.name, support, &context)?;
        // Questions first, then a task: only where questions are rounds.
        let asks_first = as_task
            && answers_by_retry(&context)
            && self.executor.asks_first(&request.name, &identity);
        if as_task && !asks_first {
            let started = self.tasks.start(self, request, identity.clone(), &context);
            return Ok(self.announced(started, &identity).await);
        }
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
            session: self.session_of(&context),
            ..Caller::new(identity.clone(), context.id.to_string())
        };
        let args = request
            .arguments
            .clone()
            .map(Value::Object)
            .unwrap_or(Value::Null);
        let binding = format!("tools/call\n{}\n{args}", request.name);
        if let Some(answer) = self.held_elsewhere(&request, &context, &binding).await {
            return answer;
        }
        let retry = Retry {
            state: request.request_state,
            responses: request.input_responses,
        };
        let (executor, name) = (Arc::clone(&self.executor), request.name.clone());
        let call =
            move |caller: Caller| async move { executor.call_tool(&name, args, &caller).await };
        let escalate_after = asks_first.then_some(tasks::ASKS_FIRST_WITHIN);
        let step = asking(
            &self.rounds,
            &context,
            &binding,
            retry,
            escalate_after,
            caller,
            call,
        );
        let (tool, tasks) = (request.name.to_string(), &self.tasks);
        let outcome = match step.await? {
            Step::Done(outcome) if asks_first => {
                let ended = tasks.ended(self, identity.clone(), tool, outcome);
                return Ok(self.announced(ended, &identity).await);
            }
            Step::Done(outcome) => outcome,
            Step::Asked(asked) => {
                notices.caught_up().await;
                return Ok(asked.into());
            }
            Step::Running(call) => {
                let adopted = tasks.adopt(self, identity.clone(), tool, call, &context);
                return Ok(self.announced(adopted, &identity).await);
            }
        };
        let answer = self.answer(&request.name, outcome, &identity).await;
        notices.caught_up().await;
        Ok(answer.into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let here = self.tasks.get(&request.task_id, &self.owner_of(&context));
        let Err(unknown) = here else { return here };
        let held = self.held_task(&request.task_id, &context).await;
        // Ended: answered from the record, whether or not its instance lives.
        if let Some(ended) = held.as_ref().and_then(|held| held.ended.as_deref()) {
            return serde_json::from_slice(ended).map_err(|e| {
                ErrorData::internal_error(format!("a task's recorded end: {e}"), None)
            });
        }
        match self
            .task_elsewhere("tasks/get", held, &request, &context)
            .await
        {
            Some(result) => result.and_then(|task| {
                serde_json::from_value(task).map_err(|e| {
                    ErrorData::internal_error(format!("another instance's task: {e}"), None)
                })
            }),
            None => Err(unknown),
        }
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let answers = request.input_responses.clone().into_iter().collect();
        let owner = self.owner_of(&context);
        let here = self.tasks.update(&request.task_id, answers, &owner);
        let Err(unknown) = here else { return here };
        let held = self.held_task(&request.task_id, &context).await;
        let elsewhere = self.task_elsewhere("tasks/update", held, &request, &context);
        elsewhere
            .await
            .map_or(Err(unknown), |result| result.map(drop))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let here = self
            .tasks
            .cancel(&request.task_id, &self.owner_of(&context));
        let Err(unknown) = here else { return here };
        let held = self.held_task(&request.task_id, &context).await;
        let elsewhere = self.task_elsewhere("tasks/cancel", held, &request, &context);
        elsewhere
            .await
            .map_or(Err(unknown), |result| result.map(drop))
    }
}

/// Tell a `subscriptions/listen` stream that pack offers changed: its
/// prompt and resource lists, as far as it asked.
async fn offers_changed(
    sink: &rmcp::service::SubscriptionSink,
    accepted: &SubscriptionFilter,
) -> Result<(), rmcp::service::SubscriptionSendError> {
    if accepted.prompts_list_changed == Some(true) {
        sink.notify_prompt_list_changed().await?;
    }
    if accepted.resources_list_changed == Some(true) {
        sink.notify_resource_list_changed().await?;
    }
    Ok(())
}
