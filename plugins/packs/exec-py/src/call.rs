//! One call: hand the request to an interpreter, serve its tool calls over
//! the channel, capture its output, and shape the answer.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use pack_process::{Exit, Finished};
use pack_sdk::{Context, PackError, SharedCatalog, Value, bridge, codes};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::interpreter::Interpreter;

/// What the pack tells the runner.
pub struct Request {
    pub code: String,
    pub cwd: String,
    pub tmpdir: String,
    /// The catalog the code binds, or none without code mode.
    pub bindings: Option<Arc<SharedCatalog>>,
    pub max_result_bytes: usize,
}

/// A run, finished or failed: one shape, so that a failure's structured
/// content fits the function's output schema as MCP clients check it.
#[derive(Serialize, JsonSchema)]
pub struct RunOutput {
    /// True when the code finished; false on a failure (an error result,
    /// with `error_type` and `error_message`).
    pub success: bool,
    /// What the code printed (capped).
    pub stdout: String,
    /// What the code wrote to stderr (capped).
    pub stderr: String,
    /// The value as JSON when it is JSON-serialisable, else null.
    pub result: Value,
    /// `repr()` of a value that is not JSON-serialisable.
    pub result_repr: Option<String>,
    /// Whether the code produced a value (`None` counts as a value).
    pub has_value: bool,
    /// Said when there is no value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Failure: `SyntaxError`, `ZeroDivisionError`, `TimeoutError`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// Failure: the exception's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Failure: frames of the user's code, with its own line numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
    /// Failure: the line of the user's code where it failed, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Failure: the column, for a syntax error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// Wall time of the call.
    pub execution_time_ms: f64,
}

/// The runner's last message.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Answer {
    Value {
        has_value: bool,
        #[serde(default)]
        result: Value,
        #[serde(default)]
        result_repr: Option<String>,
    },
    Error {
        error_type: String,
        error_message: String,
        traceback: String,
        line: Option<u32>,
        column: Option<u32>,
    },
}

pub async fn run(
    interpreter: Interpreter,
    request: Request,
    timeout: Duration,
    max_output: usize,
    ctx: &Context,
) -> Result<RunOutput, PackError> {
    let started = Instant::now();
    // Its folder goes when the call ends.
    let Interpreter {
        group,
        channel,
        dir: _dir,
    } = interpreter;
    let (reader, mut writer) = channel.into_split();
    let fields = json!({
        "code": request.code,
        "cwd": request.cwd,
        "tmpdir": request.tmpdir,
        "max_result_bytes": request.max_result_bytes,
    });
    let mut line = match &request.bindings {
        Some(shared) => bridge::object_with(&fields, "bindings", shared.bindings()),
        None => fields.to_string(),
    };
    line.push('\n');
    writer
        .write_all(line.as_bytes())
        .await
        .map_err(|e| PackError::internal(format!("the interpreter did not take the code: {e}")))?;
    let gone = CancellationToken::new();
    let answered = CancellationToken::new();
    let (answer, finished) = tokio::join!(
        async {
            let answer = bridge::serve(
                BufReader::new(reader),
                writer,
                ctx,
                &gone,
                bridge::Until::Answer,
            )
            .await
            .and_then(|line| serde_json::from_str::<Answer>(&line).ok());
            if answer.is_some() {
                answered.cancel();
            }
            answer
        },
        async {
            let finished = group
                .finish_on_answer(timeout, max_output, answered.cancelled())
                .await;
            gone.cancel();
            finished
        }
    );
    shape(answer, finished, timeout, started.elapsed())
}

fn shape(
    answer: Option<Answer>,
    finished: Finished,
    timeout: Duration,
    elapsed: Duration,
) -> Result<RunOutput, PackError> {
    let execution_time_ms = elapsed.as_secs_f64() * 1000.0;
    let failure = |error_type: &str, error_message: String| RunOutput {
        success: false,
        stdout: finished.stdout.text.clone(),
        stderr: finished.stderr.text.clone(),
        result: Value::Null,
        result_repr: None,
        has_value: false,
        note: None,
        error_type: Some(error_type.to_owned()),
        error_message: Some(error_message),
        traceback: None,
        line: None,
        column: None,
        execution_time_ms,
    };
    match (answer, finished.exit) {
        (_, Exit::TimedOut) => {
            let message = format!(
                "the code ran past its time limit of {} ms; its process group was killed",
                timeout.as_millis()
            );
            Err(PackError::new(codes::TIMEOUT, &message)
                .with_help("pass a larger `timeout_ms`, or make the code finish sooner")
                .with_result(&failure("TimeoutError", message.clone())))
        }
        (_, Exit::Exceeded(bound)) => {
            let message = format!("the code was ended: it passed {bound}");
            Err(PackError::new(codes::LIMIT_EXCEEDED, &message)
                .with_help(format!("use less, or raise `{}` in [packs.exec_py] config", bound.key()))
                .with_result(&failure("LimitExceeded", message.clone())))
        }
        (Some(Answer::Value { has_value, result, result_repr }), _) => Ok(RunOutput {
            success: true,
            stdout: finished.stdout.text,
            stderr: finished.stderr.text,
            result,
            result_repr,
            has_value,
            note: (!has_value).then(|| {
                "the code ran with no return value (end it with an expression or `return value` to get one)"
                    .to_owned()
            }),
            error_type: None,
            error_message: None,
            traceback: None,
            line: None,
            column: None,
            execution_time_ms,
        }),
        (Some(Answer::Error { error_type, error_message, traceback, line, column }), _) => {
            let code = if error_type == "SyntaxError" || error_type == "IndentationError" || error_type == "TabError" {
                codes::INVALID_ARGUMENT
            } else {
                codes::EXECUTION_ERROR
            };
            let at = line.map(|l| format!(" (line {l})")).unwrap_or_default();
            Err(PackError::new(code, format!("{error_type}: {error_message}{at}"))
                .with_result(&RunOutput {
                    traceback: Some(traceback),
                    line,
                    column,
                    ..failure(&error_type, error_message)
                }))
        }
        (None, exit) => {
            let message = format!(
                "the interpreter ended (exit code {}) before it answered",
                exit.code()
            );
            Err(PackError::new(codes::EXECUTION_ERROR, &message)
                .with_result(&failure("ProcessExit", message.clone())))
        }
    }
}
