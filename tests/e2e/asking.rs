//! A pack asking its caller's client (elicitation, sampling, roots),
//! through the real binary over HTTP, on both wires: the official Python
//! SDK answers requests on 2025-11-25; on 2026-07-28 the host answers with
//! `input_required` and a signed `requestState`, and the retry continues
//! the call, which only the caller it was given to can do.

use packhost_tests::{conformance_pack, http::HttpHost, official::script_lines, venv_python};
use serde_json::{Value, json};

use crate::http::token;

fn config(extra: &str) -> String {
    format!(
        "[packs.conformance]\npath = \"{}\"\n{extra}\n",
        conformance_pack().display()
    )
}

/// Which official Python SDK drives the host.
#[derive(Clone, Copy)]
pub(crate) enum Sdk {
    /// 1.x, on 2025-11-25: questions are requests to it.
    V1,
    /// 2.x, on 2026-07-28: questions are `input_required` results.
    V2,
}

/// The official Python client's lines for `calls` (tool, arguments),
/// answering with `answers` (see tests/official-clients/client.py).
async fn python(host: &HttpHost, answers: Value, calls: &[(&str, Value)]) -> Vec<Value> {
    client(Sdk::V1, host, answers, calls).await
}

pub(crate) async fn client(
    sdk: Sdk,
    host: &HttpHost,
    answers: Value,
    calls: &[(&str, Value)],
) -> Vec<Value> {
    let spec = json!({
        "transport": {"http": {"url": host.url()}},
        "answers": answers,
        "calls": calls.iter().enumerate()
            .map(|(n, (tool, arguments))| json!({"id": format!("c{n}"), "tool": tool, "arguments": arguments}))
            .collect::<Vec<_>>(),
    });
    let (python, script) = match sdk {
        Sdk::V1 => (venv_python(), "client.py"),
        Sdk::V2 => (mcp2_python(), "client_mrtr.py"),
    };
    script_lines(&python, script, &spec, host).await
}

/// The interpreter of the venv with the official SDK 2.x (`./dev test`
/// makes it).
fn mcp2_python() -> String {
    std::env::var("PACKHOST_TEST_PYTHON_MCP2").unwrap_or_else(|_| {
        panic!("PACKHOST_TEST_PYTHON_MCP2 is not set: run the tests with `./dev test`")
    })
}

fn result_of<'a>(lines: &'a [Value], id: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["id"] == id)
        .unwrap_or_else(|| panic!("no line for {id}: {lines:?}"))
}

#[tokio::test]
async fn a_packs_questions_reach_a_2025_client_as_requests_and_its_answers_come_back() {
    let host = HttpHost::start(&config(""), &[]).await;
    let answers = json!({
        "elicitation": [
            {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}},
            {"action": "decline"},
            {"action": "cancel"},
        ],
        "sampling": "Paris",
        "roots": [{"uri": "file:///work/site", "name": "site"}],
    });
    let message = json!({"message": "Who are you?"});
    let lines = python(
        &host,
        answers,
        &[
            ("conformance.test_elicitation", message.clone()),
            ("conformance.test_elicitation", message.clone()),
            ("conformance.test_elicitation", message),
            (
                "conformance.test_sampling",
                json!({"prompt": "Capital of France?"}),
            ),
            (
                "conformance.test_input_required_result_list_roots",
                json!({}),
            ),
        ],
    )
    .await;
    let asked: Vec<&Value> = lines.iter().filter(|l| l.get("asked").is_some()).collect();
    assert_eq!(asked.len(), 5, "{lines:?}");
    assert_eq!(asked[0]["params"]["message"], "Who are you?");
    let text = |id| {
        result_of(&lines, id)["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        text("c0").contains("action=accept") && text("c0").contains("ada@example.com"),
        "{lines:?}"
    );
    assert!(text("c1").contains("action=decline"), "{lines:?}");
    assert!(text("c2").contains("action=cancel"), "{lines:?}");
    assert_eq!(text("c3"), "LLM response: Paris");
    assert_eq!(text("c4"), "Client roots: file:///work/site");
}

#[tokio::test]
async fn the_official_sdk_2_answers_the_same_questions_over_2026_by_retrying() {
    let host = HttpHost::start(&config(""), &[]).await;
    let answers = json!({
        "elicitation": [
            {"action": "accept", "content": {"name": "Ada"}},
            {"action": "accept", "content": {"color": "teal"}},
            {"action": "accept", "content": {"name": "Bo"}},
        ],
        "sampling": "Paris",
        "roots": [{"uri": "file:///work/site", "name": "site"}],
    });
    let lines = client(
        Sdk::V2,
        &host,
        answers,
        &[
            (
                "conformance.test_input_required_result_multi_round",
                json!({}),
            ),
            (
                "conformance.test_input_required_result_multiple_inputs",
                json!({}),
            ),
            (
                "conformance.test_sampling",
                json!({"prompt": "Capital of France?"}),
            ),
        ],
    )
    .await;
    assert_eq!(lines[0]["protocolVersion"], "2026-07-28", "{lines:?}");
    let text = |id| {
        result_of(&lines, id)["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(text("c0"), "\"Ada\" likes \"teal\"", "{lines:?}");
    assert_eq!(
        text("c1"),
        "name=\"Bo\", greeting=Paris, Client roots: file:///work/site",
        "{lines:?}"
    );
    assert_eq!(text("c2"), "LLM response: Paris", "{lines:?}");
    let asked = lines.iter().filter(|l| l.get("asked").is_some()).count();
    assert_eq!(asked, 6, "each question asked once: {lines:?}");
}

#[tokio::test]
async fn a_client_that_cannot_answer_gets_a_clear_failure_not_a_hang() {
    let host = HttpHost::start(&config(""), &[]).await;
    // Sampling only: the client declares no elicitation.
    let lines = python(
        &host,
        json!({"sampling": "x"}),
        &[("conformance.test_elicitation", json!({"message": "hi"}))],
    )
    .await;
    let line = result_of(&lines, "c0");
    assert_eq!(line["isError"], true, "{line}");
    let text = line["text"].as_str().unwrap();
    assert!(
        text.starts_with("INPUT_UNAVAILABLE: the client did not declare `elicitation`"),
        "{text}"
    );
}

/// A stateless (2026-07-28) `tools/call` of `tool` as `token`'s caller,
/// with `extra` params (`inputResponses`, `requestState`): the JSON-RPC
/// response.
async fn stateless_call(host: &HttpHost, token: &str, tool: &str, extra: Value) -> Value {
    let mut params = json!({
        "name": tool,
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}},
        },
    });
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let messages = host.stateless_call(Some(token), &params).await;
    messages.last().cloned().expect("a response")
}

fn named(name: &str) -> Value {
    json!({"user_name": {"action": "accept", "content": {"name": name}}})
}

#[tokio::test]
async fn two_callers_asked_at_once_each_get_their_own_question_and_only_theirs_resumes_it() {
    let (ada, ada_entry) = token("ada", "acme", &[]);
    let (bob, bob_entry) = token("bob", "globex", &[]);
    let host = HttpHost::start(&config(&format!("{ada_entry}\n{bob_entry}")), &[]).await;
    let tool = "conformance.test_input_required_result_elicitation";

    let (ada_asked, bob_asked) = tokio::join!(
        stateless_call(&host, &ada, tool, json!({})),
        stateless_call(&host, &bob, tool, json!({}))
    );
    for asked in [&ada_asked, &bob_asked] {
        assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
        assert_eq!(
            asked["result"]["inputRequests"]["user_name"]["params"]["message"],
            "What is your name?"
        );
    }
    let ada_state = ada_asked["result"]["requestState"].as_str().unwrap();
    let bob_state = bob_asked["result"]["requestState"].as_str().unwrap();
    assert_ne!(ada_state, bob_state);

    // Bob cannot answer (nor read the answer of) Ada's question: her state
    // is refused to him, as a changed one is.
    let stolen = stateless_call(
        &host,
        &bob,
        tool,
        json!({"inputResponses": named("Mallory"), "requestState": ada_state}),
    )
    .await;
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    let tampered = format!("{ada_state}x");
    let tampered = stateless_call(
        &host,
        &ada,
        tool,
        json!({"inputResponses": named("Ada"), "requestState": tampered}),
    )
    .await;
    assert_eq!(tampered["error"]["code"], -32602, "{tampered}");

    let (ada_done, bob_done) = tokio::join!(
        stateless_call(
            &host,
            &ada,
            tool,
            json!({"inputResponses": named("Ada"), "requestState": ada_state})
        ),
        stateless_call(
            &host,
            &bob,
            tool,
            json!({"inputResponses": named("Bob"), "requestState": bob_state})
        )
    );
    assert_eq!(
        ada_done["result"]["content"][0]["text"], "Hello, Ada!",
        "{ada_done}"
    );
    assert_eq!(
        bob_done["result"]["content"][0]["text"], "Hello, Bob!",
        "{bob_done}"
    );
}

#[tokio::test]
async fn a_call_held_between_rounds_continues_where_it_stopped() {
    let (ada, entry) = token("ada", "acme", &[]);
    let host = HttpHost::start(&config(&entry), &[]).await;
    let tool = "conformance.test_input_required_result_multi_round";
    let first = stateless_call(&host, &ada, tool, json!({})).await;
    let state = first["result"]["requestState"].as_str().unwrap();
    let step1 = json!({"step1": {"action": "accept", "content": {"name": "Ada"}}});
    let second = stateless_call(
        &host,
        &ada,
        tool,
        json!({"inputResponses": step1, "requestState": state}),
    )
    .await;
    assert!(
        second["result"]["inputRequests"].get("step2").is_some(),
        "{second}"
    );
    // A retry missing the answer asked for is asked again, not failed.
    let state = second["result"]["requestState"].as_str().unwrap();
    let again = stateless_call(
        &host,
        &ada,
        tool,
        json!({"inputResponses": {"other": 1}, "requestState": state}),
    )
    .await;
    assert!(
        again["result"]["inputRequests"].get("step2").is_some(),
        "{again}"
    );
    let state = again["result"]["requestState"].as_str().unwrap();
    let step2 = json!({"step2": {"action": "accept", "content": {"color": "green"}}});
    let done = stateless_call(
        &host,
        &ada,
        tool,
        json!({"inputResponses": step2, "requestState": state}),
    )
    .await;
    assert_eq!(
        done["result"]["content"][0]["text"], "\"Ada\" likes \"green\"",
        "{done}"
    );
}
