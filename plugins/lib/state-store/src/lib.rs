//! State that several packhost instances behind a load balancer share:
//! each kind behind a trait of its own, with an implementation in this
//! process (one instance, the default) and one in PostgreSQL, where every
//! instance on the database sees what any of them wrote.
//!
//! - [`ResultStore`]: results too large to send, kept for their owner.
//! - [`SpentStates`]: the request states already used, so one answer makes
//!   one call whichever instance a replay reaches.
//! - [`RememberedApprovals`]: the approvals a user asked to have remembered
//!   for any of their sessions.
//! - [`TaskHolders`]: which instance runs each task.
//! - [`PackSessions`]: a pack's sessions (Jupyter's, notebooks'), in
//!   PostgreSQL only: in one instance each pack keeps its own.
//!
//! [`State::open`] picks the implementations from the configured database;
//! the PostgreSQL ones share one pool, connected and migrated by the first
//! use (never on the start path) and tried again after a failure.

/// Runs each case (an `async fn(Arc<State>)`) on state in this process and
/// in a fresh PostgreSQL database, as tests `in_memory::<case>` and
/// `postgres::<case>`: both implementations keep to the same rules.
#[cfg(test)]
macro_rules! on_both {
    ($($case:ident),* $(,)?) => {
        mod in_memory {
            $(#[tokio::test]
            async fn $case() {
                super::$case(crate::State::open(None)).await;
            })*
        }
        mod postgres {
            $(#[tokio::test]
            async fn $case() {
                integrations_store::testing::on_postgres(|url| async move {
                    super::$case(crate::State::open(Some(url))).await;
                })
                .await;
            })*
        }
    };
}

mod approvals;
mod kept;
mod sessions;
mod spent;
mod tasks;

use std::{sync::Arc, time::Duration};

pub use integrations_store::StoreError;
use integrations_store::{Migrations, postgres_pool_waiting};
pub use pack_api::Owner;
use sqlx::PgPool;
use tokio::sync::OnceCell;

pub use crate::{
    approvals::RememberedApprovals,
    kept::{Bounds, InMemory, Kept, Listed, ResultStore},
    sessions::{Counted, PackSessions, SessionRow},
    spent::{SpentHere, SpentStates},
    tasks::{HeldTask, TaskHolders},
};

/// Connections one instance opens at most: its calls that keep, read or
/// spend at once; a caller waits for a free one no longer than the pool's
/// acquire timeout.
const MAX_CONNECTIONS: u32 = 8;

/// How long a query waits for the database: a restart shorter than this is
/// ridden through (refused connections are tried again); a longer outage
/// fails the call with a clear error well within its time limit.
const WAIT: Duration = Duration::from_secs(3);

/// How long [`State::reachable`] waits: a readiness check answers at once,
/// before a load balancer's check gives up on it.
const READY_WITHIN: Duration = Duration::from_secs(1);

/// The tables of this crate, numbered after the integrations' (1–1000) and
/// the audit trail's (1001–2000), in the same migrations table.
const MIGRATIONS: Migrations = &[
    (
        2001,
        "kept results",
        include_str!("../migrations/2001_kept_results.sql"),
    ),
    (
        2002,
        "spent states",
        include_str!("../migrations/2002_spent_states.sql"),
    ),
    (
        2003,
        "remembered approvals",
        include_str!("../migrations/2003_remembered_approvals.sql"),
    ),
    (
        2004,
        "task holders",
        include_str!("../migrations/2004_task_holders.sql"),
    ),
    (
        2005,
        "pack sessions",
        include_str!("../migrations/2005_pack_sessions.sql"),
    ),
    (
        2006,
        "ended tasks",
        include_str!("../migrations/2006_ended_tasks.sql"),
    ),
];

/// Where the shared state lives: this process, or a PostgreSQL database.
pub struct State {
    /// `postgres://…`; `None`: this process.
    database: Option<String>,
    pool: OnceCell<PgPool>,
}

impl State {
    /// State in `database` (a `postgres://` URL), or in this process.
    pub fn open(database: Option<String>) -> Arc<Self> {
        Arc::new(Self {
            database,
            pool: OnceCell::new(),
        })
    }

    /// Kept results within `bounds`.
    pub fn results(self: &Arc<Self>, bounds: Bounds) -> Arc<dyn ResultStore> {
        match self.database {
            None => Arc::new(InMemory::new(bounds)),
            Some(_) => Arc::new(kept::Postgres::new(Arc::clone(self), bounds)),
        }
    }

    /// The record of used request states.
    pub fn spent_states(self: &Arc<Self>) -> Arc<dyn SpentStates> {
        match self.database {
            None => Arc::new(SpentHere::default()),
            Some(_) => Arc::new(spent::Postgres::new(Arc::clone(self))),
        }
    }

    /// Approvals remembered for any session.
    pub fn remembered_approvals(self: &Arc<Self>) -> Arc<dyn RememberedApprovals> {
        match self.database {
            None => Arc::new(approvals::InMemory::default()),
            Some(_) => Arc::new(approvals::Postgres::new(Arc::clone(self))),
        }
    }

    /// Which instance runs each task.
    pub fn task_holders(self: &Arc<Self>) -> Arc<dyn TaskHolders> {
        match self.database {
            None => Arc::new(tasks::InMemory::default()),
            Some(_) => Arc::new(tasks::Postgres::new(Arc::clone(self))),
        }
    }

    /// The sessions of `pack` that every instance finds, when state lives
    /// in PostgreSQL (`None` in this process: the pack keeps its own).
    pub fn pack_sessions(self: &Arc<Self>, pack: &str) -> Option<PackSessions> {
        self.database
            .as_ref()
            .map(|_| PackSessions::new(Arc::clone(self), pack))
    }

    /// Whether the database answers within [`READY_WITHIN`] (always, in
    /// this process).
    pub async fn reachable(&self) -> Result<(), StoreError> {
        if self.database.is_none() {
            return Ok(());
        }
        let ping = async {
            let ping = sqlx::query("SELECT 1").execute(self.pool().await?).await;
            ping.map(drop).map_err(|e| failed("reach the database", e))
        };
        let late = |_| failed("reach the database", sqlx::Error::PoolTimedOut);
        tokio::time::timeout(READY_WITHIN, ping)
            .await
            .map_err(late)?
    }

    /// The pool, connected and migrated by the first caller.
    async fn pool(&self) -> Result<&PgPool, StoreError> {
        let url = self
            .database
            .as_deref()
            .expect("only PostgreSQL stores ask");
        self.pool
            .get_or_try_init(|| postgres_pool_waiting(url, MAX_CONNECTIONS, WAIT, MIGRATIONS))
            .await
    }
}

/// The database's clock, in milliseconds: instances' clocks never matter.
const NOW: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// `d` in the database's milliseconds (past `i64`: forever).
fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn failed(what: &str, e: sqlx::Error) -> StoreError {
    let why = match e {
        // sqlx's words for it name the pool, not the cause.
        sqlx::Error::PoolTimedOut => "the database does not answer (down or restarting?)".into(),
        e => e.to_string(),
    };
    StoreError::Database(format!("shared state: cannot {what}: {why}"))
}
