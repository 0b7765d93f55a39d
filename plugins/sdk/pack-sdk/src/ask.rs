//! Asking the caller's client: the user (elicitation), the user's model
//! (sampling), the client's roots. The host sends the questions the way
//! the caller's wire asks (a request to the client on 2025-11-25, an
//! `input_required` result answered by the client's retry on 2026-07-28);
//! a pack writes the same code for both.

use std::sync::atomic::{AtomicU64, Ordering};

use pack_api::protocol;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::{Context, PackError};

/// One question to the client, as MCP's `inputRequests` entry.
#[derive(Debug, Clone)]
pub struct Question {
    method: &'static str,
    params: Value,
}

impl Question {
    /// Ask the user: `message`, and a form described by `schema` (a flat
    /// JSON Schema object of strings, numbers, booleans and enums).
    pub fn elicit(message: &str, schema: Value) -> Self {
        Self {
            method: "elicitation/create",
            params: json!({"message": message, "requestedSchema": schema}),
        }
    }

    /// Send the user to `url` (MCP's URL-mode elicitation), for what must
    /// not pass through the client, such as signing in elsewhere; `id` is
    /// its `elicitationId`. The answer says whether the user agreed to go,
    /// not what happened there.
    pub fn elicit_url(message: &str, url: &str, id: &str) -> Self {
        Self {
            method: "elicitation/create",
            params: json!({"mode": "url", "message": message, "url": url, "elicitationId": id}),
        }
    }

    /// Ask the client's model: MCP's `sampling/createMessage` params
    /// (`messages`, `maxTokens`, optionally `systemPrompt`,
    /// `modelPreferences`...).
    pub fn sample(params: Value) -> Self {
        Self {
            method: "sampling/createMessage",
            params,
        }
    }

    /// Ask the client's model one question as a user message.
    pub fn sample_text(text: &str, max_tokens: u32) -> Self {
        Self::sample(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens,
        }))
    }

    /// Ask for the client's roots (the directories it works in).
    pub fn roots() -> Self {
        Self {
            method: "roots/list",
            params: json!({}),
        }
    }
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Answered the form.
    Accept,
    /// Said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

/// The user's answer to [`Context::elicit`].
#[derive(Debug, Clone, Deserialize)]
pub struct Elicited {
    /// What the user did.
    pub action: Action,
    /// The form's values, when accepted.
    #[serde(default)]
    pub content: Option<Map<String, Value>>,
}

/// One of the client's roots.
#[derive(Debug, Clone, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A name for people.
    #[serde(default)]
    pub name: Option<String>,
}

/// Keys for questions asked one at a time: the same sequence each time the
/// call runs, so a call the host runs again (a retry that reached another
/// instance) finds its earlier answers under the same keys.
#[derive(Debug, Default)]
pub(crate) struct Keys(AtomicU64);

impl Keys {
    fn next(&self, kind: &str) -> String {
        format!("{kind}-{}", self.0.fetch_add(1, Ordering::Relaxed) + 1)
    }
}

impl Context {
    /// Put several questions to the client at once, each under a key of
    /// yours (one question per key within a call: a call the host runs
    /// again is answered by key); the answers come back under the same
    /// keys (MCP's
    /// `inputResponses`: an `ElicitResult`, `CreateMessageResult` or
    /// `ListRootsResult` each). Fails with `INPUT_UNAVAILABLE` when the
    /// client did not declare what a question needs, `CANCELLED` when the
    /// call ends while waiting.
    pub async fn ask<K: Into<String>>(
        &self,
        questions: impl IntoIterator<Item = (K, Question)>,
    ) -> Result<Map<String, Value>, PackError> {
        let questions: Map<String, Value> = questions
            .into_iter()
            .map(|(key, q)| (key.into(), json!({"method": q.method, "params": q.params})))
            .collect();
        match self
            .call_tool(protocol::INPUT, Value::Object(questions))
            .await?
        {
            Value::Object(answers) => Ok(answers),
            other => Err(PackError::internal(format!(
                "the host answered questions with {other}, not an object of answers"
            ))),
        }
    }

    /// Ask the user one question (see [`Question::elicit`]).
    pub async fn elicit(&self, message: &str, schema: Value) -> Result<Elicited, PackError> {
        let key = self.keys().next("elicit");
        let answer = self.one(key, Question::elicit(message, schema)).await?;
        decode(answer, "an elicitation result (`action`, `content`)")
    }

    /// Send the user to `url` (see [`Question::elicit_url`]).
    pub async fn elicit_url(
        &self,
        message: &str,
        url: &str,
        id: &str,
    ) -> Result<Elicited, PackError> {
        let key = self.keys().next("elicit");
        let answer = self
            .one(key, Question::elicit_url(message, url, id))
            .await?;
        decode(answer, "an elicitation result (`action`)")
    }

    /// Tell the client that what URL elicitation `id` sent the user to do
    /// is done (see [`Question::elicit_url`]), where the wire has a way to
    /// say so; best effort.
    pub async fn elicitation_complete(&self, id: &str) {
        let done = json!({ "elicitationId": id });
        let _ = self.call_tool(protocol::ELICITATION_COMPLETE, done).await;
    }

    /// Ask the client's model (see [`Question::sample`]); the answer is
    /// MCP's `CreateMessageResult` (`role`, `content`, `model`).
    pub async fn sample(&self, params: Value) -> Result<Value, PackError> {
        let key = self.keys().next("sample");
        self.one(key, Question::sample(params)).await
    }

    /// The client's roots.
    pub async fn roots(&self) -> Result<Vec<Root>, PackError> {
        #[derive(Deserialize)]
        struct Roots {
            roots: Vec<Root>,
        }
        let key = self.keys().next("roots");
        let answer = self.one(key, Question::roots()).await?;
        decode::<Roots>(answer, "a roots list (`roots`)").map(|r| r.roots)
    }

    async fn one(&self, key: String, question: Question) -> Result<Value, PackError> {
        let mut answers = self.ask([(key.clone(), question)]).await?;
        answers
            .remove(&key)
            .ok_or_else(|| PackError::internal(format!("the host gave no answer to `{key}`")))
    }
}

fn decode<T: serde::de::DeserializeOwned>(answer: Value, what: &str) -> Result<T, PackError> {
    serde_json::from_value(answer)
        .map_err(|e| PackError::internal(format!("the client's answer is not {what}: {e}")))
}
