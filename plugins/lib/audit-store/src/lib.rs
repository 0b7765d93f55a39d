//! packhost's audit trail: who did what, per organisation, as structured
//! events in a SQLite file or PostgreSQL (beside the integrations).
//!
//! Who it is for: the host, which records every call, approval, refused
//! sign-in and upstream credential event through a [`Recorder`] (a bounded
//! queue and a background writer: never on the call path), and reads them
//! for `packhost audit` and for an organisation's admin over MCP. Packs
//! report to the host rather than open the trail (a pack's own copy of
//! SQLite would not see the host's locks on the same file).
//!
//! ```no_run
//! # async fn demo() -> Result<(), integrations_store::StoreError> {
//! use audit_store::{Event, Filter, Scope, Who};
//!
//! let log = audit_store::open("/tmp/integrations.db").await?;
//! let ada = Who { org: "acme".into(), user: "ada".into() };
//! log.insert(&[Event::call(&ada, "proj.list", "ok", Some(3.2), "7", 0, None)]).await?;
//! for event in log.query(&Filter::new(Scope::Org("acme".into()))).await? {
//!     println!("{}", serde_json::to_string(&event).unwrap());
//! }
//! # Ok(()) }
//! ```
//!
//! The design:
//!
//! - One table, `audit_events`, beside the integrations' (migrations in
//!   `migrations/{sqlite,postgres}`, versions from 1001 so they never meet
//!   the integrations' in the shared `_sqlx_migrations`); the database
//!   string is read as `integrations_store::open` reads it.
//! - One object-safe trait, [`AuditLog`]: insert a batch, query with a
//!   [`Filter`], prune by [`Retention`]. Both backends run the same SQL.
//! - [`Recorder`] over it never waits: a full queue drops the event and
//!   counts it, and the writer logs the count.
//! - An event's organisation is `None` for host-level events (a sign-in
//!   refused before any organisation was known): [`Scope::Org`] never
//!   reads them, only [`Scope::Host`] and [`Scope::All`] (the host's CLI).
//! - Nothing here is a secret: events carry no token, and argument text is
//!   masked by the host before it is recorded.
#![deny(missing_docs)]

mod event;
mod filter;
mod recorder;
mod sql;
pub mod time;

#[cfg(test)]
mod tests;

use std::{sync::Arc, time::SystemTime};

pub use event::{CredentialAction, Event, Kind, Who};
pub use filter::{DEFAULT_LIMIT, Filter, FilterText, MAX_LIMIT, Naming, Scope};
pub use integrations_store::StoreError;
pub use recorder::{Options, Recorder};
pub use sql::{PostgresLog, SqliteLog};

/// How long events are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Events older than this many days go.
    pub max_age_days: u32,
    /// Past this many events of one organisation (the host-level ones
    /// counting as one more), the oldest go.
    pub max_per_org: u64,
}

/// Where events are kept. Object safe: held as `Arc<dyn AuditLog>`.
#[async_trait::async_trait]
pub trait AuditLog: Send + Sync {
    /// Stores `events`, all or none.
    async fn insert(&self, events: &[Event]) -> Result<(), StoreError>;

    /// The most recent `filter.limit` events `filter` matches, oldest first.
    async fn query(&self, filter: &Filter) -> Result<Vec<Event>, StoreError>;

    /// Deletes what `retention` no longer keeps at `now`: how many events
    /// went.
    async fn prune(&self, retention: &Retention, now: SystemTime) -> Result<u64, StoreError>;
}

/// Opens (creating and migrating on first use) the audit trail in
/// `database`: a `postgres://` URL, or a SQLite file path, as
/// `integrations_store::open` takes it.
pub async fn open(database: &str) -> Result<Arc<dyn AuditLog>, StoreError> {
    if database.starts_with("postgres://") || database.starts_with("postgresql://") {
        return Ok(Arc::new(PostgresLog::connect(database).await?));
    }
    let path = integrations_store::sqlite_path(database)?;
    Ok(Arc::new(SqliteLog::open(&path).await?))
}
