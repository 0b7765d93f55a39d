//! A call's questions to its client, on either wire (chosen in
//! [`super::wire`]). On 2025-11-25 (and stdio) a question is a request to
//! the client ([`PeerAsk`]); on 2026-07-28, which has no server-to-client
//! requests, it is an `input_required` result answered by the client's
//! retry ([`super::rounds`]). Both check the client declared what a
//! question needs and read answers the same way, here.

use std::{future::Future, pin::Pin};

use pack_api::codes;
use rmcp::{
    ErrorData, RoleServer,
    model::{ClientCapabilities, InputRequest, ServerRequest},
    service::Peer,
};
use serde_json::{Value, json};

use crate::{
    executor::{Answers, Ask, Questions},
    failure::Failure,
};

/// The client capability each question needs, by method.
const NEEDS: [(&str, &str); 3] = [
    ("elicitation/create", "elicitation"),
    ("sampling/createMessage", "sampling"),
    ("roots/list", "roots"),
];

fn declares(capabilities: &ClientCapabilities, capability: &str) -> bool {
    match capability {
        "elicitation" => capabilities.elicitation.is_some(),
        "sampling" => capabilities.sampling.is_some(),
        "roots" => capabilities.roots.is_some(),
        _ => false,
    }
}

/// The capabilities of `needed` (names such as `sampling`) the client did
/// not declare, as the `requiredCapabilities` of a -32021 error; `None`
/// when it declared them all.
pub(super) fn missing(capabilities: &ClientCapabilities, needed: &[String]) -> Option<ErrorData> {
    let missing: serde_json::Map<String, Value> = needed
        .iter()
        .filter(|need| !declares(capabilities, need))
        .map(|need| (need.clone(), json!({})))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let required = serde_json::from_value(Value::Object(missing.clone())).unwrap_or_default();
    let mut error = ErrorData::missing_required_client_capability(required);
    error.message = format!(
        "this request needs the client capabilities {}, which the client did not declare",
        missing.keys().cloned().collect::<Vec<_>>().join(", ")
    )
    .into();
    Some(error)
}

/// Checks `questions` are questions MCP has and the client declared what
/// each needs: the methods, in key order.
pub(super) fn check(
    questions: &Questions,
    capabilities: &ClientCapabilities,
) -> Result<Vec<&'static str>, Failure> {
    questions
        .iter()
        .map(|(key, question)| {
            let method = question.get("method").and_then(Value::as_str);
            let Some((method, capability)) = NEEDS.iter().find(|(m, _)| Some(*m) == method) else {
                return Err(Failure::new(
                    codes::INVALID_ARGUMENT,
                    format!(
                        "question `{key}` has method {}; a call can ask `elicitation/create`, \
                         `sampling/createMessage` or `roots/list`",
                        method.map_or("none".to_owned(), |m| format!("`{m}`"))
                    ),
                ));
            };
            if !declares(capabilities, capability) {
                return Err(Failure::new(
                    codes::INPUT_UNAVAILABLE,
                    format!(
                        "the client did not declare `{capability}`, so it cannot answer question \
                         `{key}` ({method})"
                    ),
                ));
            }
            Ok(*method)
        })
        .collect()
}

/// Whether `answer` has the shape of a result of `method`: what a client
/// sends back is checked before a call sees it.
pub(super) fn fits(method: &str, answer: &Value) -> bool {
    let field = |name: &str| answer.get(name);
    match method {
        "elicitation/create" => field("action")
            .and_then(Value::as_str)
            .is_some_and(|a| ["accept", "decline", "cancel"].contains(&a)),
        "sampling/createMessage" => field("role").is_some() && field("content").is_some(),
        "roots/list" => field("roots").is_some_and(Value::is_array),
        _ => false,
    }
}

/// Questions sent as requests to the client, all at once.
pub(super) struct PeerAsk {
    pub(super) peer: Peer<RoleServer>,
    pub(super) capabilities: ClientCapabilities,
}

impl Ask for PeerAsk {
    fn ask(
        &self,
        questions: Questions,
    ) -> Pin<Box<dyn Future<Output = Result<Answers, Failure>> + Send>> {
        let checked = check(&questions, &self.capabilities).map(|_| ());
        let peer = self.peer.clone();
        Box::pin(async move {
            checked?;
            let asked = questions.into_iter().map(|(key, question)| {
                let peer = peer.clone();
                async move {
                    let answer = request(&peer, &key, question).await?;
                    Ok::<_, Failure>((key, answer))
                }
            });
            futures_util::future::try_join_all(asked)
                .await
                .map(|answers| answers.into_iter().collect())
        })
    }
}

/// Question `key` as rmcp takes it.
pub(super) fn read_question(key: &str, question: Value) -> Result<InputRequest, Failure> {
    serde_json::from_value(question).map_err(|e| {
        Failure::new(
            codes::INVALID_ARGUMENT,
            format!("question `{key}` is not one MCP has: {e}"),
        )
    })
}

async fn request(peer: &Peer<RoleServer>, key: &str, question: Value) -> Result<Value, Failure> {
    let request = match read_question(key, question)? {
        InputRequest::CreateMessage(r) => ServerRequest::CreateMessageRequest(r),
        InputRequest::Elicitation(r) => ServerRequest::ElicitRequest(r),
        InputRequest::ListRoots(r) => ServerRequest::ListRootsRequest(r),
        other => {
            return Err(Failure::new(
                codes::INVALID_ARGUMENT,
                format!("question `{key}` is not one a client answers: {other:?}"),
            ));
        }
    };
    let answer = peer.send_request(request).await.map_err(|e| {
        Failure::new(
            codes::INPUT_UNAVAILABLE,
            format!("the client did not answer question `{key}`: {e}"),
        )
    })?;
    serde_json::to_value(answer).map_err(|e| Failure::new(codes::INTERNAL, e.to_string()))
}
