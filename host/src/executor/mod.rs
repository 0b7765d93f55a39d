//! The one path every tool call takes: resolve the name, bind and validate
//! the arguments, call the pack under a time limit and the client's
//! cancellation, and turn whatever happens into a value or a [`Failure`].

use std::{
    future::Future,
    panic::{AssertUnwindSafe, catch_unwind},
    pin::Pin,
    sync::{Arc, RwLock},
    time::Instant,
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, RResult, RStr, RString},
};
use catalog_search::Searcher;
use futures_util::FutureExt as _;
use pack_api::{CallContext_TO, FunctionSpec, Owner};
use packhost_command::{Call, Front, Language, Plan};
use serde_json::{Value, json};
use tokio::sync::watch;
use tracing::Instrument as _;

use self::{
    arguments::{bind, validate},
    code_mode::PackCallContext,
    registry::{CatalogConfig, Function, PackEntry, Registry, Visible, functions_of},
};
use crate::{
    approval::Approvals,
    audit::{Audit, Event, Who},
    backend::{Backend, LoadedPack},
    config::Config,
    error::CallError,
    failure::Failure,
    identity::Identity,
    metrics::Metrics,
    results::Results,
    tool_name::ToolName,
};
pub use crate::{
    output::{Content, Output},
    tool_name::RUN_TOOL,
};

mod aliases;
mod arguments;
mod bare;
mod caller;
mod caller_offers;
mod code_mode;
mod code_offers;
mod exposure;
mod help;
mod offers;
mod output;
mod prompts;
mod ready;
mod registry;
mod resources;
mod served;
mod subscription;

pub use caller::{Answers, Ask, Caller, LogSink, ProgressSink, Questions, SessionId};
pub use code_offers::prompt_arguments;
use exposure::Exposure;
pub use registry::{Offers, ToolInfo};
pub use subscription::{Subscription, UpdateSink};

/// Holds the loaded packs and dispatches every call.
pub struct Executor {
    registry: RwLock<Arc<Registry>>,
    /// Bumped whenever the registry is replaced: tool lists cached elsewhere
    /// are stale when it moved, and clients are told.
    generation: watch::Sender<u64>,
    /// Bumped whenever a pack's prompts, resources or templates change.
    offered: watch::Sender<u64>,
    catalog_config: CatalogConfig,
    front: Front,
    code_pack: String,
    /// The pack whose `execute` runs fenced TypeScript and JavaScript.
    typescript_pack: String,
    /// Which packs' functions `tools/list` shows.
    exposure: Exposure,
    /// Results kept instead of sent whole.
    results: Arc<Results>,
    /// `[state]`: where what several instances share lives.
    state: Arc<state_store::State>,
    /// Counters for `/metrics`.
    metrics: Metrics,
    /// `[approval]`: the calls that ask the user first.
    approvals: Approvals,
    /// `[audit]`: every call recorded.
    audit: Audit,
    /// Packs call back on their own threads; host work is spawned here.
    runtime: tokio::runtime::Handle,
}

impl Executor {
    /// Build from loaded packs, `packhost.search` ranking with `searcher`;
    /// must run inside the host's runtime.
    pub fn new(mut loaded: Vec<LoadedPack>, config: &Config, searcher: Arc<Searcher>) -> Arc<Self> {
        let state = state_store::State::open(config.state.database.clone());
        let results = Results::new(config.results.clone(), &state);
        let audit = Audit::start(config);
        loaded.push(LoadedPack::builtin(
            Arc::clone(&results),
            searcher,
            audit.clone(),
        ));
        let packs = loaded
            .into_iter()
            .map(|loaded| {
                let functions = functions_of(&loaded.name, &loaded.manifest.functions);
                let offers = Arc::new(Offers::of(&loaded.manifest));
                let entry = PackEntry::new(Arc::new(loaded), functions, offers);
                (entry.loaded.name.clone(), Arc::new(entry))
            })
            .collect();
        let catalog_config = CatalogConfig {
            aliases: config.aliases.clone(),
            snippets: config.snippets.clone(),
            projects: config.projects.clone(),
            identity: Owner::new(&config.identity.org, &config.identity.user),
            unprefixed: config
                .packs
                .iter()
                .filter(|(_, pack)| !pack.prefix)
                .map(|(name, _)| name.clone())
                .collect(),
        };
        Arc::new(Self {
            registry: RwLock::new(Arc::new(Registry::new(packs, &catalog_config))),
            generation: watch::Sender::new(0),
            offered: watch::Sender::new(0),
            catalog_config,
            metrics: Metrics::of_instance(config.http.instance.as_deref()),
            approvals: Approvals::new(
                config.approval.clone(),
                audit.clone(),
                state.remembered_approvals(),
            ),
            audit,
            front: Front {
                aliases: config.aliases.clone(),
                snippets: config.snippets.clone(),
            },
            code_pack: config.server.code_pack.clone(),
            typescript_pack: config.server.typescript_pack.clone(),
            exposure: Exposure::new(config),
            results,
            state,
            runtime: tokio::runtime::Handle::current(),
        })
    }

    fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The registry as `identity` sees it: every name a caller gives is
    /// looked up here.
    fn visible<'a>(&'a self, identity: &'a Identity) -> Visible<'a> {
        Visible::new(self.registry(), &self.front.aliases, identity)
    }

    /// Give pack `name` these functions (a server pack whose tools became
    /// known); calls under way finish on the snapshot they started with.
    pub fn set_functions(&self, name: &str, specs: &[FunctionSpec]) {
        self.replace(name, |entry| {
            let offers = Arc::clone(&entry.offers);
            PackEntry::new(Arc::clone(&entry.loaded), functions_of(name, specs), offers)
        });
        self.generation.send_modify(|generation| *generation += 1);
    }

    /// Give pack `name` these prompts, resources and templates (what its
    /// server lists now).
    pub fn set_offers(&self, name: &str, offers: Offers) {
        let changed = self.replace(name, |entry| {
            let specs: Vec<FunctionSpec> = entry.functions.iter().map(|f| f.spec.clone()).collect();
            let functions = functions_of(name, &specs);
            PackEntry::new(Arc::clone(&entry.loaded), functions, Arc::new(offers))
        });
        if changed {
            self.offered.send_modify(|generation| *generation += 1);
        }
    }

    /// Replace pack `name`'s entry with what `with` makes of it: whether
    /// there was one.
    fn replace(&self, name: &str, with: impl FnOnce(&PackEntry) -> PackEntry) -> bool {
        let mut registry = self.registry.write().unwrap_or_else(|e| e.into_inner());
        let mut packs = registry.packs.clone();
        let Some(entry) = packs.get(name) else {
            return false;
        };
        let entry = with(entry);
        packs.insert(name.to_owned(), Arc::new(entry));
        *registry = Arc::new(Registry::new(packs, &self.catalog_config));
        true
    }

    /// Wakes whenever a pack's prompts, resources or templates change.
    pub fn offer_changes(&self) -> watch::Receiver<u64> {
        self.offered.subscribe()
    }

    /// Changes whenever the set of tools does.
    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// Wakes on every change of [`Self::generation`].
    pub fn generations(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Every listed tool: `run` first, then each function of the packs
    /// `[server] expose` and `[packs.x] expose` show (the `packhost` pack's
    /// discovery functions always).
    pub fn tools(&self) -> Vec<ToolInfo> {
        let registry = self.registry();
        let functions = registry.packs.values().flat_map(|pack| {
            let listed = pack
                .functions
                .iter()
                .filter(|f| self.exposure.lists(&pack.loaded.name, &f.spec.name));
            let registry = &registry;
            listed.map(move |f| ToolInfo {
                name: registry.listed(&pack.loaded.name, &f.spec.name),
                description: f.spec.description.clone(),
                input_schema: f.spec.input_schema.clone(),
                output_schema: Some(f.spec.output_schema.clone()),
                title: f.spec.title.clone(),
                annotations: f.spec.annotations,
                task_support: f.spec.task_support,
            })
        });
        let run = self.run_tool(Arc::clone(&registry));
        std::iter::once(run).chain(functions).collect()
    }

    /// Whether `identity` may call listed tool `tool` (a function of a pack
    /// with `prefix = false` goes by its own name).
    pub fn may_call(&self, identity: &Identity, tool: &str) -> bool {
        let visible = self.visible(identity);
        match visible.target(tool).and_then(ToolName::parse) {
            Some(name) if !identity.may_call(tool) => {
                visible.may_call_function(&name.pack, &name.function)
            }
            _ => identity.may_call(tool),
        }
    }

    /// Whether a failure's result `shape` fits `tool`'s output schema; `None`
    /// when `tool` has none as `identity` sees it (`run`, a name that is no
    /// function it may call).
    pub fn fits_output(
        &self,
        tool: &str,
        shape: Option<&Value>,
        identity: &Identity,
    ) -> Option<bool> {
        self.with_function(tool, identity, |function| {
            shape.is_some_and(|shape| function.fits_output(tool, shape))
        })
    }

    /// `look` at the function `tool` names (by its whole name, an alias, or
    /// a bare name), as `identity` sees it; `None` for tools it cannot see.
    fn with_function<R>(
        &self,
        tool: &str,
        identity: &Identity,
        look: impl FnOnce(&registry::Function) -> R,
    ) -> Option<R> {
        let visible = self.visible(identity);
        let name = ToolName::parse(visible.target(tool).unwrap_or(tool))?;
        let function = visible
            .function(visible.pack(&name.pack)?, &name.function)
            .ok()?;
        Some(look(function))
    }

    /// The client capabilities a call of `tool` needs, as `identity` sees
    /// the tool (none for tools it cannot see: the call says why).
    pub fn needs(&self, tool: &str, identity: &Identity) -> Vec<String> {
        self.with_function(tool, identity, |function| function.spec.needs.clone())
            .unwrap_or_default()
    }

    /// Whether calls of `tool` ask before their long work, so that they
    /// become tasks only once answered (see `FunctionSpec::asks_first`).
    pub fn asks_first(&self, tool: &str, identity: &Identity) -> bool {
        self.with_function(tool, identity, |function| function.spec.asks_first)
            .unwrap_or_default()
    }

    /// The catalog `caller` sees, as JSON.
    fn catalog_for(&self, caller: &Caller) -> RString {
        self.visible(&caller.identity)
            .catalog_json(&self.catalog_config)
    }

    /// Results kept instead of sent whole (read back by handle).
    pub fn results(&self) -> &Arc<Results> {
        &self.results
    }

    /// Where what several instances share lives.
    pub fn state(&self) -> &Arc<state_store::State> {
        &self.state
    }

    /// Counters for `/metrics`.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The audit trail.
    pub fn audit(&self) -> &Audit {
        &self.audit
    }

    /// How many calls are under way, every organisation's.
    pub fn running(&self) -> usize {
        self.metrics.running_in_all()
    }

    /// The loaded packs in name order, with their functions' signatures.
    pub fn packs(&self) -> Vec<(Arc<LoadedPack>, Vec<String>)> {
        self.registry()
            .packs
            .values()
            .map(|p| {
                (
                    Arc::clone(&p.loaded),
                    p.functions.iter().map(|f| f.signature.clone()).collect(),
                )
            })
            .collect()
    }

    /// Each `[approval]` rule by name, with the functions loaded now that it
    /// asks about (by full name, whatever their pack's `prefix`).
    pub fn approval_coverage(&self) -> Vec<(String, Vec<String>)> {
        let registry = self.registry();
        let functions = registry.packs.values().flat_map(|pack| {
            pack.functions.iter().map(|function| {
                let name = ToolName::new(&pack.loaded.name, &function.spec.name).to_string();
                (name, function.spec.annotations.destructive == Some(true))
            })
        });
        self.approvals.coverage(functions)
    }

    /// Serve one MCP `tools/call`.
    pub async fn call_tool(
        self: &Arc<Self>,
        name: &str,
        args: Value,
        caller: &Caller,
    ) -> Result<Output, Failure> {
        let visible = self.visible(&caller.identity);
        // To a caller that may not use `run`, it is an unknown name.
        if name == RUN_TOOL && visible.may_call(RUN_TOOL) {
            let command = match &args {
                Value::Object(map) if map.len() == 1 => map.get("command").and_then(Value::as_str),
                _ => None,
            };
            let Some(command) = command else {
                let failure = CallError::RunArguments { got: args }.into();
                return Err(self.refused(caller, RUN_TOOL, failure));
            };
            return self.run_command(command, caller).await;
        }
        let (pack, function) = visible
            .resolve(name)
            .map_err(|e| self.refused(caller, name, e.into()))?;
        self.dispatch(pack, function, args, caller).await
    }

    /// A call with positional and keyword arguments, bound here to the
    /// function's parameters: from `run` and from code alike.
    pub async fn call_bound(
        self: &Arc<Self>,
        call: Call,
        caller: &Caller,
    ) -> Result<Output, Failure> {
        let visible = self.visible(&caller.identity);
        let (pack, function) = visible
            .resolve(&call.target)
            .map_err(|e| self.refused(caller, &call.target, e.into()))?;
        let args = bind(function, call).map_err(|e| {
            let qualified = ToolName::new(&pack.loaded.name, &function.spec.name);
            self.refused(caller, &qualified.to_string(), e.into())
        })?;
        self.dispatch(pack, function, args, caller).await
    }

    /// Interpret a command and run it: its value.
    pub async fn run(self: &Arc<Self>, command: &str, caller: &Caller) -> Result<Value, Failure> {
        self.run_command(command, caller)
            .await
            .map(Output::into_value)
    }

    async fn run_command(
        self: &Arc<Self>,
        command: &str,
        caller: &Caller,
    ) -> Result<Output, Failure> {
        let visible = self.visible(&caller.identity);
        let planned = self
            .planned(&visible, command)
            .map_err(|failure| self.refused(caller, RUN_TOOL, failure))?;
        match planned {
            Planned::Call(call) => self.call_bound(call, caller).await,
            Planned::Code(pack, function, args) => {
                self.dispatch(pack, function, args, caller).await
            }
        }
    }

    /// What `command` comes to for the caller `visible` is for: a call to
    /// bind, or a code pack's function and its arguments.
    fn planned<'v>(&self, visible: &'v Visible<'_>, command: &str) -> Result<Planned<'v>, Failure> {
        let plan = self
            .front
            .interpret_with(
                command,
                |name| visible.target(name),
                |snippet| visible.snippet(snippet),
            )
            .map_err(CallError::Command)?;
        match plan {
            Plan::Call(call) => Ok(Planned::Call(call)),
            Plan::Code(code) => {
                let Some(pack) = visible.pack(&self.code_pack) else {
                    let code_pack = self.code_pack.clone();
                    let loaded = self.registry().packs.contains_key(&code_pack);
                    if let Ok(Some(call)) = packhost_command::parse_call(&code) {
                        // `abs(-3)`: a name only the code pack's Python could resolve.
                        return Err(CallError::NotACall {
                            name: call.target,
                            known: visible.known(),
                            code_pack,
                            loaded,
                        }
                        .into());
                    }
                    return Err(CallError::NoCodePack {
                        code_pack,
                        key: "code_pack",
                        loaded,
                    }
                    .into());
                };
                let function = visible.function(pack, "run")?;
                Ok(Planned::Code(pack, function, json!({ "code": code })))
            }
            Plan::Node(code, language) => {
                let Some(pack) = visible.pack(&self.typescript_pack) else {
                    return Err(CallError::NoCodePack {
                        code_pack: self.typescript_pack.clone(),
                        key: "typescript_pack",
                        loaded: self.registry().packs.contains_key(&self.typescript_pack),
                    }
                    .into());
                };
                let language = match language {
                    Language::JavaScript => "javascript",
                    _ => "typescript",
                };
                let function = visible.function(pack, "execute")?;
                let args = json!({ "code": code, "language": language });
                Ok(Planned::Code(pack, function, args))
            }
        }
    }

    /// `failure` of a call of `tool` (as the caller named it) refused before
    /// any function started (an unknown name, a command that does not
    /// parse, arguments that do not bind), recorded.
    fn refused(&self, caller: &Caller, tool: &str, failure: Failure) -> Failure {
        self.audit.record(|| {
            let who = Who {
                org: caller.identity.org.clone(),
                user: caller.identity.user.clone(),
            };
            let (depth, parent) = (caller.depth, caller.parent.as_deref());
            let request = &caller.request_id;
            Event::call(&who, tool, failure.code(), None, request, depth, parent)
        });
        failure
    }

    async fn dispatch(
        self: &Arc<Self>,
        pack: &PackEntry,
        function: &Function,
        args: Value,
        caller: &Caller,
    ) -> Result<Output, Failure> {
        let tool = self
            .registry()
            .listed(&pack.loaded.name, &function.spec.name);
        let span = tracing::info_span!("call", tool = %tool, request = %caller.request_id);
        let started = Instant::now();
        let _running = self.metrics.started(&caller.identity.org);
        let outcome = self
            .dispatch_inner(pack, function, &tool, args, caller)
            .instrument(span.clone())
            .await;
        let _entered = span.enter();
        let elapsed = started.elapsed();
        let elapsed_ms = elapsed.as_secs_f64() * 1000.0;
        let code = outcome.as_ref().err().map_or("ok", Failure::code);
        self.metrics
            .record(&caller.identity.org, &tool, code, elapsed);
        self.audit.record(|| {
            let who = Who {
                org: caller.identity.org.clone(),
                user: caller.identity.user.clone(),
            };
            let qualified = ToolName::new(&pack.loaded.name, &function.spec.name).to_string();
            Event::call(
                &who,
                &qualified,
                code,
                Some(elapsed_ms),
                &caller.request_id,
                caller.depth,
                caller.parent.as_deref(),
            )
        });
        match &outcome {
            Ok(_) => tracing::info!(elapsed_ms, outcome = code, "call done"),
            Err(_) => tracing::info!(elapsed_ms, outcome = code, "call failed"),
        }
        outcome
    }

    async fn dispatch_inner(
        self: &Arc<Self>,
        pack: &PackEntry,
        function: &Function,
        tool: &str,
        args: Value,
        caller: &Caller,
    ) -> Result<Output, Failure> {
        let args = validate(function, args)?;
        tracing::debug!(%args, "arguments");
        if caller.cancel.is_cancelled() {
            return Err(CallError::Cancelled.into());
        }
        // Rules name functions by their full name, whatever the name the
        // pack's `prefix` lists them by.
        let qualified = ToolName::new(&pack.loaded.name, &function.spec.name).to_string();
        self.approvals
            .check(&qualified, &function.spec, &args, caller)
            .await?;
        // Its own time limit, or what is left of its caller's if that is less:
        // a call made from code ends with the call that made it.
        let limit = function.limit(pack.loaded.timeout);
        let own = Instant::now() + limit;
        let deadline = caller.deadline.map_or(own, |inherited| inherited.min(own));
        let cut_by_caller = deadline < own;
        let left = deadline.saturating_duration_since(Instant::now());
        // Cancelled when this call ends however it ends, so that a pack still
        // looking at `is_cancelled` stops.
        let token = caller.cancel.child_token();
        let _end = token.clone().drop_guard();
        let scoped = Caller {
            cancel: token.clone(),
            deadline: Some(deadline),
            parent: Some(qualified.clone()),
            ..caller.clone()
        };
        let call = self.start(pack, function, tool, args, scoped)?;
        let out_of_time = || {
            if cut_by_caller {
                CallError::CutByCaller {
                    tool: tool.to_owned(),
                    left,
                }
            } else {
                CallError::OutOfTime {
                    tool: tool.to_owned(),
                    pack: pack.loaded.name.clone(),
                    limit,
                    own: limit < pack.loaded.timeout,
                }
            }
        };
        tokio::select! {
            // async-ffi re-raises a panic of the pack's future on this side.
            result = AssertUnwindSafe(call).catch_unwind() => match result {
                Ok(outcome) => outcome,
                Err(_) => Err(CallError::Panicked { tool: tool.to_owned(), before_start: false }.into()),
            },
            _ = caller.cancel.cancelled() => Err(CallError::Cancelled.into()),
            () = tokio::time::sleep_until(deadline.into()) => Err(out_of_time().into()),
        }
    }
}

/// What a `run` command comes to: a call to bind, or a code pack's
/// function with its arguments.
enum Planned<'v> {
    Call(Call),
    Code(&'v PackEntry, &'v Function, Value),
}

/// A call under way, whichever backend serves it.
type Started<'a> = Pin<Box<dyn Future<Output = Result<Output, Failure>> + Send + 'a>>;

impl Executor {
    /// Start `function` of `pack` for `caller` (whose token and deadline are
    /// this call's): a library through the ABI, with a context that calls
    /// back here; a server or the host's own pack directly.
    fn start<'a>(
        self: &Arc<Self>,
        pack: &'a PackEntry,
        function: &'a Function,
        tool: &'a str,
        args: Value,
        caller: Caller,
    ) -> Result<Started<'a>, CallError> {
        let name = function.spec.name.as_str();
        match &pack.loaded.backend {
            Backend::Library(library) => {
                let ctx = CallContext_TO::from_ptr(
                    RArc::new(PackCallContext {
                        executor: Arc::clone(self),
                        pack: pack.loaded.name.clone(),
                        caller,
                    }),
                    TD_Opaque,
                );
                let args_json = args.to_string();
                Ok(Box::pin(async move {
                    // Loading in the background when its functions came from
                    // the catalog cache: the call's time limit bounds the wait.
                    let outcome = library.instance().await;
                    let instance =
                        outcome
                            .as_ref()
                            .as_ref()
                            .map_err(|error| CallError::NotLoaded {
                                error: error.clone(),
                            })?;
                    let call = catch_unwind(AssertUnwindSafe(|| {
                        instance.call(RStr::from_str(name), RStr::from_str(&args_json), ctx)
                    }))
                    .map_err(|_| CallError::Panicked {
                        tool: tool.to_owned(),
                        before_start: true,
                    })?;
                    match call.await {
                        RResult::ROk(json) => Ok(output::output_of(function, tool, &json)?),
                        RResult::RErr(json) => Err(Failure::from_pack_json(&json)),
                    }
                }))
            }
            Backend::Server(server) => {
                Ok(Box::pin(
                    async move { server.call(name, args, &caller).await },
                ))
            }
            Backend::Host(builtin) => {
                let catalog = self.visible(&caller.identity).catalog(&self.catalog_config);
                let owner = Owner::new(&caller.identity.org, &caller.identity.user);
                Ok(Box::pin(async move {
                    let value = builtin.call(name, args, owner, catalog).await?;
                    Ok(Output {
                        value,
                        content: None,
                    })
                }))
            }
        }
    }
}
