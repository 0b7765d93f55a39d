//! A pack's sessions in PostgreSQL, for packs whose sessions any instance
//! must find: who owns each, the pack's own record of it (bytes the pack
//! reads and writes, JSON in practice), a version for changes that must not
//! cross, and when any instance last used it. One instance keeps its
//! sessions its own way (in memory, on disk); with `[state] database` a pack
//! keeps them here ([`State::pack_sessions`]).
//!
//! Rows are found by id alone: whether the caller may use one is the pack's
//! ownership rule, applied to [`SessionRow::owner`].

use std::{sync::Arc, time::Duration};

use sqlx::Row as _;

use crate::{NOW, Owner, State, StoreError, failed, millis};

/// One session as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub id: String,
    pub owner: Owner,
    /// What the pack recorded.
    pub body: Vec<u8>,
    /// Grows with each [`PackSessions::update`].
    pub version: i64,
    /// Since any instance last used it.
    pub idle: Duration,
}

/// Whose sessions a per-owner limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// The user's, in their organisation.
    PerUser,
    /// The whole organisation's (`share = "org"`).
    PerOrg,
}

/// One pack's sessions in the PostgreSQL database of a [`State`].
pub struct PackSessions {
    state: Arc<State>,
    pack: String,
}

/// What a [`SessionRow`] is read from, its idle time last (`{NOW} - last_used`).
const COLUMNS: &str = "session_id, organization_id, user_id, body, version";

fn row(found: sqlx::postgres::PgRow) -> SessionRow {
    let idle_ms: i64 = found.get(5);
    SessionRow {
        id: found.get(0),
        owner: Owner::new(found.get::<String, _>(1), found.get::<String, _>(2)),
        body: found.get(3),
        version: found.get(4),
        idle: Duration::from_millis(idle_ms.max(0) as u64),
    }
}

impl PackSessions {
    pub(crate) fn new(state: Arc<State>, pack: &str) -> Self {
        Self {
            state,
            pack: pack.to_owned(),
        }
    }

    /// Records session `id` of `owner` if `fits` allows one more, given how
    /// many the owner holds (counted as `counted`) and how many the pack
    /// holds. Instances take turns here, so two never both take the last
    /// place. `Ok(Err(e))`: `fits` refused.
    pub async fn create<E>(
        &self,
        id: &str,
        owner: &Owner,
        body: &[u8],
        counted: Counted,
        fits: impl FnOnce(usize, usize) -> Result<(), E> + Send,
    ) -> Result<Result<(), E>, StoreError> {
        let pool = self.state.pool().await?;
        let mut tx = pool
            .begin()
            .await
            .map_err(|e| failed("record a session", e))?;
        let counts = async {
            sqlx::query("SELECT pg_advisory_xact_lock(hashtext('pack_sessions:' || $1))")
                .bind(&self.pack)
                .execute(&mut *tx)
                .await?;
            let user = (counted == Counted::PerUser).then_some(&owner.user);
            sqlx::query_as::<_, (i64, i64)>(
                "SELECT COUNT(*) FILTER (WHERE organization_id = $2 \
                 AND ($3::TEXT IS NULL OR user_id = $3)), COUNT(*) \
                 FROM pack_sessions WHERE pack = $1",
            )
            .bind(&self.pack)
            .bind(&owner.org)
            .bind(user)
            .fetch_one(&mut *tx)
            .await
        };
        let (held, total) = counts.await.map_err(|e| failed("count sessions", e))?;
        if let Err(refused) = fits(held as usize, total as usize) {
            return Ok(Err(refused));
        }
        let insert = sqlx::query(&format!(
            "INSERT INTO pack_sessions (pack, session_id, organization_id, user_id, body, \
             version, last_used) VALUES ($1, $2, $3, $4, $5, 1, {NOW})"
        ))
        .bind(&self.pack)
        .bind(id)
        .bind(&owner.org)
        .bind(&owner.user)
        .bind(body)
        .execute(&mut *tx)
        .await;
        insert.map_err(|e| failed("record a session", e))?;
        tx.commit()
            .await
            .map_err(|e| failed("record a session", e))?;
        Ok(Ok(()))
    }

    /// Session `id`, whoever owns it; marked used now.
    pub async fn get(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        let found = sqlx::query(&format!(
            "UPDATE pack_sessions SET last_used = {NOW} WHERE pack = $1 AND session_id = $2 \
             RETURNING {COLUMNS}, {NOW} - last_used"
        ))
        .bind(&self.pack)
        .bind(id)
        .fetch_optional(self.state.pool().await?)
        .await
        .map_err(|e| failed("read a session", e))?;
        Ok(found.map(row))
    }

    /// The sessions of organisation `org`, by id.
    pub async fn list(&self, org: &str) -> Result<Vec<SessionRow>, StoreError> {
        let found = sqlx::query(&format!(
            "SELECT {COLUMNS}, {NOW} - last_used FROM pack_sessions WHERE pack = $1 AND organization_id = $2 \
             ORDER BY session_id"
        ))
        .bind(&self.pack)
        .bind(org)
        .fetch_all(self.state.pool().await?)
        .await
        .map_err(|e| failed("list sessions", e))?;
        Ok(found.into_iter().map(row).collect())
    }

    /// Replaces the record of `id` if it is still at `version` (what the
    /// caller read): `false` when another change came first, or it is gone.
    pub async fn update(&self, id: &str, version: i64, body: &[u8]) -> Result<bool, StoreError> {
        let done = sqlx::query(&format!(
            "UPDATE pack_sessions SET body = $4, version = version + 1, last_used = {NOW} \
             WHERE pack = $1 AND session_id = $2 AND version = $3"
        ))
        .bind(&self.pack)
        .bind(id)
        .bind(version)
        .bind(body)
        .execute(self.state.pool().await?)
        .await
        .map_err(|e| failed("change a session", e))?;
        Ok(done.rows_affected() == 1)
    }

    /// Forgets session `id`: `false` when it was not there.
    pub async fn remove(&self, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM pack_sessions WHERE pack = $1 AND session_id = $2")
            .bind(&self.pack)
            .bind(id)
            .execute(self.state.pool().await?)
            .await
            .map_err(|e| failed("remove a session", e))?;
        Ok(done.rows_affected() == 1)
    }

    /// Removes and returns the sessions no instance used for `idle`: the
    /// caller closes what they held. Each is returned to one caller only.
    pub async fn take_idle(&self, idle: Duration) -> Result<Vec<SessionRow>, StoreError> {
        let found = sqlx::query(&format!(
            "DELETE FROM pack_sessions WHERE pack = $1 AND last_used <= {NOW} - $2 \
             RETURNING {COLUMNS}, {NOW} - last_used"
        ))
        .bind(&self.pack)
        .bind(millis(idle))
        .fetch_all(self.state.pool().await?)
        .await
        .map_err(|e| failed("expire sessions", e))?;
        Ok(found.into_iter().map(row).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(url: String) -> (PackSessions, PackSessions) {
        let state = State::open(Some(url));
        (
            state.pack_sessions("jupyter").unwrap(),
            state.pack_sessions("exec_ts").unwrap(),
        )
    }

    /// At most `per_owner` each, `max` in all: what a pack's `fits` says.
    fn limit(per_owner: usize, max: usize) -> impl FnOnce(usize, usize) -> Result<(), String> {
        move |held, total| {
            if held >= per_owner {
                Err(format!("owner holds {held}"))
            } else if total >= max {
                Err(format!("pack holds {total}"))
            } else {
                Ok(())
            }
        }
    }

    #[tokio::test]
    async fn sessions_are_counted_per_owner_and_per_pack() {
        integrations_store::testing::on_postgres(|url| async move {
            let (jupyter, exec_ts) = open(url);
            let ada = Owner::new("acme", "ada");
            let bob = Owner::new("acme", "bob");
            let user = Counted::PerUser;
            for id in ["s1", "s2"] {
                let made = jupyter.create(id, &ada, b"{}", user, limit(2, 3)).await;
                made.unwrap().unwrap();
            }
            let refused = jupyter.create("s3", &ada, b"{}", user, limit(2, 3)).await;
            assert_eq!(refused.unwrap(), Err("owner holds 2".to_owned()));
            // Bob is another user; counted for the organisation, ada's count.
            jupyter
                .create("s3", &bob, b"{}", user, limit(2, 3))
                .await
                .unwrap()
                .unwrap();
            let org = jupyter
                .create("s4", &bob, b"{}", Counted::PerOrg, limit(9, 9))
                .await;
            org.unwrap().unwrap();
            let full = jupyter.create("s5", &bob, b"{}", user, limit(9, 4)).await;
            assert_eq!(full.unwrap(), Err("pack holds 4".to_owned()));
            // Another pack's sessions are its own.
            exec_ts
                .create("s1", &ada, b"{}", user, limit(1, 1))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(jupyter.list("acme").await.unwrap().len(), 4);
            assert_eq!(exec_ts.list("acme").await.unwrap().len(), 1);
            assert!(jupyter.list("evil").await.unwrap().is_empty());
        })
        .await;
    }

    #[tokio::test]
    async fn a_change_made_from_an_old_version_is_refused() {
        integrations_store::testing::on_postgres(|url| async move {
            let (jupyter, _) = open(url);
            let ada = Owner::new("acme", "ada");
            let any = limit(9, 9);
            jupyter
                .create("s1", &ada, b"one", Counted::PerUser, any)
                .await
                .unwrap()
                .unwrap();
            let read = jupyter.get("s1").await.unwrap().unwrap();
            assert_eq!(
                (read.owner.clone(), read.body.clone(), read.version),
                (ada, b"one".to_vec(), 1)
            );
            assert!(jupyter.update("s1", read.version, b"two").await.unwrap());
            // Another instance read version 1 too: its change comes second.
            assert!(!jupyter.update("s1", read.version, b"three").await.unwrap());
            assert_eq!(jupyter.get("s1").await.unwrap().unwrap().body, b"two");
            assert!(jupyter.remove("s1").await.unwrap());
            assert!(!jupyter.remove("s1").await.unwrap());
            assert_eq!(jupyter.get("s1").await.unwrap(), None);
            assert!(!jupyter.update("s1", 2, b"four").await.unwrap());
        })
        .await;
    }

    #[tokio::test]
    async fn idle_sessions_are_taken_once() {
        integrations_store::testing::on_postgres(|url| async move {
            let (jupyter, _) = open(url);
            let ada = Owner::new("acme", "ada");
            for id in ["old", "used"] {
                let made = jupyter
                    .create(id, &ada, b"{}", Counted::PerUser, limit(9, 9))
                    .await;
                made.unwrap().unwrap();
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            jupyter.get("used").await.unwrap();
            let idle = Duration::from_millis(200);
            let taken = jupyter.take_idle(idle).await.unwrap();
            assert_eq!(
                taken.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
                ["old"]
            );
            assert!(jupyter.take_idle(idle).await.unwrap().is_empty());
            assert!(jupyter.get("used").await.unwrap().is_some());
        })
        .await;
    }
}
