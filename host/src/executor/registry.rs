//! The packs' functions under their names: built once per set of packs
//! (again when a server pack's tools become known), then only read. Name
//! lookup with its errors, and the catalog code mode reads, live here, each
//! as one caller sees it ([`Visible`]).

use std::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use abi_stable::std_types::RString;
use pack_api::{
    Annotations, Catalog, CatalogPrompt, CatalogSnippet, CatalogTool, FunctionSpec, Manifest,
    Owner, PromptSpec, ResourceSpec, TaskSupport, TemplateSpec,
    projects::Project,
    protocol::{
        COMPLETE, PROMPTS_GET, PROMPTS_LIST, READY, RESOURCES_LIST, RESOURCES_READ,
        RESOURCES_SUBSCRIBE, SIGN_IN_RETURNED, TEMPLATES_LIST,
    },
};
use packhost_command::Snippet;
use serde_json::Value;

use super::RUN_TOOL;
use crate::{
    backend::{Backend, LoadedPack},
    error::{CallError, Known},
    identity::{Identity, ToolFilter},
    render::signature,
    tool_name::{ToolName, is_admin_function},
};

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
    /// A short name for people.
    pub title: Option<String>,
    /// What a call does to the world (MCP's hints).
    pub annotations: Annotations,
    /// Whether calls run as MCP tasks for clients that negotiated them.
    pub task_support: TaskSupport,
}

pub(super) struct Function {
    pub(super) spec: FunctionSpec,
    /// `pack.function(a: string, ...)`, shown in argument errors.
    pub(super) signature: String,
    /// Property names in schema order: where positional arguments go.
    pub(super) params: Vec<String>,
    /// The input schema, compiled by the first call: compiling every
    /// function's at start cost the start time before `tools/list`.
    input: OnceLock<Option<jsonschema::Validator>>,
    /// The output schema, compiled when a failure first needs it checked.
    pub(super) output: OnceLock<Option<jsonschema::Validator>>,
}

impl Function {
    /// The compiled input schema; one that does not compile (a bug of the
    /// pack) is said in the log once, and arguments go unchecked.
    pub(super) fn input_validator(&self) -> Option<&jsonschema::Validator> {
        self.input
            .get_or_init(|| {
                jsonschema::validator_for(&self.spec.input_schema)
                    .inspect_err(|e| {
                        let tool = self.tool();
                        tracing::warn!(tool, error = %e, "input schema is not valid; arguments go unchecked");
                    })
                    .ok()
            })
            .as_ref()
    }

    /// `pack.function`, as its signature names it.
    pub(super) fn tool(&self) -> &str {
        self.signature.split('(').next().unwrap_or_default()
    }

    /// Its time limit in a pack whose limit is `pack`: the function's own
    /// when it has one that is less (a pack can shorten a function's time,
    /// never lengthen what `[packs.x] timeout_ms` allows).
    pub(super) fn limit(&self, pack: Duration) -> Duration {
        self.spec
            .timeout_ms
            .map_or(pack, |own| pack.min(Duration::from_millis(own)))
    }

    /// Whether `shape` (a failure's result) fits the output schema; one
    /// that does not (a bug of the pack) is said in the log.
    pub(super) fn fits_output(&self, tool: &str, shape: &Value) -> bool {
        let validator = self.output.get_or_init(|| {
            jsonschema::validator_for(&self.spec.output_schema)
                .inspect_err(|e| tracing::warn!(tool, error = %e, "output schema does not compile"))
                .ok()
        });
        let Some(validator) = validator else {
            return false;
        };
        match validator.iter_errors(shape).next() {
            None => true,
            Some(error) => {
                tracing::warn!(
                    tool,
                    at = %error.instance_path(),
                    "a failure's result does not fit the tool's output schema ({error}); \
                     it is served as text only"
                );
                false
            }
        }
    }
}

pub(super) struct PackEntry {
    pub(super) loaded: Arc<LoadedPack>,
    pub(super) functions: Vec<Function>,
    /// Its prompts, resources and templates: its manifest's, or what its
    /// server lists now.
    pub(super) offers: Arc<Offers>,
    /// What renders its prompts, reads its resources and completes their
    /// arguments (and lists and follows them, per caller): `pack_api::protocol`'s
    /// names, called as functions are (none when its manifest offers nothing).
    pub(super) reserved: Vec<Function>,
}

impl PackEntry {
    /// `loaded` with these functions and offers.
    pub(super) fn new(
        loaded: Arc<LoadedPack>,
        functions: Vec<Function>,
        offers: Arc<Offers>,
    ) -> Self {
        let per_caller = loaded.manifest.offers_per_caller;
        // A server pack follows its server's resources for its subscribers.
        let follows = per_caller || matches!(loaded.backend, Backend::Server(_));
        let mut names = Vec::new();
        if !offers.is_empty() || per_caller {
            names.extend([PROMPTS_GET, RESOURCES_READ, COMPLETE]);
            if per_caller {
                names.extend([
                    PROMPTS_LIST,
                    RESOURCES_LIST,
                    TEMPLATES_LIST,
                    SIGN_IN_RETURNED,
                ]);
            }
            if follows {
                names.push(RESOURCES_SUBSCRIBE);
            }
        }
        if loaded.manifest.checks_ready {
            names.push(READY);
        }
        let any_object = serde_json::json!({"type": "object"});
        let specs: Vec<FunctionSpec> = names
            .iter()
            .map(|name| FunctionSpec {
                name: (*name).to_owned(),
                description: format!("MCP's `{name}` of the pack"),
                input_schema: any_object.clone(),
                output_schema: any_object.clone(),
                ..FunctionSpec::default()
            })
            .collect();
        let reserved = functions_of(&loaded.name, &specs);
        Self {
            loaded,
            functions,
            offers,
            reserved,
        }
    }

    /// Its prompts, by their own names: wherever they are listed, rendered
    /// or put in the catalog, they are read here.
    pub(super) fn prompts(&self) -> &[PromptSpec] {
        &self.offers.prompts
    }
}

/// What a pack offers besides functions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Offers {
    /// Its prompts, by their own names.
    pub prompts: Vec<PromptSpec>,
    /// Its resources at fixed URIs.
    pub resources: Vec<ResourceSpec>,
    /// Its resource templates.
    pub templates: Vec<TemplateSpec>,
}

impl Offers {
    /// What `manifest` declares.
    pub fn of(manifest: &Manifest) -> Self {
        Self {
            prompts: manifest.prompts.clone(),
            resources: manifest.resources.clone(),
            templates: manifest.resource_templates.clone(),
        }
    }

    fn is_empty(&self) -> bool {
        self.prompts.is_empty() && self.resources.is_empty() && self.templates.is_empty()
    }
}

/// What a caller's catalog is cut by: its allow-list, its organisation
/// (the projects it may see), and whether it is an admin (the admin's host
/// functions); nothing else of the caller.
type Narrowing = (Option<ToolFilter>, String, bool);

/// How many cut catalogs a registry keeps as JSON.
const NARROWED_KEPT: usize = 16;

/// The packs and what code mode can reach. Replaced whole when a server
/// pack's tools become known, so a call works on one consistent snapshot.
pub(super) struct Registry {
    pub(super) packs: BTreeMap<String, Arc<PackEntry>>,
    /// Made by the first call that needs one (code mode, search, `proj`),
    /// not at start: `tools/list` does without, and every input schema is
    /// copied into them.
    catalogs: OnceLock<Catalogs>,
    /// `catalog` cut for a caller, as JSON, by what it was cut by: a code
    /// call asks for it every time.
    narrowed_json: Mutex<VecDeque<(Narrowing, Arc<str>)>>,
    /// The packs whose functions and prompts go by their own names.
    pub(super) unprefixed: BTreeSet<String>,
    /// Such a function's own name -> `pack.function`.
    pub(super) bare: BTreeMap<String, String>,
}

/// The whole catalog, as a value and as JSON: without and with the admin's
/// host functions.
struct Catalogs {
    catalog: Arc<Catalog>,
    json: Arc<str>,
    admin: Arc<Catalog>,
    admin_json: Arc<str>,
}

impl Catalogs {
    /// The whole catalog a caller sees, and its JSON: an admin's has the
    /// admin's host functions.
    fn seen_by(&self, admin: bool) -> (&Arc<Catalog>, &Arc<str>) {
        match admin {
            true => (&self.admin, &self.admin_json),
            false => (&self.catalog, &self.json),
        }
    }
}

impl Registry {
    pub(super) fn new(packs: BTreeMap<String, Arc<PackEntry>>, config: &CatalogConfig) -> Self {
        let mut bare = BTreeMap::new();
        let unprefixed = packs
            .values()
            .filter(|p| config.unprefixed.contains(&p.loaded.name));
        for pack in unprefixed {
            for function in &pack.functions {
                let qualified = ToolName::new(&pack.loaded.name, &function.spec.name).to_string();
                // The start refused such clashes of a library; a server's
                // tools are its own and arrive later.
                if function.spec.name == RUN_TOOL {
                    tracing::warn!("`{qualified}` is not served as `run`: the tool `run` is");
                    continue;
                }
                if let Some(first) = bare.get(&function.spec.name) {
                    tracing::warn!(
                        "`{qualified}` is not served as `{}`: `{first}` is (both packs have \
                         `prefix = false`)",
                        function.spec.name
                    );
                    continue;
                }
                bare.insert(function.spec.name.clone(), qualified);
            }
        }
        Self {
            packs,
            catalogs: OnceLock::new(),
            narrowed_json: Mutex::default(),
            unprefixed: config.unprefixed.clone(),
            bare,
        }
    }

    /// The whole catalogs, made at first use.
    fn catalogs(&self, config: &CatalogConfig) -> &Catalogs {
        self.catalogs.get_or_init(|| {
            let admin = catalog(self, config);
            let mut catalog = admin.clone();
            catalog
                .tools
                .retain(|t| !is_admin_function(&t.pack, &t.function));
            let json = |catalog: &Catalog| -> Arc<str> {
                serde_json::to_string(catalog)
                    .expect("a catalog is serialisable")
                    .into()
            };
            Catalogs {
                json: json(&catalog),
                admin_json: json(&admin),
                catalog: Arc::new(catalog),
                admin: Arc::new(admin),
            }
        })
    }

    /// The catalog cut by `narrowing` as JSON: kept, else `write`n and kept
    /// (the most recent few).
    fn narrowed_json(&self, narrowing: Narrowing, write: impl FnOnce() -> String) -> Arc<str> {
        let mut kept = self.narrowed_json.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, json)) = kept.iter().find(|(cut, _)| *cut == narrowing) {
            return Arc::clone(json);
        }
        let json: Arc<str> = write().into();
        kept.push_front((narrowing, Arc::clone(&json)));
        kept.truncate(NARROWED_KEPT);
        json
    }

    /// What clients call function (or prompt) `name` of pack `pack`:
    /// `pack.name`, or `name` when the pack has `prefix = false`. A
    /// reserved name (`prompts/get`) is no pack's own: it keeps its pack.
    pub(super) fn listed(&self, pack: &str, name: &str) -> String {
        let qualified = ToolName::new(pack, name).to_string();
        let taken = name == RUN_TOOL || self.bare.get(name).is_some_and(|q| *q != qualified);
        if self.unprefixed.contains(pack) && !name.contains('/') && !taken {
            name.to_owned()
        } else {
            qualified
        }
    }
}

/// What the catalog takes from the config besides the packs.
pub(super) struct CatalogConfig {
    pub(super) aliases: BTreeMap<String, String>,
    /// `[snippets]`, listed with how to write them.
    pub(super) snippets: BTreeMap<String, Snippet>,
    /// Every project, with the organisations that may see it.
    pub(super) projects: BTreeMap<String, Project>,
    /// `[identity]`.
    pub(super) identity: Owner,
    /// The packs with `prefix = false`.
    pub(super) unprefixed: BTreeSet<String>,
}

/// The registry as one caller sees it: the one place its allow-list applies
/// to names. A function it may not call, and an alias to one, is not here,
/// so lookups, their errors and suggestions, the catalog and the `run`
/// description answer for it exactly as for a name that does not exist.
pub(super) struct Visible<'a> {
    registry: Arc<Registry>,
    aliases: &'a BTreeMap<String, String>,
    identity: &'a Identity,
}

impl<'a> Visible<'a> {
    /// `registry` as `identity` sees it, with the configured `aliases`.
    pub(super) fn new(
        registry: Arc<Registry>,
        aliases: &'a BTreeMap<String, String>,
        identity: &'a Identity,
    ) -> Self {
        Self {
            registry,
            aliases,
            identity,
        }
    }

    /// Whose view it is.
    pub(super) fn identity(&self) -> &Identity {
        self.identity
    }

    /// Whether the caller may call `tool` (`pack.function` or `run`).
    pub(super) fn may_call(&self, tool: &str) -> bool {
        self.identity.may_call(tool)
    }

    /// Whether the caller may call `function` of `pack`: an allow-list
    /// names it `pack.function`, `pack.*`, or by its own name when the
    /// pack has `prefix = false`.
    pub(super) fn may_call_function(&self, pack: &str, function: &str) -> bool {
        self.may_call(&ToolName::new(pack, function).to_string())
            || (self.registry.unprefixed.contains(pack) && self.may_call(function))
    }

    /// What `name` calls when it is no `pack.function`: an alias's target,
    /// or the function of a pack with `prefix = false` of that name, when
    /// the caller may call it.
    pub(super) fn target(&self, name: &str) -> Option<&str> {
        self.alias(name).or_else(|| {
            let qualified = self.registry.bare.get(name)?;
            let tool = ToolName::parse(qualified)?;
            self.may_call_function(&tool.pack, &tool.function)
                .then_some(qualified.as_str())
        })
    }

    /// The target of alias `name`, when the caller may call it.
    pub(super) fn alias(&self, name: &str) -> Option<&'a str> {
        let target = self.aliases.get(name)?;
        self.may_call(target).then_some(target.as_str())
    }

    /// The aliases the caller may use, with their targets.
    pub(super) fn aliases(&self) -> impl Iterator<Item = (&'a str, &'a str)> {
        let aliases = self.aliases;
        aliases
            .keys()
            .filter_map(|name| Some((name.as_str(), self.alias(name)?)))
    }

    /// Whether the caller may use `snippet`: it renders to code, or to a
    /// call of what the caller may call (a snippet's name and its error
    /// would otherwise tell of a function it may not see).
    pub(super) fn snippet(&self, snippet: &Snippet) -> bool {
        match snippet.target() {
            Some(target) if target.contains('.') => self.may_call(&target),
            Some(target) => self.aliases.get(&target).is_none() || self.alias(&target).is_some(),
            None => true,
        }
    }

    /// Pack `name`, when the caller may call one of its functions; while its
    /// server has not told them, when it may call whatever they will be.
    pub(super) fn pack(&self, name: &str) -> Option<&PackEntry> {
        let pack = self.registry.packs.get(name)?;
        let seen = if pack.functions.is_empty() {
            self.may_call(&ToolName::new(name, "*").to_string())
        } else {
            self.functions(pack).next().is_some()
        };
        seen.then_some(&**pack)
    }

    /// The packs the caller sees, in name order.
    pub(super) fn packs(&self) -> impl Iterator<Item = &PackEntry> {
        let packs = &self.registry.packs;
        packs.keys().filter_map(|name| self.pack(name))
    }

    /// What clients call prompt `name` of `pack`.
    pub(super) fn offered_name(&self, pack: &PackEntry, name: &str) -> String {
        self.registry.listed(&pack.loaded.name, name)
    }

    /// The pack's own name of prompt `listed`, when clients may call one of
    /// `pack`'s prompts so (the reverse of [`Self::offered_name`]).
    pub(super) fn own_name<'n>(&self, pack: &PackEntry, listed: &'n str) -> Option<&'n str> {
        let name = pack.loaded.name.as_str();
        if self.registry.unprefixed.contains(name) {
            return Some(listed);
        }
        listed.strip_prefix(name)?.strip_prefix('.')
    }

    /// The functions of `pack` the caller may call.
    pub(super) fn functions<'p>(&self, pack: &'p PackEntry) -> impl Iterator<Item = &'p Function> {
        let name = pack.loaded.name.as_str();
        let functions = pack.functions.iter();
        functions.filter(move |f| self.may_call_function(name, &f.spec.name))
    }

    /// `alias`, or `pack.function` → the pack and its function, or an error
    /// that lists what the caller may call instead.
    pub(super) fn resolve(&self, name: &str) -> Result<(&PackEntry, &Function), CallError> {
        self.lookup(name).inspect_err(|error| {
            tracing::info!(tool = name, outcome = error.code(), "call refused");
        })
    }

    fn lookup(&self, name: &str) -> Result<(&PackEntry, &Function), CallError> {
        let target = self.target(name).unwrap_or(name);
        let Some(ToolName {
            pack: pack_name,
            function: function_name,
        }) = ToolName::parse(target)
        else {
            return Err(CallError::UnknownTool {
                name: name.to_owned(),
                known: self.known(),
            });
        };
        let Some(pack) = self.pack(&pack_name) else {
            return Err(CallError::UnknownPack {
                pack: pack_name,
                packs: self.packs().map(|p| p.loaded.name.clone()).collect(),
            });
        };
        Ok((pack, self.function(pack, &function_name)?))
    }

    /// Function `name` of `pack`, when the caller may call it.
    pub(super) fn function<'p>(
        &self,
        pack: &'p PackEntry,
        name: &str,
    ) -> Result<&'p Function, CallError> {
        if let Some(function) = self.functions(pack).find(|f| f.spec.name == name) {
            return Ok(function);
        }
        if pack.functions.is_empty() {
            return Err(CallError::NoFunctionsYet {
                pack: pack.loaded.name.clone(),
                origin: pack.loaded.origin.to_string(),
                why: match &pack.loaded.backend {
                    Backend::Server(server) => server.unanswered(),
                    Backend::Library(_) | Backend::Host(_) => None,
                },
            });
        }
        Err(CallError::UnknownFunction {
            pack: pack.loaded.name.clone(),
            function: name.to_owned(),
            functions: self.functions(pack).map(|f| f.spec.name.clone()).collect(),
        })
    }

    /// What the caller may name, for a name that is neither an alias nor
    /// `pack.function`.
    pub(super) fn known(&self) -> Known {
        Known {
            run: self.may_call(RUN_TOOL),
            aliases: self.aliases().map(|(name, _)| name.to_owned()).collect(),
            packs: self.packs().map(|p| p.loaded.name.clone()).collect(),
        }
    }

    /// The catalog the caller sees: the tools it may call, its packs'
    /// prompts and the projects its organisation may see (the one place
    /// `[projects]`' `orgs` are applied: `proj` and code mode show what this
    /// gives).
    pub(super) fn catalog(&self, config: &CatalogConfig) -> Arc<Catalog> {
        self.narrowed(config)
            .map_or_else(|| Arc::clone(self.whole(config)), Arc::new)
    }

    /// The catalog of every tool the caller could be allowed: an admin's
    /// has the admin's host functions.
    fn whole(&self, config: &CatalogConfig) -> &Arc<Catalog> {
        self.registry
            .catalogs(config)
            .seen_by(self.identity.admin)
            .0
    }

    /// [`Self::catalog`] as JSON, for a library pack.
    pub(super) fn catalog_json(&self, config: &CatalogConfig) -> RString {
        if !self.is_narrowed(config) {
            let (_, json) = self.registry.catalogs(config).seen_by(self.identity.admin);
            return RString::from(&**json);
        }
        let narrowing = (
            self.identity.allowed.as_deref().cloned(),
            self.identity.org.clone(),
            self.identity.admin,
        );
        let json = self.registry.narrowed_json(narrowing, || {
            serde_json::to_string(&self.cut(config)).expect("a catalog is serialisable")
        });
        RString::from(&*json)
    }

    /// Whether the caller sees less than the whole catalog: it has an
    /// allow-list, or some projects are for some organisations only.
    fn is_narrowed(&self, config: &CatalogConfig) -> bool {
        self.identity.allowed.is_some() || config.projects.values().any(|p| p.orgs.is_some())
    }

    /// The whole catalog cut to what the caller sees; `None` when it sees
    /// all of it.
    fn narrowed(&self, config: &CatalogConfig) -> Option<Catalog> {
        self.is_narrowed(config).then(|| self.cut(config))
    }

    /// The whole catalog cut to what the caller sees.
    fn cut(&self, config: &CatalogConfig) -> Catalog {
        let mut catalog = Catalog::clone(self.whole(config));
        catalog
            .tools
            .retain(|t| self.may_call_function(&t.pack, &t.function));
        catalog.aliases.retain(|name, _| self.alias(name).is_some());
        catalog
            .snippets
            .retain(|name, _| config.snippets.get(name).is_some_and(|s| self.snippet(s)));
        // The rule `Executor::pack_prompts` lists them by.
        catalog.prompts.retain(|p| self.pack(&p.pack).is_some());
        let tools = &catalog.tools;
        catalog
            .packs
            .retain(|pack, _| tools.iter().any(|t| &t.pack == pack));
        let projects = &config.projects;
        catalog.projects.retain(|name, _| {
            projects
                .get(name)
                .is_some_and(|p| p.visible_to(&self.identity.org))
        });
        catalog
    }
}

fn catalog(registry: &Registry, config: &CatalogConfig) -> Catalog {
    let packs = &registry.packs;
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
                    output_schema: f.spec.output_schema.clone(),
                    title: f.spec.title.clone(),
                    examples: f.spec.examples.clone(),
                    bare: config.unprefixed.contains(&pack.loaded.name),
                })
            })
            .collect(),
        prompts: packs
            .values()
            .flat_map(|pack| {
                pack.prompts().iter().map(|spec| CatalogPrompt {
                    pack: pack.loaded.name.clone(),
                    spec: spec.clone(),
                    bare: registry.listed(&pack.loaded.name, &spec.name) == spec.name,
                })
            })
            .collect(),
        packs: packs
            .values()
            .map(|pack| {
                (
                    pack.loaded.name.clone(),
                    pack.loaded.manifest.description.clone(),
                )
            })
            .collect(),
        aliases: config.aliases.clone(),
        snippets: config
            .snippets
            .iter()
            .map(|(name, snippet)| {
                let listed = CatalogSnippet {
                    usage: snippet.usage(name),
                    description: snippet.description.clone(),
                };
                (name.clone(), listed)
            })
            .collect(),
        projects: config
            .projects
            .iter()
            .map(|(name, p)| (name.clone(), p.path.display().to_string()))
            .collect(),
        identity: Some(config.identity.clone()),
    }
}

pub(super) fn functions_of(pack: &str, specs: &[FunctionSpec]) -> Vec<Function> {
    specs
        .iter()
        .map(|spec| function_entry(pack, spec))
        .collect()
}

fn function_entry(pack: &str, spec: &FunctionSpec) -> Function {
    let tool = ToolName::new(pack, &spec.name).to_string();
    Function {
        signature: signature(&tool, &spec.input_schema),
        params: spec.input_schema["properties"]
            .as_object()
            .map(|props| props.keys().cloned().collect())
            .unwrap_or_default(),
        spec: spec.clone(),
        input: OnceLock::new(),
        output: OnceLock::new(),
    }
}
