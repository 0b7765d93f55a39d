//! The one shape of a failed tool call, whoever failed: the host (unknown
//! tool, bad arguments, timeout: a `crate::error::CallError`), the pack (its
//! own `PackError`), or a server pack's server (`mcp_downstream::
//! DownstreamError`). The host's other errors (`crate::error`) stop the host
//! or a pack's loading, never a call.

use pack_api::{WireError, codes};
use serde_json::{Value, json};

/// The key of a failed result's `_meta` that holds the error:
/// `{code, message, help?, data?}`.
pub const ERROR_META_KEY: &str = "packhost/error";

/// A failed call. Served as an `isError: true` result, never as a protocol
/// error.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure(Box<WireError>);

impl Failure {
    /// A failure with a stable code and one readable sentence.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self(Box::new(WireError::new(code, message)))
    }

    /// Add what would be right.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.0.help = Some(help.into());
        self
    }

    /// `INVALID_ARGUMENT`.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_ARGUMENT, message)
    }

    /// `INTERNAL`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(codes::INTERNAL, message)
    }

    /// Parse what a pack sent back; a pack that sends garbage is a bug in it.
    pub fn from_pack_json(json: &str) -> Self {
        serde_json::from_str(json)
            .map(|wire| Self(Box::new(wire)))
            .unwrap_or_else(|e| {
                Self::internal(format!(
                    "the pack returned an error that is not valid JSON: {e}"
                ))
            })
    }

    /// The stable code.
    pub fn code(&self) -> &str {
        &self.0.code
    }

    /// `{code, message, help?, data?}`: the error itself, served in the
    /// result's `_meta` under [`ERROR_META_KEY`] (and as `{"error": …}` for
    /// a tool without an output schema).
    pub fn error_object(&self) -> Value {
        let mut error = json!({ "code": self.0.code, "message": self.0.message });
        if let Some(help) = &self.0.help {
            error["help"] = json!(help);
        }
        if let Some(data) = &self.0.data {
            error["data"] = data.clone();
        }
        error
    }

    /// The function's own result shape, when the failure keeps one (e.g.
    /// `{stdout, stderr, exitCode}` of a run that failed).
    pub fn result(&self) -> Option<&Value> {
        self.0.result.as_ref()
    }

    /// The structured content of the error result of a tool without an
    /// output schema: the function's own shape when it sent one, else
    /// `{"error": {code, message, help?, data?}}`.
    pub fn structured(&self) -> Value {
        match &self.0.result {
            Some(result) => result.clone(),
            None => json!({ "error": self.error_object() }),
        }
    }

    /// The readable text of the error result.
    pub fn text(&self) -> String {
        let mut text = format!("{}: {}", self.0.code, self.0.message);
        if let Some(help) = &self.0.help {
            text.push_str("\nhelp: ");
            text.push_str(help);
        }
        if let Some(result) = &self.0.result {
            text.push('\n');
            text.push_str(&crate::render::value_text(result));
        }
        text
    }

    /// The JSON a pack receives from `call_tool`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.0).expect("a WireError is always serialisable")
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}
