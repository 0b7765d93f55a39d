//! `[state]`: where state that several instances share lives. Without it,
//! in this process (one instance); with `database`, in PostgreSQL, so any
//! instance behind a load balancer answers for it (kept results, used
//! request states, approvals remembered for a duration).

use serde::{Deserialize, Serialize};

use crate::error::{ConfigCode, ConfigProblem};

/// `[state]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StateConfig {
    /// `postgres://user:password@host:port/database`, shared by every
    /// instance (`PACKHOST_STATE__DATABASE` keeps the password out of the
    /// file).
    pub database: Option<String>,
}

impl StateConfig {
    /// Everything wrong with the section, one problem each.
    pub(crate) fn problems(&self) -> Vec<ConfigProblem> {
        let Some(database) = &self.database else {
            return Vec::new();
        };
        if database.starts_with("postgres://") || database.starts_with("postgresql://") {
            return Vec::new();
        }
        let shown = integrations_store::redact(database);
        vec![
            ConfigProblem::new(
                ConfigCode::Value,
                format!(
                    "`state.database` is `{shown}`: state shared by several instances lives in \
                     PostgreSQL"
                ),
            )
            .with_fix(
                "give `postgres://user:password@host:port/database`, or leave `[state]` out to \
                 keep state in this process",
            ),
        ]
    }
}
