//! Kept results in PostgreSQL: every instance on the database reads what
//! any of them kept. Bodies are `BYTEA` (TOASTed, compressed by the
//! server); times are the database's, so instances' clocks never matter.

use std::{sync::Arc, time::Duration};

use sqlx::{Postgres as Pg, Row, Transaction};

use super::{Bounds, Kept, Listed, ResultStore};
use crate::{NOW, Owner, State, StoreError, failed, millis};

/// Keeps, and the room each makes, one at a time across all instances: two
/// at once could each see room the other is about to take.
const KEEP_LOCK: i64 = 0x6b65_7074; // "kept"

/// Drops an owner's oldest past their bound: each row with the bytes and
/// count of the rows as new or newer than it. `$1` organisation, `$2` user
/// (or any, when NULL), `$3` bytes, `$4` count.
const TRIM: &str = "DELETE FROM kept_results WHERE handle IN (SELECT handle FROM (\
     SELECT handle, SUM(bytes) OVER w AS newer_bytes, ROW_NUMBER() OVER w AS newer \
     FROM kept_results WHERE organization_id = $1 AND ($2::TEXT IS NULL OR user_id = $2) \
     WINDOW w AS (ORDER BY seq DESC)) r WHERE newer_bytes > $3 OR newer > $4)";

/// The organisation holding the most, and how far past `$1` bytes all are.
const EXCESS: &str = "SELECT organization_id, \
     (SELECT SUM(bytes) FROM kept_results)::BIGINT - $1 AS excess \
     FROM kept_results GROUP BY organization_id ORDER BY SUM(bytes) DESC LIMIT 1";

/// Drops organisation `$1`'s oldest until `$2` bytes are gone.
const TRIM_OLDEST: &str = "DELETE FROM kept_results WHERE handle IN (SELECT handle FROM (\
     SELECT handle, bytes, SUM(bytes) OVER (ORDER BY seq) AS upto FROM kept_results \
     WHERE organization_id = $1) r WHERE upto - bytes < $2)";

/// Kept results in the PostgreSQL database of `state`.
pub struct Postgres {
    state: Arc<State>,
    bounds: Bounds,
}

impl Postgres {
    /// Kept in `state`'s database, within `bounds`.
    pub(crate) fn new(state: Arc<State>, bounds: Bounds) -> Self {
        Self { state, bounds }
    }

    async fn make_room(&self, tx: &mut Transaction<'_, Pg>, owner: &Owner) -> sqlx::Result<()> {
        let b = self.bounds;
        let as_sql = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        for (user, bytes, count) in [
            (Some(&owner.user), b.user_bytes, b.user_count),
            (None, b.org_bytes, b.org_count),
        ] {
            sqlx::query(TRIM)
                .bind(&owner.org)
                .bind(user)
                .bind(as_sql(bytes))
                .bind(as_sql(count))
                .execute(&mut **tx)
                .await?;
        }
        loop {
            let row = sqlx::query(EXCESS)
                .bind(as_sql(b.bytes))
                .fetch_one(&mut **tx)
                .await?;
            let excess: i64 = row.get("excess");
            if excess <= 0 {
                return Ok(());
            }
            let org: String = row.get("organization_id");
            sqlx::query(TRIM_OLDEST)
                .bind(org)
                .bind(excess)
                .execute(&mut **tx)
                .await?;
        }
    }
}

#[async_trait::async_trait]
impl ResultStore for Postgres {
    async fn keep(&self, handle: &str, kept: &Kept, ttl: Duration) -> Result<bool, StoreError> {
        let bytes = kept.text.len() as u64;
        if !self.bounds.room_for(bytes) {
            return Ok(false);
        }
        let pool = self.state.pool().await?;
        let keep = async {
            let mut tx = pool.begin().await?;
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(KEEP_LOCK)
                .execute(&mut *tx)
                .await?;
            sqlx::query(&format!(
                "DELETE FROM kept_results WHERE expires_at <= {NOW}"
            ))
            .execute(&mut *tx)
            .await?;
            sqlx::query(&format!(
                "INSERT INTO kept_results (handle, organization_id, user_id, tool, body, bytes, \
                 chars, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, {NOW} + $8)"
            ))
            .bind(handle)
            .bind(&kept.owner.org)
            .bind(&kept.owner.user)
            .bind(&kept.tool)
            .bind(kept.text.as_bytes())
            .bind(bytes as i64)
            .bind(kept.text.chars().count() as i64)
            .bind(millis(ttl))
            .execute(&mut *tx)
            .await?;
            self.make_room(&mut tx, &kept.owner).await?;
            tx.commit().await
        };
        keep.await.map_err(|e| failed("keep a result", e))?;
        Ok(true)
    }

    async fn get(&self, owner: &Owner, handle: &str) -> Result<Option<Kept>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT tool, body FROM kept_results WHERE handle = $1 AND organization_id = $2 \
             AND user_id = $3 AND expires_at > {NOW}"
        ))
        .bind(handle)
        .bind(&owner.org)
        .bind(&owner.user)
        .fetch_optional(self.state.pool().await?)
        .await
        .map_err(|e| failed("read a kept result", e))?;
        Ok(row.map(|row| Kept {
            owner: owner.clone(),
            tool: row.get("tool"),
            // Written from a `str` by `keep`.
            text: String::from_utf8_lossy(row.get::<&[u8], _>("body")).into(),
        }))
    }

    async fn list(&self, owner: &Owner) -> Result<Vec<Listed>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT handle, tool, chars FROM kept_results WHERE organization_id = $1 \
             AND user_id = $2 AND expires_at > {NOW} ORDER BY seq"
        ))
        .bind(&owner.org)
        .bind(&owner.user)
        .fetch_all(self.state.pool().await?)
        .await
        .map_err(|e| failed("list kept results", e))?;
        Ok(rows
            .into_iter()
            .map(|row| Listed {
                handle: row.get("handle"),
                tool: row.get("tool"),
                chars: row.get::<i64, _>("chars") as u64,
            })
            .collect())
    }
}
