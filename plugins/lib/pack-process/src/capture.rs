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

/// Output kept as it arrives, up to a cap: the rule of every captured
/// stream. A child's pipes go through one (shared with the reading task, so
/// output captured before a kill is never lost); so does output that
/// arrives as messages instead (a kernel's stream messages).
#[derive(Debug, Default)]
pub struct CaptureBuffer {
    kept: Vec<u8>,
    truncated: bool,
}

impl CaptureBuffer {
    /// Keeps what of `bytes` fits within `cap` bytes in all; the rest is
    /// dropped, and so is everything after it.
    pub fn push(&mut self, bytes: &[u8], cap: usize) {
        let room = cap.saturating_sub(self.kept.len());
        if bytes.len() > room {
            self.truncated = true;
        }
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The text kept so far: invalid UTF-8 replaced, a character the cap
    /// fell inside dropped, and [`TRUNCATED_MARKER`] appended when bytes
    /// were dropped.
    pub fn finish(&self) -> Capture {
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
    buffer: Arc<Mutex<CaptureBuffer>>,
) {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut buffer = buffer.lock().unwrap_or_else(|e| e.into_inner());
        buffer.push(&chunk[..n], limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_are_kept_up_to_the_cap_and_cut_between_characters() {
        let mut kept = CaptureBuffer::default();
        kept.push("aé".as_bytes(), 2);
        kept.push(b"more", 2);
        let capture = kept.finish();
        assert_eq!(capture.text, format!("a{TRUNCATED_MARKER}"));
        assert!(capture.truncated);
        let mut fits = CaptureBuffer::default();
        fits.push(b"ab", 2);
        fits.push(b"", 2);
        assert_eq!(fits.finish().text, "ab");
    }
}
