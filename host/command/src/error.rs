//! The one error type of the command front.

use std::fmt;

/// Why a command could not be turned into a [`Plan`](crate::Plan).
///
/// The message is written for the model that sent the command: it says what
/// was wrong, where (1-based `line:column`), and what would be right.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontError {
    kind: Kind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    InvalidArgument,
    NotFound,
    /// The server's config, not the command, is wrong.
    Misconfigured,
}

impl FrontError {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self {
            kind: Kind::InvalidArgument,
            message: message.into(),
        }
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self {
            kind: Kind::NotFound,
            message: message.into(),
        }
    }

    pub(crate) fn misconfigured(message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Misconfigured,
            message: message.into(),
        }
    }

    /// Stable upper-snake code: `INVALID_ARGUMENT`, `NOT_FOUND`, or
    /// `INTERNAL` when the server's config is at fault.
    pub fn code(&self) -> &'static str {
        match self.kind {
            Kind::InvalidArgument => "INVALID_ARGUMENT",
            Kind::NotFound => "NOT_FOUND",
            Kind::Misconfigured => "INTERNAL",
        }
    }

    /// The human-readable explanation (same text as `Display`).
    pub fn message(&self) -> String {
        self.message.clone()
    }
}

impl fmt::Display for FrontError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FrontError {}
