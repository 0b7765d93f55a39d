//! Offers a pack lists per caller (`offers_per_caller`), through the real
//! binary and the official Python client: the fixture pack's notes are
//! each caller's own, listed, rendered, read, completed and followed for
//! that caller only; a subscription hears the pack's updates until it is
//! ended, and no other caller hears them.

use std::time::Duration;

use packhost_tests::{http::HttpHost, official::script_lines, venv_python};
use serde_json::{Value, json};

use crate::http::token;

/// Runs tests/official-clients/offers.py with `tokens` and `steps`: its
/// lines, one per step.
async fn offers_client(host: &HttpHost, tokens: Value, steps: &[Value]) -> Vec<Value> {
    let spec = json!({"url": host.url(), "tokens": tokens, "steps": steps});
    script_lines(&venv_python(), "offers.py", &spec, host).await
}

fn step(caller: &str, what: &str, args: Value) -> Value {
    let mut step = json!({"as": caller, "do": what});
    step.as_object_mut()
        .unwrap()
        .extend(args.as_object().unwrap().clone());
    step
}

/// The result of step `n`, which must have succeeded.
#[track_caller]
fn result(lines: &[Value], n: usize) -> &Value {
    let line = &lines[n];
    assert!(line.get("error").is_none(), "step {n} failed: {line}");
    &line["result"]
}

/// The JSON-RPC error code of step `n`, which must have failed.
#[track_caller]
fn refused(lines: &[Value], n: usize) -> i64 {
    let line = &lines[n];
    line["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("step {n} did not fail with a code: {line}"))
}

fn uris(listed: &Value, key: &str) -> Vec<String> {
    let items = listed.as_array().expect("a list");
    items
        .iter()
        .map(|item| item[key].as_str().unwrap().to_owned())
        .collect()
}

fn text(read: &Value) -> &str {
    read["contents"][0]["text"]
        .as_str()
        .expect("a text resource")
}

#[tokio::test]
async fn a_packs_offers_per_caller_are_listed_read_and_followed_for_that_caller_only() {
    let (ada, ada_entry) = token("ada", "acme", &[]);
    let (bob, bob_entry) = token("bob", "acme", &[]);
    // eve may call `proj.list` only: the fixture pack is not hers.
    let (eve, eve_entry) = token("eve", "acme", &["proj.list"]);
    let config =
        format!("[packs.proj]\n\n[packs.conformance]\n\n{ada_entry}\n{bob_entry}\n{eve_entry}\n");
    let host = HttpHost::start(&config, &[]).await;
    let (mine, bobs) = ("notes://acme/ada", "notes://acme/bob");
    let steps = [
        step("ada", "prompts", json!({})),
        step("bob", "prompts", json!({})),
        step("ada", "resources", json!({})),
        step("bob", "resources", json!({})),
        step("eve", "resources", json!({})),
        // 5
        step("eve", "prompts", json!({})),
        step("ada", "templates", json!({})),
        step(
            "ada",
            "get",
            json!({"name": "conformance.my_notes", "arguments": {"topic": "rust"}}),
        ),
        step("ada", "read", json!({"uri": mine})),
        step("ada", "read", json!({"uri": format!("{mine}/2")})),
        // 10
        step(
            "ada",
            "complete",
            json!({"uri": format!("{mine}/{{page}}"), "argument": "page", "value": "1"}),
        ),
        step("bob", "read", json!({"uri": mine})),
        step("eve", "read", json!({"uri": mine})),
        step("bob", "subscribe", json!({"uri": mine})),
        step("ada", "subscribe", json!({"uri": mine})),
        // 15
        step("bob", "subscribe", json!({"uri": bobs})),
        step(
            "ada",
            "call",
            json!({"tool": "conformance.notes_write", "arguments": {"text": "first"}}),
        ),
        step("ada", "updates", json!({"count": 1})),
        step("ada", "read", json!({"uri": mine})),
        step("ada", "unsubscribe", json!({"uri": mine})),
        // 20
        step(
            "ada",
            "call",
            json!({"tool": "conformance.notes_write", "arguments": {"text": "second"}}),
        ),
        step(
            "bob",
            "call",
            json!({"tool": "conformance.notes_write", "arguments": {"text": "bob's"}}),
        ),
        step("bob", "updates", json!({"count": 1})),
        step("ada", "updates", json!({"wait": 1})),
        step(
            "eve",
            "get",
            json!({"name": "conformance.my_notes", "arguments": {"topic": "rust"}}),
        ),
    ];
    let tokens = json!({"ada": ada, "bob": &bob, "eve": eve});
    let lines = offers_client(&host, tokens, &steps).await;
    assert_eq!(lines.len(), steps.len(), "{lines:#?}");

    // Each caller lists its own.
    let description = |n: usize| {
        let prompts = result(&lines, n).as_array().unwrap();
        let mine = prompts.iter().find(|p| p["name"] == "conformance.my_notes");
        mine.map(|p| p["description"].clone())
    };
    assert_eq!(description(0), Some(json!("Quotes the notes of ada")));
    assert_eq!(description(1), Some(json!("Quotes the notes of bob")));
    assert_eq!(description(5), None, "eve may not call the pack");
    let listed = uris(result(&lines, 2), "uri");
    assert!(
        listed.contains(&mine.to_owned()) && !listed.contains(&bobs.to_owned()),
        "{listed:?}"
    );
    let listed = uris(result(&lines, 3), "uri");
    assert!(
        listed.contains(&bobs.to_owned()) && !listed.contains(&mine.to_owned()),
        "{listed:?}"
    );
    assert!(
        uris(result(&lines, 4), "uri")
            .iter()
            .all(|uri| !uri.starts_with("notes://"))
    );
    let templates = uris(result(&lines, 6), "uriTemplate");
    assert!(
        templates.contains(&format!("{mine}/{{page}}")),
        "{templates:?}"
    );

    // Rendered, read and completed by the pack, for the caller.
    let rendered = result(&lines, 7);
    assert_eq!(
        rendered["messages"][0]["content"]["text"],
        "My notes on rust: no notes yet"
    );
    assert_eq!(text(result(&lines, 8)), "no notes yet");
    assert_eq!(text(result(&lines, 9)), format!("a page of {mine}"));
    assert_eq!(result(&lines, 10)["values"], json!(["1", "10"]));

    // Another caller's notes are not found, as a URI that does not exist.
    for n in [11, 12, 13] {
        assert_eq!(refused(&lines, n), -32602, "step {n}: {}", lines[n]);
    }

    // The subscriber hears its own update, and none after unsubscribing;
    // bob hears only his.
    assert_eq!(result(&lines, 17), &json!([mine]));
    assert_eq!(text(result(&lines, 18)), "first");
    assert_eq!(result(&lines, 22), &json!([bobs]));
    assert_eq!(
        result(&lines, 23),
        &json!([mine]),
        "no update after unsubscribing"
    );
    assert_eq!(refused(&lines, 24), -32602, "{}", lines[24]);
    // The pack followed ada's notes once while she was subscribed, and no
    // more after.
    let followers = |n: usize| result(&lines, n)["structuredContent"]["followers"].clone();
    assert_eq!(followers(16), json!(1));
    assert_eq!(followers(20), json!(0));

    // bob's session ended subscribed: the pack follows his notes no more.
    let tokens = json!({ "bob": bob });
    let again = [
        step("bob", "updates", json!({"wait": 1})),
        step(
            "bob",
            "call",
            json!({"tool": "conformance.notes_write", "arguments": {"text": "later"}}),
        ),
    ];
    let lines = offers_client(&host, tokens, &again).await;
    assert_eq!(
        result(&lines, 1)["structuredContent"]["followers"],
        0,
        "{lines:?}"
    );
}

#[tokio::test]
async fn a_listen_stream_hears_its_callers_resources_only() {
    use rmcp::model::{ServerNotification, SubscriptionFilter};
    let (ada, ada_entry) = token("ada", "acme", &[]);
    let (bob, bob_entry) = token("bob", "acme", &[]);
    let config = format!("[packs.conformance]\n\n{ada_entry}\n{bob_entry}\n");
    let host = HttpHost::start(&config, &[]).await;
    let ada = host.stateless_client_as(Some(&ada)).await.expect("ada");
    let bob = host.stateless_client_as(Some(&bob)).await.expect("bob");
    let (mine, bobs) = ("notes://acme/ada", "notes://acme/bob");
    // ada asks for bob's notes too: they are not hers to follow.
    let wanted = SubscriptionFilter::builder()
        .resource_subscriptions([mine, bobs])
        .build();
    let mut stream = ada
        .peer()
        .listen(wanted)
        .await
        .expect("subscriptions/listen");
    let write = async |client, text: &str| {
        let args = json!({ "text": text });
        let written = packhost_tests::call(client, "conformance.notes_write", args).await;
        assert!(!packhost_tests::is_error(&written.expect("notes_write")));
    };
    // The stream follows them once acknowledged: written until heard.
    let mut heard = None;
    for round in 0..20 {
        write(&bob, &format!("bob {round}")).await;
        write(&ada, &format!("ada {round}")).await;
        let next = tokio::time::timeout(Duration::from_millis(500), stream.next()).await;
        if let Ok(next) = next {
            heard = next.expect("the stream");
            break;
        }
    }
    let Some(ServerNotification::ResourceUpdatedNotification(updated)) = heard else {
        panic!("no resource update: {heard:?}");
    };
    assert_eq!(updated.params.uri, mine);
    // bob's writes are never heard on ada's stream.
    write(&bob, "bob again").await;
    while let Ok(next) = tokio::time::timeout(Duration::from_millis(500), stream.next()).await {
        let heard = next.expect("the stream");
        let ours = matches!(&heard, Some(ServerNotification::ResourceUpdatedNotification(u)) if u.params.uri == mine);
        assert!(ours, "{heard:?}");
    }
}
