//! Declaring a pack: its name, its state built from config, its functions.

use std::{future::Future, sync::Arc};

use pack_api::{FunctionSpec, Manifest};
use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{
    Context, Function, FunctionResult, Host, PackError,
    function::{BoxFuture, Handler},
};

type Init<S> = Box<dyn Fn(Value, Host) -> Result<S, PackError> + Send + Sync>;
pub(crate) type Shutdown<S> = Arc<dyn Fn(Arc<S>) -> BoxFuture<()> + Send + Sync>;

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
