//! Used request states in PostgreSQL: a state one instance opened is
//! refused by every other.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use super::{SpentStates, USED};
use crate::{NOW, State, failed, millis};

/// Every this many spends, the records past their time are deleted.
const PRUNE_EVERY: u32 = 256;

/// Used states in the PostgreSQL database of `state`.
pub struct Postgres {
    state: Arc<State>,
    spends: AtomicU32,
}

impl Postgres {
    pub(crate) fn new(state: Arc<State>) -> Self {
        Self {
            state,
            spends: AtomicU32::new(0),
        }
    }
}

#[async_trait::async_trait]
impl SpentStates for Postgres {
    async fn spend(&self, digest: [u8; 32], keep: Duration) -> Result<(), String> {
        let pool = self.state.pool().await.map_err(|e| e.to_string())?;
        if self
            .spends
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(PRUNE_EVERY)
        {
            let prune = format!("DELETE FROM spent_states WHERE until <= {NOW}");
            let pruned = sqlx::query(&prune).execute(pool).await;
            pruned.map_err(|e| failed("forget used states", e).to_string())?;
        }
        // A record past its time is taken over; a live one stays, and then
        // nothing is returned: the state was used.
        let spend = format!(
            "INSERT INTO spent_states (digest, until) VALUES ($1, {NOW} + $2) \
             ON CONFLICT (digest) DO UPDATE SET until = EXCLUDED.until \
             WHERE spent_states.until <= {NOW} RETURNING 1"
        );
        let spent = sqlx::query(&spend)
            .bind(&digest[..])
            .bind(millis(keep))
            .fetch_optional(pool)
            .await
            .map_err(|e| failed("record a used state", e).to_string())?;
        spent.map(drop).ok_or_else(|| USED.to_owned())
    }
}
