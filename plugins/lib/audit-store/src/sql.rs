//! The two backends, one implementation written once by the `log!` macro
//! for each pool type; the SQL is the same text for both.

use std::{
    path::Path,
    time::{Duration, SystemTime},
};

use integrations_store::{Migrations, StoreError, postgres_pool, sqlite_pool};
use sqlx::{
    QueryBuilder,
    postgres::PgPool,
    sqlite::{SqlitePool, SqliteSynchronous},
};

use crate::{AuditLog, Event, Filter, Kind, Retention, Scope, time};

/// Connections per pool: one writer in the background, a reader now and
/// then.
const MAX_CONNECTIONS: u32 = 2;

const SQLITE_MIGRATIONS: Migrations = &[(
    1001,
    "audit events",
    include_str!("../migrations/sqlite/1001_audit_events.sql"),
)];
const POSTGRES_MIGRATIONS: Migrations = &[(
    1001,
    "audit events",
    include_str!("../migrations/postgres/1001_audit_events.sql"),
)];

const INSERT: &str = "INSERT INTO audit_events \
     (at, organization_id, user_id, kind, tool, outcome, duration_ms, request_id, detail) ";
const SELECT: &str = "SELECT at, organization_id, user_id, kind, tool, outcome, duration_ms, \
     request_id, detail FROM audit_events WHERE 1 = 1";
const PRUNE_OLD: &str = "DELETE FROM audit_events WHERE at < $1";
const OVER_LIMIT: &str = "SELECT organization_id, COUNT(*) AS events FROM audit_events \
     GROUP BY organization_id HAVING COUNT(*) > $1";
const PRUNE_ORG: &str = "DELETE FROM audit_events WHERE organization_id = $1 AND id <= \
     (SELECT id FROM audit_events WHERE organization_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)";
const PRUNE_HOST: &str = "DELETE FROM audit_events WHERE organization_id IS NULL AND id <= \
     (SELECT id FROM audit_events WHERE organization_id IS NULL ORDER BY id DESC LIMIT 1 OFFSET $1)";

fn failed(what: &str, e: sqlx::Error) -> StoreError {
    StoreError::Database(format!("cannot {what}: {e}"))
}

/// `filter`'s conditions and order added to `query` (a [`SELECT`]).
macro_rules! push_filter {
    ($query:expr, $filter:expr) => {{
        let (query, filter) = ($query, $filter);
        match &filter.scope {
            Scope::Org(org) => {
                query.push(" AND organization_id = ").push_bind(org.clone());
            }
            Scope::Host => {
                query.push(" AND organization_id IS NULL");
            }
            Scope::All => {}
        }
        if let Some(user) = &filter.user {
            query.push(" AND user_id = ").push_bind(user.clone());
        }
        match filter
            .tool
            .as_deref()
            .map(|tool| (tool, tool.strip_suffix('*')))
        {
            // `pack.*`: by prefix, not LIKE, where `_` would match anything.
            Some((_, Some(prefix))) => {
                query
                    .push(" AND substr(tool, 1, ")
                    .push_bind(prefix.len() as i32)
                    .push(") = ")
                    .push_bind(prefix.to_owned());
            }
            Some((tool, None)) => {
                query.push(" AND tool = ").push_bind(tool.to_owned());
            }
            None => {}
        }
        if let Some(kind) = filter.kind {
            query.push(" AND kind = ").push_bind(kind.as_str());
        }
        if let Some(since) = &filter.since {
            query.push(" AND at >= ").push_bind(since.clone());
        }
        if let Some(until) = &filter.until {
            query.push(" AND at < ").push_bind(until.clone());
        }
        query
            .push(" ORDER BY at DESC, id DESC LIMIT ")
            .push_bind(i64::from(filter.limit));
    }};
}

/// The one implementation of [`AuditLog`], for `$name` over a `$pool` of
/// `$db` connections.
macro_rules! log {
    ($(#[$doc:meta])* $name:ident, $pool:ty, $db:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            pool: $pool,
        }

        impl $name {
            fn decode(row: &<$db as sqlx::Database>::Row) -> Result<Event, StoreError> {
                use sqlx::Row as _;
                let read = || -> Result<(Event, String, String), sqlx::Error> {
                    let kind: String = row.try_get("kind")?;
                    let detail: String = row.try_get("detail")?;
                    let event = Event {
                        at: row.try_get("at")?,
                        org: row.try_get("organization_id")?,
                        user: row.try_get("user_id")?,
                        kind: Kind::Call,
                        tool: row.try_get("tool")?,
                        outcome: row.try_get("outcome")?,
                        duration_ms: row.try_get("duration_ms")?,
                        request_id: row.try_get("request_id")?,
                        detail: serde_json::Value::Null,
                    };
                    Ok((event, kind, detail))
                };
                let (mut event, kind, detail) =
                    read().map_err(|e| failed("read an audit event", e))?;
                let corrupt = |column: &str, why: String| {
                    StoreError::Database(format!(
                        "the audit event at {} has a corrupt `{column}` column ({why})",
                        event.at
                    ))
                };
                event.kind = Kind::parse(&kind).map_err(|why| corrupt("kind", why))?;
                event.detail = serde_json::from_str(&detail)
                    .map_err(|e| corrupt("detail", e.to_string()))?;
                Ok(event)
            }
        }

        #[async_trait::async_trait]
        impl AuditLog for $name {
            async fn insert(&self, events: &[Event]) -> Result<(), StoreError> {
                if events.is_empty() {
                    return Ok(());
                }
                let mut query = QueryBuilder::<$db>::new(INSERT);
                query.push_values(events, |mut row, event| {
                    row.push_bind(event.at.clone())
                        .push_bind(event.org.clone())
                        .push_bind(event.user.clone())
                        .push_bind(event.kind.as_str())
                        .push_bind(event.tool.clone())
                        .push_bind(event.outcome.clone())
                        .push_bind(event.duration_ms)
                        .push_bind(event.request_id.clone())
                        .push_bind(event.detail.to_string());
                });
                query
                    .build()
                    .execute(&self.pool)
                    .await
                    .map_err(|e| failed(&format!("store {} audit event(s)", events.len()), e))?;
                Ok(())
            }

            async fn query(&self, filter: &Filter) -> Result<Vec<Event>, StoreError> {
                let mut query = QueryBuilder::<$db>::new(SELECT);
                push_filter!(&mut query, filter);
                let rows = query
                    .build()
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| failed("read the audit trail", e))?;
                let mut events = rows.iter().map(Self::decode).collect::<Result<Vec<_>, _>>()?;
                events.reverse();
                Ok(events)
            }

            async fn prune(
                &self,
                retention: &Retention,
                now: SystemTime,
            ) -> Result<u64, StoreError> {
                use sqlx::Row as _;
                let age = Duration::from_secs(u64::from(retention.max_age_days) * 86_400);
                let cutoff = time::format(now.checked_sub(age).unwrap_or(SystemTime::UNIX_EPOCH));
                let mut pruned = sqlx::query(PRUNE_OLD)
                    .bind(cutoff)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| failed("prune old audit events", e))?
                    .rows_affected();
                let keep = i64::try_from(retention.max_per_org).unwrap_or(i64::MAX);
                let over = sqlx::query(OVER_LIMIT)
                    .bind(keep)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| failed("count audit events", e))?;
                for row in over {
                    let org: Option<String> = row
                        .try_get("organization_id")
                        .map_err(|e| failed("count audit events", e))?;
                    let deleted = match &org {
                        Some(org) => sqlx::query(PRUNE_ORG).bind(org).bind(keep),
                        None => sqlx::query(PRUNE_HOST).bind(keep),
                    }
                    .execute(&self.pool)
                    .await
                    .map_err(|e| failed("prune audit events over the limit", e))?;
                    pruned += deleted.rows_affected();
                }
                Ok(pruned)
            }
        }
    };
}

log!(
    /// The audit trail in a SQLite file (WAL mode).
    SqliteLog,
    SqlitePool,
    sqlx::Sqlite
);

log!(
    /// The audit trail in a PostgreSQL database.
    PostgresLog,
    PgPool,
    sqlx::Postgres
);

impl SqliteLog {
    /// Opens the SQLite file at `path`, creating it (private) and its
    /// parent directories when missing, and migrates it. In WAL mode
    /// NORMAL syncs at checkpoints, not at every commit: a power cut may
    /// lose the last batches, never corrupt the file.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        let pool = sqlite_pool(
            path,
            MAX_CONNECTIONS,
            SqliteSynchronous::Normal,
            SQLITE_MIGRATIONS,
        );
        Ok(Self { pool: pool.await? })
    }
}

impl PostgresLog {
    /// Connects to the PostgreSQL database at `url` and migrates it. Errors
    /// show the URL without its password.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = postgres_pool(url, MAX_CONNECTIONS, POSTGRES_MIGRATIONS);
        Ok(Self { pool: pool.await? })
    }
}
