//! JSON shapes that cross the ABI as strings.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::offers::{PromptArgumentSpec, PromptSpec, ResourceSpec, TemplateSpec};

/// What a pack says about itself. Everything after `functions` is optional
/// (packs built before it did not say it, and still load).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// Call name of the pack: an identifier (`exec_py`), unique in one host.
    pub name: String,
    /// The pack's own version.
    pub version: String,
    /// One line for humans and models.
    pub description: String,
    /// The functions the pack serves, in the order to list them.
    pub functions: Vec<FunctionSpec>,
    /// MCP prompts the pack renders (through [`crate::protocol::PROMPTS_GET`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<PromptSpec>,
    /// MCP resources at fixed URIs the pack reads (through
    /// [`crate::protocol::RESOURCES_READ`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceSpec>,
    /// MCP resource templates: URIs the pack reads by their variables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_templates: Vec<TemplateSpec>,
    /// The pack lists prompts, resources and templates per caller, when
    /// the host asks with [`crate::protocol::PROMPTS_LIST`] and its
    /// siblings, besides those above (which every caller sees).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub offers_per_caller: bool,
    /// The pack keeps state every instance must find: the host adds its
    /// `[state] database`, when it has one, to the pack's config under
    /// [`crate::protocol::STATE_DATABASE`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shares_state: bool,
    /// The pack answers [`crate::protocol::READY`]: whether what it depends
    /// on answers now.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checks_ready: bool,
}

/// One function of a pack. Everything after `output_schema` is optional
/// (packs built before it did not say it, and still load).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FunctionSpec {
    /// Function name: an identifier.
    pub name: String,
    /// What it does, for the tool listing.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: Value,
    /// JSON Schema of the result.
    pub output_schema: Value,
    /// A short name for people ("Read a file"): MCP's tool `title`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the function does to the world, as MCP's tool annotations say
    /// it. Hints for clients (whether to ask before a call), not a promise.
    #[serde(default, skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
    /// Example calls with their expected results: shown to models and run as
    /// tests of the pack (`pack_sdk::testing`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Example>,
    /// The function's own time limit in milliseconds. The host cuts a call
    /// at the smaller of this and its pack's limit (`timeout_ms` of the
    /// pack's section): a pack can shorten a function's time, never lengthen
    /// what the host's admin allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Whether results are [`ContentResult`] envelopes (the value and the
    /// content blocks to show) instead of the bare value. Only for functions
    /// that say so does the host read a result as an envelope, so no value
    /// is ever mistaken for one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub content: bool,
    /// Client capabilities every call needs (`elicitation`, `sampling`,
    /// `roots`): a client that did not declare one gets MCP's error -32021
    /// instead of a call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
    /// Whether a call may run as an MCP task (the tasks extension), as
    /// MCP's `execution.taskSupport` says it.
    #[serde(default, skip_serializing_if = "TaskSupport::is_forbidden")]
    pub task_support: TaskSupport,
    /// Its calls ask their questions before their long work: one that may
    /// run as a task, from a 2026-07-28 client, asks by rounds
    /// (`input_required` results) and becomes a task once answered, rather
    /// than being a task from the start that asks through `tasks/update`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub asks_first: bool,
}

/// Whether a function's calls run as MCP tasks (`execution.taskSupport`)
/// for a client that negotiated the tasks extension: a task answers at once
/// with its id, and the client polls `tasks/get` for the result.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never a task: the call answers when it is done.
    #[default]
    Forbidden,
    /// A task for clients that negotiated tasks; a plain call for others.
    Optional,
    /// Only as a task: clients that did not negotiate tasks are refused.
    Required,
}

impl TaskSupport {
    /// Whether calls never run as tasks (nothing said).
    pub fn is_forbidden(&self) -> bool {
        *self == Self::Forbidden
    }
}

/// MCP's tool annotations: hints about what a call does. `None` is "not
/// said" (clients then assume the worst: not read-only, destructive, not
/// idempotent, open world). Serialised under MCP's names (`readOnlyHint`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Annotations {
    /// It changes nothing in its environment.
    #[serde(
        rename = "readOnlyHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub read_only: Option<bool>,
    /// It may destroy or overwrite something (false: it only adds).
    /// Meaningful when not read-only.
    #[serde(
        rename = "destructiveHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    /// Meaningful when not read-only.
    #[serde(
        rename = "idempotentHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub idempotent: Option<bool>,
    /// It reaches things outside a closed domain (the network, other
    /// services, code that can do anything).
    #[serde(
        rename = "openWorldHint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub open_world: Option<bool>,
}

impl Annotations {
    /// Whether nothing is said.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A call of a function and what it returns.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Example {
    /// The arguments (a JSON object).
    pub args: Value,
    /// What the result holds. It matches a result when, recursively: an
    /// object's every key is in the result's object with a matching value
    /// (other keys of the result are not looked at); an array has as many
    /// items as the result's, each matching; any other value is equal.
    pub result: Value,
    /// What the example shows, when its arguments do not say it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl Example {
    /// Whether `actual` holds what this example's result says (see
    /// [`Example::result`]).
    pub fn matches(&self, actual: &Value) -> bool {
        holds(&self.result, actual)
    }
}

fn holds(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(expected), Value::Object(actual)) => expected
            .iter()
            .all(|(key, e)| actual.get(key).is_some_and(|a| holds(e, a))),
        (Value::Array(expected), Value::Array(actual)) => {
            expected.len() == actual.len() && expected.iter().zip(actual).all(|(e, a)| holds(e, a))
        }
        _ => expected == actual,
    }
}

/// The result of a function whose spec says `content: true`: its value and
/// the content blocks an MCP client shows for it.
///
/// The host serves `value` as the structured content (it must fit the output
/// schema; code mode gets it too), then the content: a text block with
/// `text` (absent: the value as text, as for any function; empty: no text
/// block), then `blocks` as they are.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ContentResult {
    /// The function's result: a JSON object of its output schema.
    pub value: Value,
    /// What a model reads instead of the value's JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// MCP content blocks after the text, in MCP's JSON: `{"type": "image",
    /// "data", "mimeType"}`, `{"type": "resource_link", "uri", "name", ...}`,
    /// `audio`, `resource` (embedded) or more `text`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<Value>,
}

/// Every tool a caller can reach and every project it may see, as the host
/// tells a pack (code mode builds its proxies from it), and the host's
/// `[identity]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Catalog {
    /// Pack functions, in listing order.
    pub tools: Vec<CatalogTool>,
    /// The MCP prompts of the caller's packs, in listing order: code
    /// renders them through [`crate::protocol::PROMPTS_GET`]. (Hosts
    /// before it did not send them.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<CatalogPrompt>,
    /// The packs of these tools: name -> its one-line description. (Hosts
    /// before it did not send it.)
    #[serde(default)]
    pub packs: std::collections::BTreeMap<String, String>,
    /// `alias -> pack.function`.
    pub aliases: std::collections::BTreeMap<String, String>,
    /// The `[snippets]` the caller may use: name -> how to write it. (Hosts
    /// before it did not send them.)
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub snippets: std::collections::BTreeMap<String, CatalogSnippet>,
    /// The `[projects]` this caller may see: name -> absolute path.
    pub projects: std::collections::BTreeMap<String, String>,
    /// The host's `[identity]`: who a call is when the transport does not
    /// say (stdio, HTTP without tokens). State a pack recorded before it
    /// recorded owners belongs to it. (Hosts before it did not say.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Owner>,
}

/// A `[snippets]` entry of the host's config: a command template that
/// `run` expands from `$name key=value`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CatalogSnippet {
    /// `$find pattern project="packhost"`: its parameters, each with its
    /// default when it has one.
    pub usage: String,
    /// What it does.
    pub description: String,
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
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
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
    /// A short name for people, when the function gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Example calls and what their results hold (discovery shows them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Example>,
    /// Whether it goes by its own name (its pack has `prefix = false`).
    /// Hosts before it did not say.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bare: bool,
}

impl CatalogTool {
    /// `pack.function`: how calls name it (code too, where a function's
    /// own name could be a builtin's).
    pub fn name(&self) -> String {
        crate::names::qualified(&self.pack, &self.function)
    }

    /// How clients see it listed: [`Self::name`], or the function's own
    /// name when it goes by it ([`Self::bare`]).
    pub fn listed(&self) -> String {
        if self.bare {
            self.function.clone()
        } else {
            self.name()
        }
    }
}

/// One prompt of a pack in a [`Catalog`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CatalogPrompt {
    /// Pack call name.
    pub pack: String,
    /// The prompt, its name the pack's own.
    #[serde(flatten)]
    pub spec: PromptSpec,
    /// Whether it goes by its own name (its pack has `prefix = false`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bare: bool,
}

impl CatalogPrompt {
    /// How clients see it listed, and how [`crate::protocol::PROMPTS_GET`]
    /// names it: `pack.prompt`, or the prompt's own name when it goes by it.
    pub fn listed(&self) -> String {
        if self.bare {
            self.spec.name.clone()
        } else {
            crate::names::qualified(&self.pack, &self.spec.name)
        }
    }
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
    /// A change lost to another made at the same time (through another
    /// instance) and was not kept: send it again.
    pub const CONFLICT: &str = "CONFLICT";
    /// The caller's client cannot answer a question of this call (it did
    /// not declare elicitation, sampling or roots), or no client can be
    /// asked (a call from the command line).
    pub const INPUT_UNAVAILABLE: &str = "INPUT_UNAVAILABLE";
    /// The user declined a call that needed their approval; it was not made.
    pub const DECLINED: &str = "DECLINED";
    /// A call needs the user's approval (`[approval]`) and their client
    /// cannot be asked: it was not made.
    pub const APPROVAL_UNAVAILABLE: &str = "APPROVAL_UNAVAILABLE";
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_function_of_a_pack_built_before_metadata_still_reads() {
        let old = json!({
            "name": "read", "description": "Read",
            "input_schema": {"type": "object"}, "output_schema": {"type": "object"},
        });
        let spec: FunctionSpec = serde_json::from_value(old.clone()).unwrap();
        assert_eq!((spec.title.as_deref(), spec.content), (None, false));
        assert!(spec.annotations.is_empty() && spec.examples.is_empty());
        assert_eq!(spec.task_support, TaskSupport::Forbidden);
        // Nothing said is nothing written: the JSON stays what it was.
        assert_eq!(serde_json::to_value(&spec).unwrap(), old);
    }

    #[test]
    fn a_manifest_of_a_pack_built_before_prompts_and_resources_still_reads() {
        let old = json!({
            "name": "proj", "version": "0.1.0", "description": "Project files",
            "functions": [],
        });
        let manifest: Manifest = serde_json::from_value(old.clone()).unwrap();
        assert!(manifest.prompts.is_empty() && manifest.resources.is_empty());
        assert!(manifest.resource_templates.is_empty());
        // Nothing offered is nothing written: an older host reads it as before.
        assert_eq!(serde_json::to_value(&manifest).unwrap(), old);
    }

    #[test]
    fn annotations_use_the_names_of_mcp() {
        let annotations = Annotations {
            read_only: Some(true),
            destructive: Some(false),
            idempotent: None,
            open_world: Some(false),
        };
        assert_eq!(
            serde_json::to_value(annotations).unwrap(),
            json!({"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false})
        );
    }

    #[test]
    fn an_example_result_is_what_the_result_holds() {
        let example = |result| Example {
            args: json!({}),
            result,
            description: None,
        };
        let actual = json!({"lines": ["a", "b"], "truncated": false, "meta": {"size": 3, "at": 1}});
        for holds in [
            json!({}),
            json!({"truncated": false}),
            json!({"meta": {"size": 3}, "lines": ["a", "b"]}),
        ] {
            assert!(example(holds.clone()).matches(&actual), "{holds}");
        }
        for misses in [
            json!({"truncated": true}),
            json!({"lines": ["a"]}),
            json!({"missing": null}),
            json!({"meta": {"size": "3"}}),
            json!([1]),
        ] {
            assert!(!example(misses.clone()).matches(&actual), "{misses}");
        }
    }
}
