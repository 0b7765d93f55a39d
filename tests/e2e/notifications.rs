//! Notifications: on the stateless 2026-07-28 wire, log lines at the level
//! the request asks for (`_meta` `logLevel`), none when it asks for none,
//! and all of them on the request's stream before its result; the tool
//! list changing when a pack withdraws or offers a function.

use std::{sync::atomic::Ordering, time::Duration};

use packhost_tests::{TestHost, failed, http::HttpHost, ok};
use serde_json::{Value, json};

/// The messages of one `tools/call` of `tool` with `meta` added to the
/// request's `_meta`, in the order they came.
async fn call_stream(host: &HttpHost, tool: &str, meta: Value) -> Vec<Value> {
    let mut params_meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    params_meta
        .as_object_mut()
        .unwrap()
        .extend(meta.as_object().unwrap().clone());
    let params = json!({"name": tool, "arguments": {}, "_meta": params_meta});
    host.stateless_call(None, &params).await
}

fn log_lines(messages: &[Value]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| {
            let params = &m["params"];
            (
                params["level"].as_str().unwrap().to_owned(),
                params["data"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_request_gets_the_log_lines_it_asks_for_before_its_result() {
    let host = HttpHost::start("[packs.conformance]\n", &[]).await;
    let tool = "conformance.test_logging_tool";

    let messages = call_stream(&host, tool, json!({})).await;
    assert_eq!(log_lines(&messages), [], "no level asked: {messages:?}");
    assert!(
        messages.last().unwrap()["result"].is_object(),
        "{messages:?}"
    );

    // The pack logs its last line just before it returns: it still comes,
    // and before the result that ends the stream.
    let asked = json!({"io.modelcontextprotocol/logLevel": "warning"});
    let messages = call_stream(&host, tool, asked).await;
    let line = |level: &str, text: &str| (level.to_owned(), text.to_owned());
    assert_eq!(
        log_lines(&messages),
        [
            line("warning", "a line at Warn level"),
            line("error", "a line at Error level")
        ],
        "{messages:?}"
    );
    assert!(
        messages.last().unwrap()["result"].is_object(),
        "{messages:?}"
    );
}

/// Whether `tools/list` has `name`.
async fn listed(host: &TestHost, name: &str) -> bool {
    let tools = host.client.list_all_tools().await.expect("tools/list");
    tools.iter().any(|t| t.name == name)
}

#[tokio::test]
async fn a_pack_that_withdraws_a_function_changes_every_clients_tool_list() {
    let host = TestHost::start("[packs.conformance]\n").await;
    let (trigger, dynamic) = (
        "conformance.test_trigger_tool_change",
        "conformance.test_dynamic_tool",
    );
    let changes = || host.recorder.tools_changed.load(Ordering::SeqCst);
    assert!(listed(&host, dynamic).await);

    assert_eq!(
        ok(&host.call(trigger, json!({})).await)["dynamic_tool"],
        false
    );
    for _ in 0..50 {
        if changes() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(changes(), 1, "the client heard the list changed");
    assert!(!listed(&host, dynamic).await);
    failed(
        &host.call(dynamic, json!({})).await,
        "UNKNOWN_FUNCTION",
        &["test_dynamic_tool"],
    );

    assert_eq!(
        ok(&host.call(trigger, json!({})).await)["dynamic_tool"],
        true
    );
    assert!(listed(&host, dynamic).await);
    ok(&host.call(dynamic, json!({})).await);
}
