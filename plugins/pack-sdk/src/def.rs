//! Declaring a pack: its name, its state built from config, its functions.

use std::{future::Future, pin::Pin, sync::Arc};

use pack_api::{FunctionSpec, Manifest};
use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{Context, Host, PackError};

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
pub(crate) type Handler<S> =
    Arc<dyn Fn(Arc<S>, Value, Context) -> BoxFuture<Result<Value, PackError>> + Send + Sync>;
type Init<S> = Box<dyn Fn(Value, Host) -> Result<S, PackError> + Send + Sync>;
pub(crate) type Shutdown<S> = Arc<dyn Fn(Arc<S>) -> BoxFuture<()> + Send + Sync>;

/// A whole pack: built by the function given to [`export_pack!`](crate::export_pack).
pub struct PackDef<S> {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) init: Init<S>,
    pub(crate) functions: Vec<(FunctionSpec, Handler<S>)>,
    pub(crate) shutdown: Option<Shutdown<S>>,
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
                let config = serde_json::from_value(config).map_err(|e| {
                    PackError::invalid_argument(format!("config of pack `{name}`: {e}"))
                })?;
                init(config, host)
            }),
            functions: Vec::new(),
            shutdown: None,
        }
    }

    /// Add a function. `A` gives the input schema (doc comments become
    /// descriptions), `R` the output schema.
    pub fn function<A, R, F, Fut>(mut self, name: &'static str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        R: Serialize + JsonSchema,
        F: Fn(Arc<S>, A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, PackError>> + Send + 'static,
    {
        let spec = FunctionSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: schema_for::<A>(),
            output_schema: schema_for::<R>(),
        };
        let f = Arc::new(f);
        let handler: Handler<S> = Arc::new(move |state, args, ctx| {
            let f = Arc::clone(&f);
            Box::pin(async move {
                let args: A = serde_json::from_value(args).map_err(|e| {
                    PackError::invalid_argument(format!("arguments of `{name}`: {e}"))
                })?;
                let result = f(state, args, ctx).await?;
                serde_json::to_value(result).map_err(|e| {
                    PackError::internal(format!("result of `{name}` is not JSON: {e}"))
                })
            })
        });
        self.functions.push((spec, handler));
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
        }
    }
}

/// Arguments of a function that takes none, or the config of a pack that has
/// none. Unknown keys are refused.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// Inline schema without the meta keys: models read these, and the host
/// renders signatures from `properties`.
fn schema_for<T: JsonSchema>() -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(object) = value.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    value
}
