//! `exec_py`: run Python and get back exactly what happened.
//!
//! Every call runs in a fresh interpreter (forked from a warm zygote ahead
//! of demand, so no call pays the start-up), confined by the sandbox
//! to its own folder with no network and bounded memory and processes, in
//! its own process group, with an allow-listed environment, capped output,
//! and a time limit that kills the whole group. The value of the last expression (or of a top-level
//! `return`) comes back as JSON. With `bridge` on, every pack the caller can
//! reach is a Python object in the code (`proj.list()`, aliases too), and its
//! calls go back through the host over a private socket.

mod call;
mod config;
mod interpreter;
mod run;
mod state;
mod zygote;

use std::sync::Arc;

use pack_sdk::{Context, Function, PackDef, PackError, TaskSupport, config::Keyed, json};

use crate::{config::Config, state::ExecPy};

async fn declarations(
    _: Arc<ExecPy>,
    args: declarations::DeclarationsArgs,
    ctx: Context,
) -> Result<declarations::Declared, PackError> {
    let declarations = declarations::python(&ctx.catalog(), &args.into())?;
    Ok(declarations::Declared { declarations })
}

fn pack() -> PackDef<ExecPy> {
    PackDef::new(
        "exec_py",
        "Run Python in a fresh interpreter: stdout, stderr and the value of the last expression; every pack is callable from the code",
        |config: Keyed<Config>, host| ExecPy::new(config.0, &host),
    )
    // Code can do anything its confinement allows and call every function
    // the caller may (destructive ones too), so `run` is as unsafe as the
    // worst of them.
    .function_with(
        Function::new(
            "run",
            "Run Python code in a fresh process and return stdout, stderr and the value of the last expression (or of a top-level `return`). Packs are Python objects in the code: `proj.list()`, `proj.<project> / \"src\"`, aliases.",
            run::run,
        )
        .title("Run Python")
        .tasks(TaskSupport::Optional)
        .destructive()
        .open_world()
        .example(
            json!({"code": "print('hi')\nsum(range(10))"}),
            json!({"success": true, "stdout": "hi\n", "result": 45}),
        ),
    )
    .function_with(
        Function::new(
            "declarations",
            "Python stubs (.pyi style) of the packs `run` code can call: a pack's or one function's \
             (`pack`, `function`), or every one's.",
            declarations,
        )
        .title("Python stubs of the packs")
        .read_only()
        .closed_world(),
    )
    .on_shutdown(|state: Arc<ExecPy>| async move { state.interpreters.stop().await })
}

pack_sdk::export_pack!(pack);
