//! `packhost.search` with the sentence model (`[search] model`): a task in
//! words the catalog does not use finds its tool from every door (`run`,
//! Python, TypeScript); a weak search says so and names the closest packs;
//! `describe` of a near-miss name suggests the real one; a token's
//! allow-list still hides everything else; a server that comes up after the
//! host started is found without a restart. The model loads at the first
//! search, which says what that cost, and is unloaded when idle; a broken
//! model folder stops the start.

use std::time::{Duration, Instant};

use packhost_tests::{
    TestHost, call,
    downstream::{HttpServer, catalog_section, free_port},
    hello_section,
    http::HttpHost,
    ok, packhost_cli, search_model_section, text,
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

/// Searches with the on-call task until one ranks by meaning; the warm-up
/// it reports, and whether every search before it said why it did not.
async fn first_by_meaning(host: &TestHost) -> Value {
    let started = Instant::now();
    loop {
        let found = ok(&host
            .call("packhost.search", json!({"query": PAGER_TASK, "limit": 3}))
            .await);
        if found["by_meaning"] == true {
            return found;
        }
        assert!(
            found["note"]
                .as_str()
                .unwrap_or_default()
                .contains("loading"),
            "a search by words alone says why: {found}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "not ranked by meaning within 120 s: {found}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Polls the host's RSS until `done` holds of it (KiB), for 60 s at most.
async fn until_rss(host: &TestHost, what: &str, done: impl Fn(u64) -> bool) -> u64 {
    let started = Instant::now();
    loop {
        let rss = host.rss_kib();
        if done(rss) {
            return rss;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what}: RSS {rss} KiB"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn the_model_loads_at_the_first_search_says_its_cost_and_is_unloaded_when_idle() {
    let config = format!(
        "{}{}model_idle_secs = 1\n",
        catalog_section("saas", Some("pagerduty")),
        search_model_section()
    );
    let host = TestHost::start(&config).await;
    let at_start = host.rss_kib();
    let first = first_by_meaning(&host).await;
    assert!(names(&first).contains(&ON_CALL.to_owned()), "{first}");
    let warm_up = &first["warm_up"];
    assert!(
        warm_up["model_load_ms"].is_u64(),
        "the first search by meaning paid the model's load: {first}"
    );
    assert!(
        warm_up["embedded_tools"].as_u64() >= Some(10),
        "and the catalog's embedding: {first}"
    );
    let loaded = host.rss_kib();
    // The weights alone are 87 MB of floats.
    assert!(
        loaded > at_start + 60 * 1024,
        "nothing of the model was in memory at start: {at_start} KiB then {loaded} KiB"
    );

    let settled = until_rss(&host, "the idle model's memory goes back", |rss| {
        rss < loaded - 60 * 1024
    })
    .await;
    let again = ok(&host
        .call("packhost.search", json!({"query": PAGER_TASK, "limit": 3}))
        .await);
    assert_eq!(again["by_meaning"], true, "{again}");
    assert!(names(&again).contains(&ON_CALL.to_owned()), "{again}");
    assert!(
        again["warm_up"]["model_load_ms"].is_u64() && again["warm_up"]["embedded_tools"] == 0,
        "loaded again, the tools' vectors kept: {again} (RSS {settled} KiB before)"
    );
}

#[test]
fn a_missing_or_cut_model_stops_the_start_without_loading_it() {
    let model = std::path::PathBuf::from(std::env::var("PACKHOST_SEARCH_MODEL").unwrap());
    let dir = TempDir::new().unwrap();
    for file in ["config.json", "tokenizer.json"] {
        std::os::unix::fs::symlink(model.join(file), dir.path().join(file)).unwrap();
    }
    let config = format!("[search]\nmodel = {:?}\n", dir.path().display().to_string());
    let refused = |parts: &[&str]| {
        let output = packhost_cli(&config, &["check"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        for part in parts {
            assert!(stderr.contains(part), "{part:?} in {stderr}");
        }
    };
    refused(&["`search.model`", "has no `model.safetensors`", "./dev run"]);
    let whole = std::fs::read(model.join("model.safetensors")).unwrap();
    std::fs::write(
        dir.path().join("model.safetensors"),
        &whole[..whole.len() / 2],
    )
    .unwrap();
    refused(&["`search.model`", "model.safetensors", "a partial copy"]);
}
