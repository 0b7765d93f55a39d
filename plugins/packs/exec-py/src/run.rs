//! `exec_py.run`: Python in a fresh interpreter, and what came of it in one
//! shape.

use std::{path::PathBuf, sync::Arc, time::Duration};

use beneath::Dir;
use pack_sdk::{Context, PackError};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    call::{self, RunOutput},
    state::ExecPy,
};

/// Arguments of `exec_py.run`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// Python source. Indented blocks are dedented; the value of the last
    /// expression, or of a top-level `return`, is the result.
    pub code: String,
    /// Time limit in milliseconds; past it the whole process group is killed.
    #[serde(default = "default_timeout_ms")]
    #[schemars(range(min = 1))]
    pub timeout_ms: u64,
    /// Make every pack callable from the code (`proj.list()`, aliases).
    #[serde(default = "yes")]
    pub bridge: bool,
    /// Working directory (must be inside `cwd_roots`); default: a fresh
    /// temporary folder removed after the call.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}

fn default_timeout_ms() -> u64 {
    30_000
}

fn yes() -> bool {
    true
}

pub(crate) async fn run(
    state: Arc<ExecPy>,
    args: RunArgs,
    ctx: Context,
) -> Result<RunOutput, PackError> {
    let interpreters = &state.interpreters;
    let launcher = interpreters.launcher().await?;
    let cwd = args
        .cwd
        .as_deref()
        .map(|cwd| state.working_dir(cwd))
        .transpose()?;
    // A forked one's replacement is forked once this call is done with it.
    let (interpreter, _replacement) = match &cwd {
        Some(cwd) => launcher
            .start(cwd, state.config.cwd_writable)
            .await
            .map(|started| (started, None))
            .map_err(|e| PackError::internal(format!("cannot start Python: {e}")))?,
        None => {
            let (forked, replacement) = interpreters.fork(state.config.demand()).await?;
            (forked, Some(replacement))
        }
    };
    let own = interpreter.dir.path();
    let request = call::Request {
        code: args.code,
        cwd: cwd.as_ref().map_or(own, Dir::path).display().to_string(),
        tmpdir: own.display().to_string(),
        bindings: args.bridge.then(|| ctx.shared_catalog()),
        max_result_bytes: state.config.max_output_bytes,
    };
    let timeout = Duration::from_millis(args.timeout_ms.max(1));
    call::run(
        interpreter,
        request,
        timeout,
        state.config.max_output_bytes,
        &ctx,
    )
    .await
}

#[cfg(test)]
mod result_schemas {
    use pack_sdk::{
        Value, json,
        testing::{check_failure, check_manifest, check_result},
    };

    use super::*;
    use crate::pack;

    fn finished(note: Option<&str>) -> RunOutput {
        RunOutput {
            success: true,
            stdout: String::new(),
            stderr: String::new(),
            result: Value::Null,
            result_repr: None,
            has_value: note.is_none(),
            note: note.map(str::to_owned),
            error_type: None,
            error_message: None,
            traceback: None,
            line: None,
            column: None,
            execution_time_ms: 1.5,
        }
    }

    /// A failure keeps the run's shape, so it fits the same schema.
    #[test]
    fn results_and_failures_fit_the_schemas() {
        check_manifest(pack).unwrap();
        check_result(&finished(None)).unwrap();
        check_result(&finished(Some("no value"))).unwrap();
        let failed = RunOutput {
            success: false,
            error_type: Some("ZeroDivisionError".into()),
            error_message: Some("division by zero".into()),
            traceback: Some(String::new()),
            line: Some(2),
            ..finished(None)
        };
        let error = PackError::new(pack_sdk::codes::EXECUTION_ERROR, "x").with_result(&failed);
        check_failure::<RunOutput>(&error).unwrap();
    }

    /// The examples, run by a real Python (`PACKHOST_TEST_PYTHON`, which
    /// `./dev test` sets, else `python3`), unconfined: the test binary is not
    /// the host's sandbox helper.
    #[tokio::test]
    async fn examples_hold() {
        let python = std::env::var("PACKHOST_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
        let config = json!({"python": python, "sandbox": "off", "pool_size": 0});
        let pack = pack_sdk::testing::PackTest::build(pack)
            .config(config)
            .start()
            .unwrap();
        let checked = pack.check_examples().await;
        pack.shutdown().await;
        if let Err(failed) = checked {
            panic!("{failed}");
        }
    }
}
