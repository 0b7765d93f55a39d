//! Results too large to send: a preview with a handle and a resource link,
//! read on with `packhost.result_*` and `resources/read`, owned by the
//! caller that made them, expiring; code still gets whole values. With
//! `[state] database`, one instance reads what another kept, and one
//! organisation's flood never pushes out another's.

use std::time::Duration;

use packhost_tests::{
    TestHost, call, downstream::postgres_database, failed, http::HttpHost, is_error, ok,
    structured, text,
};
use rmcp::model::{CallToolResult, ContentBlock, ReadResourceRequestParams, ResourceContents};
use serde_json::json;
use tempfile::TempDir;

use crate::http::token;

/// A project holding a log of 3,000 lines (every 500th an ERROR) and the
/// config keeping results past 2,000 characters for `ttl` seconds.
fn setup(ttl: u64, extra: &str) -> (TempDir, String) {
    let dir = TempDir::new().unwrap();
    let log: String = (1..=3000)
        .map(|i| {
            let level = if i % 500 == 0 {
                "ERROR disk full"
            } else {
                "INFO ok"
            };
            format!("2026-11-24T10:00:{:02} line {i} {level}\n", i % 60)
        })
        .collect();
    std::fs::write(dir.path().join("app.log"), log).unwrap();
    let config = format!(
        "[results]\nmax_result_chars = 2000\nttl_secs = {ttl}\n[packs.proj]\n[packs.exec_py]\n\
         [projects]\nlogs = {:?}\n{extra}",
        dir.path().display().to_string()
    );
    (dir, config)
}

fn handle_of(result: &CallToolResult) -> String {
    let meta = result.meta.as_ref().expect("a kept result has _meta");
    meta.get("packhost/result")
        .expect("packhost/result in _meta")["handle"]
        .as_str()
        .expect("a handle")
        .to_owned()
}

#[tokio::test]
async fn a_large_result_is_a_preview_a_handle_and_a_resource() {
    let (_dir, config) = setup(3600, "");
    let host = TestHost::start(&config).await;
    // TestHost::call checks the result as the official clients do: the
    // preview's structured content still fits proj.read's output schema.
    let result = host
        .call(
            "proj.read",
            json!({"name": "logs", "path": "app.log", "limit": 3000}),
        )
        .await;
    assert!(!is_error(&result), "{}", text(&result));
    let handle = handle_of(&result);
    let preview = text(&result);
    assert!(
        preview.len() < 4000,
        "the preview is {} bytes",
        preview.len()
    );
    assert!(
        preview.contains(&format!("kept as `{handle}`")),
        "{preview}"
    );
    let content = structured(&result)["content"].as_str().unwrap().to_owned();
    assert!(
        content.ends_with(&format!("kept as {handle}]")),
        "{content}"
    );
    let link = result
        .content
        .iter()
        .find_map(|block| match block {
            ContentBlock::ResourceLink(link) => Some(link.clone()),
            _ => None,
        })
        .expect("a resource link");
    assert_eq!(link.uri, format!("packhost://results/{handle}"));

    // Read on: grep, pages, the resource.
    let found = ok(&host
        .call(
            "packhost.result_grep",
            json!({"handle": handle, "pattern": "ERROR"}),
        )
        .await);
    assert_eq!(found["total_matches"], 6, "{found}");
    let page = ok(&host
        .call(
            "packhost.result_read",
            json!({"handle": handle, "offset": 0, "limit": 500}),
        )
        .await);
    assert_eq!(page["text"].as_str().unwrap().chars().count(), 500);
    assert_eq!(page["next_offset"], 500);
    let whole = host
        .client
        .read_resource(ReadResourceRequestParams::new(&link.uri))
        .await
        .expect("resources/read");
    let ResourceContents::TextResourceContents { text: whole, .. } = &whole.contents[0] else {
        panic!("text contents");
    };
    assert!(
        whole.contains("line 3000 ERROR disk full"),
        "the whole result is served"
    );
    let listed = host.client.list_all_resources().await.unwrap();
    assert!(listed.iter().any(|r| r.uri == link.uri), "{listed:?}");
    let templates = host.client.list_all_resource_templates().await.unwrap();
    let template = &templates[0].uri_template;
    assert_eq!(template, "packhost://results/{handle}");
    assert_eq!(
        link.uri,
        template.replace("{handle}", &handle),
        "the link fits the template"
    );

    // JSON selection.
    let rows = ok(&host
        .call(
            "packhost.result_select",
            json!({"handle": handle, "path": "$.total_lines"}),
        )
        .await);
    assert_eq!(rows["values"], json!([3000]), "{rows}");
    failed(
        &host
            .call(
                "packhost.result_select",
                json!({"handle": handle, "path": "items"}),
            )
            .await,
        "INVALID_ARGUMENT",
        &["`path` is not a JSONPath query"],
    );

    // Code gets the whole value: filtering in code is the point.
    let counted = ok(&host
        .call(
            "exec_py.run",
            json!({"code": "r = proj.read('logs', 'app.log', limit=3000)\nsum('ERROR' in l for l in r['content'].splitlines())"}),
        )
        .await);
    assert_eq!(counted["result"], 6);
}

#[tokio::test]
async fn a_kept_result_expires() {
    let (_dir, config) = setup(1, "");
    let host = TestHost::start(&config).await;
    let result = host
        .call("proj.read", json!({"name": "logs", "path": "app.log"}))
        .await;
    let handle = handle_of(&result);
    ok(&host
        .call("packhost.result_read", json!({"handle": handle}))
        .await);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    failed(
        &host
            .call("packhost.result_read", json!({"handle": handle}))
            .await,
        "NOT_FOUND",
        &["is unknown or has expired"],
    );
    assert!(host.client.list_all_resources().await.unwrap().is_empty());
}

#[tokio::test]
async fn another_organisations_caller_cannot_read_a_kept_result() {
    let (ada_token, ada) = token("ada", "acme", &["*"]);
    let (eve_token, eve) = token("eve", "evil", &["*"]);
    let (_dir, config) = setup(3600, &format!("{ada}\n{eve}\n"));
    let host = HttpHost::start(&config, &[]).await;
    let ada = host.client(Some(&ada_token)).await.unwrap();
    let eve = host.client(Some(&eve_token)).await.unwrap();
    let result = call(
        &ada,
        "proj.read",
        json!({"name": "logs", "path": "app.log"}),
    )
    .await
    .unwrap();
    let handle = handle_of(&result);
    let uri = format!("packhost://results/{handle}");
    assert!(
        ada.read_resource(ReadResourceRequestParams::new(&uri))
            .await
            .is_ok()
    );

    let read = eve
        .read_resource(ReadResourceRequestParams::new(&uri))
        .await;
    assert!(
        read.is_err(),
        "another organisation read a kept result: {read:?}"
    );
    for (tool, args) in [
        ("packhost.result_read", json!({"handle": handle})),
        (
            "packhost.result_grep",
            json!({"handle": handle, "pattern": "."}),
        ),
        (
            "packhost.result_select",
            json!({"handle": handle, "path": "$"}),
        ),
    ] {
        let refused = call(&eve, tool, args).await.unwrap();
        assert!(is_error(&refused), "{tool}: {}", text(&refused));
        assert!(
            text(&refused).starts_with(&format!("NOT_FOUND: no kept result `{handle}`")),
            "{tool}: {}",
            text(&refused)
        );
    }
    assert!(eve.list_all_resources().await.unwrap().is_empty());
    // What eve gets for it is what an unknown handle gets.
    let unknown = call(
        &eve,
        "packhost.result_read",
        json!({"handle": "r0000000000000000"}),
    )
    .await
    .unwrap();
    assert_eq!(
        text(&unknown).replace("r0000000000000000", "H"),
        text(
            &call(&eve, "packhost.result_read", json!({"handle": handle}))
                .await
                .unwrap()
        )
        .replace(&handle, "H")
    );
}

/// Two instances on one PostgreSQL database, as behind a load balancer.
#[tokio::test]
async fn a_result_kept_through_one_instance_reads_through_another_for_its_owner_only() {
    let Some(database) = postgres_database() else {
        return;
    };
    let (ada_token, ada) = token("ada", "acme", &["*"]);
    let (eve_token, eve) = token("eve", "evil", &["*"]);
    // Room for about three of the log's ~130 kB results in all.
    let extra = format!("{ada}\n{eve}\n[state]\ndatabase = \"{database}\"\n");
    let (_dir, config) = setup(3600, &extra);
    let config = config.replace("[results]\n", "[results]\nmax_bytes = 400000\n");
    let one = HttpHost::start(&config, &[]).await;
    let two = HttpHost::start(&config, &[]).await;
    let read = json!({"name": "logs", "path": "app.log", "limit": 3000});

    let ada_one = one.client(Some(&ada_token)).await.unwrap();
    let kept = call(&ada_one, "proj.read", read.clone()).await.unwrap();
    let handle = handle_of(&kept);
    let ada_two = two.client(Some(&ada_token)).await.unwrap();
    let page = call(&ada_two, "packhost.result_read", json!({"handle": handle}));
    assert!(
        text(&page.await.unwrap()).contains("line 1 INFO ok"),
        "the other instance reads ada's result"
    );
    let uri = format!("packhost://results/{handle}");
    let listed = ada_two.list_all_resources().await.unwrap();
    assert!(listed.iter().any(|r| r.uri == uri), "{listed:?}");

    let eve_two = two.client(Some(&eve_token)).await.unwrap();
    let refused = call(&eve_two, "packhost.result_read", json!({"handle": handle}));
    let refused = text(&refused.await.unwrap());
    assert!(
        refused.starts_with(&format!("NOT_FOUND: no kept result `{handle}`")),
        "{refused}"
    );
    let read_uri = eve_two.read_resource(ReadResourceRequestParams::new(&uri));
    assert!(read_uri.await.is_err(), "eve read ada's result by its URI");

    // Eve keeps five through the other instance: past the bound only her
    // own oldest go.
    let mut eves = Vec::new();
    for _ in 0..5 {
        let result = call(&eve_two, "proj.read", read.clone()).await.unwrap();
        eves.push(handle_of(&result));
    }
    let eve_one = one.client(Some(&eve_token)).await.unwrap();
    let first = call(&eve_one, "packhost.result_read", json!({"handle": eves[0]}));
    failed(
        &first.await.unwrap(),
        "NOT_FOUND",
        &["is unknown or has expired"],
    );
    let last = call(&eve_one, "packhost.result_read", json!({"handle": eves[4]}));
    ok(&last.await.unwrap());
    let still = call(&ada_one, "packhost.result_read", json!({"handle": handle}));
    ok(&still.await.unwrap());
}
