//! A session's life: `session_create`, `session_list`, `session_close`,
//! `interrupt`, `restart`.

use std::{
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use pack_sdk::{Context, Empty, PackError, codes};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{sessions::Session, state::Jupyter};

/// Arguments of `jupyter.session_create`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateArgs {
    /// Make it a notebook session for this path (its kernel id then differs
    /// from the session id).
    #[serde(default)]
    pub notebook_path: Option<String>,
    /// The kernel spec; the local backend runs `python3` only.
    #[serde(default = "default_kernel_name")]
    pub kernel_name: String,
}

fn default_kernel_name() -> String {
    "python3".to_owned()
}

/// A new session.
#[derive(Serialize, JsonSchema)]
pub struct Created {
    /// Pass it to the other functions.
    pub session_id: String,
    /// The kernel's id (also accepted where a session id is).
    pub kernel_id: String,
    /// The kernel spec.
    pub kernel_name: String,
    /// `local` or `server`.
    pub backend: String,
    /// Milliseconds from the request to a kernel that answers.
    pub startup_ms: f64,
}

/// Arguments naming one session.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionArgs {
    /// A session id (or a kernel id).
    pub session_id: String,
}

/// One open session.
#[derive(Serialize, JsonSchema)]
pub struct SessionInfo {
    pub session_id: String,
    pub kernel_id: String,
    pub kernel_name: String,
    pub notebook_path: Option<String>,
    /// `idle`, `busy` or `dead`.
    pub state: String,
    /// Seconds since the Unix epoch.
    pub created: u64,
    /// Seconds since the last call on it.
    pub idle_secs: u64,
}

/// `jupyter.session_list`: the caller's own sessions.
#[derive(Serialize, JsonSchema)]
pub struct SessionList {
    pub sessions: Vec<SessionInfo>,
    /// `local` or `server`.
    pub backend: String,
    /// `max_sessions`: the most on the whole host.
    pub max_sessions: usize,
    /// `max_sessions_per_owner`: the most the caller (or with `share =
    /// "org"` its organisation) may have.
    pub max_sessions_per_owner: usize,
}

/// What an action on a session did.
#[derive(Serialize, JsonSchema)]
pub struct Done {
    pub session_id: String,
    pub kernel_id: String,
    /// `closed`, `interrupted` or `restarted`.
    pub action: String,
}

/// Start a kernel as a session owned by the caller.
pub(crate) async fn session_create(
    state: Arc<Jupyter>,
    args: CreateArgs,
    ctx: Context,
) -> Result<Created, PackError> {
    let backend = &state.backend;
    let caller = ctx.owner();
    let slot = state.sessions.reserve(&caller)?;
    let started = Instant::now();
    let kernel = backend
        .start(&args.kernel_name, args.notebook_path.as_deref())
        .await?;
    if let Some(shared) = &state.shared {
        let notebook_path = args.notebook_path.as_deref();
        shared
            .record(&caller, &kernel, &args.kernel_name, notebook_path)
            .await?;
    }
    // A kernel id names the session too.
    let aliases = if kernel.kernel_id == kernel.session_id {
        Vec::new()
    } else {
        vec![kernel.kernel_id.clone()]
    };
    let session = slot.insert(
        kernel.session_id.clone(),
        aliases,
        Session::new(
            kernel.session_id,
            kernel.kernel_id,
            args.kernel_name,
            args.notebook_path,
            kernel.kernel,
        ),
    );
    Ok(Created {
        session_id: session.session_id.clone(),
        kernel_id: session.kernel_id.clone(),
        kernel_name: session.kernel_name.clone(),
        backend: backend.name().to_owned(),
        startup_ms: started.elapsed().as_secs_f64() * 1000.0,
    })
}

/// The caller's own sessions.
pub(crate) async fn session_list(
    state: Arc<Jupyter>,
    _: Empty,
    ctx: Context,
) -> Result<SessionList, PackError> {
    let caller = ctx.owner();
    let sessions = match &state.shared {
        None => state
            .sessions
            .list(&caller)
            .iter()
            .map(|s| info(s, s.created, s.idle_for()))
            .collect(),
        Some(shared) => {
            let mut listed = Vec::new();
            for found in shared.list(&caller).await? {
                // Busy or dead as far as this instance knows: idle otherwise.
                listed.push(match state.sessions.get(&caller, &found.session_id) {
                    Ok(held) => info(&held, found.created, found.idle),
                    Err(_) => SessionInfo {
                        session_id: found.session_id,
                        kernel_id: found.kernel_id,
                        kernel_name: found.kernel_name,
                        notebook_path: found.notebook_path,
                        state: "idle".to_owned(),
                        created: unix_secs(found.created),
                        idle_secs: found.idle.as_secs(),
                    },
                });
            }
            listed
        }
    };
    let limits = state.config.sessions.limits();
    Ok(SessionList {
        sessions,
        backend: state.backend_name(),
        max_sessions: limits.max,
        max_sessions_per_owner: limits.per_owner,
    })
}

fn info(s: &Session, created: SystemTime, idle: Duration) -> SessionInfo {
    let dead = s.dead_reason().is_some() || s.kernel.conn().dead_reason().is_some();
    SessionInfo {
        session_id: s.session_id.clone(),
        kernel_id: s.kernel_id.clone(),
        kernel_name: s.kernel_name.clone(),
        notebook_path: s.notebook_path.clone(),
        state: if dead {
            "dead"
        } else if s.busy.load(Ordering::SeqCst) {
            "busy"
        } else {
            "idle"
        }
        .to_owned(),
        created: unix_secs(created),
        idle_secs: idle.as_secs(),
    }
}

fn unix_secs(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

pub(crate) async fn session_close(
    state: Arc<Jupyter>,
    args: SessionArgs,
    ctx: Context,
) -> Result<Done, PackError> {
    let caller = ctx.owner();
    let (session_id, kernel_id) = match &state.shared {
        None => {
            let session = state.sessions.take(&caller, &args.session_id)?;
            session.kernel.shutdown().await;
            (session.session_id.clone(), session.kernel_id.clone())
        }
        Some(shared) => {
            let found = shared.find(&caller, &args.session_id).await?;
            shared.close(&state.sessions, &caller, &found).await?;
            (found.session_id, found.kernel_id)
        }
    };
    Ok(Done {
        session_id,
        kernel_id,
        action: "closed".to_owned(),
    })
}

pub(crate) async fn interrupt(
    state: Arc<Jupyter>,
    args: SessionArgs,
    ctx: Context,
) -> Result<Done, PackError> {
    let session = state.session(&ctx.owner(), &args.session_id).await?;
    session.kernel.interrupt().await.map_err(|e| {
        PackError::new(
            codes::UPSTREAM_ERROR,
            format!(
                "cannot interrupt the kernel of session `{}`: {e}",
                session.session_id
            ),
        )
    })?;
    Ok(Done {
        session_id: session.session_id.clone(),
        kernel_id: session.kernel_id.clone(),
        action: "interrupted".to_owned(),
    })
}

pub(crate) async fn restart(
    state: Arc<Jupyter>,
    args: SessionArgs,
    ctx: Context,
) -> Result<Done, PackError> {
    let session = state.session(&ctx.owner(), &args.session_id).await?;
    session.kernel.restart().await.map_err(|e| {
        session.set_dead(Some(format!("the restart failed: {e}")));
        PackError::new(
            codes::UPSTREAM_ERROR,
            format!(
                "cannot restart the kernel of session `{}`: {e}",
                session.session_id
            ),
        )
        .with_help("close the session and create a new one")
    })?;
    session.set_dead(None);
    Ok(Done {
        session_id: session.session_id.clone(),
        kernel_id: session.kernel_id.clone(),
        action: "restarted".to_owned(),
    })
}
