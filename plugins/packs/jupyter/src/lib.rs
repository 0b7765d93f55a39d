//! `jupyter`: persistent Python kernels, state kept between calls.
//!
//! Two backends behind one trait ([`kernel::Backend`]): `local` (default)
//! launches `ipykernel` itself, confined by the sandbox to its session's
//! folder with bounded memory and processes and no network but its own
//! listening ports, and speaks the Jupyter messaging protocol over ZeroMQ on
//! TCP on loopback; `server` drives kernels on a Jupyter Server (REST +
//! websocket). Sessions are owned by the pack and each belongs to the caller
//! that created it (the SDK's [`pack_sdk::owned::Table`]: anyone else gets
//! `SESSION_NOT_FOUND`, as for an unknown id; `share = "org"` lets the
//! organisation's users share them): closed after an idle TTL, limited in
//! number per owner and in all, and all shut down when the host exits.
//!
//! Functions: `session_create`, `session_list`, `session_close`,
//! `interrupt`, `restart` (`lifecycle.rs`); `execute_code`
//! (`execute_code.rs`, over the protocol of `execute.rs`). This file holds
//! the pack's table.

mod config;
mod conn;
mod execute;
mod execute_code;
mod http;
mod kernel;
mod lifecycle;
mod local;
mod server;
mod sessions;
mod shared;
mod state;

use std::sync::Arc;

use pack_sdk::{Function, PackDef, TaskSupport, config::Keyed};

use crate::{config::Config, state::Jupyter};

fn pack() -> PackDef<Jupyter> {
    PackDef::new(
        "jupyter",
        "Persistent Python kernels (Jupyter): run code step by step with state kept between calls; stdout, results, plots as images, precise errors",
        |config: Keyed<Config>, host| Jupyter::new(config.0, &host),
    )
    // With a Jupyter Server, which session is which kernel is in the host's
    // `[state] database`, for every instance.
    .shares_state()
    // Not ready while the Jupyter Server does not answer.
    .ready(|state: Arc<Jupyter>| async move { state.backend.ready().await })
    // No examples: every call but `session_create` needs a session id that
    // another call made. Code can do anything its confinement allows: as
    // unsafe as it gets. The rest only touch the caller's own sessions.
    .function_with(
        Function::new(
            "session_create",
            "Start a kernel (a session). State persists across execute_code calls until the session is closed, restarted, or idle past the TTL.",
            lifecycle::session_create,
        )
        .title("Start a kernel session")
        .additive()
        .closed_world(),
    )
    .function_with(
        Function::new(
            "execute_code",
            "Run code in a session's kernel: stdout, stderr, the last expression's displayed value, images (PNG/JPEG/SVG), or the exception with its traceback. `timeout` in seconds (default 30, at most 300).",
            execute_code::execute_code,
        )
        .title("Run code in a kernel")
        .tasks(TaskSupport::Optional)
        .destructive()
        .open_world(),
    )
    .function_with(
        Function::new("session_list", "Your open sessions and their state (idle, busy, dead).", lifecycle::session_list)
            .title("List kernel sessions")
            .read_only()
            .closed_world(),
    )
    .function_with(
        Function::new("session_close", "Shut a session's kernel down.", lifecycle::session_close)
            .title("Close a kernel session")
            .destructive()
            .idempotent()
            .closed_world(),
    )
    .function_with(
        Function::new("interrupt", "Interrupt what a session's kernel is running (KeyboardInterrupt); state is kept.", lifecycle::interrupt)
            .title("Interrupt a kernel")
            .destructive()
            .idempotent()
            .closed_world(),
    )
    .function_with(
        Function::new("restart", "Restart a session's kernel: its state is lost, a dead session comes back.", lifecycle::restart)
            .title("Restart a kernel")
            .destructive()
            .closed_world(),
    )
    .on_shutdown(|state: Arc<Jupyter>| async move {
        let sessions = state.sessions.drain();
        // Shared kernels run on for the other instances.
        let shared = state.shared.is_some();
        futures::future::join_all(sessions.iter().map(|s| match shared {
            true => s.kernel.release(),
            false => s.kernel.shutdown(),
        }))
        .await;
    })
}

pack_sdk::export_pack!(pack);

#[cfg(test)]
mod pack_tests;
