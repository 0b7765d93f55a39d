//! Typed declarations of a caller's tool catalog, for code that calls the
//! tools ("code mode"). Who it is for: the code packs (`exec_ts`,
//! `exec_py`) and the host, to show a model what it can call and how.
//!
//! - [`typescript`]: a `.d.ts` script of global declarations, one
//!   `declare const <pack>` per pack whose functions take one object of named
//!   arguments and return a `Promise` of the result, one `declare const` per
//!   alias, `PackError` and `packhost` (what `exec_ts` defines). It compiles
//!   with `tsc --noEmit --strict`.
//! - [`python`]: stubs in `.pyi` style, one class per pack with a static
//!   method per function, `TypedDict`s for object results, aliases as
//!   assignments. Valid Python syntax.
//! - [`summary`]: one line per pack, for tool descriptions.
//!
//! Both typed forms read the JSON Schemas one way (module `schema`: local
//! `$ref`s read in place, a recursive one as `unknown`, bounds and formats
//! kept for the docs), then write them in their language. [`Selection`]
//! picks a pack, a function or an alias; what matches nothing is NOT_FOUND
//! naming what exists.
#![deny(missing_docs)]

mod python;
mod schema;
mod select;
mod typescript;

#[cfg(test)]
mod tests;

use pack_api::Catalog;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use python::python;
pub use select::Selection;
pub use typescript::typescript;

/// One line per pack, `proj: list, read, grep`, in catalog order, then
/// `aliases: projects (proj.list), ...` when there are any: what a tool
/// description has room for.
pub fn summary(catalog: &Catalog) -> String {
    let mut lines: Vec<String> = select::by_pack(catalog.tools.iter().collect())
        .into_iter()
        .map(|(pack, tools)| {
            let functions: Vec<&str> = tools.iter().map(|t| t.function.as_str()).collect();
            format!("{pack}: {}", functions.join(", "))
        })
        .collect();
    if !catalog.aliases.is_empty() {
        let aliases: Vec<String> = catalog
            .aliases
            .iter()
            .map(|(alias, target)| format!("{alias} ({target})"))
            .collect();
        lines.push(format!("aliases: {}", aliases.join(", ")));
    }
    lines.join("\n")
}

/// Arguments of a code pack's `declarations` function.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeclarationsArgs {
    /// Only this pack (or alias); default every pack you may call.
    #[serde(default)]
    pub pack: Option<String>,
    /// Only this function of `pack`.
    #[serde(default)]
    pub function: Option<String>,
}

impl From<DeclarationsArgs> for Selection {
    fn from(args: DeclarationsArgs) -> Self {
        Self {
            pack: args.pack,
            function: args.function,
        }
    }
}

/// Result of a code pack's `declarations` function.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Declared {
    /// The declarations, ready to read or to save as a file.
    pub declarations: String,
}
