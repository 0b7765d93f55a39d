//! [`PackTest`]: a pack built from its [`PackDef`] and called in-process
//! through the host's JSON path, as any caller.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RArc, ROption, RResult, RStr, RString},
};
use async_ffi::{FfiFuture, FutureExt as _};
use jsonschema::Validator;
use pack_api::{
    CallContext, CallContext_TO, CallResult, Catalog, CatalogTool, ContentResult, FunctionSpec,
    Host, Host_TO, LogLevel, Owner, PackBox, WireError, codes, projects::Project,
};
use serde_json::Value;

use super::checks::{check_block, validator};
use crate::{PackDef, PackError};

/// A pack running in-process, called as any caller you choose. See the
/// [module](super) docs.
pub struct PackTest {
    name: String,
    pack: PackBox,
    functions: BTreeMap<String, (FunctionSpec, Validator, Validator)>,
    projects: BTreeMap<String, Project>,
    identity: Owner,
    logs: Arc<Mutex<Vec<String>>>,
    /// Function names in the manifest's order.
    order: Vec<String>,
}

/// How a [`PackTest`] is made: [`PackTest::build`], then the config, the
/// host's identity and projects, then [`Self::start`].
pub struct PackTestBuilder<S> {
    build: fn() -> PackDef<S>,
    config: Value,
    identity: Owner,
    projects: BTreeMap<String, Project>,
    state_database: Option<String>,
}

impl PackTest {
    /// A pack made by `build` (the function given to `export_pack!`), with
    /// an empty config, `[identity]` `local`/`local` and no projects.
    pub fn build<S: Send + Sync + 'static>(build: fn() -> PackDef<S>) -> PackTestBuilder<S> {
        PackTestBuilder {
            build,
            config: Value::Object(Default::default()),
            identity: Owner::new("local", "local"),
            projects: BTreeMap::new(),
            state_database: None,
        }
    }

    /// Call `function` with `args` as `caller`: arguments are checked
    /// against the input schema (`INVALID_ARGUMENT`, as the host does), then
    /// the pack runs it. Panics when the result, or a failure's result
    /// shape, does not fit the output schema.
    pub async fn call(
        &self,
        caller: &Owner,
        function: &str,
        args: Value,
    ) -> Result<Value, PackError> {
        let (value, _) = self.invoke(caller, function, args).await?;
        Ok(value)
    }

    /// The value, and the whole content result of a function that returns
    /// content.
    async fn invoke(
        &self,
        caller: &Owner,
        function: &str,
        args: Value,
    ) -> Result<(Value, Option<ContentResult>), PackError> {
        let Some((spec, input, output)) = self.functions.get(function) else {
            return Err(PackError::new(
                codes::UNKNOWN_FUNCTION,
                pack_api::names::no_function(
                    &self.name,
                    function,
                    self.functions.keys().map(String::as_str),
                ),
            ));
        };
        let problems: Vec<String> = input.iter_errors(&args).map(|e| e.to_string()).collect();
        if !problems.is_empty() {
            return Err(PackError::invalid_argument(format!(
                "`{}.{function}`: {}",
                self.name,
                problems.join("; ")
            )));
        }
        let visible = self
            .projects
            .iter()
            .filter(|(_, p)| p.visible_to(&caller.org))
            .map(|(name, p)| (name.clone(), p.path.display().to_string()))
            .collect();
        let catalog = Catalog {
            tools: self
                .functions
                .values()
                .map(|(spec, _, _)| CatalogTool {
                    pack: self.name.clone(),
                    function: spec.name.clone(),
                    signature: format!("{}.{}(...)", self.name, spec.name),
                    description: spec.description.clone(),
                    input_schema: spec.input_schema.clone(),
                    output_schema: spec.output_schema.clone(),
                    title: spec.title.clone(),
                    examples: spec.examples.clone(),
                    bare: false,
                })
                .collect(),
            packs: BTreeMap::from([(self.name.clone(), String::new())]),
            aliases: BTreeMap::new(),
            projects: visible,
            identity: Some(self.identity.clone()),
            ..Catalog::default()
        };
        let ctx = CallContext_TO::from_ptr(
            RArc::new(TestCall {
                caller: caller.clone(),
                catalog: serde_json::to_string(&catalog).expect("a catalog is JSON"),
                logs: Arc::clone(&self.logs),
            }),
            TD_Opaque,
        );
        let args = args.to_string();
        let at = format!("`{}.{function}`", self.name);
        let fits = |value: &Value, what: &str| {
            let errors: Vec<String> = output
                .iter_errors(value)
                .map(|e| format!("at `{}`: {e}", e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{at}: {what} {value} does not fit the output schema {}: {}",
                spec.output_schema,
                errors.join("; ")
            );
        };
        match self
            .pack
            .call(RStr::from_str(function), RStr::from_str(&args), ctx)
            .await
        {
            RResult::ROk(json) => {
                let value: Value = serde_json::from_str(&json)
                    .unwrap_or_else(|e| panic!("{at} returned a result that is not JSON: {e}"));
                if !spec.content {
                    fits(&value, "the result");
                    return Ok((value, None));
                }
                let content: ContentResult = serde_json::from_value(value).unwrap_or_else(|e| {
                    panic!("{at} returned a content result that is not one: {e}")
                });
                fits(&content.value, "the result's value");
                for block in &content.blocks {
                    check_block(block).unwrap_or_else(|e| panic!("{at}: {e}"));
                }
                Ok((content.value.clone(), Some(content)))
            }
            RResult::RErr(json) => {
                let wire: WireError = serde_json::from_str(&json)
                    .unwrap_or_else(|e| panic!("{at} returned an error that is not JSON: {e}"));
                if let Some(result) = &wire.result {
                    fits(result, "the failure's result shape");
                }
                Err(PackError::from_wire(wire))
            }
        }
    }

    /// Call a function that returns [`Content`](crate::Content), as
    /// [`Self::call`] does, and get the whole of it: the value, the text and
    /// the blocks (each checked to be an MCP content block).
    pub async fn call_content(
        &self,
        caller: &Owner,
        function: &str,
        args: Value,
    ) -> Result<ContentResult, PackError> {
        let returns_content = self
            .functions
            .get(function)
            .is_some_and(|(spec, _, _)| spec.content);
        assert!(
            returns_content,
            "`{}.{function}` does not return content: use `call`",
            self.name
        );
        let (_, content) = self.invoke(caller, function, args).await?;
        Ok(content.expect("a function that returns content returned it"))
    }

    /// Run every example of every function (in the manifest's order, as the
    /// host's `[identity]`), against this pack as you built it (its config
    /// and projects are the examples' world). Each must succeed with a
    /// result that holds the example's (see
    /// [`Example::result`](pack_api::Example::result)); the error lists every
    /// one that did not, with what it expected and got.
    pub async fn check_examples(&self) -> Result<(), String> {
        let mut failed = Vec::new();
        for (spec, _, _) in self
            .order
            .iter()
            .filter_map(|name| self.functions.get(name))
        {
            for (n, example) in spec.examples.iter().enumerate() {
                let at = format!("`{}.{}` example {}", self.name, spec.name, n + 1);
                let call = self
                    .call(&self.identity, &spec.name, example.args.clone())
                    .await;
                match call {
                    Ok(got) if example.matches(&got) => {}
                    Ok(got) => failed.push(format!(
                        "{at} ({}): expected a result holding\n{}\ngot\n{}",
                        example.args,
                        pretty(&example.result),
                        pretty(&got)
                    )),
                    Err(error) => failed.push(format!("{at} ({}) failed: {error}", example.args)),
                }
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(failed.join("\n\n"))
        }
    }

    /// The lines the pack logged so far (`LEVEL: message`).
    pub fn logs(&self) -> Vec<String> {
        self.logs.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Run the pack's shutdown (kill its processes, close connections), as
    /// the host does before it exits.
    pub async fn shutdown(&self) {
        self.pack.shutdown().await;
    }
}

impl<S: Send + Sync + 'static> PackTestBuilder<S> {
    /// The `config` table of the pack's section, as JSON.
    pub fn config(mut self, config: Value) -> Self {
        self.config = config;
        self
    }

    /// The host's `[identity]` (what [`Context::host_identity`](crate::Context::host_identity)
    /// says).
    pub fn identity(mut self, identity: Owner) -> Self {
        self.identity = identity;
        self
    }

    /// One more `[projects]` entry.
    pub fn project(mut self, name: &str, project: Project) -> Self {
        self.projects.insert(name.to_owned(), project);
        self
    }

    /// The host's `[state] database`, given to a pack that
    /// [`shares_state`](crate::PackDef::shares_state) as the host gives it.
    pub fn state_database(mut self, url: &str) -> Self {
        self.state_database = Some(url.to_owned());
        self
    }

    /// Build the pack: its constructor runs with the config (an error is
    /// what the host would report as a load failure).
    pub fn start(self) -> Result<PackTest, PackError> {
        let def = (self.build)();
        let name = def.name.to_owned();
        let mut functions = BTreeMap::new();
        let mut order = Vec::new();
        for spec in def.manifest("0.0.0").functions {
            order.push(spec.name.clone());
            let input = validator(&spec.input_schema)
                .map_err(|e| PackError::internal(format!("`{name}.{}` input: {e}", spec.name)))?;
            let output = validator(&spec.output_schema)
                .map_err(|e| PackError::internal(format!("`{name}.{}` output: {e}", spec.name)))?;
            functions.insert(spec.name.clone(), (spec, input, output));
        }
        let logs = Arc::new(Mutex::new(Vec::new()));
        let open: BTreeMap<&String, &std::path::PathBuf> = self
            .projects
            .iter()
            .filter(|(_, p)| p.orgs.is_none())
            .map(|(name, p)| (name, &p.path))
            .collect();
        let host = Host_TO::from_ptr(
            RArc::new(TestHost {
                projects: serde_json::to_string(&open).expect("paths are JSON"),
                logs: Arc::clone(&logs),
            }),
            TD_Opaque,
        );
        let mut config = self.config;
        if let (true, Some(url), Some(table)) = (
            def.shares_state,
            self.state_database,
            config.as_object_mut(),
        ) {
            table.insert(pack_api::protocol::STATE_DATABASE.to_owned(), url.into());
        }
        let pack = crate::ffi::instantiate(def, config, host)?;
        Ok(PackTest {
            name,
            pack,
            functions,
            projects: self.projects,
            identity: self.identity,
            logs,
            order,
        })
    }
}

#[derive(Clone)]
struct TestHost {
    projects: String,
    logs: Arc<Mutex<Vec<String>>>,
}

impl Host for TestHost {
    fn projects(&self) -> RString {
        self.projects.as_str().into()
    }

    fn log(&self, level: LogLevel, message: RStr<'_>) {
        record(&self.logs, level, message.as_str());
    }
}

#[derive(Clone)]
struct TestCall {
    caller: Owner,
    catalog: String,
    logs: Arc<Mutex<Vec<String>>>,
}

impl CallContext for TestCall {
    fn user(&self) -> RString {
        self.caller.user.as_str().into()
    }

    fn org(&self) -> RString {
        self.caller.org.as_str().into()
    }

    fn request_id(&self) -> RString {
        "test".into()
    }

    fn log(&self, level: LogLevel, message: RStr<'_>) {
        record(&self.logs, level, message.as_str());
    }

    fn progress(&self, _: f64, _: ROption<f64>, _: RStr<'_>) {}

    fn is_cancelled(&self) -> bool {
        false
    }

    fn catalog(&self) -> RString {
        self.catalog.as_str().into()
    }

    fn call_tool(&self, name: RStr<'_>, _: RStr<'_>) -> FfiFuture<CallResult> {
        no_host(name)
    }

    fn call_with(&self, name: RStr<'_>, _: RStr<'_>, _: RStr<'_>) -> FfiFuture<CallResult> {
        no_host(name)
    }

    /// A test call is never cut.
    fn remaining_ms(&self) -> u64 {
        u64::MAX
    }
}

fn no_host(name: RStr<'_>) -> FfiFuture<CallResult> {
    let error = WireError::new(
        codes::UNKNOWN_FUNCTION,
        format!(
            "`{name}`: a PackTest has no host to call other tools through; \
             test code mode end to end"
        ),
    );
    let json = serde_json::to_string(&error).expect("an error is JSON");
    async move { RResult::RErr(json.into()) }.into_ffi()
}

fn record(logs: &Mutex<Vec<String>>, level: LogLevel, message: &str) {
    logs.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(format!("{level:?}: {message}"));
}

/// Build the pack `build` makes with an empty config and no projects, and
/// run its examples ([`PackTest::check_examples`]). A pack whose examples
/// need a config or projects builds its [`PackTest`] and calls that.
pub fn check_examples<S: Send + Sync + 'static>(build: fn() -> PackDef<S>) -> Result<(), String> {
    let pack = PackTest::build(build).start().map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime for the examples: {e}"))?;
    runtime.block_on(async {
        let checked = pack.check_examples().await;
        pack.shutdown().await;
        checked
    })
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}
