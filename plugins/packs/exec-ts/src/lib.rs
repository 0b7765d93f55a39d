//! `exec_ts`: run TypeScript and JavaScript with Node.js, buffered, and work
//! in notebook sessions of cells (the Srcbook model).
//!
//! TypeScript never reaches `node` as TypeScript: [`strip::strip_types`]
//! turns it into JavaScript in-process (swc's type stripper, which keeps every
//! line and column), so there is no loader to start and node's stack traces
//! point at the original lines. Every process runs confined by the sandbox
//! (node's installation read-only, one writable folder: its own fresh one,
//! or the session's; no network unless configured; bounded memory,
//! processes, CPU and files) and under `pack-process`'s rules (own process
//! group killed whole on timeout, capped capture, environment allow-list).
//! Calls with neither `cwd` nor `env` whose code needs nothing of node's
//! (`route.rs` decides, before anything runs) run in a fresh JavaScript
//! realm of a warm, confined `node` worker (`realm.rs`); the others take an
//! idle `node` from a warm pool (a fresh process per call, never reused),
//! filled from the first call that needs one.
//!
//! Functions, one family per file: `execute` and `declarations`
//! (`execute.rs`); `session_create`, `session_list`, `session_delete`
//! (`sessions.rs`); `cell_create`, `cell_update`, `cell_list`, `cell_delete`
//! (`cells.rs`); `cell_execute` (`cell_execute.rs`); `session_export`,
//! `session_import` (`export_import.rs`); `npm_install` (`npm_install.rs`).
//! Those on a session open it through `State::in_session` (`state.rs`); this
//! file holds the pack's table.

mod cell_execute;
mod cells;
mod config;
mod execute;
mod export_import;
pub mod instrument;
pub mod network;
pub mod node;
pub mod notebook;
pub mod npm;
mod npm_install;
mod realm;
pub mod route;
pub mod scratch;
mod sessions;
pub mod srcmd;
mod state;
pub mod strip;
pub mod typecheck;

use std::sync::Arc;

use pack_sdk::{Function, Host, PackDef, TaskSupport, config::Keyed, json};

use crate::{config::Config, state::State};

fn pack() -> PackDef<State> {
    PackDef::new(
        "exec_ts",
        "Run TypeScript/JavaScript with Node.js and work in notebook sessions of cells",
        |config: Keyed<Config>, host: Host| State::new(config.0, &host),
    )
    // Notebook sessions in the host's `[state] database`, for every instance.
    .shares_state()
    // Code (execute, cell_execute, npm install's scripts) can do anything its
    // confinement allows, and code mode calls every function the caller may:
    // as unsafe as the worst of them. The rest only touch the caller's own
    // notebook sessions.
    .function_with(
        Function::new(
            "execute",
            "Run TypeScript or JavaScript (an ES module: import, top-level await) in a fresh JavaScript realm, \
             or in a fresh node process when it imports or uses node's globals (process, Buffer, fetch, ...); \
             returns {stdout, stderr, exitCode, executionTime, result} (result: the last expression's value). \
             Every pack is a global of async functions taking one object: `await proj.list()`, \
             `await proj.read({name, path})`; a failed call throws `PackError` (code, message, help). \
             Types are stripped, and checked against the packs' declarations with `typecheck: true` \
             (`exec_ts.declarations` shows them). A non-zero exit, a thrown error or a timeout \
             (exitCode 124) is an error result with the same shape.",
            execute::execute,
        )
        .title("Run TypeScript or JavaScript")
        .tasks(TaskSupport::Optional)
        .destructive()
        .open_world()
        .example(
            json!({"code": "const xs: number[] = [1, 2, 3];\nconsole.log(xs.length);\nxs.reduce((a, b) => a + b)"}),
            json!({"stdout": "3\n", "exitCode": 0, "result": 6}),
        ),
    )
    .function_with(
        Function::new(
            "declarations",
            "TypeScript declarations (.d.ts) of the packs `execute` code can call: a pack's or one function's \
             (`pack`, `function`), or every one's.",
            execute::declarations,
        )
        .title("TypeScript declarations of the packs")
        .read_only()
        .closed_world(),
    )
    .function_with(
        Function::new(
            "session_create",
            "Create a notebook session: a directory with package.json, tsconfig.json and src/ for its cells.",
            sessions::session_create,
        )
        .title("Create a notebook session")
        .additive()
        .closed_world(),
    )
    .function_with(
        Function::new("session_list", "List your notebook sessions.", sessions::session_list)
            .title("List notebook sessions")
            .read_only()
            .closed_world(),
    )
    .function_with(
        Function::new(
            "session_delete",
            "Delete a notebook session and its directory.",
            sessions::session_delete,
        )
        .title("Delete a notebook session")
        .destructive()
        .idempotent()
        .closed_world(),
    )
    .function_with(
        Function::new(
            "cell_create",
            "Add a code cell (a file under src/) to a session; cells import each other as `./<filename>`.",
            cells::cell_create,
        )
        .title("Add a cell")
        .additive()
        .closed_world(),
    )
    .function_with(
        Function::new("cell_update", "Replace a cell's source.", cells::cell_update)
            .title("Replace a cell's source")
            .destructive()
            .idempotent()
            .closed_world(),
    )
    .function_with(
        Function::new("cell_list", "List a session's cells with their sources.", cells::cell_list)
            .title("List cells")
            .read_only()
            .closed_world(),
    )
    .function_with(
        Function::new("cell_delete", "Delete a cell and its file.", cells::cell_delete)
            .title("Delete a cell")
            .destructive()
            .idempotent()
            .closed_world(),
    )
    .function_with(
        Function::new(
            "cell_execute",
            "Run a cell with the session directory as working directory (its node_modules and the other cells are importable); \
             returns {stdout, stderr, exitCode, executionTime}.",
            cell_execute::cell_execute,
        )
        .title("Run a cell")
        .tasks(TaskSupport::Optional)
        .destructive()
        .open_world(),
    )
    .function_with(
        Function::new(
            "session_export",
            "Export a session as a Srcbook .src.md document (returned, and written beside the session).",
            export_import::session_export,
        )
        .title("Export a session")
        .additive()
        .idempotent()
        .closed_world(),
    )
    .function_with(
        Function::new(
            "session_import",
            "Create a session from a Srcbook .src.md document.",
            export_import::session_import,
        )
        .title("Import a session")
        .additive()
        .closed_world(),
    )
    .function_with(
        Function::new(
            "npm_install",
            "Run `npm install [packages]` in a session directory, so its cells can import them.",
            npm_install::npm_install,
        )
        .title("Install npm packages")
        .tasks(TaskSupport::Optional)
        .destructive()
        .open_world(),
    )
    .on_shutdown(|state: Arc<State>| async move {
        state.runner.shutdown();
        if let Some(realms) = &state.realms {
            realms.shutdown();
        }
    })
}

pack_sdk::export_pack!(pack);

#[cfg(test)]
mod pack_tests;
