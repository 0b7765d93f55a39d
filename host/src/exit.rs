//! How a subcommand ends: an [`ExitCode`](std::process::ExitCode) of its
//! own, or an [`Error`] that stopped it, which `main` prints and maps to
//! exit status 2.

/// An error that stops a subcommand before it can do anything (a bad config,
/// an address already in use, an unreachable database).
pub type Error = Box<dyn std::error::Error + Send + Sync>;
