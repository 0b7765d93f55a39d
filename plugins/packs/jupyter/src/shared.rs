//! Sessions every instance finds: with `backend = "server"` and the host's
//! `[state] database`, the table of sessions (who owns which kernel on the
//! shared Jupyter Server) is in PostgreSQL, and the pack's own table only
//! holds this instance's connections to those kernels, made on first use.
//!
//! The database row decides: a session closed or expired through another
//! instance is gone here too at its next use, and limits count every
//! instance's sessions. A connection this instance stops using (idle, or
//! the host exits) is closed; the kernel runs on for the others. Idle
//! sessions are shut down by whichever instance finds them idle first.

use std::{
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use pack_sdk::{
    PackError, codes,
    owned::{Lease, Limits, Owner, Share, Table},
};
use serde::{Deserialize, Serialize};
use state_store::{Counted, PackSessions, SessionRow, StoreError};

use crate::{
    kernel::{Kernel, Started},
    server::{ServerBackend, ServerKernel},
    sessions::{SESSIONS, Session},
};

/// How many kernels one instance keeps a connection to at once: the real
/// limits are counted in the database, this only bounds the connections.
pub const CONNECTIONS: Limits = Limits {
    max: 4096,
    per_owner: 4096,
};

/// What the database records of a session.
#[derive(Serialize, Deserialize)]
struct Record {
    kernel_id: String,
    kernel_name: String,
    notebook_path: Option<String>,
    /// Seconds since the Unix epoch.
    created: u64,
}

/// A session found in the database, and what it records.
pub struct Found {
    pub session_id: String,
    pub kernel_id: String,
    pub kernel_name: String,
    pub notebook_path: Option<String>,
    pub created: SystemTime,
    /// Since any instance last used it.
    pub idle: Duration,
}

impl Found {
    fn read(row: SessionRow) -> Result<Self, PackError> {
        let record: Record = serde_json::from_slice(&row.body).map_err(|e| {
            PackError::internal(format!("session `{}` is recorded unreadably: {e}", row.id))
        })?;
        Ok(Self {
            kernel_id: record.kernel_id,
            kernel_name: record.kernel_name,
            notebook_path: record.notebook_path,
            created: UNIX_EPOCH + Duration::from_secs(record.created),
            idle: row.idle,
            session_id: row.id,
        })
    }

    /// The kernel on the server, not connected (a notebook session's
    /// server-side session has our session's id).
    fn kernel(&self, server: &ServerBackend) -> ServerKernel {
        let server_session = self.notebook_path.as_ref().map(|_| self.session_id.clone());
        server.kernel(&self.kernel_id, server_session)
    }
}

/// The sessions in the database, and the server their kernels run on.
pub struct Shared {
    rows: PackSessions,
    server: Arc<ServerBackend>,
    share: Share,
    limits: Limits,
    connecting: tokio::sync::Mutex<()>,
}

/// The database could not be reached: what failed and what to do.
fn unavailable(e: StoreError) -> PackError {
    PackError::new(codes::UPSTREAM_ERROR, e.to_string()).with_help(
        "Jupyter sessions are in the host's `[state] database`; try again once it answers",
    )
}

impl Shared {
    pub fn new(
        rows: PackSessions,
        server: Arc<ServerBackend>,
        share: Share,
        limits: Limits,
    ) -> Self {
        Self {
            rows,
            server,
            share,
            limits,
            connecting: tokio::sync::Mutex::new(()),
        }
    }

    /// Records a kernel the caller just started, within the limits counted
    /// over every instance; past them the kernel is shut down again.
    pub async fn record(
        &self,
        caller: &Owner,
        started: &Started,
        kernel_name: &str,
        notebook_path: Option<&str>,
    ) -> Result<(), PackError> {
        let record = Record {
            kernel_id: started.kernel_id.clone(),
            kernel_name: kernel_name.to_owned(),
            notebook_path: notebook_path.map(str::to_owned),
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        };
        let body = serde_json::to_vec(&record).expect("a record is JSON");
        let counted = match self.share {
            Share::User => Counted::PerUser,
            Share::Org => Counted::PerOrg,
        };
        let mine = self.ids(caller).await?;
        let fits = |held, total| self.limits.check(&SESSIONS, self.share, &mine, held, total);
        let made = self
            .rows
            .create(&started.session_id, caller, &body, counted, fits)
            .await;
        let refused = match made {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(refused)) => refused,
            Err(e) => unavailable(e),
        };
        started.kernel.shutdown().await;
        Err(refused)
    }

    /// Session `id` (or the session of kernel `id`) if `caller` may use it;
    /// else exactly what an unknown id gets.
    pub async fn find(&self, caller: &Owner, id: &str) -> Result<Found, PackError> {
        let row = match self.rows.get(id).await.map_err(unavailable)? {
            Some(row) => Some(row),
            None => self.by_kernel(caller, id).await?,
        };
        match row.filter(|row| self.share.allows(&row.owner, caller)) {
            Some(row) => Found::read(row),
            None => Err(SESSIONS.not_found(id, &self.ids(caller).await?)),
        }
    }

    /// This instance's connection to the kernel of `found`, made now if it
    /// has none that still answers; kept in `connections` under the owner
    /// `caller` was allowed through.
    pub async fn connect(
        &self,
        connections: &Table<Session>,
        caller: &Owner,
        found: Found,
    ) -> Result<Lease<Session>, PackError> {
        // One connection per kernel: two calls never both make one.
        let _one = self.connecting.lock().await;
        if let Ok(held) = connections.get(caller, &found.session_id) {
            if held.kernel.conn().dead_reason().is_none() {
                return Ok(held);
            }
            drop(held);
            if let Ok(session) = connections.take(caller, &found.session_id) {
                session.kernel.release().await;
            }
        }
        let kernel = found.kernel(&self.server);
        kernel
            .connect()
            .await
            .map_err(|e| PackError::new(codes::UPSTREAM_ERROR, e))?;
        let kernel: Arc<dyn Kernel> = Arc::new(kernel);
        let aliases = if found.kernel_id == found.session_id {
            Vec::new()
        } else {
            vec![found.kernel_id.clone()]
        };
        let slot = connections.reserve(caller)?;
        let mut session = Session::new(
            found.session_id.clone(),
            found.kernel_id,
            found.kernel_name,
            found.notebook_path,
            kernel,
        );
        session.created = found.created;
        slot.insert(found.session_id.clone(), aliases, session);
        connections.get(caller, &found.session_id)
    }

    /// Closes session `found` for every instance: its row goes, then its
    /// kernel (through a connection of this instance's, if any).
    pub async fn close(
        &self,
        connections: &Table<Session>,
        caller: &Owner,
        found: &Found,
    ) -> Result<(), PackError> {
        self.rows
            .remove(&found.session_id)
            .await
            .map_err(unavailable)?;
        match connections.take(caller, &found.session_id) {
            Ok(session) => session.kernel.shutdown().await,
            Err(_) => found.kernel(&self.server).shutdown().await,
        }
        Ok(())
    }

    /// The sessions `caller` may use, by id.
    pub async fn list(&self, caller: &Owner) -> Result<Vec<Found>, PackError> {
        let rows = self.usable(caller).await?;
        Ok(rows
            .into_iter()
            .filter_map(|row| Found::read(row).ok())
            .collect())
    }

    /// The rows of every instance that `caller` may use: the one place
    /// sessions are listed.
    async fn usable(&self, caller: &Owner) -> Result<Vec<SessionRow>, PackError> {
        let rows = self.rows.list(&caller.org).await.map_err(unavailable)?;
        Ok(rows
            .into_iter()
            .filter(|row| self.share.allows(&row.owner, caller))
            .collect())
    }

    /// Every `ttl / 4`, shut down the kernels of sessions no instance used
    /// for `ttl`, and close this instance's connections idle that long.
    pub fn spawn_reaper(self: &Arc<Self>, connections: &Arc<Table<Session>>, ttl: Duration) {
        connections.spawn_reaper(ttl, |session| async move { session.kernel.release().await });
        let shared = Arc::downgrade(self);
        let every = pack_sdk::owned::reap_every(ttl);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                // Not reachable now: the next round tries again.
                for row in shared.rows.take_idle(ttl).await.unwrap_or_default() {
                    if let Ok(found) = Found::read(row) {
                        found.kernel(&shared.server).shutdown().await;
                    }
                }
            }
        });
    }

    /// The caller's session whose kernel is `kernel_id`.
    async fn by_kernel(
        &self,
        caller: &Owner,
        kernel_id: &str,
    ) -> Result<Option<SessionRow>, PackError> {
        let rows = self.usable(caller).await?;
        Ok(rows.into_iter().find(|row| {
            serde_json::from_slice::<Record>(&row.body).is_ok_and(|r| r.kernel_id == kernel_id)
        }))
    }

    /// The ids `caller` may use (what a refusal may name).
    async fn ids(&self, caller: &Owner) -> Result<Vec<String>, PackError> {
        let rows = self.usable(caller).await?;
        Ok(rows.into_iter().map(|row| row.id).collect())
    }
}
