//! `[audit]`: the audit trail (calls, approvals, refused sign-ins,
//! upstream credentials) kept per organisation beside the integrations.
//! The section turns it on; without it nothing is recorded.

use serde::{Deserialize, Serialize};

use crate::error::{ConfigCode, ConfigProblem};

/// The most events waiting for the writer: past it they are dropped and
/// counted, never waited for.
const MAX_QUEUE: usize = 1_000_000;

/// `[audit]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// `false` records nothing and keeps the section.
    pub enabled: bool,
    /// The database (SQLite file, relative to the config file's folder, or
    /// `postgres://` URL); default: beside the integrations'
    /// (`audit::database`).
    pub database: Option<String>,
    /// Events older than this many days are deleted.
    pub keep_days: u32,
    /// Past this many events of one organisation, the oldest are deleted.
    pub keep_per_org: u64,
    /// Events waiting to be written; past it new ones are dropped (and
    /// counted in the log), so a slow database never slows a call.
    pub queue: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            database: None,
            keep_days: 90,
            keep_per_org: 1_000_000,
            queue: 10_000,
        }
    }
}

impl AuditConfig {
    /// Everything wrong with the section, one problem each.
    pub(crate) fn problems(&self) -> Vec<ConfigProblem> {
        let mut problems = Vec::new();
        let value = |what: String| ConfigProblem::new(ConfigCode::Value, what);
        if self.keep_days == 0 {
            problems.push(value(
                "`audit.keep_days` must be at least 1 (days); to record nothing, set \
                 `audit.enabled = false`"
                    .to_owned(),
            ));
        }
        if self.keep_per_org == 0 {
            problems.push(value(
                "`audit.keep_per_org` must be at least 1 (events)".to_owned(),
            ));
        }
        if !(1..=MAX_QUEUE).contains(&self.queue) {
            problems.push(value(format!(
                "`audit.queue` = {}: give 1 to {MAX_QUEUE} (events waiting to be written)",
                self.queue
            )));
        }
        if self
            .database
            .as_deref()
            .is_some_and(|d| d.trim().is_empty())
        {
            problems.push(value(
                "`audit.database` is empty: give a SQLite file or a `postgres://` URL, or \
                 leave it out to keep the trail beside the integrations"
                    .to_owned(),
            ));
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_right_and_wrong_values_are_named() {
        assert!(AuditConfig::default().problems().is_empty());
        let config: AuditConfig =
            toml::from_str("keep_days = 0\nkeep_per_org = 0\nqueue = 0\ndatabase = \"\"").unwrap();
        let all: Vec<String> = config.problems().iter().map(|p| p.to_string()).collect();
        let all = all.join("\n");
        for expected in [
            "`audit.keep_days` must be at least 1",
            "`audit.keep_per_org` must be at least 1",
            "`audit.queue` = 0: give 1 to 1000000",
            "`audit.database` is empty",
        ] {
            assert!(all.contains(expected), "missing {expected:?} in:\n{all}");
        }
    }
}
