//! One function of a pack with what it says about itself (title,
//! annotations, examples, its own time limit), and results that carry
//! content blocks (images, resource links) beside their value.

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use pack_api::{Annotations, ContentResult, Example, FunctionSpec, TaskSupport};
use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

use crate::{
    Block, Context, Link, PackError,
    schema::{input_schema, object_result, output_schema},
};

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
/// A function as the pack's table holds it: state, JSON arguments and the
/// call's context in, a JSON result out.
pub(crate) type Handler<S> =
    Arc<dyn Fn(Arc<S>, Value, Context) -> BoxFuture<Result<Value, PackError>> + Send + Sync>;

/// A function and its metadata, added with
/// [`PackDef::function_with`](crate::PackDef::function_with). Everything
/// but the name, description and handler is optional:
///
/// ```
/// # use std::{sync::Arc, time::Duration};
/// # use pack_sdk::{Context, Empty, Function, PackDef, PackError, json};
/// # #[derive(serde::Deserialize, schemars::JsonSchema)]
/// # struct Args { name: String }
/// # #[derive(serde::Serialize, schemars::JsonSchema)]
/// # struct Greeting { text: String }
/// # async fn greet(_: Arc<()>, a: Args, _: Context) -> Result<Greeting, PackError> {
/// #     Ok(Greeting { text: format!("hello, {}", a.name) })
/// # }
/// PackDef::new("hello", "Greets people", |_: Empty, _| Ok(()))
///     .function_with(
///         Function::new("greet", "Greet someone by name", greet)
///             .title("Greet someone")
///             .read_only()
///             .closed_world()
///             .example(json!({"name": "Ada"}), json!({"text": "hello, Ada"}))
///             .timeout(Duration::from_secs(5)),
///     );
/// ```
///
/// Annotations are MCP's hints to clients (whether to ask the user before a
/// call): say all four, truthfully. [`Self::read_only`] says it changes
/// nothing; otherwise [`Self::additive`] (it only adds) or
/// [`Self::destructive`] (it may delete or overwrite), with
/// [`Self::idempotent`] when repeating a call changes nothing more; then
/// [`Self::open_world`] (network, other services, arbitrary code) or
/// [`Self::closed_world`].
///
/// Examples are calls with what their result holds (see
/// [`Example::result`]: the keys given, compared recursively). The
/// host shows them to models; [`testing`](crate::testing)'s
/// `check_examples` runs them as a test of the pack, and `check_manifest`
/// checks their arguments against the input schema.
pub struct Function<S> {
    spec: FunctionSpec,
    /// What is wrong with its types' schemas, said with the pack's name
    /// when it is added.
    problem: Option<String>,
    /// The handler, once the pack's name is known (its errors name it).
    make: Box<dyn FnOnce(&'static str) -> Handler<S>>,
}

impl<S: Send + Sync + 'static> Function<S> {
    /// Function `name` doing `f`. `A` gives the input schema (doc comments
    /// become descriptions), `R` the output schema (or, for a [`Content`],
    /// its value's type). Both must be JSON objects (structs, maps, or
    /// `serde_json::Value` holding an object): adding the function panics
    /// otherwise, which the host reports as a load error. A failure that
    /// keeps the result shape ([`PackError::with_result`]) must pass an `R`
    /// (the value's type) too.
    pub fn new<A, R, F, Fut>(name: &'static str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        R: FunctionResult,
        F: Fn(Arc<S>, A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, PackError>> + Send + 'static,
    {
        let (input, output) = (input_schema::<A>(), output_schema::<R::Value>());
        let problem = input.as_ref().err().or(output.as_ref().err()).cloned();
        let spec = FunctionSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: input.unwrap_or_default(),
            output_schema: output.unwrap_or_default(),
            content: R::CONTENT,
            ..FunctionSpec::default()
        };
        let make = move |pack: &'static str| -> Handler<S> {
            let f = Arc::new(f);
            Arc::new(move |state, args, ctx| {
                let f = Arc::clone(&f);
                Box::pin(async move {
                    let args: A = serde_json::from_value(args).map_err(|e| {
                        PackError::invalid_argument(format!("arguments of `{name}`: {e}"))
                    })?;
                    let result = f(state, args, ctx).await?;
                    let (value, content) = result.into_parts();
                    let value = serde_json::to_value(value).map_err(|e| {
                        PackError::internal(format!("result of `{name}` is not JSON: {e}"))
                    })?;
                    let value = object_result(pack, name, value)?;
                    match content {
                        None => Ok(value),
                        Some(ContentParts { text, blocks }) => Ok(json!(ContentResult {
                            value,
                            text,
                            blocks
                        })),
                    }
                })
            })
        };
        Self {
            spec,
            problem,
            make: Box::new(make),
        }
    }

    /// Its input schema as written, instead of the one made from `A`: for
    /// what a Rust type cannot say (`$defs` with `$anchor`, `allOf`, `if`/
    /// `then`/`else`, `$schema`), served to clients unchanged. It must be
    /// an object schema (adding the function panics otherwise, as for
    /// `A`); `A` still decodes the arguments, so keep the two in agreement
    /// (`serde_json::Value` takes whatever the schema lets through).
    pub fn input_schema(mut self, mut schema: Value) -> Self {
        match schema.get("type") {
            None if schema.is_object() => schema["type"] = Value::from("object"),
            Some(t) if t == "object" => {}
            _ => {
                self.problem = Some(format!(
                    "its input schema as written is `{schema}`, but MCP's arguments are an \
                     object: give a schema with `\"type\": \"object\"` at its root"
                ));
            }
        }
        self.spec.input_schema = schema;
        self
    }

    /// A short name for people ("Read a file"): MCP's tool `title`.
    pub fn title(mut self, title: &str) -> Self {
        self.spec.title = Some(title.to_owned());
        self
    }

    /// It changes nothing (so it is neither destructive nor, in effect,
    /// anything but idempotent).
    pub fn read_only(mut self) -> Self {
        self.spec.annotations.read_only = Some(true);
        self.spec.annotations.destructive = Some(false);
        self.spec.annotations.idempotent = Some(true);
        self
    }

    /// It changes things, but only adds: nothing is deleted or overwritten.
    /// Not idempotent unless [`Self::idempotent`] says so.
    pub fn additive(self) -> Self {
        self.writes(false)
    }

    /// It may delete or overwrite something. Not idempotent unless
    /// [`Self::idempotent`] says so.
    pub fn destructive(self) -> Self {
        self.writes(true)
    }

    fn writes(mut self, destructive: bool) -> Self {
        let annotations = &mut self.spec.annotations;
        annotations.read_only = Some(false);
        annotations.destructive = Some(destructive);
        annotations.idempotent.get_or_insert(false);
        self
    }

    /// Calling it again with the same arguments has no further effect.
    pub fn idempotent(mut self) -> Self {
        self.spec.annotations.idempotent = Some(true);
        self
    }

    /// It reaches an open world: the network, other services, or code that
    /// can do anything.
    pub fn open_world(mut self) -> Self {
        self.spec.annotations.open_world = Some(true);
        self
    }

    /// Its effects stay in a closed domain (its pack's own state, the
    /// project files).
    pub fn closed_world(mut self) -> Self {
        self.spec.annotations.open_world = Some(false);
        self
    }

    /// Every annotation at once, as given.
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.spec.annotations = annotations;
        self
    }

    /// A call with `args` whose result holds `result` (see
    /// [`Example::result`]).
    pub fn example(self, args: Value, result: Value) -> Self {
        self.example_with(Example {
            args,
            result,
            description: None,
        })
    }

    /// An example with its description.
    pub fn example_with(mut self, example: Example) -> Self {
        self.spec.examples.push(example);
        self
    }

    /// Its own time limit: the host cuts a call at the smaller of this and
    /// its pack's `timeout_ms` (a pack can shorten a function's time, never
    /// lengthen what the host's admin allows).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.spec.timeout_ms = Some(u64::try_from(limit.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// A client capability every call needs (`"elicitation"`, `"sampling"`,
    /// `"roots"`): a client that did not declare it gets MCP's error
    /// -32021 and the function does not run. A function that only may ask
    /// need not say it: its question fails with `INPUT_UNAVAILABLE`.
    pub fn needs(mut self, capability: &str) -> Self {
        self.spec.needs.push(capability.to_owned());
        self
    }

    /// Whether its calls run as MCP tasks for clients that negotiated the
    /// tasks extension (see [`TaskSupport`]): say
    /// [`TaskSupport::Optional`] for calls that can take long, so a client
    /// polls for the result instead of holding a request open.
    pub fn tasks(mut self, support: TaskSupport) -> Self {
        self.spec.task_support = support;
        self
    }

    /// Its calls ask their questions before their long work: a call from
    /// a 2026-07-28 client that negotiated tasks then asks by rounds
    /// (`input_required` results its retries answer) and goes on as a task
    /// once answered, instead of being a task from the start whose
    /// questions go through `tasks/update`.
    pub fn asks_first(mut self) -> Self {
        self.spec.asks_first = true;
        self
    }

    /// The spec and the handler for pack `pack`; panics on a type that is
    /// not an object (the host reports it as the pack's load error).
    pub(crate) fn into_parts(self, pack: &'static str) -> (FunctionSpec, Handler<S>) {
        if let Some(problem) = self.problem {
            panic!("function `{pack}.{}`: {problem}", self.spec.name);
        }
        (self.spec, (self.make)(pack))
    }
}

/// A result with the content blocks an MCP client shows beside it: images,
/// resource links, a text of its own. Return `Content<R>` instead of `R`
/// from a function; its output schema is still `R`'s, and code mode still
/// gets the `R`.
///
/// ```
/// # use std::sync::Arc;
/// # use pack_sdk::{Content, Context, Empty, PackError};
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Plot {
///     caption: String,
/// }
///
/// async fn plot(_: Arc<()>, _: Empty, _: Context) -> Result<Content<Plot>, PackError> {
///     let png_base64 = "iVBORw0KGgo...".to_owned();
///     Ok(Content::new(Plot { caption: "sales by month".into() })
///         .text("A plot of sales by month (the image follows).")
///         .image("image/png", png_base64))
/// }
/// ```
///
/// What a client gets: the value as structured content; a text block (the
/// [`Self::text`] given, else the value as JSON, as for any function); then
/// the blocks in the order added. Put data a model should not read as text
/// (base64) only in blocks, or say [`Self::text`].
pub struct Content<R> {
    value: R,
    parts: ContentParts,
}

/// Not public API: the text and blocks of a [`Content`].
#[doc(hidden)]
#[derive(Default)]
pub struct ContentParts {
    text: Option<String>,
    blocks: Vec<Value>,
}

impl<R> Content<R> {
    /// `value` with no blocks yet.
    pub fn new(value: R) -> Self {
        Self {
            value,
            parts: ContentParts::default(),
        }
    }

    /// What a model reads instead of the value's JSON; `""` for no text
    /// block at all.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.parts.text = Some(text.into());
        self
    }

    /// An image block: base64 `data` of type `mime_type` (`image/png`).
    pub fn image(self, mime_type: &str, data_base64: impl Into<String>) -> Self {
        self.block(Block::image(mime_type, data_base64).into_value())
    }

    /// An audio block: base64 `data` of type `mime_type` (`audio/wav`).
    pub fn audio(self, mime_type: &str, data_base64: impl Into<String>) -> Self {
        self.block(Block::audio(mime_type, data_base64).into_value())
    }

    /// A resource embedded whole: text of type `mime_type` at `uri` (a
    /// client shows or keeps it as that resource, without reading it).
    pub fn resource_text(self, uri: &str, mime_type: &str, text: impl Into<String>) -> Self {
        self.block(Block::resource_text(uri, mime_type, text).into_value())
    }

    /// A resource embedded whole: base64 `blob` of type `mime_type` at
    /// `uri`.
    pub fn resource_blob(self, uri: &str, mime_type: &str, blob_base64: impl Into<String>) -> Self {
        self.block(Block::resource_blob(uri, mime_type, blob_base64).into_value())
    }

    /// A link to a resource the client can read (`resources/read`) or open.
    pub fn link(self, link: Link) -> Self {
        self.block(Block::link(link).into_value())
    }

    /// Any MCP content block, in MCP's JSON (`{"type": "text", "text":
    /// ...}`, `image`, `audio`, `resource_link`, `resource`). The host
    /// refuses a result whose blocks are not MCP's (an `INTERNAL` failure).
    pub fn block(mut self, block: Value) -> Self {
        self.parts.blocks.push(block);
        self
    }
}

/// What a function may return: a value whose type gives the output schema,
/// or a [`Content`] around one. Implemented for every
/// `Serialize + JsonSchema` type and for `Content`; not for your own.
pub trait FunctionResult: sealed::Sealed + Send + 'static {
    /// The type of the structured value: its schema is the output schema.
    type Value: Serialize + JsonSchema;
    /// Whether results carry content blocks (`content` in the manifest).
    const CONTENT: bool;
    #[doc(hidden)]
    fn into_parts(self) -> (Self::Value, Option<ContentParts>);
}

impl<T: Serialize + JsonSchema + Send + 'static> FunctionResult for T {
    type Value = T;
    const CONTENT: bool = false;

    fn into_parts(self) -> (T, Option<ContentParts>) {
        (self, None)
    }
}

impl<R: Serialize + JsonSchema + Send + 'static> FunctionResult for Content<R> {
    type Value = R;
    const CONTENT: bool = true;

    fn into_parts(self) -> (R, Option<ContentParts>) {
        (self.value, Some(self.parts))
    }
}

mod sealed {
    pub trait Sealed {}
    impl<T: serde::Serialize + schemars::JsonSchema> Sealed for T {}
    impl<R> Sealed for super::Content<R> {}
}
