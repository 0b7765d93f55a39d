//! A server pack carries its server whole: server-everything behind
//! packhost, driven by the official Python SDK over streamable HTTP — its
//! prompts (with arguments and completions), resources, templates and
//! subscriptions, the links its tools return, its questions answered by
//! the client whose call caused them, and its log messages.

use packhost_tests::{
    TestHost,
    downstream::{HttpServer, everything_stdio},
    http::{Events, HttpHost, RawSession, is_response_to},
    official::script_lines,
    ok, venv_python,
};
use serde_json::{Value, json};

use crate::{
    asking::{Sdk, client},
    http::token,
};

fn everything(extra: &str) -> String {
    format!(
        "[packs.everything]\nkind = \"mcp\"\ncommand = {:?}\n{extra}\n",
        everything_stdio()
    )
}

/// The official Python client's output of `steps` (see
/// tests/official-clients/whole.py), as `token`, answering with `answers`.
pub(crate) async fn steps(
    host: &HttpHost,
    token: Option<&str>,
    answers: Value,
    steps: Value,
) -> Vec<Value> {
    let spec = json!({
        "transport": {"http": {"url": host.url(), "token": token}},
        "answers": answers,
        "steps": steps,
    });
    script_lines(&venv_python(), "whole.py", &spec, host).await
}

/// The output of step `id`; panics with every line when it failed.
pub(crate) fn output<'a>(lines: &'a [Value], id: &str) -> &'a Value {
    let line = lines
        .iter()
        .find(|l| l["id"] == id)
        .unwrap_or_else(|| panic!("no line for {id}: {lines:#?}"));
    line.get("output")
        .unwrap_or_else(|| panic!("step {id} failed: {line}\n{lines:#?}"))
}

pub(crate) fn text_of(result: &Value) -> String {
    let texts: Vec<&str> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect();
    texts.join("\n")
}

/// The steps of a walk through server-everything's prompts, completions,
/// resources, templates and links, its prompts named `prefix` + their
/// served name, a tool called by the step `call(server's tool name,
/// arguments)` makes (see [`checked_walk`]).
pub(crate) fn walk(prefix: &str, call: impl Fn(&str, Value) -> Value) -> Vec<Value> {
    let completable = format!("{prefix}completable_prompt");
    vec![
        json!({"id": "prompts", "op": "prompts"}),
        json!({"id": "simple", "op": "prompt", "name": format!("{prefix}simple_prompt")}),
        json!({"id": "args", "op": "prompt", "name": format!("{prefix}args_prompt"),
               "arguments": {"city": "Lyon", "state": "Rhône"}}),
        json!({"id": "department", "op": "complete",
               "ref": {"type": "ref/prompt", "name": completable},
               "argument": {"name": "department", "value": "Eng"}}),
        json!({"id": "member", "op": "complete",
               "ref": {"type": "ref/prompt", "name": completable},
               "argument": {"name": "name", "value": "A"}, "context": {"department": "Engineering"}}),
        json!({"id": "resources", "op": "resources"}),
        json!({"id": "templates", "op": "templates"}),
        json!({"id": "static", "op": "read", "uri": "{{resources.0.uri}}"}),
        json!({"id": "templated", "op": "read", "uri": "demo://resource/dynamic/text/7"}),
        with_id("links", call("get-resource-links", json!({"count": 3}))),
        json!({"id": "link0", "op": "read", "uri": "{{links.content.1.uri}}"}),
        json!({"id": "link1", "op": "read", "uri": "{{links.content.2.uri}}"}),
        with_id(
            "reference",
            call(
                "get-resource-reference",
                json!({"resourceType": "Text", "resourceId": 3}),
            ),
        ),
        json!({"id": "embedded", "op": "read", "uri": "{{reference.content.1.resource.uri}}"}),
        json!({"id": "unknown", "op": "read", "uri": "demo://nowhere"}),
    ]
}

/// What the client made of [`walk`] (prompts named `prefix` + name): every
/// prompt listed and rendered, both completions, resources and templates
/// listed and read, every link and the embedded resource read back, an
/// unknown URI refused.
pub(crate) fn checked_walk(lines: &[Value], prefix: &str) {
    let names: Vec<&str> = output(lines, "prompts")
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for name in [
        "simple_prompt",
        "args_prompt",
        "completable_prompt",
        "resource_prompt",
    ] {
        let name = format!("{prefix}{name}");
        assert!(names.contains(&name.as_str()), "{name} in {names:?}");
    }
    let simple = output(lines, "simple");
    assert!(
        !simple["messages"].as_array().unwrap().is_empty(),
        "{simple}"
    );
    let args = output(lines, "args").to_string();
    assert!(args.contains("Lyon"), "{args}");
    assert_eq!(
        output(lines, "department")["values"],
        json!(["Engineering"])
    );
    assert_eq!(output(lines, "member")["values"], json!(["Alice"]));
    assert!(!output(lines, "resources").as_array().unwrap().is_empty());
    let templates = output(lines, "templates").to_string();
    assert!(
        templates.contains("demo://resource/dynamic/text/{"),
        "{templates}"
    );
    assert!(output(lines, "static")["contents"][0]["uri"].is_string());
    let templated = output(lines, "templated");
    assert_eq!(
        templated["contents"][0]["uri"],
        "demo://resource/dynamic/text/7"
    );
    for link in ["link0", "link1", "embedded"] {
        let read = output(lines, link);
        assert!(read["contents"][0]["uri"].is_string(), "{link}: {read}");
    }
    assert!(failed(lines, "unknown").contains("no resource"));
}

/// `step` as step `id`.
pub(crate) fn with_id(id: &str, mut step: Value) -> Value {
    step["id"] = id.into();
    step
}

/// The error of step `id`; panics when it did not fail.
pub(crate) fn failed<'a>(lines: &'a [Value], id: &str) -> &'a str {
    let line = lines.iter().find(|l| l["id"] == id).unwrap();
    line["error"]
        .as_str()
        .unwrap_or_else(|| panic!("step {id} did not fail: {line}"))
}

#[tokio::test]
async fn server_everythings_prompts_resources_and_links_pass_through() {
    let host = HttpHost::start(&everything(""), &[]).await;
    let call = |tool: &str, arguments: Value| {
        let tool = format!("everything.{}", tool.replace('-', "_"));
        json!({"op": "call", "tool": tool, "arguments": arguments})
    };
    let lines = steps(
        &host,
        None,
        json!({}),
        Value::Array(walk("everything.", call)),
    )
    .await;
    checked_walk(&lines, "everything.");
}

#[tokio::test]
async fn server_everythings_questions_are_answered_by_the_client_that_called() {
    let host = HttpHost::start(&everything(""), &[]).await;
    let answers = json!({
        "elicitation": [
            {"action": "accept", "content": {"name": "Ada Lovelace", "check": true, "email": "ada@example.com"}},
            {"action": "accept"},
        ],
        "sampling": "a sampled answer",
        "roots": [{"uri": "file:///work/site", "name": "site"}],
    });
    let lines = steps(
        &host,
        None,
        answers,
        json!([
            {"id": "level", "op": "level", "level": "debug"},
            {"id": "elicit", "op": "call", "tool": "everything.trigger_elicitation_request"},
            {"id": "url", "op": "call", "tool": "everything.trigger_url_elicitation",
             "arguments": {"url": "https://example.com/authorize", "message": "Sign in"}},
            {"id": "sample", "op": "call", "tool": "everything.trigger_sampling_request",
             "arguments": {"prompt": "Say hi"}},
            {"id": "roots", "op": "call", "tool": "everything.get_roots_list"},
            {"id": "subscribe", "op": "subscribe", "uri": "demo://resource/dynamic/text/1"},
        ]),
    )
    .await;
    let asked: Vec<&str> = lines.iter().filter_map(|l| l["asked"].as_str()).collect();
    assert!(asked.contains(&"elicitation/create"), "{lines:#?}");
    assert!(asked.contains(&"sampling/createMessage"), "{lines:#?}");
    assert!(asked.contains(&"roots/list"), "{lines:#?}");
    let elicit = text_of(output(&lines, "elicit"));
    assert!(elicit.contains("Ada Lovelace"), "{elicit}");
    let url = text_of(output(&lines, "url"));
    assert!(url.contains("completed the URL elicitation"), "{url}");
    let url_asked = lines.iter().find(|l| l["params"]["mode"] == "url");
    assert!(
        url_asked.is_some_and(|l| l["params"]["url"] == "https://example.com/authorize"),
        "{lines:#?}"
    );
    let sample = text_of(output(&lines, "sample"));
    assert!(sample.contains("a sampled answer"), "{sample}");
    let roots = text_of(output(&lines, "roots"));
    assert!(roots.contains("file:///work/site"), "{roots}");
}

#[tokio::test]
async fn two_callers_answering_at_once_each_give_their_own_call_its_answer() {
    two_callers_answer(&everything("")).await;
}

#[tokio::test]
async fn two_callers_answer_their_own_questions_of_a_server_over_http_too() {
    let server = HttpServer::everything();
    two_callers_answer(&format!(
        "[packs.everything]\nkind = \"mcp\"\nurl = {:?}\n",
        server.url
    ))
    .await;
}

/// Two users of one organisation call `trigger-elicitation-request` of
/// server pack `everything` (in `config`) 50 times each at once, each
/// answering with their own name and round: each call gets its own answer.
async fn two_callers_answer(config: &str) {
    let (ada, ada_entry) = token("ada", "acme", &[]);
    let (bob, bob_entry) = token("bob", "acme", &[]);
    let host = HttpHost::start(&format!("{config}\n{ada_entry}\n{bob_entry}"), &[]).await;
    const ROUNDS: usize = 50;
    let calls = |who: &str| {
        let answers: Vec<Value> = (0..ROUNDS)
            .map(|n| json!({"action": "accept", "content": {"name": format!("{who} {n}"), "check": true}}))
            .collect();
        let steps: Vec<Value> = (0..ROUNDS)
            .map(|n| json!({"id": format!("e{n}"), "op": "call", "tool": "everything.trigger_elicitation_request"}))
            .collect();
        (json!({ "elicitation": answers }), Value::Array(steps))
    };
    let (ada_answers, ada_steps) = calls("ada");
    let (bob_answers, bob_steps) = calls("bob");
    let (ada_lines, bob_lines) = tokio::join!(
        steps(&host, Some(&ada), ada_answers, ada_steps),
        steps(&host, Some(&bob), bob_answers, bob_steps),
    );
    for (who, lines) in [("ada", &ada_lines), ("bob", &bob_lines)] {
        for n in 0..ROUNDS {
            let text = text_of(output(lines, &format!("e{n}")));
            assert!(
                text.contains(&format!("{who} {n}\"")),
                "{who} round {n}: {text}"
            );
        }
    }
}

#[tokio::test]
async fn code_renders_a_server_packs_prompt_and_reads_the_links_its_tools_return() {
    let config = format!("[packs.exec_py]\n{}", everything(""));
    let host = TestHost::start(&config).await;
    let code = "\
p = everything.prompts.args_prompt(city='Lyon')\n\
links = everything.get_resource_links(count=2)\n\
uri = [c['uri'] for c in links['content'] if c.get('type') == 'resource_link'][0]\n\
r = packhost.read_resource(uri)\n\
{'prompt': p['messages'][0]['content']['text'], 'uri': uri, 'read': r['contents'][0]['uri']}";
    let out = ok(&host.call("exec_py.run", json!({ "code": code })).await);
    let value = &out["result"];
    assert!(value["prompt"].as_str().unwrap().contains("Lyon"), "{out}");
    assert_eq!(value["read"], value["uri"], "{out}");
}

#[tokio::test]
async fn server_everythings_log_messages_reach_the_client_in_calls_and_between_them() {
    let host = HttpHost::start(&everything(""), &[]).await;
    let lines = steps(
        &host,
        None,
        json!({}),
        json!([
            {"id": "level", "op": "level", "level": "debug"},
            {"id": "toggle", "op": "call", "tool": "everything.toggle_simulated_logging"},
            // One at once, then one every 5 s, outside any call.
            {"id": "logged", "op": "logged", "contains": "level", "count": 2, "seconds": 12},
        ]),
    )
    .await;
    assert_eq!(output(&lines, "logged"), &json!(true), "{lines:#?}");
}

#[tokio::test]
async fn a_2026_client_answers_a_servers_questions_by_round_trips() {
    let host = HttpHost::start(&everything(""), &[]).await;
    let answers = json!({
        "elicitation": [{"action": "accept", "content": {"name": "Grace Hopper", "check": true}}],
        "sampling": "sampled by rounds",
    });
    let lines = client(
        Sdk::V2,
        &host,
        answers,
        &[
            ("everything.trigger_elicitation_request", json!({})),
            (
                "everything.trigger_sampling_request",
                json!({"prompt": "Say hi"}),
            ),
        ],
    )
    .await;
    let text = |id: &str| {
        let line = lines
            .iter()
            .find(|l| l["id"] == id)
            .unwrap_or_else(|| panic!("{lines:#?}"));
        line["text"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(lines[0]["protocolVersion"], "2026-07-28", "{lines:#?}");
    assert!(text("c0").contains("Grace Hopper"), "{lines:#?}");
    assert!(text("c1").contains("sampled by rounds"), "{lines:#?}");
}

#[tokio::test]
async fn a_subscription_to_a_server_packs_resource_hears_its_updates() {
    let host = HttpHost::start(&everything(""), &[]).await;
    const URI: &str = "demo://resource/dynamic/text/1";
    let lines = steps(
        &host,
        None,
        json!({}),
        json!([
            {"id": "subscribe", "op": "subscribe", "uri": URI},
            // The server sends the subscribed at once, then every 5 s.
            {"id": "toggle", "op": "call", "tool": "everything.toggle_subscriber_updates"},
            {"id": "updated", "op": "updated", "uri": URI, "seconds": 12},
            {"id": "unsubscribe", "op": "unsubscribe", "uri": URI},
            {"id": "unknown", "op": "subscribe", "uri": "demo://nowhere"},
        ]),
    )
    .await;
    assert_eq!(output(&lines, "updated"), &json!(true), "{lines:#?}");
    output(&lines, "unsubscribe");
    assert!(failed(&lines, "unknown").contains("no resource"));
}

/// The events of `tool`'s call (`arguments`) on `session`, the server's
/// questions answered by `answer` (given each question's params) until the
/// call's response, which comes last.
async fn on_session(
    session: &RawSession,
    tool: &str,
    arguments: Value,
    answer: impl Fn(&Value) -> Value,
) -> Vec<Value> {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": tool, "arguments": arguments}});
    let response = session.post(None, &request).send().await.unwrap();
    let mut events = Events::of(response);
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        let message = event.message;
        if message["method"] == "elicitation/create" {
            let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": answer(&message["params"])});
            let sent = session.post(None, &reply).send().await.unwrap();
            assert_eq!(sent.status(), 202);
        }
        let answered = is_response_to(&message, &json!(1));
        seen.push(message);
        if answered {
            return seen;
        }
    }
    panic!("the stream ended without the call's response: {seen:#?}");
}

#[tokio::test]
async fn a_servers_url_question_reaches_only_clients_that_declared_urls_on_the_calls_stream() {
    let host = HttpHost::start(&everything(""), &[]).await;
    let arguments = json!({"url": "https://example.com/authorize", "message": "Sign in"});
    let asked = |events: &[Value]| {
        events
            .iter()
            .filter(|m| m["method"] == "elicitation/create")
            .count()
    };
    // Neither session opens a GET stream: a question the host relayed on
    // the session's standalone stream would never arrive.
    for forms_only in [
        json!({"elicitation": {}}),
        json!({"elicitation": {"form": {}}}),
    ] {
        let session = host.open_session(None, forms_only.clone()).await;
        let events = on_session(
            &session,
            "everything.trigger_url_elicitation",
            arguments.clone(),
            |_| panic!("a form-only client ({forms_only}) was asked to open a URL"),
        )
        .await;
        assert_eq!(asked(&events), 0, "{events:#?}");
    }
    let both = json!({"elicitation": {"form": {}, "url": {}}});
    let session = host.open_session(None, both).await;
    let events = on_session(
        &session,
        "everything.trigger_url_elicitation",
        arguments,
        |params| {
            assert_eq!(params["mode"], "url", "{params}");
            assert_eq!(params["url"], "https://example.com/authorize", "{params}");
            json!({"action": "accept"})
        },
    )
    .await;
    assert_eq!(asked(&events), 1, "{events:#?}");
    let done = events.last().unwrap().to_string();
    assert!(done.contains("completed the URL elicitation"), "{done}");
}

/// The params of a 2026-07-28 `tools/call` of `tool` declaring elicitation,
/// retrying with `state` and `responses` when given.
fn stateless(tool: &str, retry: Option<(&str, Value)>) -> Value {
    let mut params = json!({
        "name": tool,
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "lanes", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        },
    });
    if let Some((state, responses)) = retry {
        params["requestState"] = json!(state);
        params["inputResponses"] = responses;
    }
    params
}

#[tokio::test]
async fn a_callers_second_question_on_one_server_connection_does_not_wait_for_the_first() {
    let host = HttpHost::start(&everything(""), &[]).await;
    let tool = "everything.trigger_elicitation_request";
    let ask = || async {
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            host.stateless_call(None, &stateless(tool, None)),
        )
        .await
        .expect("asked within 30 s, while the caller's first question waits");
        let result = answer.last().unwrap()["result"].clone();
        assert_eq!(result["resultType"], "input_required", "{result}");
        let (key, _) = result["inputRequests"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        (
            key.clone(),
            result["requestState"].as_str().unwrap().to_owned(),
        )
    };
    // Both calls of one caller go on one connection to the server.
    let first = ask().await;
    let second = ask().await;
    for ((key, state), name) in [(second, "second"), (first, "first")] {
        let answer = json!({ key: {"action": "accept", "content": {"name": name, "check": true}} });
        let done = host
            .stateless_call(None, &stateless(tool, Some((&state, answer))))
            .await;
        let text = done.last().unwrap()["result"].to_string();
        assert!(text.contains(&format!("{name}\\\"")), "{name}: {text}");
    }
}
