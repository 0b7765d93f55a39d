//! Sessions and answers belong to the caller they were made for, attacked
//! through the real binary over HTTP with raw JSON-RPC, as a holder of
//! another user's session id would: two users of `acme` (ada, bob) and one
//! of `evil` (eve). Someone else's session answers exactly as an unknown
//! one (404), with nothing delivered, answered, run or ended, while its
//! owner's same request works. Also: `/metrics` shows a caller its own
//! organisation's figures only; bad JSON-RPC gets the error the spec names.

use packhost_tests::{
    hello_section,
    http::{Events, HttpHost, RawSession},
};
use serde_json::{Value, json};

use crate::http::token;

/// A host serving the hello pack, `hello.echo` asking for approval, with a
/// token each for ada and bob of `acme` and eve of `evil`.
struct Tenants {
    host: HttpHost,
    ada: String,
    bob: String,
    eve: String,
}

impl Tenants {
    async fn start() -> Self {
        let (ada, ada_entry) = token("ada", "acme", &[]);
        let (bob, bob_entry) = token("bob", "acme", &[]);
        let (eve, eve_entry) = token("eve", "evil", &[]);
        let config = format!(
            "{}\n[approval.echoes]\ncalls = [\"hello.echo\"]\n\n{ada_entry}\n{bob_entry}\n{eve_entry}\n",
            hello_section("")
        );
        let host = HttpHost::start(&config, &[]).await;
        Self {
            host,
            ada,
            bob,
            eve,
        }
    }

    /// The strangers to ada's session: another user of her organisation,
    /// and a user of another.
    fn strangers(&self) -> [&str; 2] {
        [&self.bob, &self.eve]
    }
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

/// Status and body of a response, to compare refusals byte for byte.
async fn seen(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    (status, response.text().await.expect("a body"))
}

/// What a request naming a session nobody opened gets, as `token`.
async fn unknown(host: &HttpHost, token: &str) -> [(u16, String); 3] {
    let nobodys = RawSession::named("5f1c0a0e-0000-4000-8000-000000000000", host);
    [
        seen(
            nobodys
                .post(Some(token), &call(1, "hello.whoami", json!({})))
                .send()
                .await
                .unwrap(),
        )
        .await,
        seen(nobodys.get(Some(token), Some("0")).send().await.unwrap()).await,
        seen(nobodys.delete(Some(token)).send().await.unwrap()).await,
    ]
}

#[tokio::test]
async fn another_token_on_a_session_gets_what_an_unknown_session_gets_and_changes_nothing() {
    let tenants = Tenants::start().await;
    let host = &tenants.host;
    let ada = Some(tenants.ada.as_str());
    let session = host.open_session(ada, json!({})).await;
    for stranger in tenants.strangers() {
        let unknown = unknown(host, stranger).await;
        assert_eq!(unknown[0].0, 404, "{unknown:?}");
        let whoami = call(2, "hello.whoami", json!({}));
        let attempts = [
            seen(session.post(Some(stranger), &whoami).send().await.unwrap()).await,
            seen(session.get(Some(stranger), Some("0")).send().await.unwrap()).await,
            seen(session.delete(Some(stranger)).send().await.unwrap()).await,
        ];
        assert_eq!(attempts, unknown, "a stranger's requests on ada's session");
    }
    // Nothing was ended: ada's session still serves her, as her.
    let whoami = session.post(ada, &call(3, "hello.whoami", json!({})));
    let mut events = Events::of(whoami.send().await.unwrap());
    let answer = events.response(&json!(3)).await;
    assert_eq!(
        answer["result"]["structuredContent"]["user"], "ada",
        "{answer}"
    );
    // Her DELETE ends it, answered as the official clients expect (the
    // Python SDK warns of a failure on anything but 200 or 204).
    let ended = session.delete(ada).send().await.unwrap();
    assert_eq!(ended.status(), 204);
    let after = session.post(ada, &call(4, "hello.whoami", json!({})));
    assert_eq!(after.send().await.unwrap().status(), 404);
}

#[tokio::test]
async fn another_token_can_neither_answer_a_pending_approval_nor_replay_the_stream() {
    let tenants = Tenants::start().await;
    let host = &tenants.host;
    let ada = Some(tenants.ada.as_str());
    let session = host.open_session(ada, json!({"elicitation": {}})).await;
    let echo = session.post(ada, &call(7, "hello.echo", json!({"value": "rm -rf"})));
    let mut events = Events::of(echo.send().await.unwrap());
    // The approval question rides her call's own stream.
    let asked = events.next().await.expect("the approval question");
    assert_eq!(asked.message["method"], "elicitation/create", "{asked:?}");
    let question = asked.message["id"].clone();
    let yes = json!({"jsonrpc": "2.0", "id": question,
                     "result": {"action": "accept", "content": {"decision": "accept"}}});
    for stranger in tenants.strangers() {
        let answered = session.post(Some(stranger), &yes).send().await.unwrap();
        assert_eq!(answered.status(), 404, "a stranger's answer is refused");
        for last in [asked.id.as_deref(), Some("0"), Some("0/0")] {
            let replay = session.get(Some(stranger), last).send().await.unwrap();
            assert_eq!(replay.status(), 404, "a stranger's resumption ({last:?})");
        }
    }
    // Had the stranger's yes been taken, ada's no would come too late.
    let no = json!({"jsonrpc": "2.0", "id": question, "result": {"action": "decline"}});
    let answered = session.post(ada, &no).send().await.unwrap();
    assert_eq!(answered.status(), 202);
    let result = events.response(&json!(7)).await;
    assert_eq!(result["result"]["isError"], true, "{result}");
    let said = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(said.starts_with("DECLINED"), "{result}");
    // Her own resumption is served.
    let resumed = session.get(ada, asked.id.as_deref()).send().await.unwrap();
    assert_eq!(resumed.status(), 200);
}

#[tokio::test]
async fn metrics_show_a_caller_its_own_organisations_calls_only() {
    let tenants = Tenants::start().await;
    let host = &tenants.host;
    let ada = host.client(Some(&tenants.ada)).await.expect("connect");
    let greeted = crate::http::call(&ada, "hello.greet", json!({"name": "Lovelace"})).await;
    assert!(!packhost_tests::is_error(&greeted));
    let own = host.metrics(Some(&tenants.bob)).await;
    assert!(
        own.contains("packhost_calls_total{tool=\"hello.greet\",outcome=\"ok\"} 1"),
        "{own}"
    );
    assert!(own.contains("packhost_sessions 1\n"), "{own}");
    let other = host.metrics(Some(&tenants.eve)).await;
    assert!(!other.contains("hello.greet"), "{other}");
    assert!(other.contains("packhost_sessions 0\n"), "{other}");
}

/// The JSON-RPC error the body `message` gets on both revisions: on a
/// 2025-11-25 session, then as a stateless 2026-07-28 request.
async fn errors_of(host: &HttpHost, message: &str) -> Vec<(u16, Value)> {
    let session = host.open_session(None, json!({})).await;
    let on_session = web(session.post_body(None, message.to_owned())).await;
    let mut stateless = host
        .post(message.to_owned())
        .header("mcp-protocol-version", "2026-07-28");
    if let Ok(Value::Object(fields)) = serde_json::from_str(message)
        && let Some(Value::String(method)) = fields.get("method")
    {
        stateless = stateless.header("mcp-method", method);
    }
    vec![on_session, web(stateless).await]
}

async fn web(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (status, body)
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "bad-input", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

#[tokio::test]
async fn bad_json_rpc_gets_the_error_the_spec_names_with_the_field() {
    let host = HttpHost::start(&hello_section(""), &[]).await;
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"hello.echo\",\"arguments\":{{\"value\":{}1{}}}}}}}",
        "[".repeat(200),
        "]".repeat(200)
    );
    for (status, body) in errors_of(&host, &deep).await {
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"]["code"], -32700, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("128 levels"), "{message}");
    }
    // `logging/setLevel` is gone from 2026-07-28: there it is not found.
    let wrong = [
        (
            "tools/call",
            json!({"name": "hello.echo", "requestState": 12345}),
            "requestState",
            false,
        ),
        (
            "tools/call",
            json!({"name": "hello.echo", "inputResponses": [1, 2]}),
            "inputResponses",
            false,
        ),
        ("resources/read", json!({"uri": 42}), "uri", false),
        ("logging/setLevel", json!({"level": "loud"}), "level", true),
    ];
    for (method, mut params, field, removed) in wrong {
        params["_meta"] = meta();
        let request = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
        let answers = errors_of(&host, &request.to_string()).await;
        for (n, (status, body)) in answers.into_iter().enumerate() {
            assert_eq!(body["id"], 9, "{body}");
            if removed && n == 1 {
                assert_eq!(
                    (status, &body["error"]["code"]),
                    (404, &json!(-32601)),
                    "{body}"
                );
                continue;
            }
            assert_eq!(status, 200, "{method}: {body}");
            assert_eq!(body["error"]["code"], -32602, "{method}: {body}");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(method) && message.contains(&format!("{field}`")),
                "{method}: {message}"
            );
        }
    }
}
