//! Write a packhost pack.
//!
//! Who it is for: anyone adding tools to packhost. A pack is a `cdylib` crate
//! that depends on this crate only; the unchanged `packhost` binary loads it
//! when `packs.toml` names it. A whole pack:
//!
//! ```
//! use std::sync::Arc;
//! use pack_sdk::{Context, Empty, PackDef, PackError};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct GreetArgs {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Greeting {
//!     text: String,
//! }
//!
//! async fn greet(_: Arc<()>, args: GreetArgs, _: Context) -> Result<Greeting, PackError> {
//!     if args.name.is_empty() {
//!         return Err(PackError::invalid_argument("`name` is empty; pass who to greet"));
//!     }
//!     Ok(Greeting { text: format!("hello, {}", args.name) })
//! }
//!
//! fn hello() -> PackDef<()> {
//!     PackDef::new("hello", "Greets people", |_: Empty, _host| Ok(()))
//!         .function("greet", "Greet someone by name", greet)
//! }
//!
//! pack_sdk::export_pack!(hello);
//! ```
//!
//! A function can say more about itself through [`Function`] and
//! [`PackDef::function_with`]: a title, MCP annotations (read-only,
//! destructive, idempotent, open world), examples run as tests, its own time
//! limit, an input schema written by hand. A function that returns [`Content`] sends content blocks (images,
//! resource links) beside its value.
//!
//! Besides functions, a pack can offer MCP prompts and resources:
//! [`PackDef::prompt`] (a [`Prompt`] with its arguments, and a function that
//! renders its messages: text, images, embedded resources, as [`Block`]s),
//! [`PackDef::resource`] (a [`Resource`] at a fixed URI and its reader),
//! [`PackDef::resource_template`] (a [`Template`] such as `notes://{id}`,
//! read with the URI's variables), and completions of their arguments
//! ([`PackDef::complete_prompt`], [`PackDef::complete_template`]). Their
//! functions get the call's [`Context`] as functions do: the host renders
//! and reads them for the client's caller, under the same identity, time
//! limit and cancellation as a call. Offers that differ by caller (a proxy
//! of other servers) come from one handler, [`PackDef::serve_offers`],
//! which also follows resources for subscribers
//! ([`Context::resource_updated`]).
//!
//! A function or prompt can ask its caller's client while it runs:
//! [`Context::elicit`] (the user), [`Context::sample`] (the user's model),
//! [`Context::roots`], or [`Context::ask`] for several [`Question`]s at
//! once. The host sends them the way the caller's protocol revision asks
//! (a request to the client, or an `input_required` result its retry
//! answers); a question the client cannot answer fails with
//! `INPUT_UNAVAILABLE`, and [`Function::needs`] refuses such clients before
//! the call.
//!
//! Its `Cargo.toml` has `crate-type = ["cdylib"]` and depends on `pack-sdk`,
//! `serde` (with `derive`) and `schemars` 1; `cargo build`, then name the library
//! in `packs.toml`.
//!
//! What the SDK does for you: the input and output JSON Schemas (from `serde` and
//! `schemars`; doc comments become descriptions; the output schema describes
//! what serialising writes, so a field behind `skip_serializing_if` is
//! optional and an `Option` without it is required and nullable), argument
//! decoding, the pack's own tokio runtime, turning panics into `INTERNAL`
//! errors instead of a host crash, cancelling a call's task when the host
//! drops it, and the ABI export itself. Arguments and results are JSON
//! objects (MCP's are): a function whose types are not is refused when the
//! pack loads. State a pack keeps between calls belongs to the caller that
//! created it: [`owned`] has the table and the rules, so every pack shares
//! one behaviour (another caller gets what an unknown id gets), and
//! [`config`] the config blocks packs share (sessions; with the feature
//! `children`, the processes a pack starts). Work that
//! blocks a thread (file system calls) goes through [`blocking`]. With the
//! feature `test-support`, [`testing`] runs a pack in-process as any caller
//! (`PackTest`) and checks values against the schemas the way MCP clients
//! do.
#![deny(missing_docs)]

mod ask;
mod block;
mod blocking;
pub mod bridge;
mod catalogs;
pub mod config;
mod context;
mod def;
mod error;
mod ffi;
mod function;
mod offers;
pub mod owned;
mod per_caller;
mod prompt;
mod resource;
mod schema;
mod served;
#[cfg(feature = "test-support")]
pub mod testing;

pub use ask::{Action, Elicited, Question, Root};
pub use block::{Block, Link};
pub use blocking::blocking;
pub use catalogs::{Outline, SharedCatalog, ToolOutline};
pub use context::{Context, Host};
pub use def::{Empty, PackDef};
pub use error::PackError;
pub use function::{Content, Function, FunctionResult};
pub use offers::Completing;
pub use pack_api::{
    Annotations, Catalog, CatalogTool, ContentResult, Example, LogLevel, TaskSupport, codes, names,
    paths, projects, protocol, text, uri_template,
};
pub use prompt::{Prompt, PromptMessage, PromptResult, Role};
pub use resource::{ReadRequest, Resource, ResourceContents, Template};
pub use schema::input_schema;
pub use serde_json::{Value, json};

/// Not public API: what [`export_pack!`] expands to needs these paths.
#[doc(hidden)]
pub mod __private {
    pub use crate::ffi::{construct, manifest};
    pub use abi_stable::{
        library::{__call_root_module_loader, CheckTypeLayout, LibHeader, RootModuleResult},
        prefix_type::PrefixTypeTrait,
        std_types::{RResult, RStr, RString},
    };
    pub use pack_api::{HostBox, PackBox, PackModule, PackModule_Ref};
}

/// Export the pack built by `$build` (a `fn() -> PackDef<S>`) as this
/// library's root module. Use it once, at the crate root.
#[macro_export]
macro_rules! export_pack {
    ($build:path) => {
        #[doc(hidden)]
        extern "C" fn __packhost_manifest() -> $crate::__private::RString {
            $crate::__private::manifest($build, env!("CARGO_PKG_VERSION"))
        }

        #[doc(hidden)]
        extern "C" fn __packhost_new(
            config_json: $crate::__private::RStr<'_>,
            host: $crate::__private::HostBox,
        ) -> $crate::__private::RResult<$crate::__private::PackBox, $crate::__private::RString> {
            $crate::__private::construct($build, config_json, host)
        }

        #[doc(hidden)]
        fn __packhost_root_module() -> $crate::__private::PackModule_Ref {
            use $crate::__private::PrefixTypeTrait as _;
            $crate::__private::PackModule {
                manifest: __packhost_manifest,
                new: __packhost_new,
            }
            .leak_into_prefix()
        }

        #[doc(hidden)]
        extern "C" fn __packhost_root_module_loader() -> $crate::__private::RootModuleResult {
            $crate::__private::__call_root_module_loader(__packhost_root_module)
        }

        /// The symbol `abi_stable` looks up when the host loads this library
        /// (what `#[export_root_module]` would write, spelled out so that pack
        /// crates need no `abi_stable` dependency of their own).
        #[doc(hidden)]
        #[unsafe(export_name = "_1as_0lib_1header_0root_bmodule_bloader")]
        pub static __PACKHOST_LIB_HEADER: $crate::__private::LibHeader = unsafe {
            $crate::__private::LibHeader::from_constructor::<$crate::__private::PackModule_Ref>(
                __packhost_root_module_loader,
                $crate::__private::CheckTypeLayout::Yes,
            )
        };
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn exported_symbol_is_the_one_abi_stable_looks_up() {
        assert_eq!(
            abi_stable::library::ROOT_MODULE_LOADER_NAME,
            "_1as_0lib_1header_0root_bmodule_bloader"
        );
    }
}
