//! Reading a child's output with a cap, without ever blocking the child.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt};

/// Appended to output that was cut at the cap.
pub const TRUNCATED_MARKER: &str = "\n[Output truncated]";

/// What a stream said, up to the cap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capture {
    /// The kept bytes as text (invalid UTF-8 replaced), plus
    /// [`TRUNCATED_MARKER`] when cut.
    pub text: String,
    /// Whether bytes were dropped.
    pub truncated: bool,
}

/// The bytes kept so far, shared with the reading task so that output
/// captured before a kill is never lost.
#[derive(Debug, Default)]
pub(crate) struct Buffer {
    kept: Vec<u8>,
    truncated: bool,
}

impl Buffer {
    pub(crate) fn finish(&self) -> Capture {
        let mut kept = self.kept.as_slice();
        if self.truncated {
            // The cap may fall inside a character: drop its first bytes.
            if let Err(e) = std::str::from_utf8(kept)
                && e.error_len().is_none()
            {
                kept = &kept[..e.valid_up_to()];
            }
        }
        let mut text = String::from_utf8_lossy(kept).into_owned();
        if self.truncated {
            text.push_str(TRUNCATED_MARKER);
        }
        Capture {
            text,
            truncated: self.truncated,
        }
    }
}

/// Read `reader` to its end, keeping the first `limit` bytes; the rest is
/// read and dropped so the child never blocks on a full pipe.
pub(crate) async fn read_capped(
    mut reader: impl AsyncRead + Unpin,
    limit: usize,
    buffer: Arc<Mutex<Buffer>>,
) {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut buffer = buffer.lock().unwrap_or_else(|e| e.into_inner());
        let room = limit.saturating_sub(buffer.kept.len());
        if n > room {
            buffer.truncated = true;
        }
        let keep = n.min(room);
        buffer.kept.extend_from_slice(&chunk[..keep]);
    }
}
