//! `logging/setLevel` and `notifications/message`: a session's client asks
//! for log lines at a level, and from then on each of its calls sends the
//! lines its packs write for that call (never another caller's, never the
//! host's own). On 2026-07-28 a request asks for itself
//! (`_meta["io.modelcontextprotocol/logLevel"]`), and a request that does
//! not ask gets none.
//!
//! MCP 2025-11-25 has logging; 2026-07-28 deprecates it (SEP-2577), and
//! rmcp marks its types deprecated, hence the `allow` of this module.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use pack_api::LogLevel;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, RequestMetaObject};
use serde_json::Value;

use super::notices::Notices;
use crate::executor::LogSink;

/// The least severe level a session's client asked for; none until it
/// asks, and then no line is sent.
#[derive(Clone, Default)]
pub(super) struct SessionLog(Arc<Mutex<Option<LoggingLevel>>>);

impl SessionLog {
    /// What `logging/setLevel` asked for.
    pub(super) fn set(&self, level: LoggingLevel) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(level);
    }

    /// Where one call's log lines go: `notifications/message` to the
    /// client that made it (the pack's name as logger), at the level
    /// the request's `meta` asks for, else its session's, if any.
    pub(super) fn forwarder(&self, notices: &Notices, meta: &RequestMetaObject) -> Option<LogSink> {
        let session = *self.0.lock().unwrap_or_else(|e| e.into_inner());
        let least = meta.log_level().or(session)?;
        let send = notices.logger();
        Some(Arc::new(
            move |pack: &str, level: LogLevel, message: &str| {
                let level = match level {
                    LogLevel::Error => LoggingLevel::Error,
                    LogLevel::Warn => LoggingLevel::Warning,
                    LogLevel::Info => LoggingLevel::Info,
                    LogLevel::Debug | LogLevel::Trace => LoggingLevel::Debug,
                };
                if severity(level) >= severity(least) {
                    let mut param =
                        LoggingMessageNotificationParam::new(level, Value::from(message));
                    param.logger = Some(pack.to_owned());
                    send(param);
                }
            },
        ))
    }
}

/// MCP's levels, least severe first (syslog's order).
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}
