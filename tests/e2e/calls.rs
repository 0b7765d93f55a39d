//! Tool calls through MCP: listing, results, errors as results, panics,
//! timeouts, cancellation, progress, identity, calls back into the host.

use std::time::{Duration, Instant};

use packhost_tests::{TestHost, failed, hello_section, ok, schemas::call_tool, structured, text};
use rmcp::model::{
    CallToolRequestParams, ClientRequest, NumberOrString, ProgressToken, RequestMetaObject,
};
use serde_json::json;

fn config() -> String {
    hello_section("timeout_ms = 1000\nconfig = { greeting = \"hi\" }")
        + "[identity]\nuser = \"ada\"\norg = \"acme\"\n"
}

#[tokio::test]
async fn lists_run_and_every_pack_function_with_schemas() {
    let host = TestHost::start(&config()).await;
    let tools = host.client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names[0], "run");
    for name in [
        "hello.greet",
        "hello.echo",
        "hello.sleep",
        "hello.panic",
        "hello.call",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let greet = tools.iter().find(|t| t.name == "hello.greet").unwrap();
    assert_eq!(greet.description.as_deref(), Some("Greet someone by name"));
    assert_eq!(greet.input_schema["required"], json!(["name"]));
    assert_eq!(
        greet.input_schema["properties"]["name"]["description"],
        "Who to greet."
    );
    let output = greet.output_schema.as_ref().expect("output schema");
    assert_eq!(output["properties"]["text"]["type"], "string");
    let run = tools.iter().find(|t| t.name == "run").unwrap();
    let description = run.description.as_deref().unwrap();
    assert!(
        description.contains("hello.greet(name: string, excitement?: integer = 0)"),
        "{description}"
    );
}

#[tokio::test]
async fn packs_see_the_catalog_of_what_they_can_call() {
    let config = config() + "[aliases]\nhi = \"hello.greet\"\n[projects]\nhere = \".\"\n";
    let host = TestHost::start(&config).await;
    let catalog = ok(&host.call("hello.catalog", json!({})).await);
    let greet = catalog["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"] == "greet")
        .expect("greet in the catalog");
    assert_eq!(greet["pack"], "hello");
    assert_eq!(
        greet["signature"],
        "hello.greet(name: string, excitement?: integer = 0)"
    );
    assert_eq!(greet["input_schema"]["required"], json!(["name"]));
    assert_eq!(catalog["aliases"], json!({"hi": "hello.greet"}));
    let here = host.dir.path().display().to_string();
    assert_eq!(catalog["projects"], json!({"here": here}));
}

/// `(readOnly, destructive, idempotent, openWorld)` hints of `tool`.
fn hints(tool: &rmcp::model::Tool) -> (Option<bool>, Option<bool>, Option<bool>, Option<bool>) {
    let a = tool.annotations.clone().unwrap_or_default();
    (
        a.read_only_hint,
        a.destructive_hint,
        a.idempotent_hint,
        a.open_world_hint,
    )
}

/// What a function says about itself reaches `tools/list`: its title and
/// annotations; `run` is as unsafe as the worst command it can run.
#[tokio::test]
async fn tools_list_titles_and_annotations() {
    let host = TestHost::start(&config()).await;
    let tools = host.client.list_all_tools().await.expect("tools/list");
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let greet = tool("hello.greet");
    assert_eq!(greet.title.as_deref(), Some("Greet someone"));
    let read_only = (Some(true), Some(false), Some(true), Some(false));
    assert_eq!(hints(greet), read_only);
    let call = tool("hello.call");
    assert_eq!(
        hints(call),
        (Some(false), Some(true), Some(false), Some(true))
    );
    let run = tool("run");
    assert_eq!(run.title.as_deref(), Some("Run a command"));
    assert_eq!(
        hints(run),
        (Some(false), Some(true), Some(false), Some(true))
    );
    // Under MCP's names, as clients read them.
    let listed = serde_json::to_value(greet).unwrap();
    assert_eq!(
        listed["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
}

/// A function's own time limit holds when it is less than its pack's; its
/// pack's holds when that is less.
#[tokio::test]
async fn a_function_has_its_own_time_limit_within_its_packs() {
    // `hello.remaining` says 20 s; config() gives the pack 1 s.
    let host = TestHost::start(&config()).await;
    let left = ok(&host.call("hello.remaining", json!({})).await)["ms"]
        .as_u64()
        .unwrap();
    assert!(left <= 1_000, "{left} ms with a pack limit of 1 s");
    let host = TestHost::start(&hello_section("timeout_ms = 120000")).await;
    let left = ok(&host.call("hello.remaining", json!({})).await)["ms"]
        .as_u64()
        .unwrap();
    assert!(
        (10_000..=20_000).contains(&left),
        "{left} ms with its own limit of 20 s in a pack of 120 s"
    );
}

/// A function that returns content (`pack_sdk::Content`): its value as
/// structured content, its text, then its blocks as it gave them.
#[tokio::test]
async fn content_a_function_gives_is_served_as_it_gave_it() {
    let host = TestHost::start(&config()).await;
    let result = host.call("hello.image", json!({})).await;
    assert_eq!(ok(&result), json!({"caption": "one pixel", "bytes": 70}));
    let image = result
        .content
        .iter()
        .find_map(|c| c.as_image())
        .expect("an image block");
    assert_eq!(image.mime_type, "image/png");
    assert!(image.data.starts_with("iVBORw0KGgo"), "{}", image.data);
    // The text is the function's own, without the base64.
    assert_eq!(text(&result), "one pixel (a PNG, sent as an image block)");
    let link = result
        .content
        .iter()
        .find_map(|c| c.as_resource_link())
        .expect("a resource link block");
    assert_eq!(
        (link.uri.as_str(), link.name.as_str(), link.size),
        ("file:///pixel.png", "pixel.png", Some(70))
    );
    // Through `run` the same; code gets the value alone.
    let run = host.run("hello.image()").await;
    assert_eq!(run.content.len(), 3, "{:?}", run.content);
    let called = ok(&host
        .call("hello.call", json!({"tool": "hello.image", "args": {}}))
        .await);
    assert_eq!(
        called["result"],
        json!({"caption": "one pixel", "bytes": 70})
    );
}

#[tokio::test]
async fn ping_is_answered() {
    let host = TestHost::start(&config()).await;
    let response = host
        .client
        .send_request(ClientRequest::PingRequest(Default::default()))
        .await;
    assert!(response.is_ok(), "{response:?}");
}

#[tokio::test]
async fn a_call_returns_structured_content_and_text() {
    let host = TestHost::start(&config()).await;
    let result = host
        .call("hello.greet", json!({"name": "bob", "excitement": 1}))
        .await;
    assert_eq!(ok(&result), json!({"text": "hi, bob!"}));
    assert!(text(&result).contains("hi, bob!"));
}

#[tokio::test]
async fn bad_arguments_are_error_results_that_show_the_signature() {
    let host = TestHost::start(&config()).await;
    let signature = "hello.greet(name: string, excitement?: integer = 0)";
    let result = host.call("hello.greet", json!({"name": 5})).await;
    failed(
        &result,
        "INVALID_ARGUMENT",
        &["`name`", "string", signature],
    );
    let result = host.call("hello.greet", json!({})).await;
    failed(
        &result,
        "INVALID_ARGUMENT",
        &["missing required argument `name`", signature],
    );
    let result = host
        .call("hello.greet", json!({"name": "x", "colour": "red"}))
        .await;
    failed(
        &result,
        "INVALID_ARGUMENT",
        &["unknown argument `colour`", signature],
    );
}

#[tokio::test]
async fn unknown_names_list_what_exists() {
    let host = TestHost::start(&config()).await;
    let result = host.call("nope.greet", json!({})).await;
    failed(
        &result,
        "UNKNOWN_PACK",
        &["unknown pack `nope`", "loaded packs: hello"],
    );
    let result = host.call("hello.greets", json!({})).await;
    failed(
        &result,
        "UNKNOWN_FUNCTION",
        &["no function `greets`", "did you mean `greet`?", "echo"],
    );
    let result = host.call("greet", json!({})).await;
    failed(
        &result,
        "UNKNOWN_FUNCTION",
        &["unknown tool `greet`", "hello.*"],
    );
}

#[tokio::test]
async fn a_failure_keeps_the_functions_own_result_shape() {
    let host = TestHost::start(&config()).await;
    let result = host.call("hello.fail", json!({})).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        structured(&result),
        json!({"stdout": "partial output", "exit_code": 3})
    );
    assert!(text(&result).starts_with("UPSTREAM_ERROR: the work failed with exit code 3"));
}

#[tokio::test]
async fn a_panicking_pack_gives_an_internal_error_and_the_host_keeps_serving() {
    let host = TestHost::start(&config()).await;
    let result = host.call("hello.panic", json!({})).await;
    failed(
        &result,
        "INTERNAL",
        &["`hello.panic` panicked", "the hello pack panics on request"],
    );
    let result = host
        .call("hello.greet", json!({"name": "still here"}))
        .await;
    assert_eq!(ok(&result)["text"], "hi, still here");
    assert!(
        host.stderr().contains("panic"),
        "the panic is logged: {}",
        host.stderr()
    );
}

#[tokio::test]
async fn a_call_past_its_time_limit_times_out_within_a_second_of_it() {
    let host = TestHost::start(&config()).await;
    let marker = host.dir.path().join("abandoned");
    let started = Instant::now();
    let result = host
        .call("hello.sleep", json!({"ms": 30_000, "marker": marker}))
        .await;
    let elapsed = started.elapsed();
    failed(&result, "TIMEOUT", &["`hello.sleep`", "1 s", "timeout_ms"]);
    assert!(
        elapsed < Duration::from_millis(2000),
        "took {elapsed:?} for a 1 s limit"
    );
    wait_for(&marker).await;
    let result = host.call("hello.greet", json!({"name": "after"})).await;
    ok(&result);
}

async fn wait_for(path: &std::path::Path) {
    for _ in 0..100 {
        if path.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{} never appeared: the pack's task was not cancelled",
        path.display()
    );
}

#[tokio::test]
async fn cancelling_a_call_stops_the_pack_task() {
    let host = TestHost::start(&config()).await;
    let marker = host.dir.path().join("cancelled");
    let params = CallToolRequestParams::new("hello.sleep").with_arguments(
        json!({"ms": 30_000, "marker": marker})
            .as_object()
            .unwrap()
            .clone(),
    );
    // Dropping the request future makes rmcp send notifications/cancelled.
    let abandoned =
        tokio::time::timeout(Duration::from_millis(300), call_tool(&host.client, params)).await;
    assert!(abandoned.is_err(), "the sleep should still be running");
    wait_for(&marker).await;
    let result = host.call("hello.greet", json!({"name": "after"})).await;
    ok(&result);
}

#[tokio::test]
async fn progress_reports_reach_the_client() {
    let host = TestHost::start(&config()).await;
    let token = ProgressToken(NumberOrString::String("p1".into()));
    let mut params = CallToolRequestParams::new("hello.progress")
        .with_arguments(json!({"steps": 3}).as_object().unwrap().clone());
    params.meta = Some(RequestMetaObject::with_progress_token(token));
    let result = call_tool(&host.client, params).await.expect("call");
    ok(&result);
    // Notifications may trail the response by a moment.
    for _ in 0..50 {
        if host.recorder.progress.lock().unwrap().len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let progress = host.recorder.progress.lock().unwrap().clone();
    assert_eq!(progress.len(), 3, "{progress:?}");
    // rmcp's client assigns its own token to each request; all reports carry it.
    assert!(
        progress
            .iter()
            .all(|p| p.progress_token == progress[0].progress_token),
        "{progress:?}"
    );
    assert_eq!(progress[2].progress, 3.0);
    assert_eq!(progress[2].total, Some(3.0));
    assert_eq!(progress[0].message.as_deref(), Some("step 1"));
}

#[tokio::test]
async fn packs_get_the_identity_from_the_host() {
    let host = TestHost::start(&config()).await;
    let who = ok(&host.call("hello.whoami", json!({})).await);
    assert_eq!(who["user"], "ada");
    assert_eq!(who["org"], "acme");
    assert!(!who["request_id"].as_str().unwrap().is_empty());
}

#[tokio::test]
async fn a_pack_can_call_back_into_the_host_with_the_same_identity() {
    let host = TestHost::start(&config()).await;
    let result = ok(&host
        .call("hello.call", json!({"tool": "hello.whoami"}))
        .await);
    assert_eq!(result["via"], "hello");
    assert_eq!(result["result"]["user"], "ada");
    let result = ok(&host
        .call(
            "hello.call",
            json!({"tool": "run", "args": {"command": "hello.greet('nested')"}}),
        )
        .await);
    assert_eq!(result["result"]["text"], "hi, nested");
    // The callee's failure comes back as the caller's failure.
    let result = host.call("hello.call", json!({"tool": "hello.nope"})).await;
    failed(&result, "UNKNOWN_FUNCTION", &["no function `nope`"]);
}

/// Waits (at most 1 s) until the client has heard `count` log lines.
async fn logs_heard(host: &TestHost, count: usize) -> Vec<(String, String, String)> {
    for _ in 0..50 {
        if host.recorder.logs.lock().unwrap().len() >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    host.recorder.logs.lock().unwrap().clone()
}

#[tokio::test]
#[allow(deprecated)] // MCP logging: deprecated in 2026-07-28, served for 2025-11-25
async fn a_calls_log_lines_reach_its_client_once_it_asks() {
    use rmcp::model::{LoggingLevel, SetLevelRequestParams};
    let host = TestHost::start(&config()).await;
    let set = async |level| {
        let params = SetLevelRequestParams::new(level);
        host.client
            .set_level(params)
            .await
            .expect("logging/setLevel");
    };
    ok(&host.call("hello.progress", json!({"steps": 2})).await);
    assert_eq!(
        logs_heard(&host, 1).await,
        [],
        "sent before the client asked"
    );

    set(LoggingLevel::Info).await;
    ok(&host.call("hello.progress", json!({"steps": 2})).await);
    let line = |text: &str| ("hello".to_owned(), "info".to_owned(), text.to_owned());
    assert_eq!(
        logs_heard(&host, 2).await,
        [line("did step 1"), line("did step 2")]
    );
    // Through `run` too: the same call, the same client.
    ok(&host.run("hello.progress(steps=1)").await);
    assert_eq!(logs_heard(&host, 3).await.len(), 3);

    set(LoggingLevel::Warning).await;
    ok(&host.call("hello.progress", json!({"steps": 2})).await);
    assert_eq!(logs_heard(&host, 4).await.len(), 3, "info sent at warning");
}
