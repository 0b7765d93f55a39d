//! Prompts a pack declares ([`Prompt`]) and what rendering one gives
//! ([`PromptResult`]: MCP's `GetPromptResult`), added with
//! [`PackDef::prompt`](crate::PackDef::prompt).

use pack_api::{PromptArgumentSpec, PromptSpec};
use serde_json::{Value, json};

use crate::Block;

/// A prompt's name, description and arguments (MCP's prompt arguments are
/// strings; the render function gets them as an object of strings).
#[derive(Debug, Clone)]
pub struct Prompt {
    pub(crate) spec: PromptSpec,
}

impl Prompt {
    /// Prompt `name` (an identifier), described for people and models.
    pub fn new(name: &str, description: &str) -> Self {
        Self {
            spec: PromptSpec {
                name: name.to_owned(),
                description: Some(description.to_owned()).filter(|d| !d.is_empty()),
                ..PromptSpec::default()
            },
        }
    }

    /// A short name for people.
    pub fn title(mut self, title: &str) -> Self {
        self.spec.title = Some(title.to_owned());
        self
    }

    /// One more argument: a render without a `required` one is refused
    /// before the render function runs.
    pub fn argument(mut self, name: &str, description: &str, required: bool) -> Self {
        self.spec.arguments.push(PromptArgumentSpec {
            name: name.to_owned(),
            description: Some(description.to_owned()).filter(|d| !d.is_empty()),
            required,
        });
        self
    }
}

/// Who says a [`PromptMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// One message of a rendered prompt: a role and one content block (text,
/// image, audio, an embedded resource or a link).
#[derive(Debug, Clone, PartialEq)]
pub struct PromptMessage {
    role: Role,
    content: Block,
}

impl PromptMessage {
    /// `content` said by `role`.
    pub fn new(role: Role, content: Block) -> Self {
        Self { role, content }
    }

    /// `content` said by the user.
    pub fn user(content: Block) -> Self {
        Self::new(Role::User, content)
    }

    /// `content` said by the model.
    pub fn assistant(content: Block) -> Self {
        Self::new(Role::Assistant, content)
    }
}

/// A rendered prompt: its messages, and a description of this rendering
/// when it says more than the prompt's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptResult {
    description: Option<String>,
    messages: Vec<PromptMessage>,
}

impl PromptResult {
    /// These messages, in order.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        Self {
            description: None,
            messages,
        }
    }

    /// What this rendering is.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// MCP's `GetPromptResult`.
    pub(crate) fn into_value(self) -> Value {
        let messages: Vec<Value> = self
            .messages
            .into_iter()
            .map(|message| {
                let role = match message.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                };
                json!({"role": role, "content": message.content.into_value()})
            })
            .collect();
        let mut result = json!({ "messages": messages });
        if let Some(description) = self.description {
            result["description"] = description.into();
        }
        result
    }
}
