//! One session: a kernel and what the pack knows about it. The table of
//! sessions (owners, lookup by session or kernel id, limits, idle expiry) is
//! the SDK's [`pack_sdk::owned::Table`].

use std::{
    sync::{Arc, Mutex, atomic::AtomicBool},
    time::SystemTime,
};

use pack_sdk::owned::Kind;

use crate::kernel::Kernel;

/// How the session table names what it holds.
pub const SESSIONS: Kind = Kind {
    noun: "session",
    not_found: pack_sdk::codes::SESSION_NOT_FOUND,
    not_found_help: "create one with jupyter.session_create(), or list yours with jupyter.session_list()",
    limit_help: "close one with jupyter.session_close(session_id), or raise `max_sessions` or \
                 `max_sessions_per_owner` in [packs.jupyter] config",
};

/// One session: a kernel and what the pack knows about it.
pub struct Session {
    pub session_id: String,
    pub kernel_id: String,
    pub kernel_name: String,
    pub notebook_path: Option<String>,
    pub kernel: Arc<dyn Kernel>,
    pub created: SystemTime,
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
            busy: AtomicBool::new(false),
            dead: Mutex::new(None),
            exec_lock: tokio::sync::Mutex::new(()),
        }
    }

    pub fn dead_reason(&self) -> Option<String> {
        self.dead.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set_dead(&self, reason: Option<String>) {
        *self.dead.lock().unwrap_or_else(|e| e.into_inner()) = reason;
    }
}
