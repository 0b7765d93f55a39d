//! The approval question as MCP's `elicitation/create` (a form: make the
//! call or not, and, when the rule allows, whether to remember the
//! answer), and the user's answer read back from it.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::executor::{Answers, Questions};

/// Arguments longer than this are cut in the question (a whole program
/// passed to `exec_py.run` would bury the question itself).
const MAX_ARGUMENTS_CHARS: usize = 4000;

/// What the user answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Make the call; `remember`: and do not ask again (as the rule allows).
    Accept {
        /// The user ticked the offer to remember.
        remember: bool,
    },
    /// Do not make it (declined, cancelled, or "no" chosen in the form).
    Decline,
}

/// The key of the question about calling `tool` with `args` (secrets
/// already hidden) in the call's `inputRequests`: what it asks, so that
/// answers carried by a 2026-07-28 `requestState` (replayed by key when a
/// call runs again) answer only the same question, never another call's.
pub fn key(tool: &str, args: &Value) -> String {
    let digest = Sha256::digest(format!("{tool}\n{args}").as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("approval-{hex}")
}

/// `args` (secrets already hidden) as the question shows them and the
/// audit trail keeps them: pretty JSON, cut past [`MAX_ARGUMENTS_CHARS`].
pub fn arguments_text(args: &Value) -> String {
    let mut arguments = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
    if let Some((cut, _)) = arguments.char_indices().nth(MAX_ARGUMENTS_CHARS) {
        let more = arguments[cut..].chars().count();
        arguments.truncate(cut);
        arguments.push_str(&format!("\n… ({more} more characters)"));
    }
    arguments
}

/// Ask, under `key`, whether `tool` may be called with `args` (secrets
/// already hidden), as `[approval.<rule>]` requires; `offer`: the sentence
/// of the choice to remember the answer, when the rule allows one.
pub fn question(key: &str, tool: &str, rule: &str, args: &Value, offer: Option<&str>) -> Questions {
    let arguments = arguments_text(args);
    let message = format!(
        "Approve a call of `{tool}`? (approval rule `[approval.{rule}]`)\n\nArguments:\n{arguments}"
    );
    let mut properties = json!({
        "decision": {
            "type": "string",
            "title": format!("Call `{tool}`?"),
            "oneOf": [
                {"const": "accept", "title": "Yes, make this call"},
                {"const": "decline", "title": "No, do not make it"},
            ],
        },
    });
    if let Some(offer) = offer {
        properties["remember"] = json!({"type": "boolean", "title": offer, "default": false});
    }
    let params = json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": properties,
            "required": ["decision"],
        },
    });
    Questions::from_iter([(
        key.to_owned(),
        json!({"method": "elicitation/create", "params": params}),
    )])
}

/// The user's decision in `answers` to the question of `key`; anything but
/// an accepted form that chose "accept" declines. `Err`: the client's
/// answer is not an elicitation result, said in words.
pub fn decision(answers: &Answers, key: &str) -> Result<Decision, String> {
    let Some(answer) = answers.get(key) else {
        return Err("the client sent no answer to the approval question".to_owned());
    };
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let content = answer.get("content");
            let field = |name| content.and_then(|c| c.get(name));
            if field("decision").and_then(Value::as_str) != Some("accept") {
                return Ok(Decision::Decline);
            }
            let remember = field("remember").and_then(Value::as_bool) == Some(true);
            Ok(Decision::Accept { remember })
        }
        Some("decline" | "cancel") => Ok(Decision::Decline),
        _ => Err(format!(
            "the client's answer to the approval question is not an elicitation result \
             (`action` accept, decline or cancel): {answer}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ElicitRequestParams;

    use super::*;

    const KEY: &str = "approval-0";

    fn answer(value: Value) -> Answers {
        Answers::from_iter([(KEY.to_owned(), value)])
    }

    fn decision(answers: &Answers) -> Result<Decision, String> {
        super::decision(answers, KEY)
    }

    #[test]
    fn the_key_names_the_call_and_its_arguments() {
        let args = json!({"sessionId": "s1"});
        let first = key("exec_ts.session_delete", &args);
        assert!(first.starts_with("approval-") && first.len() == "approval-".len() + 16);
        assert_eq!(first, key("exec_ts.session_delete", &args));
        assert_ne!(
            first,
            key("exec_ts.session_delete", &json!({"sessionId": "s2"}))
        );
        assert_ne!(first, key("jupyter.session_delete", &args));
    }

    #[test]
    fn the_question_is_an_elicitation_form_mcp_clients_accept() {
        let args = json!({"session_id": "s1"});
        for offer in [
            None,
            Some("Don't ask again about `fx.drop` in this session"),
        ] {
            let questions = question(KEY, "fx.drop", "deletes", &args, offer);
            let asked = &questions[KEY];
            assert_eq!(asked["method"], "elicitation/create");
            let params: ElicitRequestParams = serde_json::from_value(asked["params"].clone())
                .expect("rmcp reads the question as an elicitation request");
            let ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } = params
            else {
                panic!("not a form");
            };
            assert!(message.contains("`fx.drop`") && message.contains("`[approval.deletes]`"));
            assert!(message.contains("\"session_id\": \"s1\""), "{message}");
            let schema = serde_json::to_value(requested_schema).unwrap();
            assert_eq!(schema["required"], json!(["decision"]));
            assert_eq!(
                schema["properties"].get("remember").is_some(),
                offer.is_some()
            );
        }
    }

    #[test]
    fn long_arguments_are_cut_with_what_is_left_said() {
        let args = json!({"code": "x".repeat(10_000)});
        let questions = question(KEY, "exec_py.run", "code", &args, None);
        let message = questions[KEY]["params"]["message"].as_str().unwrap();
        assert!(message.chars().count() < MAX_ARGUMENTS_CHARS + 200);
        assert!(message.ends_with("more characters)"), "{message}");
    }

    #[test]
    fn only_an_accepted_form_that_says_accept_approves() {
        let accept =
            |content: Value| decision(&answer(json!({"action": "accept", "content": content})));
        assert_eq!(
            accept(json!({"decision": "accept"})),
            Ok(Decision::Accept { remember: false })
        );
        assert_eq!(
            accept(json!({"decision": "accept", "remember": true})),
            Ok(Decision::Accept { remember: true })
        );
        assert_eq!(
            accept(json!({"decision": "decline", "remember": true})),
            Ok(Decision::Decline)
        );
        assert_eq!(accept(json!({})), Ok(Decision::Decline));
        assert_eq!(
            decision(&answer(json!({"action": "accept"}))),
            Ok(Decision::Decline)
        );
        for action in ["decline", "cancel"] {
            assert_eq!(
                decision(&answer(json!({"action": action}))),
                Ok(Decision::Decline)
            );
        }
        let odd = decision(&answer(json!({"action": "maybe"}))).unwrap_err();
        assert!(odd.contains("not an elicitation result"), "{odd}");
        let none = decision(&Answers::new()).unwrap_err();
        assert!(none.contains("no answer"), "{none}");
    }
}
