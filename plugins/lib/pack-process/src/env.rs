//! The environment a child gets: named variables of the host, nothing else.

use std::collections::BTreeMap;

use tokio::process::Command;

/// The host variables a child may see. Default: `PATH`, `HOME`, `LANG`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvAllowList(Vec<String>);

impl Default for EnvAllowList {
    fn default() -> Self {
        Self(["PATH", "HOME", "LANG"].map(String::from).to_vec())
    }
}

impl EnvAllowList {
    /// Allow exactly `names`.
    pub fn new(names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self(names.into_iter().map(Into::into).collect())
    }

    /// Clear `command`'s environment, copy the allowed host variables that
    /// are set, then add `extra` (which wins).
    pub fn apply(&self, command: &mut Command, extra: &BTreeMap<String, String>) {
        command.env_clear();
        for name in &self.0 {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command.envs(extra);
    }
}
