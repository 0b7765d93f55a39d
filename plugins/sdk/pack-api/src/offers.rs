//! What a pack offers besides functions, as its [`Manifest`](crate::Manifest)
//! says it: MCP prompts, resources and resource templates, under MCP's own
//! key names (`mimeType`, `uriTemplate`), so the host lists them as they are.

use serde::{Deserialize, Serialize};

/// A prompt: a named, parameterised message list the pack renders.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PromptSpec {
    /// The prompt's name in the pack: an identifier.
    pub name: String,
    /// A short name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments (strings, as MCP's are), in the order to list them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgumentSpec>,
}

/// One argument of a [`PromptSpec`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PromptArgumentSpec {
    /// Its name.
    pub name: String,
    /// What to pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether rendering needs it.
    #[serde(default)]
    pub required: bool,
}

/// A resource at a fixed URI.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// Its URI, which `resources/read` names.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A short name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// Resources whose URIs fit a template (RFC 6570 level 1: `{var}` stands
/// for one non-empty piece without `/`), e.g. `test://items/{id}`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TemplateSpec {
    /// The template (see [`crate::uri_template`]).
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A short name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What its resources hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Their MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}
