//! What a successful call gives, whichever backend served it.

use rmcp::model::ContentBlock;
use serde_json::Value;

/// A successful call.
#[derive(Debug)]
pub struct Output {
    /// The function's result: structured content, and all that code mode
    /// and the command line get.
    pub value: Value,
    /// What to show besides, when the function said it.
    pub content: Option<Content>,
}

/// The content a function asked for (see `pack_api::ContentResult`).
#[derive(Debug)]
pub struct Content {
    /// The text instead of the value's; empty: no text block.
    pub text: Option<String>,
    /// The blocks after the text.
    pub blocks: Vec<ContentBlock>,
}

impl Output {
    /// The value alone.
    pub fn into_value(self) -> Value {
        self.value
    }
}
