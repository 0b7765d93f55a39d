//! A pack's own tests (feature `test-support`): call the pack in-process as
//! any caller, and check results as MCP clients check them.
//!
//! [`PackTest`] builds a pack from its [`PackDef`] with a config, a host
//! `[identity]` and projects of your choosing, and calls its functions
//! through the same JSON path the host uses (arguments checked against the
//! input schema, the pack's runtime, panics caught), with a context whose
//! organisation and user you pick, so ownership rules are unit-tested per
//! pack:
//!
//! ```ignore
//! #[tokio::test]
//! async fn another_organisation_cannot_use_my_session() {
//!     let pack = PackTest::build(my_pack).config(json!({})).start().unwrap();
//!     let (ada, eve) = (Owner::new("acme", "ada"), Owner::new("evil", "eve"));
//!     let id = pack.call(&ada, "open", json!({})).await.unwrap()["id"].clone();
//!     let err = pack.call(&eve, "read", json!({"id": id})).await.unwrap_err();
//!     assert_eq!(err.code(), "SESSION_NOT_FOUND");
//!     pack.shutdown().await;
//! }
//! ```
//!
//! Every result it returns, and the result shape of every failure, has been
//! checked against the function's output schema (it panics otherwise). The
//! official MCP clients validate a tool's structured content against the
//! `outputSchema` it listed, on success and (the TypeScript SDK) on failure
//! too. The schemas come from your types, so a mismatch is a value the types
//! allow but the schema does not describe; the checks below also catch it
//! for values made directly:
//!
//! A function's examples ([`Function::example`](crate::Function::example))
//! run as a test with [`check_examples`], or
//! [`PackTest::check_examples`] on a pack built with the config and projects
//! they need; [`PackTest::call_content`] shows what a function that returns
//! [`Content`](crate::Content) sends besides its value.
//!
//! ```ignore
//! #[test]
//! fn results_fit_their_schemas() {
//!     pack_sdk::testing::check_manifest(my_pack).unwrap();
//!     pack_sdk::testing::check_result(&Output { notes: vec![], ..sample() }).unwrap();
//! }
//! ```

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
    CallContext, CallContext_TO, CallResult, Catalog, CatalogTool, ContentResult, Example,
    FunctionSpec, Host, Host_TO, LogLevel, Owner, PackBox, WireError, codes, projects::Project,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::{PackDef, PackError, def::output_schema};

/// A pack running in-process, called as any caller you choose. See the
/// [module](self) docs.
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
                format!(
                    "pack `{}` has no function `{function}` (has: {})",
                    self.name,
                    self.functions
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
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
                })
                .collect(),
            packs: BTreeMap::from([(self.name.clone(), String::new())]),
            aliases: BTreeMap::new(),
            projects: visible,
            identity: Some(self.identity.clone()),
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
    /// result that holds the example's (see [`Example::result`]); the error
    /// lists every one that did not, with what it expected and got.
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
        let pack = crate::ffi::instantiate(def, self.config, host)?;
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

/// `value` (an `R`) against the output schema the SDK lists for a function
/// returning `R`.
pub fn check_result<R: Serialize + JsonSchema>(value: &R) -> Result<(), String> {
    let value = serde_json::to_value(value).map_err(|e| format!("not JSON: {e}"))?;
    check_value::<R>(&value)
}

/// The result shape a failure carries ([`PackError::with_result`]) against
/// the output schema of `R`, the function's result type. A failure without
/// one passes.
pub fn check_failure<R: JsonSchema>(error: &PackError) -> Result<(), String> {
    match error.clone().into_wire().result {
        Some(value) => check_value::<R>(&value),
        None => Ok(()),
    }
}

fn check_value<R: JsonSchema>(value: &Value) -> Result<(), String> {
    let schema = output_schema::<R>()?;
    let validator = validator(&schema)?;
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("at `{}`: {e}", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{value} does not fit the output schema of `{}` {schema}: {}",
            std::any::type_name::<R>(),
            errors.join("; ")
        ))
    }
}

/// Every function of the pack `build` makes: its schemas are object schemas
/// that compile (draft 2020-12), with no boolean property schemas (which the
/// TypeScript SDK's client refuses); its examples' arguments fit its input
/// schema; its annotations do not contradict each other (read-only yet
/// destructive).
pub fn check_manifest<S: Send + Sync + 'static>(build: fn() -> PackDef<S>) -> Result<(), String> {
    let manifest = build().manifest("0.0.0");
    for function in &manifest.functions {
        let at = format!("`{}.{}`", manifest.name, function.name);
        for (what, schema) in [
            ("input", &function.input_schema),
            ("output", &function.output_schema),
        ] {
            check_schema(schema).map_err(|e| format!("{at} {what} schema: {e}"))?;
        }
        let input = validator(&function.input_schema)?;
        for (n, Example { args, .. }) in function.examples.iter().enumerate() {
            let problems: Vec<String> = input.iter_errors(args).map(|e| e.to_string()).collect();
            if !problems.is_empty() {
                return Err(format!(
                    "{at} example {}: its arguments {args} do not fit the input schema: {}",
                    n + 1,
                    problems.join("; ")
                ));
            }
        }
        let hints = &function.annotations;
        if hints.read_only == Some(true) && hints.destructive == Some(true) {
            return Err(format!("{at} is said to be read-only and destructive"));
        }
    }
    Ok(())
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

/// `block` is an MCP content block: `text`, `image`, `audio`,
/// `resource_link` or `resource`, with the keys its type needs.
pub fn check_block(block: &Value) -> Result<(), String> {
    let needs: &[&str] = match block["type"].as_str() {
        Some("text") => &["text"],
        Some("image" | "audio") => &["data", "mimeType"],
        Some("resource_link") => &["uri", "name"],
        Some("resource") => &["resource"],
        _ => {
            return Err(format!(
                "{block} is not an MCP content block (`type` text, image, audio, resource_link or resource)"
            ));
        }
    };
    match needs.iter().find(|key| block.get(**key).is_none()) {
        None => Ok(()),
        Some(key) => Err(format!("content block {block} has no `{key}`")),
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// A tool's input or output schema as the official MCP clients take it: an
/// object schema (`"type": "object"` at the root), object schemas under
/// `properties` (the TypeScript client refuses a whole `tools/list` with a
/// boolean there), and it compiles (draft 2020-12).
pub fn check_schema(schema: &Value) -> Result<(), String> {
    if schema["type"] != "object" {
        return Err(format!("the root is not \"type\": \"object\": {schema}"));
    }
    if let Some(properties) = schema.get("properties") {
        let Some(properties) = properties.as_object() else {
            return Err(format!("`properties` is not an object: {schema}"));
        };
        if let Some((name, _)) = properties.iter().find(|(_, s)| !s.is_object()) {
            return Err(format!(
                "property `{name}` has a boolean schema, not an object: {schema}"
            ));
        }
    }
    validator(schema).map(drop)
}

fn validator(schema: &Value) -> Result<Validator, String> {
    jsonschema::draft202012::new(schema).map_err(|e| format!("the schema does not compile: {e}"))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::{
        Context, Empty,
        owned::{Kind, Limits, Share, Table},
    };

    /// A pack of notes, each its creator's.
    struct Notes(Table<String>);

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Write {
        /// The text.
        text: String,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Read {
        /// A note id.
        id: String,
    }

    #[derive(Serialize, JsonSchema)]
    struct Note {
        id: String,
        text: String,
    }

    #[derive(Serialize, JsonSchema)]
    struct Misfit {
        count: u32,
    }

    async fn write(notes: Arc<Notes>, args: Write, ctx: Context) -> Result<Note, PackError> {
        let slot = notes.0.reserve(&ctx.owner())?;
        let id = format!("n{}", args.text.len());
        slot.insert(id.clone(), vec![], args.text.clone());
        Ok(Note {
            id,
            text: args.text,
        })
    }

    async fn read(notes: Arc<Notes>, args: Read, ctx: Context) -> Result<Note, PackError> {
        let note = notes.0.get(&ctx.owner(), &args.id)?;
        Ok(Note {
            id: args.id,
            text: note.value().clone(),
        })
    }

    async fn misfit(_: Arc<Notes>, _: Empty, _: Context) -> Result<Misfit, PackError> {
        Err(PackError::internal("x").with_result(&json!({"count": "many"})))
    }

    fn notes() -> PackDef<Notes> {
        PackDef::new("notes", "Notes", |_: Empty, _| {
            let limits = Limits {
                max: 4,
                per_owner: 2,
            };
            Ok(Notes(Table::new(
                Kind::sessions("write one"),
                Share::User,
                limits,
            )?))
        })
        .function("write", "Write a note", write)
        .function("read", "Read a note", read)
        .function("misfit", "A failure whose shape does not fit", misfit)
    }

    #[tokio::test]
    async fn calls_run_as_the_caller_given() {
        let pack = PackTest::build(notes).start().unwrap();
        let (ada, eve) = (Owner::new("acme", "ada"), Owner::new("evil", "eve"));
        let note = pack
            .call(&ada, "write", json!({"text": "hi"}))
            .await
            .unwrap();
        assert_eq!(note, json!({"id": "n2", "text": "hi"}));
        let read = json!({"id": "n2"});
        assert_eq!(
            pack.call(&ada, "read", read.clone()).await.unwrap()["text"],
            "hi"
        );
        let err = pack.call(&eve, "read", read).await.unwrap_err();
        assert_eq!(err.code(), codes::SESSION_NOT_FOUND);
        assert_eq!(err.help(), Some("write one"));
    }

    #[tokio::test]
    async fn arguments_are_checked_as_the_host_checks_them() {
        let pack = PackTest::build(notes).start().unwrap();
        let ada = Owner::new("acme", "ada");
        let err = pack
            .call(&ada, "write", json!({"txt": 1}))
            .await
            .unwrap_err();
        assert_eq!(err.code(), codes::INVALID_ARGUMENT);
        assert!(err.message().starts_with("`notes.write`: "), "{err}");
        let err = pack.call(&ada, "wirte", json!({})).await.unwrap_err();
        assert_eq!(err.code(), codes::UNKNOWN_FUNCTION);
        assert!(
            err.message().contains("(has: misfit, read, write)"),
            "{err}"
        );
    }

    #[tokio::test]
    #[should_panic(expected = "does not fit the output schema")]
    async fn a_failure_shape_that_does_not_fit_fails_the_test() {
        let pack = PackTest::build(notes).start().unwrap();
        let _ = pack.call(&Owner::new("a", "b"), "misfit", json!({})).await;
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Add {
        /// A number.
        a: i64,
        /// Another.
        b: i64,
    }

    #[derive(Serialize, JsonSchema)]
    struct Sum {
        sum: i64,
        terms: Vec<i64>,
    }

    async fn add(_: Arc<()>, args: Add, _: Context) -> Result<Sum, PackError> {
        Ok(Sum {
            sum: args.a + args.b,
            terms: vec![args.a, args.b],
        })
    }

    #[derive(Serialize, JsonSchema)]
    struct Plot {
        caption: String,
    }

    async fn plot(_: Arc<()>, _: Empty, _: Context) -> Result<crate::Content<Plot>, PackError> {
        Ok(crate::Content::new(Plot {
            caption: "one pixel".into(),
        })
        .text("a plot (the image follows)")
        .image("image/png", "AA==")
        .link(crate::Link::new("file:///tmp/plot.png", "plot.png").mime_type("image/png")))
    }

    fn math() -> PackDef<()> {
        PackDef::new("math", "Sums", |_: Empty, _| Ok(()))
            .function_with(
                crate::Function::new("add", "Add two numbers", add)
                    .title("Add numbers")
                    .read_only()
                    .closed_world()
                    .example(json!({"a": 2, "b": 40}), json!({"sum": 42}))
                    .example(
                        json!({"a": -1, "b": 1}),
                        json!({"sum": 0, "terms": [-1, 1]}),
                    )
                    .timeout(std::time::Duration::from_millis(1500)),
            )
            .function_with(crate::Function::new("plot", "A plot", plot).title("Plot"))
            .function("plain", "No metadata", add)
    }

    /// A pack whose example is wrong: what a test of it must catch.
    fn wrong_math() -> PackDef<()> {
        PackDef::new("math", "Sums", |_: Empty, _| Ok(())).function_with(
            crate::Function::new("add", "Add", add)
                .example(json!({"a": 2, "b": 2}), json!({"sum": 5})),
        )
    }

    #[test]
    fn a_function_says_its_metadata_in_the_manifest() {
        let manifest = math().manifest("1.0.0");
        let add = serde_json::to_value(&manifest.functions[0]).unwrap();
        assert_eq!(add["title"], "Add numbers");
        assert_eq!(
            add["annotations"],
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
        );
        assert_eq!(
            add["examples"][0],
            json!({"args": {"a": 2, "b": 40}, "result": {"sum": 42}})
        );
        assert_eq!(add["timeout_ms"], 1500);
        assert!(add.get("content").is_none(), "{add}");
        let plot = serde_json::to_value(&manifest.functions[1]).unwrap();
        assert_eq!(
            (plot["content"].clone(), plot["title"].clone()),
            (json!(true), json!("Plot"))
        );
        // The output schema is the value's, not the envelope's.
        assert_eq!(plot["output_schema"]["required"], json!(["caption"]));
        // A plain function writes what it always did.
        let plain = serde_json::to_value(&manifest.functions[2]).unwrap();
        let keys: Vec<&String> = plain.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["name", "description", "input_schema", "output_schema"]
        );
        check_manifest(math).unwrap();
    }

    #[test]
    fn annotations_say_all_four_hints_and_keep_idempotence_when_given() {
        let spec = |f: crate::Function<()>| f.into_parts("p").0.annotations;
        let delete = spec(
            crate::Function::new("d", "", add)
                .idempotent()
                .destructive()
                .open_world(),
        );
        assert_eq!(
            (
                delete.read_only,
                delete.destructive,
                delete.idempotent,
                delete.open_world
            ),
            (Some(false), Some(true), Some(true), Some(true))
        );
        let create = spec(crate::Function::new("c", "", add).additive().closed_world());
        assert_eq!(
            (
                create.read_only,
                create.destructive,
                create.idempotent,
                create.open_world
            ),
            (Some(false), Some(false), Some(false), Some(false))
        );
    }

    #[tokio::test]
    async fn content_comes_back_beside_the_value() {
        let pack = PackTest::build(math).start().unwrap();
        let ada = Owner::new("acme", "ada");
        // Code mode's view: the value alone.
        let value = pack.call(&ada, "plot", json!({})).await.unwrap();
        assert_eq!(value, json!({"caption": "one pixel"}));
        let content = pack.call_content(&ada, "plot", json!({})).await.unwrap();
        assert_eq!(content.text.as_deref(), Some("a plot (the image follows)"));
        assert_eq!(
            content.blocks,
            [
                json!({"type": "image", "mimeType": "image/png", "data": "AA=="}),
                json!({"type": "resource_link", "uri": "file:///tmp/plot.png", "name": "plot.png", "mimeType": "image/png"}),
            ]
        );
        assert!(check_block(&json!({"type": "image", "data": "AA=="})).is_err());
        assert!(check_block(&json!({"type": "video"})).is_err());
    }

    #[test]
    fn examples_run_as_tests_of_the_pack() {
        check_examples(math).unwrap();
        let error = check_examples(wrong_math).unwrap_err();
        assert!(
            error
                .starts_with("`math.add` example 1 ({\"a\":2,\"b\":2}): expected a result holding"),
            "{error}"
        );
        assert!(
            error.contains("\"sum\": 5") && error.contains("\"sum\": 4"),
            "{error}"
        );
    }

    #[test]
    fn an_example_whose_arguments_do_not_fit_is_refused() {
        fn bad() -> PackDef<()> {
            PackDef::new("math", "Sums", |_: Empty, _| Ok(())).function_with(
                crate::Function::new("add", "Add", add).example(json!({"a": "2"}), json!({})),
            )
        }
        let error = check_manifest(bad).unwrap_err();
        assert!(
            error.starts_with("`math.add` example 1: its arguments"),
            "{error}"
        );
    }
}

/// Callers for ownership tests: two users of one organisation (`ada` and
/// `bob` of `acme`) and one of another (`eve` of `evil`).
pub mod callers {
    use crate::owned::Owner;

    /// `ada` of `acme`.
    pub fn ada() -> Owner {
        Owner::new("acme", "ada")
    }

    /// `bob` of `acme`, ada's colleague.
    pub fn bob() -> Owner {
        Owner::new("acme", "bob")
    }

    /// `eve` of `evil`, another organisation.
    pub fn eve() -> Owner {
        Owner::new("evil", "eve")
    }
}
