//! A call's questions to its client, on either wire (chosen in
//! [`super::wire`]). On 2025-11-25 (and stdio) a question is a request to
//! the client ([`PeerAsk`]); on 2026-07-28, which has no server-to-client
//! requests, it is an `input_required` result answered by the client's
//! retry ([`super::rounds`]). Both check the client declared what a
//! question needs and read answers the same way, here.

use std::{future::Future, pin::Pin};

use pack_api::{codes, protocol};
use rmcp::{
    ErrorData, RoleServer,
    model::{
        ClientCapabilities, CustomNotification, GetExtensions as _, InputRequest, RequestId,
        ServerNotification, ServerRequest,
    },
    service::{OriginatingRequestId, Peer},
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
    let elicitation = capabilities.elicitation.as_ref();
    match capability {
        "elicitation" => elicitation.is_some(),
        // An empty `elicitation: {}` means forms only.
        "elicitation.form" => elicitation.is_some_and(|e| e.form.is_some() || e.url.is_none()),
        "elicitation.url" => elicitation.is_some_and(|e| e.url.is_some()),
        "sampling" => capabilities.sampling.is_some(),
        "roots" => capabilities.roots.is_some(),
        _ => false,
    }
}

/// The capability question `question` of `method` needs: an elicitation's
/// by its mode (a form unless it says `url`) when the client declared
/// elicitation at all.
fn needed(
    method: &str,
    capability: &'static str,
    question: &Value,
    capabilities: &ClientCapabilities,
) -> &'static str {
    if method != "elicitation/create" || capabilities.elicitation.is_none() {
        return capability;
    }
    match question.pointer("/params/mode").and_then(Value::as_str) {
        Some("url") => "elicitation.url",
        _ => "elicitation.form",
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
            let capability = needed(method, capability, question, capabilities);
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

/// Questions sent as requests to the client, all at once, on the stream of
/// the client's request `origin` while it is open (a question asked from
/// another task, as a server pack's relayed one, would otherwise go to the
/// session's GET stream, and wait for ever on a client that opened none).
pub(super) struct PeerAsk {
    pub(super) peer: Peer<RoleServer>,
    pub(super) capabilities: ClientCapabilities,
    pub(super) origin: RequestId,
}

impl Ask for PeerAsk {
    fn ask(
        &self,
        questions: Questions,
    ) -> Pin<Box<dyn Future<Output = Result<Answers, Failure>> + Send>> {
        let checked = check(&questions, &self.capabilities).map(|_| ());
        let peer = self.peer.clone();
        let origin = self.origin.clone();
        Box::pin(async move {
            checked?;
            let asked = questions.into_iter().map(|(key, question)| {
                let peer = peer.clone();
                let origin = origin.clone();
                async move {
                    let answer = request(&peer, &key, question, origin).await?;
                    Ok::<_, Failure>((key, answer))
                }
            });
            futures_util::future::try_join_all(asked)
                .await
                .map(|answers| answers.into_iter().collect())
        })
    }

    fn elicitation_complete(&self, id: String) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.completed(id)
    }
}

impl PeerAsk {
    /// `notifications/elicitation/complete` for elicitation `id` (rmcp has
    /// no type for it; it goes on the session's own stream).
    fn completed(&self, id: String) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let peer = self.peer.clone();
        Box::pin(async move {
            let params = json!({ "elicitationId": id });
            let notification =
                CustomNotification::new(protocol::ELICITATION_COMPLETE, Some(params));
            let sent = peer
                .send_notification(ServerNotification::CustomNotification(notification))
                .await;
            if let Err(e) = sent {
                tracing::debug!(error = %e, "elicitation/complete not delivered");
            }
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

async fn request(
    peer: &Peer<RoleServer>,
    key: &str,
    question: Value,
    origin: RequestId,
) -> Result<Value, Failure> {
    let mut request = match read_question(key, question)? {
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
    request
        .extensions_mut()
        .insert(OriginatingRequestId(origin));
    // Sent from a task of its own: rmcp marks a request sent inside any
    // request handler with that handler's request, which for a server
    // pack's relayed question is the downstream server's, not our client's.
    let peer = peer.clone();
    let sent = tokio::spawn(async move { peer.send_request(request).await });
    let unanswered = |e: String| {
        Failure::new(
            codes::INPUT_UNAVAILABLE,
            format!("the client did not answer question `{key}`: {e}"),
        )
    };
    let answer = sent
        .await
        .map_err(|e| unanswered(e.to_string()))?
        .map_err(|e| unanswered(e.to_string()))?;
    serde_json::to_value(answer).map_err(|e| Failure::new(codes::INTERNAL, e.to_string()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn capabilities(value: Value) -> ClientCapabilities {
        serde_json::from_value(value).unwrap()
    }

    fn elicit(mode: Option<&str>) -> Questions {
        let mut params = json!({"message": "go there", "url": "https://example.com/consent"});
        if let Some(mode) = mode {
            params["mode"] = json!(mode);
        }
        Questions::from_iter([(
            "q".to_owned(),
            json!({"method": "elicitation/create", "params": params}),
        )])
    }

    #[test]
    fn a_url_question_goes_only_to_clients_that_declared_urls() {
        let form_only = [
            json!({"elicitation": {}}),
            json!({"elicitation": {"form": {}}}),
        ];
        for declared in form_only {
            let refused = check(&elicit(Some("url")), &capabilities(declared.clone())).unwrap_err();
            assert_eq!(refused.code(), codes::INPUT_UNAVAILABLE, "{declared}");
            assert!(
                refused.text().contains("`elicitation.url`"),
                "{}",
                refused.text()
            );
            assert!(check(&elicit(None), &capabilities(declared)).is_ok());
        }
        let both = capabilities(json!({"elicitation": {"form": {}, "url": {}}}));
        assert!(check(&elicit(Some("url")), &both).is_ok());
        assert!(check(&elicit(Some("form")), &both).is_ok());
        let url_only = capabilities(json!({"elicitation": {"url": {}}}));
        assert!(check(&elicit(Some("url")), &url_only).is_ok());
        assert!(
            check(&elicit(None), &url_only).is_err(),
            "a form to a URL-only client"
        );
    }
}
