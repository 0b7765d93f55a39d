//! JSON shapes that cross the ABI as strings.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a pack says about itself.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// Call name of the pack: an identifier (`exec_py`), unique in one host.
    pub name: String,
    /// The pack's own version.
    pub version: String,
    /// One line for humans and models.
    pub description: String,
    /// The functions the pack serves, in the order to list them.
    pub functions: Vec<FunctionSpec>,
}

/// One function of a pack.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionSpec {
    /// Function name: an identifier.
    pub name: String,
    /// What it does, for the tool listing.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: Value,
    /// JSON Schema of the result.
    pub output_schema: Value,
}

/// Every tool a caller can reach and every project it may see, as the host
/// tells a pack (code mode builds its proxies from it), and the host's
/// `[identity]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Catalog {
    /// Pack functions, in listing order.
    pub tools: Vec<CatalogTool>,
    /// The packs of these tools: name -> its one-line description. (Hosts
    /// before it did not send it.)
    #[serde(default)]
    pub packs: std::collections::BTreeMap<String, String>,
    /// `alias -> pack.function`.
    pub aliases: std::collections::BTreeMap<String, String>,
    /// The `[projects]` this caller may see: name -> absolute path.
    pub projects: std::collections::BTreeMap<String, String>,
    /// The host's `[identity]`: who a call is when the transport does not
    /// say (stdio, HTTP without tokens). State a pack recorded before it
    /// recorded owners belongs to it. (Hosts before it did not say.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Owner>,
}

/// Who a call is, or who owns a piece of state: an organisation and a user
/// in it (from the transport's authentication, never from arguments).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Owner {
    /// The organisation.
    pub org: String,
    /// The user.
    pub user: String,
}

impl Owner {
    /// `user` of `org`.
    pub fn new(org: impl Into<String>, user: impl Into<String>) -> Self {
        Self {
            org: org.into(),
            user: user.into(),
        }
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "user `{}` of organisation `{}`", self.user, self.org)
    }
}

/// One pack function in a [`Catalog`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CatalogTool {
    /// Pack call name.
    pub pack: String,
    /// Function name.
    pub function: String,
    /// `pack.function(a: string, b?: integer = 3)`.
    pub signature: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the result (code mode's typed declarations). Hosts
    /// before it did not send it: then any value.
    #[serde(default = "any_value")]
    pub output_schema: Value,
}

fn any_value() -> Value {
    Value::Bool(true)
}

/// A failed call, as a pack reports it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WireError {
    /// Stable upper snake code, see [`codes`].
    pub code: String,
    /// One readable sentence: what went wrong.
    pub message: String,
    /// What would be right, when the pack knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// Machine-readable details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// The function's own result shape for a failure that has one (e.g.
    /// `{stdout, stderr, exitCode}`); the host serves it as the structured
    /// content of the error result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

impl WireError {
    /// An error with a stable `code` and one readable sentence.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.to_owned(),
            message: message.into(),
            help: None,
            data: None,
            result: None,
        }
    }
}

/// Stable error codes shared by the host and packs.
pub mod codes {
    /// Arguments did not fit the function.
    pub const INVALID_ARGUMENT: &str = "INVALID_ARGUMENT";
    /// No pack of that name is loaded.
    pub const UNKNOWN_PACK: &str = "UNKNOWN_PACK";
    /// The pack has no function of that name.
    pub const UNKNOWN_FUNCTION: &str = "UNKNOWN_FUNCTION";
    /// The call ran past its time limit.
    pub const TIMEOUT: &str = "TIMEOUT";
    /// The client cancelled the call.
    pub const CANCELLED: &str = "CANCELLED";
    /// A bug: a panic, a broken invariant.
    pub const INTERNAL: &str = "INTERNAL";
    /// A named thing does not exist.
    pub const NOT_FOUND: &str = "NOT_FOUND";
    /// The caller may not do this.
    pub const ACCESS_DENIED: &str = "ACCESS_DENIED";
    /// The feature or pack is switched off.
    pub const DISABLED: &str = "DISABLED";
    /// The caller is not authenticated.
    pub const UNAUTHORIZED: &str = "UNAUTHORIZED";
    /// A server the pack talks to failed.
    pub const UPSTREAM_ERROR: &str = "UPSTREAM_ERROR";
    /// A session (notebook, kernel) does not exist.
    pub const SESSION_NOT_FOUND: &str = "SESSION_NOT_FOUND";
    /// A notebook cell does not exist.
    pub const CELL_NOT_FOUND: &str = "CELL_NOT_FOUND";
    /// User code raised an error or its process died.
    pub const EXECUTION_ERROR: &str = "EXECUTION_ERROR";
    /// A configured limit (sessions, sizes) would be exceeded.
    pub const LIMIT_EXCEEDED: &str = "LIMIT_EXCEEDED";
}
