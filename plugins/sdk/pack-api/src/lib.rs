//! The packhost pack ABI.
//!
//! Who it is for: the host and the pack SDK. Pack authors use `pack-sdk`, which
//! hides everything here.
//!
//! A pack is a `cdylib` exporting one [`PackModule`] root module. The host loads
//! it with `abi_stable`, which checks at load time that both sides agree on the
//! layout of every type reachable from the root module, so a pack built against
//! another version of this crate is refused with a message instead of crashing.
//!
//! Data crosses as JSON strings: the manifest ([`Manifest`]), call arguments,
//! results and errors ([`WireError`]). The surface stays tiny on purpose: every
//! type here is frozen once released; new functions go after the
//! `last_prefix_field` markers. Such an addition lets a newer pack load in an
//! older host, not the reverse: measured with abi_stable 0.11.3, a host whose
//! `Host` vtable or root module gained a field refuses every pack built
//! before ("too many fields"). What older packs must keep loading with goes
//! into the JSON that crosses, as new optional keys (the [`Catalog`]'s
//! `identity` did).
//!
//! Besides the ABI, conventions both sides share: how a config path reads
//! ([`paths`]: `~/x` is under `$HOME`), who may see a project
//! ([`projects`]), how a function is named ([`names`]), how a long line
//! is cut ([`text`]), MCP's features besides tools ([`protocol`]) and which
//! URI a resource template names ([`uri_template`]).
//!
//! Threading rule: each side runs its own work on its own tokio runtime and hands
//! the other side only an [`FfiFuture`] that awaits the finished work. Dropping
//! such a future must abort the work (that is how cancellation crosses).
#![deny(missing_docs)]
// `sabi_trait` and `StableAbi` expand to impls and `_Ref` names that rustc lints.
#![allow(non_local_definitions, non_camel_case_types)]

use abi_stable::{
    StableAbi, declare_root_module_statics,
    library::RootModule,
    package_version_strings, sabi_trait,
    sabi_types::VersionStrings,
    std_types::{RArc, RBox, ROption, RResult, RStr, RString},
};
pub use async_ffi::FfiFuture;
use serde::{Deserialize, Serialize};

pub mod names;
mod offers;
pub mod paths;
pub mod projects;
pub mod protocol;
pub mod text;
pub mod uri_template;
mod wire;
pub mod wording;
pub use wire::{
    Annotations, Catalog, CatalogPrompt, CatalogSnippet, CatalogTool, ContentResult, Example,
    FunctionSpec, Manifest, Owner, PromptArgumentSpec, PromptSpec, ResourceSpec, TaskSupport,
    TemplateSpec, WireError, codes,
};

/// Outcome of one call crossing the ABI: `ROk(result JSON)` or
/// `RErr(`[`WireError`]` JSON)`.
pub type CallResult = RResult<RString, RString>;

/// Severity of a log line a pack sends to the host.
#[repr(u8)]
#[derive(StableAbi, Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LogLevel {
    /// Something failed.
    Error,
    /// Something looks wrong.
    Warn,
    /// Normal operation worth a line.
    Info,
    /// Details for debugging.
    Debug,
    /// Very verbose details.
    Trace,
}

/// The host as a pack sees it for its whole life (given to the constructor).
#[sabi_trait]
pub trait Host: Send + Sync + Clone {
    /// The `[projects]` every organisation may see, as a JSON object: name ->
    /// absolute path. Projects named for some organisations only
    /// ([`projects`]) are not here: a call's [`CallContext::catalog`] has
    /// those its caller may see.
    fn projects(&self) -> RString;
    /// Write a log line attributed to the pack.
    #[sabi(last_prefix_field)]
    fn log(&self, level: LogLevel, message: RStr<'_>);
}

/// FFI-safe handle to [`Host`].
pub type HostBox = Host_TO<'static, RArc<()>>;

/// What the host tells a pack about one call, and what the pack may ask back.
#[sabi_trait]
pub trait CallContext: Send + Sync + Clone {
    /// The calling user's id (never taken from the call's arguments).
    fn user(&self) -> RString;
    /// The calling user's organisation.
    fn org(&self) -> RString;
    /// The MCP request id of this call, as text.
    fn request_id(&self) -> RString;
    /// Write a log line attributed to this call.
    fn log(&self, level: LogLevel, message: RStr<'_>);
    /// Report progress; forwarded to the client when it asked for progress.
    fn progress(&self, progress: f64, total: ROption<f64>, message: RStr<'_>);
    /// Whether the client cancelled this call (or it timed out).
    fn is_cancelled(&self) -> bool;
    /// What this caller can call and see, as JSON [`Catalog`]: code mode
    /// builds its proxies from it.
    fn catalog(&self) -> RString;
    /// Call another tool (`pack.function`, an alias, or `run`) through the host's
    /// executor, with this call's identity. Arguments and result are JSON.
    #[sabi(last_prefix_field)]
    fn call_tool(&self, name: RStr<'_>, args_json: RStr<'_>) -> FfiFuture<CallResult>;
    /// Milliseconds left before the host cuts this call: its own time limit,
    /// or less when the call that made it (code mode) has less left.
    fn remaining_ms(&self) -> u64;
    /// Call `name` (`pack.function` or an alias) with positional arguments
    /// (a JSON array) and keyword arguments (a JSON object), which the host
    /// binds to the function's parameters in schema order and checks, as it
    /// does for `run`: how code calls tools, so that a bad call reads the
    /// same from code as from `run` and `tools/call`.
    fn call_with(
        &self,
        name: RStr<'_>,
        positional_json: RStr<'_>,
        keywords_json: RStr<'_>,
    ) -> FfiFuture<CallResult>;
}

/// FFI-safe handle to [`CallContext`].
pub type CallContextBox = CallContext_TO<'static, RArc<()>>;

/// A constructed pack.
#[sabi_trait]
pub trait Pack: Send + Sync {
    /// Run `function` with `args_json`. The future resolves on the host's side;
    /// dropping it cancels the call.
    fn call(
        &self,
        function: RStr<'_>,
        args_json: RStr<'_>,
        ctx: CallContextBox,
    ) -> FfiFuture<CallResult>;

    /// Release what the pack holds outside the process (child processes,
    /// kernels, connections). The host calls it once before it exits.
    #[sabi(last_prefix_field)]
    fn shutdown(&self) -> FfiFuture<()>;
}

/// FFI-safe owned [`Pack`].
pub type PackBox = Pack_TO<'static, RBox<()>>;

/// The root module every pack library exports.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PackModule_Ref)))]
#[sabi(missing_field(option))]
pub struct PackModule {
    /// The pack's [`Manifest`] as JSON.
    pub manifest: extern "C" fn() -> RString,
    /// Build the pack from its config table (JSON). `RErr` holds a [`WireError`]
    /// as JSON.
    #[sabi(last_prefix_field)]
    pub new: extern "C" fn(config_json: RStr<'_>, host: HostBox) -> RResult<PackBox, RString>,
}

impl RootModule for PackModule_Ref {
    declare_root_module_statics! {PackModule_Ref}
    const BASE_NAME: &'static str = "packhost_pack";
    const NAME: &'static str = "packhost_pack";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}
