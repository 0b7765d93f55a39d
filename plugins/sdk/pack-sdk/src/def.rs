//! Declaring a pack: its name, its state built from config, its functions.

use std::{future::Future, sync::Arc};

use pack_api::{FunctionSpec, Manifest};
use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

use crate::{
    Completing, Context, Function, FunctionResult, Host, PackError, Prompt, PromptResult,
    ReadRequest, Resource, ResourceContents, Template,
    function::{BoxFuture, Handler},
    offers::{Offers, completion, handler},
};

type Init<S> = Box<dyn Fn(Value, Host) -> Result<S, PackError> + Send + Sync>;
pub(crate) type Shutdown<S> = Arc<dyn Fn(Arc<S>) -> BoxFuture<()> + Send + Sync>;

/// Pack `name`'s `config` refused with serde's `message`: a value of the
/// wrong type in plain words, naming its key when it can be found.
fn config_error(name: &str, config: &Value, message: &str) -> PackError {
    use pack_api::wording::{invalid_type, key_of, wrong_type};
    let what = match invalid_type(message) {
        Some((got, expected)) => {
            let key = key_of(config, got).unwrap_or_else(|| "value".to_owned());
            wrong_type(&key, got, expected)
        }
        None => message.to_owned(),
    };
    PackError::invalid_argument(format!("config of pack `{name}`: {what}"))
        .with_help(format!("fix `config` of `[packs.{name}]` in packs.toml"))
}

/// A whole pack: built by the function given to [`export_pack!`](crate::export_pack).
///
/// Its state (`S`) is made once from the pack's `config` table and shared by
/// every call; [`Self::on_shutdown`] releases what it holds:
///
/// ```
/// use std::{collections::BTreeMap, sync::{Arc, Mutex}};
/// use pack_sdk::{Context, Empty, PackDef, PackError};
///
/// /// `[packs.counter] config = { start = 10 }`
/// #[derive(serde::Deserialize)]
/// #[serde(deny_unknown_fields)]
/// struct Config {
///     #[serde(default)]
///     start: u64,
/// }
///
/// struct Counter {
///     start: u64,
///     counts: Mutex<BTreeMap<String, u64>>,
/// }
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Count {
///     /// How many times this user has counted, plus the configured start.
///     count: u64,
/// }
///
/// async fn count(state: Arc<Counter>, _: Empty, ctx: Context) -> Result<Count, PackError> {
///     let mut counts = state.counts.lock().unwrap();
///     let n = counts.entry(ctx.user()).or_insert(state.start);
///     *n += 1;
///     Ok(Count { count: *n })
/// }
///
/// fn counter() -> PackDef<Counter> {
///     PackDef::new("counter", "Counts calls per user", |config: Config, _host| {
///         Ok(Counter { start: config.start, counts: Mutex::default() })
///     })
///     .function("count", "Count one more call of yours", count)
///     .on_shutdown(|state: Arc<Counter>| async move { state.counts.lock().unwrap().clear() })
/// }
///
/// pack_sdk::export_pack!(counter);
/// ```
pub struct PackDef<S> {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) init: Init<S>,
    pub(crate) functions: Vec<(FunctionSpec, Handler<S>)>,
    pub(crate) offers: Offers<S>,
    pub(crate) shutdown: Option<Shutdown<S>>,
    pub(crate) shares_state: bool,
    pub(crate) ready: Option<Handler<S>>,
}

impl<S: Send + Sync + 'static> PackDef<S> {
    /// A pack named `name` (an identifier: its functions are called
    /// `name.function`) whose state is built by `init` from the `config` table
    /// of its `[packs.<name>]` section. Use [`Empty`] when there is no config.
    pub fn new<C>(
        name: &'static str,
        description: &'static str,
        init: impl Fn(C, Host) -> Result<S, PackError> + Send + Sync + 'static,
    ) -> Self
    where
        C: DeserializeOwned,
    {
        Self {
            name,
            description,
            init: Box::new(move |config, host| {
                let given = config.clone();
                let config = serde_json::from_value(config)
                    .map_err(|e| config_error(name, &given, &e.to_string()))?;
                init(config, host)
            }),
            functions: Vec::new(),
            offers: Offers::default(),
            shutdown: None,
            shares_state: false,
            ready: None,
        }
    }

    /// Add a function: `f` under `name`, described for models. `A` gives the
    /// input schema (doc comments become descriptions), `R` the output
    /// schema. Both must be JSON objects (structs, maps, or
    /// `serde_json::Value` holding an object): building the pack panics
    /// otherwise, which the host reports as a load error. A failure that
    /// keeps the result shape ([`PackError::with_result`]) must pass an `R`
    /// too. [`Self::function_with`] adds one with a title, annotations,
    /// examples or its own time limit.
    pub fn function<A, R, F, Fut>(self, name: &'static str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        R: FunctionResult,
        F: Fn(Arc<S>, A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, PackError>> + Send + 'static,
    {
        self.function_with(Function::new(name, description, f))
    }

    /// Add a function with what it says about itself (see [`Function`]).
    pub fn function_with(mut self, function: Function<S>) -> Self {
        self.functions.push(function.into_parts(self.name));
        self
    }

    /// Add a prompt, rendered by `render` from its arguments (`A`: an
    /// object of strings, such as a map or a struct of `String`s; [`Empty`]
    /// for none). Clients list it as `pack.prompt` (or `prompt` when the
    /// pack's section says `prefix = false`):
    ///
    /// ```
    /// # use std::{collections::BTreeMap, sync::Arc};
    /// # use pack_sdk::{Block, Context, Empty, PackDef, PackError, Prompt, PromptMessage, PromptResult};
    /// async fn review(
    ///     _: Arc<()>,
    ///     args: BTreeMap<String, String>,
    ///     _: Context,
    /// ) -> Result<PromptResult, PackError> {
    ///     let text = format!("Review {} for bugs.", args["file"]);
    ///     Ok(PromptResult::new(vec![PromptMessage::user(Block::text(text))]))
    /// }
    ///
    /// PackDef::new("code", "Code review", |_: Empty, _| Ok(()))
    ///     .prompt(Prompt::new("review", "Review a file").argument("file", "The file", true), review);
    /// ```
    pub fn prompt<A, F, Fut>(mut self, prompt: Prompt, render: F) -> Self
    where
        A: DeserializeOwned,
        F: Fn(Arc<S>, A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<PromptResult, PackError>> + Send + 'static,
    {
        let what = format!("arguments of prompt `{}`", prompt.spec.name);
        let render = handler(what, render, PromptResult::into_value);
        self.offers.prompts.push((prompt.spec, render));
        self
    }

    /// Add a resource at a fixed URI, read by `read`:
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use pack_sdk::{Context, Empty, PackDef, PackError, ReadRequest, Resource, ResourceContents};
    /// async fn motd(_: Arc<()>, read: ReadRequest, _: Context) -> Result<Vec<ResourceContents>, PackError> {
    ///     Ok(vec![ResourceContents::text(&read.uri, "text/plain", "Welcome.")])
    /// }
    ///
    /// PackDef::new("notes", "Notes", |_: Empty, _| Ok(()))
    ///     .resource(Resource::new("notes://motd", "motd").mime_type("text/plain"), motd);
    /// ```
    pub fn resource<F, Fut>(mut self, resource: Resource, read: F) -> Self
    where
        F: Fn(Arc<S>, ReadRequest, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, PackError>> + Send + 'static,
    {
        let read = handler(format!("read of `{}`", resource.spec.uri), read, contents);
        self.offers.resources.push((resource.spec, read));
        self
    }

    /// Add a resource template: `read` reads every URI that fits it, with
    /// the template's variables in [`ReadRequest::variables`].
    pub fn resource_template<F, Fut>(mut self, template: Template, read: F) -> Self
    where
        F: Fn(Arc<S>, ReadRequest, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, PackError>> + Send + 'static,
    {
        let what = format!("read of `{}`", template.spec.uri_template);
        let read = handler(what, read, contents);
        self.offers.templates.push((template.spec, read));
        self
    }

    /// Complete the arguments of prompt `prompt`: `complete` gives the
    /// values that fit what was typed (the first 100 are sent).
    pub fn complete_prompt<F, Fut>(mut self, prompt: &str, complete: F) -> Self
    where
        F: Fn(Arc<S>, Completing, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, PackError>> + Send + 'static,
    {
        let what = format!("completion of prompt `{prompt}`");
        self.offers
            .complete_prompt(prompt, handler(what, complete, completion));
        self
    }

    /// Complete the variables of the template `uri_template` (as given to
    /// [`Template::new`]).
    pub fn complete_template<F, Fut>(mut self, uri_template: &str, complete: F) -> Self
    where
        F: Fn(Arc<S>, Completing, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, PackError>> + Send + 'static,
    {
        let what = format!("completion of `{uri_template}`");
        self.offers
            .complete_template(uri_template, handler(what, complete, completion));
        self
    }

    /// The pack keeps state that every instance behind a load balancer must
    /// find: [`Host::state_database`] then says where, when the host shares
    /// state (`[state] database`).
    pub fn shares_state(mut self) -> Self {
        self.shares_state = true;
        self
    }

    /// Say whether the pack can serve calls now, for the host's `GET
    /// /readyz`: `f` answers `Err` naming what does not answer (a server the
    /// pack depends on). Asked often and with no caller: keep it cheap.
    pub fn ready<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Arc<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), PackError>> + Send + 'static,
    {
        let check = move |state, _: Empty, _: Context| f(state);
        self.ready = Some(handler("readiness".to_owned(), check, |()| json!({})));
        self
    }

    /// Run `f` once when the host shuts down (kill child processes, close
    /// connections).
    pub fn on_shutdown<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Arc<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.shutdown = Some(Arc::new(move |state| Box::pin(f(state))));
        self
    }

    pub(crate) fn manifest(&self, version: &str) -> Manifest {
        Manifest {
            name: self.name.to_owned(),
            version: version.to_owned(),
            description: self.description.to_owned(),
            functions: self
                .functions
                .iter()
                .map(|(spec, _)| spec.clone())
                .collect(),
            prompts: specs(&self.offers.prompts),
            resources: specs(&self.offers.resources),
            resource_templates: specs(&self.offers.templates),
            offers_per_caller: self.offers.per_caller.is_some(),
            shares_state: self.shares_state,
            checks_ready: self.ready.is_some(),
        }
    }
}

fn specs<T: Clone, H>(offered: &[(T, H)]) -> Vec<T> {
    offered.iter().map(|(spec, _)| spec.clone()).collect()
}

/// MCP's `ReadResourceResult`.
fn contents(contents: Vec<ResourceContents>) -> Value {
    let contents: Vec<Value> = contents
        .into_iter()
        .map(ResourceContents::into_value)
        .collect();
    serde_json::json!({ "contents": contents })
}

/// Arguments of a function that takes none, or the config of a pack that has
/// none. Unknown keys are refused.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}
