//! `jupyter.execute_code`: code in a session's kernel, and what came of it
//! (a result, an exception, a timeout, a kernel that died or passed a
//! limit) in one shape.

use std::{
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant},
};

use pack_process::Bound;
use pack_sdk::{Content, Context, PackError, Value, codes};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    execute::{self, Collected, Image, Limits, Outcome, Output},
    sessions::Session,
    state::Jupyter,
};

/// The largest `timeout` of one execution, in seconds.
const MAX_TIMEOUT_SECS: f64 = 300.0;

/// Arguments of `jupyter.execute_code`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteArgs {
    /// A session id (or a kernel id).
    pub session_id: String,
    /// Python source; state stays in the kernel between calls. Empty code
    /// does nothing.
    pub code: String,
    /// Time limit in seconds, more than 0 and at most 300. Past it the kernel
    /// is interrupted (state kept), or restarted if it does not stop.
    #[serde(default = "default_timeout")]
    #[schemars(range(max = 300.0))]
    pub timeout: f64,
}

fn default_timeout() -> f64 {
    30.0
}

/// An execution, finished or failed: one shape, so that a failure's
/// structured content fits the function's output schema as MCP clients
/// check it.
#[derive(Serialize, JsonSchema)]
pub struct ExecuteOutput {
    /// True when the code finished; false on a failure (an error result,
    /// with `error_type` and `error_message`).
    pub success: bool,
    /// What the code printed.
    pub stdout: String,
    /// What the code wrote to stderr (warnings too).
    pub stderr: String,
    /// The displayed value of the last expression (`text/plain`), if any.
    pub result: Option<String>,
    /// The value as JSON, when the kernel sent `application/json`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_json: Option<Value>,
    /// `display()`ed outputs other than images, as text.
    pub outputs: Vec<Output>,
    /// PNG, JPEG and SVG images displayed or returned (also sent as MCP image
    /// content).
    pub images: Vec<Image>,
    /// Said when something was left out (an image over the size cap).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The kernel's execution counter.
    pub execution_count: Option<u64>,
    /// Failure: the exception class (`ZeroDivisionError`), `TimeoutError`,
    /// `KernelDied`, `LimitExceeded`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// Failure: the exception's message, or what happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Failure: the traceback, without colour codes (raised exceptions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
    /// Wall time of the call.
    pub execution_time_ms: f64,
}

impl ExecuteOutput {
    /// What the code did before it failed with `error_type`.
    fn failed(error_type: &str, error_message: String, c: Collected, elapsed_ms: f64) -> Self {
        Self {
            success: false,
            stdout: c.stdout,
            stderr: c.stderr,
            result: None,
            result_json: None,
            outputs: c.outputs,
            images: c.images,
            notes: c.notes,
            execution_count: c.execution_count,
            error_type: Some(error_type.to_owned()),
            error_message: Some(error_message),
            traceback: None,
            execution_time_ms: elapsed_ms,
        }
    }
}

pub(crate) async fn execute_code(
    state: Arc<Jupyter>,
    args: ExecuteArgs,
    ctx: Context,
) -> Result<Content<ExecuteOutput>, PackError> {
    if !(args.timeout > 0.0 && args.timeout <= MAX_TIMEOUT_SECS) {
        return Err(PackError::invalid_argument(format!(
            "`timeout` must be more than 0 and at most {MAX_TIMEOUT_SECS} seconds, got {}",
            args.timeout
        )));
    }
    // Held until the end: a session in use never expires.
    let session = state.session(&ctx.owner(), &args.session_id).await?;
    let started = Instant::now();
    let elapsed_ms = || started.elapsed().as_secs_f64() * 1000.0;
    if let Some(reason) = session.dead_reason() {
        return Err(kernel_died(
            &session,
            &reason,
            Collected::default(),
            elapsed_ms(),
        ));
    }
    let _running = session.exec_lock.lock().await;
    session.busy.store(true, Ordering::SeqCst);
    let limits = Limits {
        max_image_bytes: state.config.max_image_bytes,
        max_output_bytes: state.config.max_output_bytes,
    };
    let timeout = Duration::from_secs_f64(args.timeout);
    let outcome = execute::execute(&session.kernel, &args.code, timeout, limits, &ctx).await;
    session.busy.store(false, Ordering::SeqCst);
    match outcome {
        Outcome::Done(mut c) => match c.error.take() {
            None => Ok(with_images(ExecuteOutput {
                success: true,
                stdout: c.stdout,
                stderr: c.stderr,
                result: c.result,
                result_json: c.result_json,
                outputs: c.outputs,
                images: c.images,
                notes: c.notes,
                execution_count: c.execution_count,
                error_type: None,
                error_message: None,
                traceback: None,
                execution_time_ms: elapsed_ms(),
            })),
            Some((ename, evalue, traceback)) => {
                let traceback = execute::strip_ansi(&traceback.join("\n"));
                let message = format!("{ename}: {evalue}\n{traceback}");
                let failed = ExecuteOutput {
                    traceback: Some(traceback),
                    ..ExecuteOutput::failed(&ename, evalue, c, elapsed_ms())
                };
                Err(PackError::new(codes::EXECUTION_ERROR, message).with_result(&failed))
            }
        },
        Outcome::TimedOut {
            collected,
            kept,
            restart_error,
        } => {
            let limit = args.timeout;
            let (message, help) = match (kept, restart_error) {
                (true, _) => (
                    format!(
                        "the code ran past its `timeout` of {limit} s; the kernel was interrupted and the session's state is kept"
                    ),
                    "pass a larger `timeout` (at most 300), or make the code finish sooner",
                ),
                (false, None) => (
                    format!(
                        "the code ran past its `timeout` of {limit} s and did not stop when interrupted; the kernel was restarted: its state is lost"
                    ),
                    "pass a larger `timeout`, or make the code check for KeyboardInterrupt",
                ),
                (false, Some(e)) => {
                    session.set_dead(Some(format!("restart after a timeout failed: {e}")));
                    (
                        format!(
                            "the code ran past its `timeout` of {limit} s, did not stop when interrupted, and the restart failed: {e}"
                        ),
                        "call jupyter.restart(session_id), or close the session",
                    )
                }
            };
            Err(PackError::new(codes::TIMEOUT, &message)
                .with_help(help)
                .with_result(&ExecuteOutput::failed(
                    "TimeoutError",
                    message.clone(),
                    collected,
                    elapsed_ms(),
                )))
        }
        Outcome::Died { collected, reason } => {
            session.set_dead(Some(reason.clone()));
            match session.kernel.exceeded().await {
                Some(bound) => Err(limit_exceeded(&session, bound, collected, elapsed_ms())),
                None => Err(kernel_died(&session, &reason, collected, elapsed_ms())),
            }
        }
    }
}

/// The images of `output` also as MCP image blocks, and in its text only as
/// a mention: models should not read base64.
fn with_images(output: ExecuteOutput) -> Content<ExecuteOutput> {
    if output.images.is_empty() {
        return Content::new(output);
    }
    let mut shown = serde_json::to_value(&output).unwrap_or_default();
    for image in shown["images"].as_array_mut().into_iter().flatten() {
        if let Some(data) = image.get_mut("data_base64") {
            let size = data.as_str().map_or(0, str::len);
            *data = Value::String(format!("<{size} bytes of base64, sent as an image block>"));
        }
    }
    let text = serde_json::to_string_pretty(&shown).unwrap_or_default();
    let images: Vec<(String, String)> = output
        .images
        .iter()
        .map(|image| (image.mime.clone(), image.data_base64.clone()))
        .collect();
    images
        .into_iter()
        .fold(Content::new(output).text(text), |content, (mime, data)| {
            content.image(&mime, data)
        })
}

/// The kernel was ended by its sandbox for passing `bound`.
fn limit_exceeded(session: &Session, bound: Bound, c: Collected, elapsed_ms: f64) -> PackError {
    let message = format!(
        "the kernel of session `{}` was ended: the code passed {bound}; its state is lost and the session is dead until jupyter.restart(session_id)",
        session.session_id
    );
    PackError::new(codes::LIMIT_EXCEEDED, &message)
        .with_help(format!(
            "use less, or raise `{}` in [packs.jupyter] config; then call jupyter.restart(session_id)",
            bound.key()
        ))
        .with_result(&ExecuteOutput::failed(
            "LimitExceeded",
            message.clone(),
            c,
            elapsed_ms,
        ))
}

fn kernel_died(session: &Session, reason: &str, c: Collected, elapsed_ms: f64) -> PackError {
    let message = format!(
        "the kernel of session `{}` died ({reason}); the session is dead until jupyter.restart(session_id)",
        session.session_id
    );
    PackError::new(codes::EXECUTION_ERROR, &message)
        .with_help("call jupyter.restart(session_id) (its state is lost), or jupyter.session_close(session_id)")
        .with_result(&ExecuteOutput::failed(
            "KernelDied",
            message.clone(),
            c,
            elapsed_ms,
        ))
}

#[cfg(test)]
mod result_schemas {
    use pack_sdk::{
        json,
        testing::{check_failure, check_manifest, check_result},
    };

    use super::*;

    fn finished(c: Collected) -> ExecuteOutput {
        ExecuteOutput {
            success: true,
            result: c.result.clone(),
            result_json: c.result_json.clone(),
            error_type: None,
            error_message: None,
            ..ExecuteOutput::failed("", String::new(), c, 2.0)
        }
    }

    /// With and without the optional fields (`notes`, `result_json`, image
    /// sizes), and failures, which keep the same shape.
    #[test]
    fn results_and_failures_fit_the_schemas() {
        check_manifest(crate::pack).unwrap();
        check_result(&finished(Collected::default())).unwrap();
        let mut rich = Collected::default();
        rich.result = Some("43".into());
        rich.result_json = Some(json!({"a": [1, null]}));
        rich.notes.push("an image was left out".into());
        rich.execution_count = Some(3);
        rich.images.push(execute::Image {
            mime: "image/png".into(),
            data_base64: "AA==".into(),
            width: None,
            height: Some(1),
        });
        check_result(&finished(rich)).unwrap();
        let died = kernel_died_result(Collected::default());
        check_failure::<ExecuteOutput>(&died).unwrap();
        let raised = ExecuteOutput {
            traceback: Some("Traceback".into()),
            ..ExecuteOutput::failed("NameError", "x".into(), Collected::default(), 1.0)
        };
        check_result(&raised).unwrap();
    }

    fn kernel_died_result(c: Collected) -> PackError {
        PackError::new(codes::EXECUTION_ERROR, "died").with_result(&ExecuteOutput::failed(
            "KernelDied",
            "died".into(),
            c,
            1.0,
        ))
    }
}
