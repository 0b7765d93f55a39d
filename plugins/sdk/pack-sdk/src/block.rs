//! MCP content blocks in MCP's JSON: what a function's [`Content`] shows
//! beside its value and what a prompt's messages hold, built in one place.
//!
//! [`Content`]: crate::Content

use serde_json::{Value, json};

/// One MCP content block: text, an image, audio, an embedded resource or a
/// link to one.
#[derive(Debug, Clone, PartialEq)]
pub struct Block(Value);

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        let text: String = text.into();
        Self(json!({"type": "text", "text": text}))
    }

    /// An image block: base64 `data` of type `mime_type` (`image/png`).
    pub fn image(mime_type: &str, data_base64: impl Into<String>) -> Self {
        let data: String = data_base64.into();
        Self(json!({"type": "image", "mimeType": mime_type, "data": data}))
    }

    /// An audio block: base64 `data` of type `mime_type` (`audio/wav`).
    pub fn audio(mime_type: &str, data_base64: impl Into<String>) -> Self {
        let data: String = data_base64.into();
        Self(json!({"type": "audio", "mimeType": mime_type, "data": data}))
    }

    /// A resource embedded whole: text of type `mime_type` at `uri` (a
    /// client shows or keeps it as that resource, without reading it).
    pub fn resource_text(uri: &str, mime_type: &str, text: impl Into<String>) -> Self {
        let text: String = text.into();
        Self(
            json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime_type, "text": text}}),
        )
    }

    /// A resource embedded whole: base64 `blob` of type `mime_type` at
    /// `uri`.
    pub fn resource_blob(uri: &str, mime_type: &str, blob_base64: impl Into<String>) -> Self {
        let blob: String = blob_base64.into();
        Self(
            json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime_type, "blob": blob}}),
        )
    }

    /// A link to a resource the client can read (`resources/read`) or open.
    pub fn link(link: Link) -> Self {
        let mut block = json!({"type": "resource_link", "uri": link.uri, "name": link.name});
        for (key, value) in [
            ("title", link.title.map(Value::from)),
            ("description", link.description.map(Value::from)),
            ("mimeType", link.mime_type.map(Value::from)),
            ("size", link.size.map(Value::from)),
        ] {
            if let Some(value) = value {
                block[key] = value;
            }
        }
        Self(block)
    }

    /// Any MCP content block, in MCP's JSON (`{"type": "text", "text":
    /// ...}`, `image`, `audio`, `resource_link`, `resource`). The host
    /// refuses blocks that are not MCP's.
    pub fn raw(block: Value) -> Self {
        Self(block)
    }

    /// The block's JSON.
    pub fn into_value(self) -> Value {
        self.0
    }
}

/// A resource link block for [`Block::link`] and
/// [`Content::link`](crate::Content::link).
#[derive(Debug, Clone, Default)]
pub struct Link {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
    size: Option<u64>,
}

impl Link {
    /// A link to `uri`, called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            ..Self::default()
        }
    }

    /// A title for people.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What it is.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Its MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Its size in bytes.
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }
}
