//! Who calls and what they may call: one type from the transport to the
//! pack. `[identity]` names the caller on transports without authentication
//! (stdio, the CLI); over HTTP a bearer token gives user, organisation and an
//! allow-list.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::tool_name::{HOST_PACK, ToolName, is_admin_function};

/// A caller: the identity packs see, and the tools it may use.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Identity {
    /// User id handed to packs.
    pub user: String,
    /// Organisation id handed to packs.
    pub org: String,
    /// The tools this caller may use; `None`: all. A token's, never
    /// `[identity]`'s.
    #[serde(skip)]
    pub allowed: Option<Arc<ToolFilter>>,
    /// The admin of `org`: may read its audit trail. A token's
    /// (`admin = true`) or an access token's (`auth.oauth.admin_scope`),
    /// never `[identity]`'s.
    #[serde(skip)]
    pub admin: bool,
}

impl Default for Identity {
    fn default() -> Self {
        Self {
            user: "local".to_owned(),
            org: "local".to_owned(),
            allowed: None,
            admin: false,
        }
    }
}

impl Identity {
    /// No caller: the host asking a pack for itself (a browser back from
    /// signing in, a readiness check), with no organisation's rights.
    pub fn nobody() -> Self {
        Self {
            user: String::new(),
            org: String::new(),
            allowed: None,
            admin: false,
        }
    }

    /// Whether this caller may use `tool` (`pack.function` or `run`). The
    /// host's own `packhost` functions are everyone's (they only show what
    /// the caller may call), but for the admin's ([`is_admin_function`]),
    /// which are an admin's only, whatever the allow-list says.
    pub fn may_call(&self, tool: &str) -> bool {
        match ToolName::parse(tool) {
            Some(name) if name.pack == HOST_PACK => {
                self.admin || !is_admin_function(&name.pack, &name.function)
            }
            _ => self
                .allowed
                .as_ref()
                .is_none_or(|filter| filter.allows(tool)),
        }
    }
}

/// A token's allow-list: `pack.function`, `pack.*`, `run`, or `*`; a
/// function of a pack with `prefix = false` also by its own name (the
/// executor asks for both).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFilter(Vec<String>);

impl ToolFilter {
    /// Allow what `patterns` name.
    pub fn new(patterns: Vec<String>) -> Self {
        Self(patterns)
    }

    /// Whether `tool` (`pack.function` or `run`) is allowed.
    pub fn allows(&self, tool: &str) -> bool {
        self.0.iter().any(|pattern| {
            pattern == "*"
                || pattern == tool
                || pattern
                    .strip_suffix(".*")
                    .is_some_and(|pack| ToolName::parse(tool).is_some_and(|name| name.pack == pack))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_admins_host_functions_are_an_admins_only_whatever_the_allow_list() {
        let everything = Some(Arc::new(ToolFilter::new(vec!["*".into()])));
        let user = Identity {
            allowed: everything.clone(),
            ..Identity::default()
        };
        assert!(user.may_call("packhost.search"));
        assert!(user.may_call("proj.list"));
        assert!(
            !user.may_call("packhost.audit"),
            "`*` grants no admin function"
        );
        let admin = Identity {
            admin: true,
            allowed: Some(Arc::new(ToolFilter::new(vec!["proj.*".into()]))),
            ..Identity::default()
        };
        assert!(admin.may_call("packhost.audit"));
        assert!(!admin.may_call("run"));
    }
}
