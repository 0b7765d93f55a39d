//! Which instance runs each task (MCP's tasks extension), for whom, and
//! how it ended: a task runs where it was started, its `tasks/*` requests
//! that reach another instance are sent there, and once it ended any
//! instance answers how.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use crate::{NOW, Owner, State, StoreError, failed, millis};

/// Tasks the process records at most (one instance runs no more at once
/// than its callers' bounds allow; ended ones are dropped first).
const IN_MEMORY_MAX: usize = 65_536;

/// Where tasks' instances are recorded.
#[async_trait::async_trait]
pub trait TaskHolders: Send + Sync {
    /// Records that `instance` runs task `id` of `owner`, for `ttl`.
    async fn record(
        &self,
        id: &str,
        owner: &Owner,
        instance: &str,
        ttl: Duration,
    ) -> Result<(), StoreError>;

    /// Records how task `id` ended (what `tasks/get` answers, as bytes).
    async fn ended(&self, id: &str, ended: &[u8]) -> Result<(), StoreError>;

    /// The task `id`, if `owner` started it (`None` alike for unknown,
    /// ended long ago and another owner's).
    async fn holder(&self, id: &str, owner: &Owner) -> Result<Option<HeldTask>, StoreError>;
}

/// A task as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldTask {
    /// The instance that runs it.
    pub instance: String,
    /// How it ended, once it has.
    pub ended: Option<Vec<u8>>,
}

/// Tasks' instances in this process.
#[derive(Default)]
pub struct InMemory(Mutex<HashMap<String, (Owner, HeldTask, Instant)>>);

#[async_trait::async_trait]
impl TaskHolders for InMemory {
    async fn record(
        &self,
        id: &str,
        owner: &Owner,
        instance: &str,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let now = Instant::now();
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if held.len() >= IN_MEMORY_MAX {
            held.retain(|_, (_, _, until)| *until > now);
        }
        if held.len() < IN_MEMORY_MAX {
            let task = HeldTask {
                instance: instance.to_owned(),
                ended: None,
            };
            held.insert(id.to_owned(), (owner.clone(), task, now + ttl));
        }
        Ok(())
    }

    async fn ended(&self, id: &str, ended: &[u8]) -> Result<(), StoreError> {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, task, _)) = held.get_mut(id) {
            task.ended = Some(ended.to_vec());
        }
        Ok(())
    }

    async fn holder(&self, id: &str, owner: &Owner) -> Result<Option<HeldTask>, StoreError> {
        let held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let found = held
            .get(id)
            .filter(|(started_by, _, until)| started_by == owner && *until > Instant::now());
        Ok(found.map(|(_, task, _)| task.clone()))
    }
}

/// Tasks' instances in the PostgreSQL database of `state`.
pub struct Postgres {
    state: Arc<State>,
}

impl Postgres {
    pub(crate) fn new(state: Arc<State>) -> Self {
        Self { state }
    }
}

#[async_trait::async_trait]
impl TaskHolders for Postgres {
    async fn record(
        &self,
        id: &str,
        owner: &Owner,
        instance: &str,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let pool = self.state.pool().await?;
        let record = async {
            let mut tx = pool.begin().await?;
            let prune = format!("DELETE FROM task_holders WHERE until <= {NOW}");
            sqlx::query(&prune).execute(&mut *tx).await?;
            sqlx::query(&format!(
                "INSERT INTO task_holders (task_id, organization_id, user_id, instance, until) \
                 VALUES ($1, $2, $3, $4, {NOW} + $5) ON CONFLICT (task_id) DO NOTHING"
            ))
            .bind(id)
            .bind(&owner.org)
            .bind(&owner.user)
            .bind(instance)
            .bind(millis(ttl))
            .execute(&mut *tx)
            .await?;
            tx.commit().await
        };
        record
            .await
            .map_err(|e| failed("record a task's instance", e))
    }

    async fn ended(&self, id: &str, ended: &[u8]) -> Result<(), StoreError> {
        sqlx::query("UPDATE task_holders SET ended = $2 WHERE task_id = $1")
            .bind(id)
            .bind(ended)
            .execute(self.state.pool().await?)
            .await
            .map_err(|e| failed("record how a task ended", e))?;
        Ok(())
    }

    async fn holder(&self, id: &str, owner: &Owner) -> Result<Option<HeldTask>, StoreError> {
        let found: Option<(String, Option<Vec<u8>>)> = sqlx::query_as(&format!(
            "SELECT instance, ended FROM task_holders WHERE task_id = $1 \
             AND organization_id = $2 AND user_id = $3 AND until > {NOW}"
        ))
        .bind(id)
        .bind(&owner.org)
        .bind(&owner.user)
        .fetch_optional(self.state.pool().await?)
        .await
        .map_err(|e| failed("find a task's instance", e))?;
        Ok(found.map(|(instance, ended)| HeldTask { instance, ended }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    async fn a_task_is_found_for_its_owner_only(state: Arc<State>) {
        let holders = state.task_holders();
        let ada = Owner::new("acme", "ada");
        holders.record("t1", &ada, "two", HOUR).await.unwrap();
        let found = holders.holder("t1", &ada).await.unwrap().unwrap();
        assert_eq!((found.instance.as_str(), found.ended), ("two", None));
        holders
            .ended("t1", b"{\"status\":\"completed\"}")
            .await
            .unwrap();
        let found = holders.holder("t1", &ada).await.unwrap().unwrap();
        assert_eq!(
            found.ended.as_deref(),
            Some(&b"{\"status\":\"completed\"}"[..])
        );
        for other in [Owner::new("acme", "bob"), Owner::new("evil", "ada")] {
            assert_eq!(holders.holder("t1", &other).await.unwrap(), None);
        }
        assert_eq!(holders.holder("t2", &ada).await.unwrap(), None);
        holders
            .record("t3", &ada, "one", Duration::from_millis(1))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(holders.holder("t3", &ada).await.unwrap(), None);
    }

    on_both!(a_task_is_found_for_its_owner_only);
}
