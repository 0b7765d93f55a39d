//! Logs go to stderr only: stdout is the MCP channel on stdio.

use pack_api::LogLevel;
use tracing_subscriber::EnvFilter;

/// How log lines look.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One readable line per event.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Install the subscriber. `PACKHOST_LOG` takes an env-filter directive
/// (`debug`, `packhost=trace`); the default is `info`.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_env("PACKHOST_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    match format {
        LogFormat::Text => builder.compact().init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// A log line sent by a pack, attributed to it (and to the call, if any).
pub fn pack_log(pack: &str, request: Option<&str>, level: LogLevel, message: &str) {
    let request = request.unwrap_or("-");
    match level {
        LogLevel::Error => tracing::error!(target: "pack", pack, request, "{message}"),
        LogLevel::Warn => tracing::warn!(target: "pack", pack, request, "{message}"),
        LogLevel::Info => tracing::info!(target: "pack", pack, request, "{message}"),
        LogLevel::Debug => tracing::debug!(target: "pack", pack, request, "{message}"),
        LogLevel::Trace => tracing::trace!(target: "pack", pack, request, "{message}"),
    }
}
