//! The packs' functions under their names: built once per set of packs
//! (again when a server pack's tools become known), then only read. Name
//! lookup with its errors, and the catalog code mode reads, live here.

use std::{
    collections::BTreeMap,
    sync::{Arc, OnceLock},
    time::Duration,
};

use abi_stable::std_types::RString;
use pack_api::{Annotations, Catalog, CatalogTool, FunctionSpec, Owner, projects::Project};
use packhost_command::Front;
use serde_json::Value;

use super::Caller;
use crate::{error::CallError, loader::LoadedPack, render::signature, tool_name::ToolName};

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
}

pub(super) struct Function {
    pub(super) spec: FunctionSpec,
    /// `pack.function(a: string, ...)`, shown in argument errors.
    pub(super) signature: String,
    /// Property names in schema order: where positional arguments go.
    pub(super) params: Vec<String>,
    pub(super) validator: Option<jsonschema::Validator>,
    /// The output schema, compiled when a failure first needs it checked.
    pub(super) output: OnceLock<Option<jsonschema::Validator>>,
}

impl Function {
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
}

/// The packs and what code mode can reach. Replaced whole when a server
/// pack's tools become known, so a call works on one consistent snapshot.
pub(super) struct Registry {
    pub(super) packs: BTreeMap<String, Arc<PackEntry>>,
    pub(super) catalog: Catalog,
    /// `catalog` as JSON, for callers that may use every tool.
    pub(super) catalog_json: Arc<str>,
}

impl Registry {
    pub(super) fn new(packs: BTreeMap<String, Arc<PackEntry>>, config: &CatalogConfig) -> Self {
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
pub(super) struct CatalogConfig {
    pub(super) aliases: BTreeMap<String, String>,
    /// Every project, with the organisations that may see it.
    pub(super) projects: BTreeMap<String, Project>,
    /// `[identity]`.
    pub(super) identity: Owner,
}

impl Registry {
    /// The catalog `caller` sees, as JSON: the tools it may call and the
    /// projects its organisation may see (the one place `[projects]`'
    /// `orgs` are applied: `proj` and code mode show what this gives).
    pub(super) fn catalog_for(&self, config: &CatalogConfig, caller: &Caller) -> RString {
        let registry = self;
        let restricted = config.projects.values().any(|p| p.orgs.is_some());
        if caller.identity.allowed.is_none() && !restricted {
            return RString::from(&*registry.catalog_json);
        }
        let mut catalog = registry.catalog.clone();
        catalog
            .tools
            .retain(|t| caller.may_call(&ToolName::new(&t.pack, &t.function).to_string()));
        catalog.aliases.retain(|_, target| caller.may_call(target));
        let tools = &catalog.tools;
        catalog
            .packs
            .retain(|pack, _| tools.iter().any(|t| &t.pack == pack));
        let projects = &config.projects;
        catalog.projects.retain(|name, _| {
            projects
                .get(name)
                .is_some_and(|p| p.visible_to(&caller.identity.org))
        });
        serde_json::to_string(&catalog)
            .expect("a catalog is serialisable")
            .into()
    }
}

/// `alias`, or `pack.function` → the pack and its function, or an error
/// that lists what exists.
pub(super) fn resolve<'r>(
    registry: &'r Registry,
    front: &Front,
    name: &str,
) -> Result<(&'r PackEntry, &'r Function), CallError> {
    lookup(registry, front, name).inspect_err(|error| {
        tracing::info!(tool = name, outcome = error.code(), "call refused");
    })
}

fn lookup<'r>(
    registry: &'r Registry,
    front: &Front,
    name: &str,
) -> Result<(&'r PackEntry, &'r Function), CallError> {
    let target = front.aliases.get(name).map(String::as_str).unwrap_or(name);
    let Some(ToolName {
        pack: pack_name,
        function: function_name,
    }) = ToolName::parse(target)
    else {
        let (name, aliases, packs) = registry.known_names(front, name);
        return Err(CallError::UnknownTool {
            name,
            aliases,
            packs,
        });
    };
    let Some(pack) = registry.packs.get(&pack_name) else {
        return Err(CallError::UnknownPack {
            pack: pack_name,
            packs: registry.packs.keys().cloned().collect(),
        });
    };
    Ok((pack, function_of(pack, &function_name)?))
}

impl Registry {
    /// For a name that is neither an alias nor `pack.function`: the name,
    /// the aliases and the packs, which the error lists instead.
    pub(super) fn known_names(
        &self,
        front: &Front,
        name: &str,
    ) -> (String, Vec<String>, Vec<String>) {
        (
            name.to_owned(),
            front.aliases.keys().cloned().collect(),
            self.packs.keys().cloned().collect(),
        )
    }
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
                    output_schema: f.spec.output_schema.clone(),
                    title: f.spec.title.clone(),
                    examples: f.spec.examples.clone(),
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
        output: OnceLock::new(),
    }
}

pub(super) fn function_of<'p>(pack: &'p PackEntry, name: &str) -> Result<&'p Function, CallError> {
    pack.functions
        .iter()
        .find(|f| f.spec.name == name)
        .ok_or_else(|| {
            if pack.functions.is_empty() {
                return CallError::NoFunctionsYet {
                    pack: pack.loaded.name.clone(),
                    origin: pack.loaded.origin.to_string(),
                };
            }
            CallError::UnknownFunction {
                pack: pack.loaded.name.clone(),
                function: name.to_owned(),
                functions: pack.functions.iter().map(|f| f.spec.name.clone()).collect(),
            }
        })
}
