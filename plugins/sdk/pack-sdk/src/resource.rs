//! Resources a pack declares: at fixed URIs ([`Resource`]) or by template
//! ([`Template`]), read into [`ResourceContents`], added with
//! [`PackDef::resource`](crate::PackDef::resource) and
//! [`PackDef::resource_template`](crate::PackDef::resource_template).

use std::collections::BTreeMap;

use pack_api::{ResourceSpec, TemplateSpec};
use serde::Deserialize;
use serde_json::{Value, json};

/// A resource at a fixed URI.
#[derive(Debug, Clone)]
pub struct Resource {
    pub(crate) spec: ResourceSpec,
}

impl Resource {
    /// The resource at `uri`, called `name`.
    pub fn new(uri: &str, name: &str) -> Self {
        Self {
            spec: ResourceSpec {
                uri: uri.to_owned(),
                name: name.to_owned(),
                ..ResourceSpec::default()
            },
        }
    }

    /// A short name for people.
    pub fn title(mut self, title: &str) -> Self {
        self.spec.title = Some(title.to_owned());
        self
    }

    /// What it holds.
    pub fn description(mut self, description: &str) -> Self {
        self.spec.description = Some(description.to_owned());
        self
    }

    /// Its MIME type.
    pub fn mime_type(mut self, mime_type: &str) -> Self {
        self.spec.mime_type = Some(mime_type.to_owned());
        self
    }

    /// Its size in bytes.
    pub fn size(mut self, size: u64) -> Self {
        self.spec.size = Some(size);
        self
    }
}

/// Resources whose URIs fit a template: `{name}` stands for one non-empty
/// piece without `/` (RFC 6570 level 1), e.g. `notes://{id}`.
#[derive(Debug, Clone)]
pub struct Template {
    pub(crate) spec: TemplateSpec,
}

impl Template {
    /// The resources at `uri_template`, called `name`.
    pub fn new(uri_template: &str, name: &str) -> Self {
        Self {
            spec: TemplateSpec {
                uri_template: uri_template.to_owned(),
                name: name.to_owned(),
                ..TemplateSpec::default()
            },
        }
    }

    /// A short name for people.
    pub fn title(mut self, title: &str) -> Self {
        self.spec.title = Some(title.to_owned());
        self
    }

    /// What its resources hold.
    pub fn description(mut self, description: &str) -> Self {
        self.spec.description = Some(description.to_owned());
        self
    }

    /// Their MIME type.
    pub fn mime_type(mut self, mime_type: &str) -> Self {
        self.spec.mime_type = Some(mime_type.to_owned());
        self
    }
}

/// A read of a resource: its URI and, for a template's, the values of the
/// template's variables in it.
#[derive(Debug, Clone, Deserialize)]
pub struct ReadRequest {
    /// The URI read.
    pub uri: String,
    /// `{name}` of the template -> its value in [`Self::uri`] (empty for a
    /// resource at a fixed URI).
    #[serde(default)]
    pub variables: BTreeMap<String, String>,
}

/// What a resource holds (MCP's resource contents): text or base64 bytes,
/// at a URI, of a MIME type.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceContents(Value);

impl ResourceContents {
    /// `text` of type `mime_type` at `uri`.
    pub fn text(uri: &str, mime_type: &str, text: impl Into<String>) -> Self {
        let text: String = text.into();
        Self(json!({"uri": uri, "mimeType": mime_type, "text": text}))
    }

    /// Base64 bytes of type `mime_type` at `uri`.
    pub fn blob(uri: &str, mime_type: &str, blob_base64: impl Into<String>) -> Self {
        let blob: String = blob_base64.into();
        Self(json!({"uri": uri, "mimeType": mime_type, "blob": blob}))
    }

    pub(crate) fn into_value(self) -> Value {
        self.0
    }
}
