//! The audit trail as the host keeps it (`[audit]`): every call, approval,
//! refused sign-in and upstream credential event goes, as an
//! [`audit_store::Event`], to an [`audit_store::Recorder`]: a bounded queue
//! and one background writer that batches, prunes what `keep_days` and
//! `keep_per_org` no longer keep, and drops (counted, logged) rather than
//! wait. The database is opened by the first write or read, never on the
//! start path.
//!
//! Read by `packhost audit` ([`cli`]) and by an organisation's admin over
//! MCP (`packhost.audit`, the host's own pack), who sees only their own
//! organisation's events.

pub mod cli;

pub use audit_store::{CredentialAction, Event, Who};
use audit_store::{Filter, Options, Recorder, Retention};

use crate::config::Config;

/// Records events and reads them back; cheap to clone. Off (the default)
/// when the config has no `[audit]` or it says `enabled = false`.
#[derive(Clone, Default)]
pub struct Audit(Option<Recorder>);

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_on() {
            "Audit(on)"
        } else {
            "Audit(off)"
        })
    }
}

impl Audit {
    /// As `config` says; starts the writer (in the current tokio runtime)
    /// when it is on.
    pub fn start(config: &Config) -> Self {
        let Some(audit) = config.audit.as_ref().filter(|audit| audit.enabled) else {
            return Self::default();
        };
        let retention = Retention {
            max_age_days: audit.keep_days,
            max_per_org: audit.keep_per_org,
        };
        let options = Options {
            queue: audit.queue,
            retention: Some(retention),
        };
        Self(Some(Recorder::start(database(config), options)))
    }

    /// Whether events are recorded.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Record the event `event` makes (made only when the trail is on).
    /// Never waits: a full queue drops it, counted.
    pub fn record(&self, event: impl FnOnce() -> Event) {
        if let Some(recorder) = &self.0 {
            recorder.record(event());
        }
    }

    /// As [`Self::record`], for what anyone can cause without signing in
    /// (a refused sign-in): only while half the queue is free, so that a
    /// flood of them never crowds out signed-in callers' events.
    pub fn record_if_room(&self, event: impl FnOnce() -> Event) {
        if let Some(recorder) = &self.0 {
            recorder.record_if_room(event());
        }
    }

    /// The events `filter` matches; `Err` says why they cannot be read.
    pub async fn query(&self, filter: &Filter) -> Result<Vec<Event>, String> {
        let Some(recorder) = &self.0 else {
            return Err("the audit trail is off: add an `[audit]` section to the config".into());
        };
        recorder.query(filter).await.map_err(|e| e.to_string())
    }

    /// Wait (a few seconds at most) until what was recorded so far is
    /// written: before the process ends.
    pub async fn flush(&self) {
        if let Some(recorder) = &self.0 {
            recorder.flush().await;
        }
    }
}

/// The database `[audit]` names, else the integrations'.
pub fn database(config: &Config) -> String {
    let configured = config
        .audit
        .as_ref()
        .and_then(|audit| audit.database.clone());
    configured.unwrap_or_else(|| beside(&crate::integrations::database_of(config)))
}

/// The trail's default beside the integrations' `database`: the same
/// PostgreSQL database, or `audit.db` in a SQLite file's folder. Never the
/// same SQLite file: the host writes the trail, and `remote_mcp` (a
/// library with its own copy of SQLite, in the same process) writes the
/// integrations; two copies of SQLite on one file in one process do not see
/// each other's locks or writes.
fn beside(database: &str) -> String {
    if database.starts_with("postgres://") || database.starts_with("postgresql://") {
        return database.to_owned();
    }
    let file = database.strip_prefix("sqlite://").unwrap_or(database);
    std::path::Path::new(file)
        .with_file_name("audit.db")
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use audit_store::Scope;

    use super::*;

    #[tokio::test]
    async fn off_records_nothing_and_says_so_when_read() {
        let audit = Audit::start(&Config::default());
        assert!(!audit.is_on());
        audit.record(|| unreachable!("no event is made when the trail is off"));
        let error = audit.query(&Filter::new(Scope::All)).await.unwrap_err();
        assert!(error.contains("add an `[audit]` section"), "{error}");
    }
}
