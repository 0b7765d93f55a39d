//! `packhost.search` with the sentence model (`[search] model`): a task in
//! words the catalog does not use finds its tool from every door (`run`,
//! Python, TypeScript); a weak search says so and names the closest packs;
//! `describe` of a near-miss name suggests the real one; a token's
//! allow-list still hides everything else; a server that comes up after the
//! host started is found without a restart.

use std::time::{Duration, Instant};

use packhost_tests::{
    TestHost, call,
    downstream::{HttpServer, catalog_section, free_port},
    hello_section,
    http::HttpHost,
    ok, search_model_section, text,
};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::{discovery::search_allowed_hello, http::token};

/// Words nobody wrote in the on-call tool's description or name.
const PAGER_TASK: &str = "which colleague is carrying the pager tonight";
const ON_CALL: &str = "saas.pagerduty_list_oncalls";

fn config(notebooks: &TempDir) -> String {
    format!(
        "[packs.exec_py]\n[packs.exec_ts]\nconfig = {{ notebooks_dir = {:?} }}\n{}{}{}",
        notebooks.path().display().to_string(),
        hello_section(""),
        catalog_section("saas", None),
        search_model_section(),
    )
}

/// Searches until the host ranks `host`'s catalog by meaning: it embeds
/// new tools in the background, answering by words alone meanwhile.
async fn until_by_meaning(search: impl AsyncFn() -> Value) -> Value {
    let started = Instant::now();
    loop {
        let found = search().await;
        if found["by_meaning"] == true {
            return found;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "not ranked by meaning within 120 s: {found}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn names(found: &Value) -> Vec<String> {
    found["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {found}"))
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_task_in_other_words_finds_its_tool_from_every_door() {
    let notebooks = TempDir::new().unwrap();
    let host = TestHost::start(&config(&notebooks)).await;
    let described = ok(&host
        .call("packhost.describe", json!({"name": ON_CALL}))
        .await);
    let about = format!("{} {}", described["name"], described["description"]).to_lowercase();
    let words: Vec<&str> = about.split(|c: char| !c.is_alphanumeric()).collect();
    for word in ["colleague", "carrying", "pager", "tonight"] {
        assert!(!words.contains(&word), "`{word}` is in {about}");
    }

    let by_tool = until_by_meaning(async || {
        ok(&host
            .call("packhost.search", json!({"query": PAGER_TASK, "limit": 3}))
            .await)
    })
    .await;
    assert_eq!(by_tool["weak"], false, "{by_tool}");
    assert!(names(&by_tool).contains(&ON_CALL.to_owned()), "{by_tool}");
    let by_run = ok(&host
        .run(&format!("packhost.search(query={PAGER_TASK:?}, limit=3)"))
        .await);
    assert!(names(&by_run).contains(&ON_CALL.to_owned()), "{by_run}");
    let from_code = [
        (
            "exec_py.run",
            format!("[r['name'] for r in packhost.search({PAGER_TASK:?}, limit=3)['results']]"),
        ),
        (
            "exec_ts.execute",
            format!(
                "(await packhost.search({{ query: {PAGER_TASK:?}, limit: 3 }})).results.map(r => r.name)"
            ),
        ),
    ];
    for (tool, code) in from_code {
        let listed = ok(&host.call(tool, json!({ "code": code })).await);
        assert!(
            listed["result"]
                .as_array()
                .unwrap()
                .contains(&json!(ON_CALL)),
            "{tool}: {listed}"
        );
    }
}

#[tokio::test]
async fn a_weak_search_names_the_closest_packs_and_describe_suggests_the_near_miss() {
    let notebooks = TempDir::new().unwrap();
    let host = TestHost::start(&config(&notebooks)).await;
    let weak = until_by_meaning(async || {
        ok(&host
            .call(
                "packhost.search",
                json!({"query": "order a large pepperoni pizza"}),
            )
            .await)
    })
    .await;
    assert_eq!(weak["weak"], true, "{weak}");
    let closest = weak["closest_packs"].as_array().expect("closest packs");
    assert!(!closest.is_empty() && closest.len() <= 3, "{weak}");
    assert!(
        weak["hint"].as_str().unwrap().contains("packhost.packs()"),
        "{weak}"
    );

    let missing = host
        .call(
            "packhost.describe",
            json!({"name": "saas.pagerduty_who_is_on_call"}),
        )
        .await;
    let message = text(&missing);
    assert!(
        message.contains(&format!("did you mean `{ON_CALL}`?")),
        "{message}"
    );
}

#[tokio::test]
async fn an_allow_list_hides_what_meaning_would_find() {
    let notebooks = TempDir::new().unwrap();
    let (token, entry) = token("eve", "acme", &["hello.*"]);
    let http = HttpHost::start(&format!("{}\n{entry}\n", config(&notebooks)), &[]).await;
    let client = http.client(Some(&token)).await.unwrap();
    for query in [PAGER_TASK, "post a message to a channel", "greet someone"] {
        let found = search_allowed_hello(&client, query).await;
        for pack in found["closest_packs"].as_array().into_iter().flatten() {
            assert!(
                ["hello", "packhost"].contains(&pack["name"].as_str().unwrap()),
                "{query}: {found}"
            );
        }
    }
    let near = call(
        &client,
        "packhost.describe",
        json!({"name": "saas.pagerduty_who_is_on_call"}),
    )
    .await
    .unwrap();
    let message = text(&near);
    assert!(message.contains("packs: hello, packhost"), "{message}");
    assert!(!message.contains("oncalls"), "{message}");
}

#[tokio::test]
async fn a_server_that_comes_up_later_is_found_without_a_restart() {
    let port = free_port();
    let late = format!("[packs.late]\nkind = \"mcp\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n");
    let host = TestHost::start(&format!("{late}{}", search_model_section())).await;
    let query = json!({"query": "repeat my words back to me", "limit": 3});
    let before = ok(&host.call("packhost.search", query.clone()).await);
    assert!(
        !names(&before).iter().any(|n| n.starts_with("late.")),
        "{before}"
    );
    let _server = HttpServer::fixture(port);
    let started = Instant::now();
    loop {
        let found = ok(&host.call("packhost.search", query.clone()).await);
        if found["by_meaning"] == true
            && names(&found).first().map(String::as_str) == Some("late.echo")
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the late server's echo is not found first: {found}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
