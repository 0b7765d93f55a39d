//! The sessions the pack owns: lookup by session or kernel id, the session
//! limit, idle expiry.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, Instant, SystemTime},
};

use pack_sdk::{PackError, codes};

use crate::kernel::Kernel;

/// One session: a kernel and what the pack knows about it.
pub struct Session {
    pub session_id: String,
    pub kernel_id: String,
    pub kernel_name: String,
    pub notebook_path: Option<String>,
    pub kernel: Arc<dyn Kernel>,
    pub created: SystemTime,
    last_used: Mutex<Instant>,
    /// An execution runs now.
    pub busy: AtomicBool,
    /// Why the kernel is dead (seen by an execution); cleared by a restart.
    pub dead: Mutex<Option<String>>,
    /// One execution at a time per kernel.
    pub exec_lock: tokio::sync::Mutex<()>,
}

impl Session {
    pub fn new(
        session_id: String,
        kernel_id: String,
        kernel_name: String,
        notebook_path: Option<String>,
        kernel: Arc<dyn Kernel>,
    ) -> Self {
        Self {
            session_id,
            kernel_id,
            kernel_name,
            notebook_path,
            kernel,
            created: SystemTime::now(),
            last_used: Mutex::new(Instant::now()),
            busy: AtomicBool::new(false),
            dead: Mutex::new(None),
            exec_lock: tokio::sync::Mutex::new(()),
        }
    }

    pub fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    pub fn idle_for(&self) -> Duration {
        self.last_used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }

    pub fn dead_reason(&self) -> Option<String> {
        self.dead.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set_dead(&self, reason: Option<String>) {
        *self.dead.lock().unwrap_or_else(|e| e.into_inner()) = reason;
    }
}

/// Every session, and the slots being started.
pub struct Sessions {
    map: Mutex<BTreeMap<String, Arc<Session>>>,
    starting: AtomicUsize,
    max: usize,
}

/// A reserved slot; released on drop unless the session was added.
pub struct Slot<'a>(&'a Sessions);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.starting.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Sessions {
    pub fn new(max: usize) -> Self {
        Self {
            map: Mutex::default(),
            starting: AtomicUsize::new(0),
            max,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Session>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reserve room for one more session, or say the limit is reached.
    pub fn reserve(&self) -> Result<Slot<'_>, PackError> {
        let map = self.lock();
        let starting = self.starting.fetch_add(1, Ordering::SeqCst);
        let slot = Slot(self);
        if map.len() + starting >= self.max {
            let ids: Vec<&str> = map.keys().map(String::as_str).collect();
            return Err(PackError::new(
                codes::LIMIT_EXCEEDED,
                format!(
                    "{} session(s) are open, the maximum is {} (`max_sessions`): {}",
                    map.len(),
                    self.max,
                    ids.join(", ")
                ),
            )
            .with_help("close one with jupyter.session_close(session_id), or raise `max_sessions` in [packs.jupyter] config"));
        }
        Ok(slot)
    }

    /// Add a started session (its slot is released by the caller's drop).
    pub fn insert(&self, session: Arc<Session>) {
        self.lock().insert(session.session_id.clone(), session);
    }

    /// By session id, else by kernel id.
    pub fn get(&self, id: &str) -> Result<Arc<Session>, PackError> {
        let map = self.lock();
        if let Some(session) = map.get(id) {
            return Ok(Arc::clone(session));
        }
        if let Some(session) = map.values().find(|s| s.kernel_id == id) {
            return Ok(Arc::clone(session));
        }
        let open: Vec<&str> = map.keys().map(String::as_str).collect();
        Err(PackError::new(
            codes::SESSION_NOT_FOUND,
            format!(
                "no session or kernel with id `{id}` (open sessions: {})",
                if open.is_empty() {
                    "none".to_owned()
                } else {
                    open.join(", ")
                }
            ),
        )
        .with_help(
            "create one with jupyter.session_create(), or list them with jupyter.session_list()",
        ))
    }

    pub fn remove(&self, session_id: &str) -> Option<Arc<Session>> {
        self.lock().remove(session_id)
    }

    pub fn all(&self) -> Vec<Arc<Session>> {
        self.lock().values().cloned().collect()
    }

    /// Remove and return the sessions idle longer than `ttl`.
    pub fn expired(&self, ttl: Duration) -> Vec<Arc<Session>> {
        let mut map = self.lock();
        let ids: Vec<String> = map
            .values()
            .filter(|s| !s.busy.load(Ordering::SeqCst) && s.idle_for() > ttl)
            .map(|s| s.session_id.clone())
            .collect();
        ids.iter().filter_map(|id| map.remove(id)).collect()
    }

    pub fn drain(&self) -> Vec<Arc<Session>> {
        std::mem::take(&mut *self.lock()).into_values().collect()
    }
}
