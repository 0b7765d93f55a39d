//! `pack.function`: the one place the host splits a tool's name and makes
//! one an identifier that a call expression (and code) can name; joining is
//! `pack_api::names::qualified`, which packs share.

use std::fmt;

use pack_api::names::qualified;

/// The call name of the host's own pack (search, describe): a name no
/// `[packs.<name>]` may take. Here, beside the names, so that the config
/// and identities check it without depending on the pack itself.
pub const HOST_PACK: &str = "packhost";

/// The host's functions that only an organisation's admin may call (and
/// see): to anyone else they are unknown names.
const HOST_ADMIN_FUNCTIONS: &[&str] = &["audit"];

/// Whether `pack.function` is one of the host's admin functions.
pub fn is_admin_function(pack: &str, function: &str) -> bool {
    pack == HOST_PACK && HOST_ADMIN_FUNCTIONS.contains(&function)
}

/// Name of the tool that takes a command as a model writes it: the one tool
/// name that is no `pack.function`.
pub const RUN_TOOL: &str = "run";

/// A pack function's tool name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolName {
    /// The pack, as `packs.toml` names it.
    pub pack: String,
    /// The function, as the pack (or its server) names it.
    pub function: String,
}

impl ToolName {
    /// `pack.function`.
    pub fn new(pack: impl Into<String>, function: impl Into<String>) -> Self {
        Self {
            pack: pack.into(),
            function: function.into(),
        }
    }

    /// `pack.function` split at its first dot; `None` without one (`run`,
    /// an alias).
    pub fn parse(name: &str) -> Option<Self> {
        name.split_once('.')
            .map(|(pack, function)| Self::new(pack, function))
    }

    /// Whether both parts are identifiers.
    pub fn is_callable(&self) -> bool {
        is_identifier(&self.pack) && is_identifier(&self.function)
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&qualified(&self.pack, &self.function))
    }
}

/// `[A-Za-z_][A-Za-z0-9_]*`: what a call expression can name.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A server's tool name as a function name (`remote_mcp` names its
/// integrations' prompts by the same rule).
pub use pack_api::names::identifier;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_join_and_split_at_the_first_dot() {
        let name = ToolName::parse("proj.read").unwrap();
        assert_eq!(name, ToolName::new("proj", "read"));
        assert_eq!(name.to_string(), "proj.read");
        assert_eq!(ToolName::parse("run"), None);
        assert!(!ToolName::parse("proj.a.b").unwrap().is_callable());
        assert_eq!(identifier("get-sum.v2"), "get_sum_v2");
    }

    #[test]
    fn identifiers() {
        for good in ["a", "_", "proj", "exec_py", "_x1", "A9", "snake_Case_2"] {
            assert!(is_identifier(good), "{good:?}");
        }
        for bad in [
            "", "1st", "exec-py", "a.b", "a b", "é", "x$", "-", "a\n", " a",
        ] {
            assert!(!is_identifier(bad), "{bad:?}");
        }
    }
}
