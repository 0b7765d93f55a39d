//! One `execute_request` run to its end: output gathered from iopub, the end
//! decided by `status: idle` plus `execute_reply`, the time limit enforced by
//! an interrupt (then a restart), progress reported while it runs.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use data_encoding::BASE64;
use jupyter_protocol::{
    ExecuteRequest, ExecutionState, JupyterMessage, JupyterMessageContent, Media, MediaType,
    ReplyStatus, Stdio,
};
use pack_process::CaptureBuffer;
use pack_sdk::Context;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::kernel::Kernel;

/// After the reply, how long to wait for `status: idle` (a kernel may drop
/// iopub messages under heavy output); restarted by every message.
const IDLE_GRACE: Duration = Duration::from_millis(500);
/// After an interrupt at the time limit, how long the kernel has to be idle.
const INTERRUPT_GRACE: Duration = Duration::from_secs(3);
/// How often a running execution reports progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Caps applied while collecting.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Per image, after base64.
    pub max_image_bytes: usize,
    /// stdout and stderr, each.
    pub max_output_bytes: usize,
}

/// An image a cell displayed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Image {
    /// `image/png`, `image/jpeg` or `image/svg+xml`.
    pub mime: String,
    /// The image, base64.
    pub data_base64: String,
    /// Width in pixels, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u64>,
    /// Height in pixels, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u64>,
}

/// A rich output other than the result (`display_data`), as text.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Output {
    /// `display_data`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its `text/plain`.
    pub text: String,
}

/// Everything one execution produced.
#[derive(Debug, Default)]
pub struct Collected {
    pub stdout: String,
    pub stderr: String,
    pub result: Option<String>,
    pub result_json: Option<Value>,
    pub outputs: Vec<Output>,
    pub images: Vec<Image>,
    pub notes: Vec<String>,
    /// (ename, evalue, traceback) of a raised exception.
    pub error: Option<(String, String, Vec<String>)>,
    pub execution_count: Option<u64>,
    /// stdout and stderr as they arrive, each capped; `finish` makes them
    /// `stdout` and `stderr`.
    stdout_kept: CaptureBuffer,
    stderr_kept: CaptureBuffer,
}

/// How an execution ended.
pub enum Outcome {
    /// The kernel finished it (successfully or with an exception).
    Done(Collected),
    /// It ran past its time limit; `kept` tells whether the interrupt stopped
    /// it (state kept) or the kernel had to be restarted (`restart_error`
    /// when even that failed).
    TimedOut {
        collected: Collected,
        kept: bool,
        restart_error: Option<String>,
    },
    /// The kernel died during it.
    Died {
        collected: Collected,
        reason: String,
    },
}

/// Run `code` on `kernel` within `timeout`.
pub async fn execute(
    kernel: &Arc<dyn Kernel>,
    code: &str,
    timeout: Duration,
    limits: Limits,
    ctx: &Context,
) -> Outcome {
    let conn = kernel.conn();
    let mut collected = Collected::default();
    if let Some(reason) = conn.dead_reason() {
        return Outcome::Died { collected, reason };
    }
    let started = Instant::now();
    let mut inbox = conn.request(ExecuteRequest {
        code: code.to_owned(),
        silent: false,
        store_history: true,
        user_expressions: None,
        allow_stdin: false,
        stop_on_error: true,
    });
    // If the caller goes away (cancelled, host time limit), stop the code.
    let mut guard = InterruptOnDrop(Some(Arc::clone(kernel)));
    let (mut idle, mut replied) = (false, false);
    let mut deadline = tokio::time::Instant::from(started + timeout);
    let mut timed_out = false;
    let mut grace: Option<tokio::time::Instant> = None;
    let mut progress =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    let outcome = loop {
        if idle && replied {
            break None;
        }
        let wake = match grace {
            Some(g) if g < deadline => g,
            _ => deadline,
        };
        tokio::select! {
            message = inbox.recv() => match message {
                Some(message) => {
                    collect(&mut collected, message, &mut idle, &mut replied, limits);
                    if replied && !idle {
                        grace = Some(tokio::time::Instant::now() + IDLE_GRACE);
                    }
                }
                None => break Some(conn.dead_reason().unwrap_or_else(|| "the connection closed".to_owned())),
            },
            reason = conn.died() => break Some(reason),
            _ = tokio::time::sleep_until(wake) => {
                if grace.is_some_and(|g| g <= tokio::time::Instant::now()) {
                    // The reply came and idle did not: iopub dropped it.
                    break None;
                }
                if timed_out {
                    // The interrupt did not bring it back: restart.
                    guard.0 = None;
                    let restart_error = kernel.restart().await.err();
                    collected.finish();
                    return Outcome::TimedOut { collected, kept: false, restart_error };
                }
                timed_out = true;
                if let Err(e) = kernel.interrupt().await {
                    collected.notes.push(format!("interrupt failed: {e}"));
                }
                deadline = tokio::time::Instant::now() + INTERRUPT_GRACE;
            }
            _ = progress.tick() => {
                let elapsed = started.elapsed().as_secs_f64();
                ctx.progress(
                    elapsed,
                    Some(timeout.as_secs_f64()),
                    &format!("executing for {elapsed:.0} s (time limit {} s)", timeout.as_secs_f64()),
                );
            }
        }
    };
    guard.0 = None;
    collected.finish();
    match outcome {
        Some(reason) => Outcome::Died { collected, reason },
        None if timed_out => Outcome::TimedOut {
            collected,
            kept: true,
            restart_error: None,
        },
        None => Outcome::Done(collected),
    }
}

/// Interrupts the kernel unless disarmed: an abandoned execution must not
/// keep the kernel busy.
struct InterruptOnDrop(Option<Arc<dyn Kernel>>);

impl Drop for InterruptOnDrop {
    fn drop(&mut self) {
        if let Some(kernel) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = kernel.interrupt().await;
            });
        }
    }
}

fn collect(
    c: &mut Collected,
    message: JupyterMessage,
    idle: &mut bool,
    replied: &mut bool,
    limits: Limits,
) {
    match message.content {
        JupyterMessageContent::StreamContent(stream) => {
            let kept = match stream.name {
                Stdio::Stdout => &mut c.stdout_kept,
                Stdio::Stderr => &mut c.stderr_kept,
            };
            kept.push(stream.text.as_bytes(), limits.max_output_bytes);
        }
        JupyterMessageContent::ExecuteResult(result) => {
            for item in &result.data.content {
                match item {
                    MediaType::Plain(text) => c.result = Some(text.clone()),
                    MediaType::Json(value) => c.result_json = Some(value.clone()),
                    _ => {}
                }
            }
            images(c, &result.data, &result.metadata, limits);
        }
        JupyterMessageContent::DisplayData(display) => {
            let has_image = images(c, &display.data, &display.metadata, limits);
            if let Some(text) = display.data.content.iter().find_map(|item| match item {
                MediaType::Plain(text) => Some(text.clone()),
                _ => None,
            }) && !has_image
            {
                c.outputs.push(Output {
                    kind: "display_data".to_owned(),
                    text,
                });
            }
        }
        JupyterMessageContent::ErrorOutput(error) => {
            c.error = Some((error.ename, error.evalue, error.traceback));
        }
        JupyterMessageContent::Status(status) if status.execution_state == ExecutionState::Idle => {
            *idle = true;
        }
        JupyterMessageContent::ExecuteReply(reply) => {
            *replied = true;
            c.execution_count = Some(reply.execution_count.value() as u64);
            if reply.status == ReplyStatus::Error
                && c.error.is_none()
                && let Some(error) = reply.error
            {
                c.error = Some((error.ename, error.evalue, error.traceback));
            }
        }
        _ => {}
    }
}

impl Collected {
    fn finish(&mut self) {
        self.stdout = self.stdout_kept.finish().text;
        self.stderr = self.stderr_kept.finish().text;
    }
}

/// Take the images of a bundle; whether it had any.
fn images(
    c: &mut Collected,
    data: &Media,
    metadata: &serde_json::Map<String, Value>,
    limits: Limits,
) -> bool {
    // One bundle is one image in several formats (PIL sends PNG and JPEG):
    // keep the first of PNG, JPEG, SVG.
    let rank = |item: &MediaType| match item {
        MediaType::Png(_) => 0,
        MediaType::Jpeg(_) => 1,
        MediaType::Svg(_) => 2,
        _ => 3,
    };
    let Some(best) = data
        .content
        .iter()
        .filter(|item| rank(item) < 3)
        .min_by_key(|item| rank(item))
    else {
        return false;
    };
    {
        let (mime, data_base64) = match best {
            MediaType::Png(b64) => ("image/png", strip_whitespace(b64)),
            MediaType::Jpeg(b64) => ("image/jpeg", strip_whitespace(b64)),
            MediaType::Svg(svg) => ("image/svg+xml", BASE64.encode(svg.as_bytes())),
            _ => return false,
        };
        if data_base64.len() > limits.max_image_bytes {
            c.notes.push(format!(
                "dropped a {mime} image of {} bytes (base64): over `max_image_bytes` ({}); save it to a file or display it smaller (e.g. a lower dpi)",
                data_base64.len(),
                limits.max_image_bytes
            ));
            return true;
        }
        let size = |key: &str| {
            metadata
                .get(mime)
                .and_then(|m| m.get(key))
                .and_then(Value::as_u64)
        };
        let (mut width, mut height) = (size("width"), size("height"));
        if mime == "image/png"
            && (width.is_none() || height.is_none())
            && let Some((w, h)) = png_size(&data_base64)
        {
            (width, height) = (Some(w), Some(h));
        }
        c.images.push(Image {
            mime: mime.to_owned(),
            data_base64,
            width,
            height,
        });
    }
    true
}

fn strip_whitespace(text: &str) -> String {
    text.chars().filter(|c| !c.is_ascii_whitespace()).collect()
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(data_base64: &str) -> Option<(u64, u64)> {
    // 24 bytes of header = 32 base64 characters.
    let head = BASE64.decode(data_base64.get(..32)?.as_bytes()).ok()?;
    if head.get(..8)? != b"\x89PNG\r\n\x1a\n" || head.get(12..16)? != b"IHDR" {
        return None;
    }
    let be = |b: &[u8]| u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    Some((be(head.get(16..20)?), be(head.get(20..24)?)))
}

/// The text without ANSI escape sequences (IPython colours its tracebacks).
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                // Parameters and intermediates, then one final byte @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                // OSC: up to BEL or ESC \.
                chars.next();
                while let Some(c) = chars.next() {
                    if c == '\x07' {
                        break;
                    }
                    if c == '\x1b' {
                        chars.next();
                        break;
                    }
                }
            }
            Some(_) => {
                chars.next();
            }
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use jupyter_protocol::StreamContent;

    use super::*;

    #[test]
    fn ansi_colours_are_stripped() {
        assert_eq!(
            strip_ansi("\x1b[0;31mZeroDivisionError\x1b[0m: division by zero\x1b[1;32m"),
            "ZeroDivisionError: division by zero"
        );
        assert_eq!(strip_ansi("a\x1b]8;;http://x\x07b"), "ab");
        assert_eq!(strip_ansi("plain ü"), "plain ü");
    }

    #[test]
    fn png_size_reads_the_header() {
        // A 1x1 PNG.
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        assert_eq!(png_size(png), Some((1, 1)));
        assert_eq!(png_size("bm90IGEgcG5n"), None);
    }

    #[test]
    fn output_is_capped_on_a_char_boundary() {
        let limits = Limits {
            max_image_bytes: 0,
            max_output_bytes: 2,
        };
        let (mut c, mut idle, mut replied) = (Collected::default(), false, false);
        for stream in [
            StreamContent::stdout("aé"),
            StreamContent::stdout("more"),
            StreamContent::stderr("ok"),
        ] {
            let message = JupyterMessage::new(stream, None);
            collect(&mut c, message, &mut idle, &mut replied, limits);
        }
        c.finish();
        assert_eq!(c.stdout, format!("a{}", pack_process::TRUNCATED_MARKER));
        assert_eq!(c.stderr, "ok");
    }
}
