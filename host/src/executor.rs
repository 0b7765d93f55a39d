//! The one path every tool call takes: resolve the name, bind and validate
//! the arguments, call the pack under a time limit and the client's
//! cancellation, and turn whatever happens into a value or a [`Failure`].

use std::{
    collections::BTreeMap,
    panic::{AssertUnwindSafe, catch_unwind},
    sync::{
        Arc, RwLock,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, ROption, RResult, RStr, RString},
};
use async_ffi::{FfiFuture, FutureExt as _};
use futures_util::FutureExt as _;
use pack_api::{
    CallContext, CallContext_TO, CallResult, Catalog, CatalogTool, FunctionSpec, LogLevel, Owner,
    codes, projects::Project,
};
use packhost_command::{Call, Front, Plan};
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio_util::{sync::CancellationToken, task::AbortOnDropHandle};
use tracing::Instrument as _;

use crate::{
    config::Config,
    failure::Failure,
    loader::LoadedPack,
    metrics::Metrics,
    render::{list, signature, suggestion},
};

/// Name of the tool that takes a command as a model writes it.
pub const RUN_TOOL: &str = "run";

/// Code mode can call tools that call tools; a loop must end somewhere.
const MAX_NESTING: u32 = 8;

/// Receives progress reports of one call: (progress, total, message).
pub type ProgressSink = Arc<dyn Fn(f64, Option<f64>, String) + Send + Sync>;

/// Who is calling and how to reach back: given by the transport.
#[derive(Clone)]
pub struct Caller {
    /// User id handed to packs.
    pub user: String,
    /// Organisation id handed to packs.
    pub org: String,
    /// The request id, for logs.
    pub request_id: String,
    /// Where progress goes, when the client asked for it.
    pub progress: Option<ProgressSink>,
    /// Cancelled when the client cancels the request.
    pub cancel: CancellationToken,
    /// How many tool calls deep this call is (code mode).
    pub depth: u32,
    /// The tools this caller may use; `None`: all.
    pub allowed: Option<Arc<ToolFilter>>,
}

impl Caller {
    fn may_call(&self, tool: &str) -> bool {
        self.allowed
            .as_ref()
            .is_none_or(|filter| filter.allows(tool))
    }
}

/// A token's allow-list: `pack.function`, `pack.*`, `run`, or `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFilter(Vec<String>);

impl ToolFilter {
    /// Allow what `patterns` name.
    pub fn new(patterns: Vec<String>) -> Self {
        Self(patterns)
    }

    /// Whether `tool` (`pack.function` or `run`) is allowed.
    pub fn allows(&self, tool: &str) -> bool {
        self.0.iter().any(|pattern| {
            pattern == "*"
                || pattern == tool
                || pattern
                    .strip_suffix(".*")
                    .is_some_and(|pack| tool.split_once('.').is_some_and(|(p, _)| p == pack))
        })
    }
}

/// A tool as listed to clients.
pub struct ToolInfo {
    /// `pack.function` or `run`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the result.
    pub output_schema: Option<Value>,
}

struct Function {
    spec: FunctionSpec,
    /// `pack.function(a: string, ...)`, shown in argument errors.
    signature: String,
    /// Property names in schema order: where positional arguments go.
    params: Vec<String>,
    validator: Option<jsonschema::Validator>,
}

struct PackEntry {
    loaded: Arc<LoadedPack>,
    functions: Vec<Function>,
}

/// The packs and what code mode can reach. Replaced whole when a server
/// pack's tools become known, so a call works on one consistent snapshot.
struct Registry {
    packs: BTreeMap<String, Arc<PackEntry>>,
    catalog: Catalog,
    /// `catalog` as JSON, for callers that may use every tool.
    catalog_json: Arc<str>,
}

impl Registry {
    fn new(packs: BTreeMap<String, Arc<PackEntry>>, config: &CatalogConfig) -> Self {
        let catalog = catalog(&packs, config);
        let catalog_json = serde_json::to_string(&catalog)
            .expect("a catalog is serialisable")
            .into();
        Self {
            packs,
            catalog,
            catalog_json,
        }
    }
}

/// What the catalog takes from the config besides the packs.
struct CatalogConfig {
    aliases: BTreeMap<String, String>,
    /// Every project, with the organisations that may see it.
    projects: BTreeMap<String, Project>,
    /// `[identity]`.
    identity: Owner,
}

/// Holds the loaded packs and dispatches every call.
pub struct Executor {
    registry: RwLock<Arc<Registry>>,
    /// Bumped whenever the registry is replaced: tool lists cached elsewhere
    /// are stale when it moved, and clients are told.
    generation: watch::Sender<u64>,
    catalog_config: CatalogConfig,
    front: Front,
    code_pack: String,
    /// Counters for `/metrics`.
    metrics: Metrics,
    /// Calls under way (graceful shutdown waits for them).
    running: AtomicUsize,
    /// Packs call back on their own threads; host work is spawned here.
    runtime: tokio::runtime::Handle,
}

impl Executor {
    /// Build from loaded packs; must run inside the host's runtime.
    pub fn new(loaded: Vec<LoadedPack>, config: &Config) -> Arc<Self> {
        let packs = loaded
            .into_iter()
            .map(|loaded| {
                let functions = functions_of(&loaded.name, &loaded.manifest.functions);
                let entry = PackEntry {
                    loaded: Arc::new(loaded),
                    functions,
                };
                (entry.loaded.name.clone(), Arc::new(entry))
            })
            .collect();
        let catalog_config = CatalogConfig {
            aliases: config.aliases.clone(),
            projects: config.projects.clone(),
            identity: Owner::new(&config.identity.org, &config.identity.user),
        };
        Arc::new(Self {
            registry: RwLock::new(Arc::new(Registry::new(packs, &catalog_config))),
            generation: watch::Sender::new(0),
            catalog_config,
            metrics: Metrics::default(),
            running: AtomicUsize::new(0),
            front: Front {
                aliases: config.aliases.clone(),
                snippets: config.snippets.clone(),
            },
            code_pack: config.server.code_pack.clone(),
            runtime: tokio::runtime::Handle::current(),
        })
    }

    fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Give pack `name` these functions (a server pack whose tools became
    /// known); calls under way finish on the snapshot they started with.
    pub fn set_functions(&self, name: &str, specs: &[FunctionSpec]) {
        let mut registry = self.registry.write().unwrap_or_else(|e| e.into_inner());
        let mut packs = registry.packs.clone();
        let Some(entry) = packs.get(name) else {
            return;
        };
        let entry = PackEntry {
            loaded: Arc::clone(&entry.loaded),
            functions: functions_of(name, specs),
        };
        packs.insert(name.to_owned(), Arc::new(entry));
        *registry = Arc::new(Registry::new(packs, &self.catalog_config));
        self.generation.send_modify(|generation| *generation += 1);
    }

    /// Changes whenever the set of tools does.
    pub fn generation(&self) -> u64 {
        *self.generation.borrow()
    }

    /// Wakes on every change of [`Self::generation`].
    pub fn generations(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Every tool: `run` first, then each pack function.
    pub fn tools(&self) -> Vec<ToolInfo> {
        let registry = self.registry();
        let run = ToolInfo {
            name: RUN_TOOL.to_owned(),
            description: self.run_description(&registry),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "description": "A call such as `proj.path(\"api\", sub=\"src\")`, an alias call, `$snippet k=v`, or a block of Python (fenced or not)."
                    }
                },
                "required": ["command"],
                "additionalProperties": false
            }),
            output_schema: None,
        };
        let functions = registry.packs.values().flat_map(|pack| {
            pack.functions.iter().map(move |f| ToolInfo {
                name: format!("{}.{}", pack.loaded.name, f.spec.name),
                description: f.spec.description.clone(),
                input_schema: f.spec.input_schema.clone(),
                output_schema: Some(f.spec.output_schema.clone()),
            })
        });
        std::iter::once(run).chain(functions).collect()
    }

    /// What `run` accepts and what it can reach, compactly: the list a model
    /// reads to know what exists.
    fn run_description(&self, registry: &Registry) -> String {
        let mut text = String::from(
            "Run a command the way you would write it: a call `pack.function(arg, key=value)` \
             with Python literals, an alias call, a snippet `$name key=value`, or a block of \
             Python (handed to the code pack, as is a call of any other name: `abs(-3)`). \
             Markdown fences and a `>>>` prompt are stripped.\n",
        );
        text.push_str("\nFunctions:\n");
        for pack in registry.packs.values() {
            for f in &pack.functions {
                text.push_str(&format!("- {}\n", f.signature));
            }
        }
        if !self.front.aliases.is_empty() {
            let aliases = self.front.aliases.iter().map(|(a, t)| format!("{a} = {t}"));
            text.push_str(&format!("\nAliases: {}\n", list(aliases)));
        }
        if !self.front.snippets.is_empty() {
            text.push_str("\nSnippets:\n");
            for (name, snippet) in &self.front.snippets {
                let params: Vec<String> = snippet
                    .params
                    .iter()
                    .map(|(p, def)| match &def.default {
                        Some(d) => format!("{p}={d}"),
                        None => p.clone(),
                    })
                    .collect();
                text.push_str(&format!(
                    "- ${name} {}: {}\n",
                    params.join(" "),
                    snippet.description
                ));
            }
        }
        text
    }

    /// The tools `caller` may use (all of them without an allow-list).
    pub fn tools_for(&self, caller: &Caller) -> Vec<ToolInfo> {
        self.tools()
            .into_iter()
            .filter(|t| caller.may_call(&t.name))
            .collect()
    }

    /// The catalog `caller` sees, as JSON: the tools it may call and the
    /// projects its organisation may see (the one place `[projects]`'
    /// `orgs` are applied: `proj` and code mode show what this gives).
    fn catalog_for(&self, caller: &Caller) -> RString {
        let registry = self.registry();
        let restricted = self
            .catalog_config
            .projects
            .values()
            .any(|p| p.orgs.is_some());
        if caller.allowed.is_none() && !restricted {
            return RString::from(&*registry.catalog_json);
        }
        let mut catalog = registry.catalog.clone();
        catalog
            .tools
            .retain(|t| caller.may_call(&format!("{}.{}", t.pack, t.function)));
        catalog.aliases.retain(|_, target| caller.may_call(target));
        let projects = &self.catalog_config.projects;
        catalog.projects.retain(|name, _| {
            projects
                .get(name)
                .is_some_and(|p| p.visible_to(&caller.org))
        });
        serde_json::to_string(&catalog)
            .expect("a catalog is serialisable")
            .into()
    }

    /// Counters for `/metrics`.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// How many calls are under way.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
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

    /// Serve one MCP `tools/call`.
    pub async fn call_tool(
        self: &Arc<Self>,
        name: &str,
        args: Value,
        caller: &Caller,
    ) -> Result<Value, Failure> {
        if name == RUN_TOOL {
            if !caller.may_call(RUN_TOOL) {
                return Err(not_allowed(RUN_TOOL));
            }
            let command = match &args {
                Value::Object(map) if map.len() == 1 => map.get("command").and_then(Value::as_str),
                _ => None,
            };
            let Some(command) = command else {
                return Err(Failure::invalid_argument(format!(
                    "`run` takes one argument, `command` (a string); got {args}"
                ))
                .with_help("example: {\"command\": \"proj.list()\"}"));
            };
            return self.run(command, caller).await;
        }
        let registry = self.registry();
        let (pack, function) = resolve(&registry, &self.front, name)?;
        self.dispatch(pack, function, args, caller).await
    }

    /// Interpret a command and run it.
    pub async fn run(self: &Arc<Self>, command: &str, caller: &Caller) -> Result<Value, Failure> {
        let plan = self
            .front
            .interpret(command)
            .map_err(|e| Failure::new(e.code(), e.to_string()))?;
        let registry = self.registry();
        match plan {
            Plan::Call(call) => {
                let (pack, function) = resolve(&registry, &self.front, &call.target)?;
                let args = bind(function, call)?;
                self.dispatch(pack, function, args, caller).await
            }
            Plan::Code(code) => {
                let Some(pack) = registry.packs.get(&self.code_pack) else {
                    if let Ok(Some(call)) = packhost_command::parse_call(&code) {
                        // `abs(-3)`: a name only the code pack's Python could resolve.
                        return Err(unknown_tool(&registry, &self.front, &call.target)
                            .with_help(format!(
                                "call a pack function as `pack.function(...)` or a configured \
                                 alias; other names run as Python once the code pack `{}` is loaded",
                                self.code_pack
                            )));
                    }
                    return Err(Failure::new(
                        codes::UNKNOWN_PACK,
                        format!(
                            "this command is not a single call `pack.function(...)`, so it would run \
                             as code in pack `{}`, which is not loaded",
                            self.code_pack
                        ),
                    )
                    .with_help(format!(
                        "send one call with literal arguments, e.g. `proj.list()`; or load the code \
                         pack: [packs.{}] in packs.toml (or set `server.code_pack`)",
                        self.code_pack
                    )));
                };
                let function = function_of(pack, "run")?;
                self.dispatch(pack, function, json!({ "code": code }), caller)
                    .await
            }
        }
    }

    async fn dispatch(
        self: &Arc<Self>,
        pack: &PackEntry,
        function: &Function,
        args: Value,
        caller: &Caller,
    ) -> Result<Value, Failure> {
        let tool = format!("{}.{}", pack.loaded.name, function.spec.name);
        let span = tracing::info_span!("call", tool = %tool, request = %caller.request_id);
        let started = Instant::now();
        let _running = Running::start(&self.running);
        let outcome = self
            .dispatch_inner(pack, function, &tool, args, caller)
            .instrument(span.clone())
            .await;
        let _entered = span.enter();
        let elapsed = started.elapsed();
        let elapsed_ms = elapsed.as_secs_f64() * 1000.0;
        let code = outcome.as_ref().err().map_or("ok", Failure::code);
        self.metrics.record(&tool, code, elapsed);
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
    ) -> Result<Value, Failure> {
        if !caller.may_call(tool) {
            return Err(not_allowed(tool));
        }
        let args = validate(function, args)?;
        tracing::debug!(%args, "arguments");
        if caller.cancel.is_cancelled() {
            return Err(cancelled());
        }
        // Cancelled when this call ends however it ends, so that a pack still
        // looking at `is_cancelled` stops.
        let token = caller.cancel.child_token();
        let _end = token.clone().drop_guard();
        let ctx = CallContext_TO::from_ptr(
            RArc::new(PackCallContext {
                executor: Arc::clone(self),
                pack: pack.loaded.name.clone(),
                caller: Caller {
                    cancel: token.clone(),
                    ..caller.clone()
                },
            }),
            TD_Opaque,
        );
        let args_json = args.to_string();
        let call = catch_unwind(AssertUnwindSafe(|| {
            pack.loaded.instance.call(
                RStr::from_str(&function.spec.name),
                RStr::from_str(&args_json),
                ctx,
            )
        }))
        .map_err(|_| Failure::internal(format!("`{tool}` panicked before it started")))?;
        let timeout = pack.loaded.timeout;
        tokio::select! {
            // async-ffi re-raises a panic of the pack's future on this side.
            result = AssertUnwindSafe(call).catch_unwind() => match result {
                Ok(RResult::ROk(json)) => serde_json::from_str(&json).map_err(|e| {
                    Failure::internal(format!("`{tool}` returned a result that is not JSON: {e}"))
                }),
                Ok(RResult::RErr(json)) => Err(Failure::from_pack_json(&json)),
                Err(_) => Err(Failure::internal(format!("`{tool}` panicked"))),
            },
            _ = caller.cancel.cancelled() => Err(cancelled()),
            _ = tokio::time::sleep(timeout) => Err(Failure::new(
                codes::TIMEOUT,
                format!("`{tool}` did not finish within its time limit of {}", human(timeout)),
            )
            .with_help(format!(
                "raise `timeout_ms` in `[packs.{}]` (or `server.timeout_ms`) if the work needs longer",
                pack.loaded.name
            ))),
        }
    }
}

/// `alias`, or `pack.function` → the pack and its function, or an error
/// that lists what exists.
fn resolve<'r>(
    registry: &'r Registry,
    front: &Front,
    name: &str,
) -> Result<(&'r PackEntry, &'r Function), Failure> {
    lookup(registry, front, name).inspect_err(|failure| {
        tracing::info!(tool = name, outcome = failure.code(), "call refused");
    })
}

fn lookup<'r>(
    registry: &'r Registry,
    front: &Front,
    name: &str,
) -> Result<(&'r PackEntry, &'r Function), Failure> {
    let target = front.aliases.get(name).map(String::as_str).unwrap_or(name);
    let Some((pack_name, function_name)) = target.split_once('.') else {
        return Err(unknown_tool(registry, front, name)
            .with_help("call a pack function as `pack.function(...)` or a configured alias"));
    };
    let Some(pack) = registry.packs.get(pack_name) else {
        let hint = suggestion(pack_name, registry.packs.keys().map(String::as_str))
            .map(|s| format!("did you mean `{s}`? "))
            .unwrap_or_default();
        return Err(Failure::new(
            codes::UNKNOWN_PACK,
            format!(
                "unknown pack `{pack_name}`; {hint}loaded packs: {}",
                list(registry.packs.keys())
            ),
        ));
    };
    Ok((pack, function_of(pack, function_name)?))
}

/// A name that is neither an alias nor `pack.function`: what exists instead.
fn unknown_tool(registry: &Registry, front: &Front, name: &str) -> Failure {
    let mut tools: Vec<String> = vec![RUN_TOOL.to_owned()];
    tools.extend(front.aliases.keys().cloned());
    tools.extend(registry.packs.keys().map(|p| format!("{p}.*")));
    let hint = suggestion(name, front.aliases.keys().map(String::as_str))
        .map(|s| format!("did you mean `{s}`? "))
        .unwrap_or_default();
    Failure::new(
        codes::UNKNOWN_FUNCTION,
        format!("unknown tool `{name}`; {hint}tools: {}", list(tools)),
    )
}

fn catalog(packs: &BTreeMap<String, Arc<PackEntry>>, config: &CatalogConfig) -> Catalog {
    Catalog {
        tools: packs
            .values()
            .flat_map(|pack| {
                pack.functions.iter().map(|f| CatalogTool {
                    pack: pack.loaded.name.clone(),
                    function: f.spec.name.clone(),
                    signature: f.signature.clone(),
                    description: f.spec.description.clone(),
                    input_schema: f.spec.input_schema.clone(),
                })
            })
            .collect(),
        aliases: config.aliases.clone(),
        projects: config
            .projects
            .iter()
            .map(|(name, p)| (name.clone(), p.path.display().to_string()))
            .collect(),
        identity: Some(config.identity.clone()),
    }
}

/// Counts a call as running until dropped, however the call ends.
struct Running<'a>(&'a AtomicUsize);

impl<'a> Running<'a> {
    fn start(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Self(counter)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Said of a tool outside the caller's allow-list: the same as a tool that does
/// not exist, so that the refusal reveals nothing.
fn not_allowed(tool: &str) -> Failure {
    Failure::new(codes::UNKNOWN_FUNCTION, format!("unknown tool `{tool}`"))
}

fn cancelled() -> Failure {
    Failure::new(codes::CANCELLED, "the client cancelled the call")
}

fn human(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

fn functions_of(pack: &str, specs: &[FunctionSpec]) -> Vec<Function> {
    specs
        .iter()
        .map(|spec| function_entry(pack, spec))
        .collect()
}

fn function_entry(pack: &str, spec: &FunctionSpec) -> Function {
    let tool = format!("{pack}.{}", spec.name);
    let validator = jsonschema::validator_for(&spec.input_schema)
        .inspect_err(|e| tracing::warn!(%tool, error = %e, "input schema is not valid; arguments go unchecked"))
        .ok();
    Function {
        signature: signature(&tool, &spec.input_schema),
        params: spec.input_schema["properties"]
            .as_object()
            .map(|props| props.keys().cloned().collect())
            .unwrap_or_default(),
        spec: spec.clone(),
        validator,
    }
}

fn function_of<'p>(pack: &'p PackEntry, name: &str) -> Result<&'p Function, Failure> {
    pack.functions
        .iter()
        .find(|f| f.spec.name == name)
        .ok_or_else(|| {
            if pack.functions.is_empty() {
                return Failure::new(
                    codes::UNKNOWN_FUNCTION,
                    format!(
                        "pack `{}` has no functions yet: its server ({}) has not answered; its \
                         tools appear when it does",
                        pack.loaded.name, pack.loaded.origin
                    ),
                );
            }
            let names = pack.functions.iter().map(|f| f.spec.name.as_str());
            let hint = suggestion(name, names.clone())
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default();
            Failure::new(
                codes::UNKNOWN_FUNCTION,
                format!(
                    "pack `{}` has no function `{name}`; {hint}(has: {})",
                    pack.loaded.name,
                    list(names)
                ),
            )
        })
}

/// Positional arguments take the parameters in schema order.
fn bind(function: &Function, call: Call) -> Result<Value, Failure> {
    let wrong = |message: String| {
        Failure::invalid_argument(message).with_help(format!("expected {}", function.signature))
    };
    if call.args.len() > function.params.len() {
        return Err(wrong(format!(
            "`{}` takes at most {} positional argument(s), got {}",
            call.target,
            function.params.len(),
            call.args.len()
        )));
    }
    let mut args = Map::new();
    for (name, value) in function.params.iter().zip(call.args) {
        args.insert(name.clone(), value);
    }
    for (name, value) in call.kwargs {
        if args.contains_key(&name) {
            return Err(wrong(format!(
                "`{}` got two values for `{name}`: one positional, one by keyword",
                call.target
            )));
        }
        args.insert(name, value);
    }
    Ok(Value::Object(args))
}

/// Check `args` against the input schema; the error shows the signature.
fn validate(function: &Function, args: Value) -> Result<Value, Failure> {
    let args = match args {
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    let Some(validator) = &function.validator else {
        return Ok(args);
    };
    let problems: Vec<String> = validator.iter_errors(&args).map(|e| describe(&e)).collect();
    if problems.is_empty() {
        return Ok(args);
    }
    Err(Failure::invalid_argument(format!(
        "`{}`: {}",
        function.signature.split('(').next().unwrap_or_default(),
        problems.join("; ")
    ))
    .with_help(format!("expected {}", function.signature)))
}

fn describe(error: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind as Kind;
    let at = error.instance_path().to_string();
    let name = at.trim_start_matches('/').replace('/', ".");
    match error.kind() {
        Kind::Required { property } => {
            format!(
                "missing required argument `{}`",
                property.as_str().unwrap_or_default()
            )
        }
        Kind::AdditionalProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|u| format!("`{u}`")).collect();
            format!("unknown argument {}", names.join(", "))
        }
        Kind::Type { .. } if name.is_empty() => {
            format!(
                "arguments must be an object of named values, got {}",
                error.instance()
            )
        }
        _ if name.is_empty() => error.to_string(),
        _ => format!("`{name}`: {error}"),
    }
}

/// The host as one call sees it.
#[derive(Clone)]
struct PackCallContext {
    executor: Arc<Executor>,
    pack: String,
    caller: Caller,
}

impl CallContext for PackCallContext {
    fn user(&self) -> RString {
        self.caller.user.as_str().into()
    }

    fn org(&self) -> RString {
        self.caller.org.as_str().into()
    }

    fn request_id(&self) -> RString {
        self.caller.request_id.as_str().into()
    }

    fn log(&self, level: LogLevel, message: RStr<'_>) {
        crate::logging::pack_log(
            &self.pack,
            Some(&self.caller.request_id),
            level,
            message.as_str(),
        );
    }

    fn progress(&self, progress: f64, total: ROption<f64>, message: RStr<'_>) {
        if let Some(sink) = &self.caller.progress {
            sink(progress, total.into_option(), message.as_str().to_owned());
        }
    }

    fn is_cancelled(&self) -> bool {
        self.caller.cancel.is_cancelled()
    }

    fn catalog(&self) -> RString {
        self.executor.catalog_for(&self.caller)
    }

    // Runs on the pack's thread: the work goes to the host's runtime, and the
    // pack gets a future that only waits for it (dropping it aborts it).
    fn call_tool(&self, name: RStr<'_>, args_json: RStr<'_>) -> FfiFuture<CallResult> {
        let executor = Arc::clone(&self.executor);
        let name = name.as_str().to_owned();
        let args = args_json.as_str().to_owned();
        let caller = Caller {
            depth: self.caller.depth + 1,
            ..self.caller.clone()
        };
        let task = AbortOnDropHandle::new(self.executor.runtime.spawn(async move {
            if caller.depth > MAX_NESTING {
                return Err(Failure::invalid_argument(format!(
                    "calls nest deeper than {MAX_NESTING} levels (`{name}`); is code calling itself?"
                )));
            }
            let args: Value = serde_json::from_str(&args).map_err(|e| {
                Failure::invalid_argument(format!("arguments of `{name}` are not JSON: {e}"))
            })?;
            executor.call_tool(&name, args, &caller).await
        }));
        async move {
            match task.await {
                Ok(Ok(value)) => RResult::ROk(value.to_string().into()),
                Ok(Err(failure)) => RResult::RErr(failure.to_json().into()),
                Err(e) => RResult::RErr(
                    Failure::internal(format!("host task failed: {e}"))
                        .to_json()
                        .into(),
                ),
            }
        }
        .into_ffi()
    }
}
