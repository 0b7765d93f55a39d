//! What a pack function sees of the host.

use std::{collections::BTreeMap, path::PathBuf, sync::Arc};

use abi_stable::std_types::{RNone, ROption, RResult, RSome};
use pack_api::{CallContextBox, Catalog, HostBox, LogLevel, Owner, WireError};
use serde_json::Value;

use crate::{
    PackError,
    ask::Keys,
    catalogs::{self, SharedCatalog},
};

/// The host, for the pack's whole life: given to the pack's constructor.
#[derive(Clone)]
pub struct Host {
    inner: HostBox,
    state_database: Option<String>,
}

impl Host {
    pub(crate) fn new(inner: HostBox, state_database: Option<String>) -> Self {
        Self {
            inner,
            state_database,
        }
    }

    /// The configured projects (`[projects]` in `packs.toml`) that every
    /// organisation sees: name -> absolute path, whether or not the path
    /// exists. A project named for some organisations only is not here:
    /// [`Context::projects`] gives the projects one caller sees.
    pub fn projects(&self) -> BTreeMap<String, PathBuf> {
        serde_json::from_str(&self.inner.projects()).unwrap_or_default()
    }

    /// Write a log line attributed to the pack (stderr of the host, never the
    /// MCP channel).
    pub fn log(&self, level: LogLevel, message: &str) {
        self.inner.log(level, message.into());
    }

    /// The host's `[state] database` (`postgres://…`) when instances share
    /// state and the pack said it [`shares_state`](crate::PackDef::shares_state):
    /// a pack keeps there what every instance must find, such as its
    /// sessions. `None`: one instance, state stays in the process or on disk.
    pub fn state_database(&self) -> Option<&str> {
        self.state_database.as_deref()
    }
}

/// One call: who is calling, and a way to talk back to the host.
///
/// ```
/// use std::sync::Arc;
/// use pack_sdk::{Context, LogLevel, PackError, codes};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Args {
///     /// Files to index.
///     files: Vec<String>,
/// }
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Indexed {
///     indexed: usize,
/// }
///
/// async fn index(_: Arc<()>, args: Args, ctx: Context) -> Result<Indexed, PackError> {
///     ctx.log(LogLevel::Info, &format!("{} indexes {} files", ctx.owner(), args.files.len()));
///     let total = args.files.len() as f64;
///     for (n, file) in args.files.iter().enumerate() {
///         if ctx.is_cancelled() {
///             return Err(PackError::new(codes::CANCELLED, "the caller stopped waiting"));
///         }
///         ctx.progress(n as f64, Some(total), file);
///     }
///     Ok(Indexed { indexed: args.files.len() })
/// }
/// ```
#[derive(Clone)]
pub struct Context {
    inner: CallContextBox,
    /// Keys of the questions this call asks one at a time.
    keys: Arc<Keys>,
}

impl Context {
    pub(crate) fn new(inner: CallContextBox) -> Self {
        Self {
            inner,
            keys: Arc::default(),
        }
    }

    pub(crate) fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The calling user (set by the host from the transport's authentication,
    /// never from arguments).
    pub fn user(&self) -> String {
        self.inner.user().into()
    }

    /// The calling user's organisation.
    pub fn org(&self) -> String {
        self.inner.org().into()
    }

    /// The caller as an owner of state: organisation and user. What a pack
    /// keeps between calls belongs to it ([`owned`](crate::owned)).
    pub fn owner(&self) -> Owner {
        Owner::new(self.org(), self.user())
    }

    /// The MCP request id, as text.
    pub fn request_id(&self) -> String {
        self.inner.request_id().into()
    }

    /// Write a log line attributed to this call.
    pub fn log(&self, level: LogLevel, message: &str) {
        self.inner.log(level, message.into());
    }

    /// Report progress; the host forwards it to clients that asked for it.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: &str) {
        let total: ROption<f64> = match total {
            Some(t) => RSome(t),
            None => RNone,
        };
        self.inner.progress(progress, total, message.into());
    }

    /// How long until the host cuts this call (its time limit, or what is
    /// left of its caller's when code made it). A pack that bounds its own
    /// work by it can still answer with what it has.
    pub fn remaining(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.inner.remaining_ms())
    }

    /// Whether the client cancelled the call or it ran out of time. Long loops
    /// should check it; dropped futures are cancelled anyway.
    pub fn is_cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }

    /// Every tool this caller can reach (pack functions with signatures and
    /// schemas, aliases) and every project it may see: what code mode
    /// exposes. It is the whole list, as JSON: call it when needed, not on
    /// every call.
    pub fn catalog(&self) -> Catalog {
        self.shared_catalog().catalog().clone()
    }

    /// [`Context::catalog`] without a copy, with code's bindings written
    /// once: the same for every caller who sees the same catalog.
    pub fn shared_catalog(&self) -> Arc<SharedCatalog> {
        catalogs::shared(&self.inner.catalog())
    }

    /// The projects this caller may see (`[projects]`, less those named for
    /// other organisations): name -> absolute path. The host applies the
    /// rule; they stay the same for one organisation while the host runs,
    /// so a pack may keep them per [`Context::org`].
    pub fn projects(&self) -> BTreeMap<String, PathBuf> {
        let shared = self.shared_catalog();
        let projects = shared.outline().projects.iter();
        projects
            .map(|(name, path)| (name.clone(), path.into()))
            .collect()
    }

    /// The host's `[identity]`: who a call is when the transport does not
    /// say (stdio, HTTP without tokens). State a pack recorded before it
    /// recorded owners belongs to it
    /// ([`Ownership`](crate::owned::Ownership)). `None` from a host too old
    /// to say. It reads the [catalog](Self::catalog): keep it.
    pub fn host_identity(&self) -> Option<Owner> {
        self.shared_catalog().outline().identity.clone()
    }

    /// Call any tool the host serves (`pack.function`, an alias, `run`) with
    /// this call's identity.
    pub async fn call_tool(&self, name: &str, args: Value) -> Result<Value, PackError> {
        let args = args.to_string();
        let result = self
            .inner
            .call_tool(name.into(), args.as_str().into())
            .await;
        answer(name, result)
    }

    /// Call a pack function or an alias as code writes it, with positional
    /// and keyword arguments: the host binds and checks them, with the same
    /// messages as for `run`.
    pub async fn call_with(
        &self,
        name: &str,
        positional: &[Value],
        keywords: &serde_json::Map<String, Value>,
    ) -> Result<Value, PackError> {
        let positional = Value::from(positional.to_vec()).to_string();
        let keywords = Value::from(keywords.clone()).to_string();
        let result = self
            .inner
            .call_with(
                name.into(),
                positional.as_str().into(),
                keywords.as_str().into(),
            )
            .await;
        answer(name, result)
    }
}

/// A call's result as the host sent it.
fn answer(name: &str, result: pack_api::CallResult) -> Result<Value, PackError> {
    match result {
        RResult::ROk(json) => serde_json::from_str(&json).map_err(|e| {
            PackError::internal(format!("host returned invalid JSON for `{name}`: {e}"))
        }),
        RResult::RErr(json) => Err(match serde_json::from_str::<WireError>(&json) {
            Ok(wire) => PackError::from_wire(wire),
            Err(e) => {
                PackError::internal(format!("host returned an invalid error for `{name}`: {e}"))
            }
        }),
    }
}
