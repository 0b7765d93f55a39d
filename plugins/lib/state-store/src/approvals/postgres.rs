//! Remembered approvals in PostgreSQL: an approval given through one
//! instance holds on every other.

use std::{sync::Arc, time::Duration};

use super::{PER_ORG, PER_USER, RememberedApprovals};
use crate::{NOW, Owner, State, StoreError, failed, millis};

/// Drops an organisation's (`$1`) approvals, or one user's (`$2`, or any
/// when NULL), that have ended or are past the `$3` that end latest.
const TRIM: &str = "DELETE FROM remembered_approvals a USING (\
     SELECT organization_id, user_id, tool, ROW_NUMBER() OVER (ORDER BY until DESC) AS later, \
     until FROM remembered_approvals WHERE organization_id = $1 \
     AND ($2::TEXT IS NULL OR user_id = $2)) r \
     WHERE a.organization_id = r.organization_id AND a.user_id = r.user_id AND a.tool = r.tool \
     AND (r.later > $3 OR r.until <= ";

/// Remembered approvals in the PostgreSQL database of `state`.
pub struct Postgres {
    state: Arc<State>,
}

impl Postgres {
    pub(crate) fn new(state: Arc<State>) -> Self {
        Self { state }
    }
}

#[async_trait::async_trait]
impl RememberedApprovals for Postgres {
    async fn approved(&self, owner: &Owner, tool: &str) -> Result<bool, StoreError> {
        let found = sqlx::query(&format!(
            "SELECT 1 FROM remembered_approvals WHERE organization_id = $1 AND user_id = $2 \
             AND tool = $3 AND until > {NOW}"
        ))
        .bind(&owner.org)
        .bind(&owner.user)
        .bind(tool)
        .fetch_optional(self.state.pool().await?)
        .await
        .map_err(|e| failed("read remembered approvals", e))?;
        Ok(found.is_some())
    }

    async fn remember(
        &self,
        owner: &Owner,
        tool: &str,
        duration: Duration,
    ) -> Result<(), StoreError> {
        let pool = self.state.pool().await?;
        let remember = async {
            let mut tx = pool.begin().await?;
            sqlx::query(&format!(
                "INSERT INTO remembered_approvals (organization_id, user_id, tool, until) \
                 VALUES ($1, $2, $3, {NOW} + $4) ON CONFLICT (organization_id, user_id, tool) \
                 DO UPDATE SET until = EXCLUDED.until"
            ))
            .bind(&owner.org)
            .bind(&owner.user)
            .bind(tool)
            .bind(millis(duration))
            .execute(&mut *tx)
            .await?;
            for (user, max) in [(Some(&owner.user), PER_USER), (None, PER_ORG)] {
                sqlx::query(&format!("{TRIM}{NOW})"))
                    .bind(&owner.org)
                    .bind(user)
                    .bind(max as i64)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await
        };
        remember
            .await
            .map_err(|e| failed("remember an approval", e))
    }
}
