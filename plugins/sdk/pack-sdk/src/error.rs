//! The one error type a pack function returns.

use std::fmt;

use pack_api::{WireError, codes};
use serde::Serialize;
use serde_json::Value;

/// A failed call: a stable upper snake `code`, a readable `message`, and
/// optionally what would be right (`help`), details (`data`), or the function's
/// own result shape for this failure (`result`, served as structured content).
///
/// ```
/// use pack_sdk::{PackError, codes, json};
///
/// fn parse_port(text: &str) -> Result<u16, PackError> {
///     text.parse().map_err(|_| {
///         PackError::invalid_argument(format!("`port` is {text:?}, not a number"))
///             .with_help("pass a port between 1 and 65535, e.g. 8080")
///             .with_data(json!({"port": text}))
///     })
/// }
///
/// let error = parse_port("http").unwrap_err();
/// assert_eq!(error.code(), codes::INVALID_ARGUMENT);
/// assert_eq!(error.help(), Some("pass a port between 1 and 65535, e.g. 8080"));
///
/// // A failure of the file system becomes `INTERNAL` (or `NOT_FOUND`, ...)
/// // through `?`.
/// fn read(path: &str) -> Result<String, PackError> {
///     Ok(std::fs::read_to_string(path)?)
/// }
/// assert!(read("/no/such/file").is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PackError(Box<WireError>);

impl PackError {
    /// An error with any stable code (see [`pack_api::codes`]).
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self(Box::new(WireError::new(code, message)))
    }

    /// `INVALID_ARGUMENT`: the arguments do not fit.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_ARGUMENT, message)
    }

    /// `NOT_FOUND`: a named thing does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(codes::NOT_FOUND, message)
    }

    /// `ACCESS_DENIED`: the request reaches outside what is allowed.
    pub fn access_denied(message: impl Into<String>) -> Self {
        Self::new(codes::ACCESS_DENIED, message)
    }

    /// A path that must stay under its roots and could not be used:
    /// `NOT_FOUND` when it is not there, else `ACCESS_DENIED` (it leads
    /// outside them, or they refuse it) with `help`, the way out. `what`
    /// names it (`` `cwd` ``); `e` is the error of opening it beneath its
    /// roots.
    pub fn under_roots(what: &str, e: std::io::Error, help: impl Into<String>) -> Self {
        if e.kind() == std::io::ErrorKind::NotFound {
            return Self::not_found(format!("{what} {e}"));
        }
        Self::access_denied(format!("{what} {e}")).with_help(help)
    }

    /// `INTERNAL`: a bug or an unexpected failure of the pack itself.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(codes::INTERNAL, message)
    }

    /// Add what would be right.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.0.help = Some(help.into());
        self
    }

    /// Add machine-readable details.
    pub fn with_data(mut self, data: Value) -> Self {
        self.0.data = Some(data);
        self
    }

    /// Serve `result` (the function's own output shape) as the structured
    /// content of the error result.
    pub fn with_result(mut self, result: &impl Serialize) -> Self {
        self.0.result = serde_json::to_value(result).ok();
        self
    }

    /// The stable code.
    pub fn code(&self) -> &str {
        &self.0.code
    }

    /// The readable message.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The help text, if any.
    pub fn help(&self) -> Option<&str> {
        self.0.help.as_deref()
    }

    /// The wire form.
    pub fn into_wire(self) -> WireError {
        *self.0
    }

    /// Back from the wire form.
    pub fn from_wire(wire: WireError) -> Self {
        Self(Box::new(wire))
    }

    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_else(|e| {
            format!(r#"{{"code":"INTERNAL","message":"unserialisable error: {e}"}}"#)
        })
    }
}

impl fmt::Display for PackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.code, self.0.message)?;
        if let Some(help) = &self.0.help {
            write!(f, " ({help})")?;
        }
        Ok(())
    }
}

impl std::error::Error for PackError {}

impl From<std::io::Error> for PackError {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::NotFound => Self::not_found(e.to_string()),
            std::io::ErrorKind::PermissionDenied => Self::access_denied(e.to_string()),
            _ => Self::internal(e.to_string()),
        }
    }
}
