//! `packhost serve --http`: streamable HTTP, bearer tokens → identity,
//! allow-lists, DNS-rebinding guard, limits, metrics, graceful stop.

use std::time::Duration;

use packhost_tests::{
    error_code, hello_section,
    http::{HttpHost, web_client},
    is_error, packhost_cli,
    schemas::check_raw_call,
    structured, text, wait_group_gone, written,
};
use serde_json::{Value, json};

pub(crate) use packhost_tests::http::token;

pub(crate) async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, packhost_tests::Recorder>,
    name: &str,
    args: Value,
) -> rmcp::model::CallToolResult {
    packhost_tests::call(client, name, args)
        .await
        .expect("tools/call")
}

#[tokio::test]
async fn serves_mcp_over_http_on_loopback() {
    let host = HttpHost::start(
        &(hello_section("") + "[identity]\nuser = \"local-user\"\n"),
        &[],
    )
    .await;
    let client = host.client(None).await.expect("connect");
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "hello.greet"));
    let result = call(&client, "run", json!({"command": "hello.whoami()"})).await;
    assert_eq!(
        structured(&result)["user"],
        "local-user",
        "{}",
        text(&result)
    );
    let health = web_client()
        .get(format!("{}/healthz", host.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let ready = web_client().get(format!("{}/readyz", host.base)).send();
    assert_eq!(ready.await.unwrap().status(), 200);
}

#[tokio::test]
async fn an_instance_whose_shared_state_does_not_answer_is_alive_but_not_ready() {
    // Nothing listens on port 1.
    let database = "postgres://packhost:secret@127.0.0.1:1/state";
    let config = format!(
        "{}\n[state]\ndatabase = \"{database}\"\n",
        hello_section("")
    );
    let host = HttpHost::start(&config, &[]).await;
    let get = |path: &str| web_client().get(format!("{}{path}", host.base)).send();
    assert_eq!(get("/healthz").await.unwrap().status(), 200);
    let ready = get("/readyz").await.unwrap();
    assert_eq!(ready.status(), 503);
    let body = ready.text().await.unwrap();
    assert_eq!(
        body,
        "not ready: the shared state database does not answer\n"
    );
    assert!(host.stderr().contains("not ready"), "{}", host.stderr());
    assert!(!host.stderr().contains("secret"), "{}", host.stderr());
}

#[tokio::test]
async fn a_bearer_token_is_required_and_becomes_the_identity() {
    let (token, entry) = token("ada", "acme", &[]);
    let host = HttpHost::start(&format!("{}\n{entry}\n", hello_section("")), &[]).await;
    let error = host
        .client(None)
        .await
        .expect_err("no token must be refused");
    assert!(error.contains("Auth required"), "{error}");
    assert!(host.client(Some("ph_not-the-token")).await.is_err());
    let response = host
        .post(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()["www-authenticate"],
        "Bearer realm=\"packhost\""
    );
    let client = host
        .client(Some(&token))
        .await
        .expect("the right token connects");
    let who = call(&client, "hello.whoami", json!({})).await;
    assert_eq!(
        (
            structured(&who)["user"].clone(),
            structured(&who)["org"].clone()
        ),
        (json!("ada"), json!("acme"))
    );
    // Code mode runs with the same identity.
    let nested = call(&client, "hello.call", json!({"tool": "hello.whoami"})).await;
    assert_eq!(structured(&nested)["result"]["org"], "acme");
}

#[tokio::test]
async fn a_token_allow_list_limits_what_is_listed_and_callable() {
    let (token, entry) = token("bo", "acme", &["hello.greet", "hello.call"]);
    let host = HttpHost::start(&format!("{}\n{entry}\n", hello_section("")), &[]).await;
    let client = host.client(Some(&token)).await.unwrap();
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    // The host's discovery functions are everyone's.
    assert_eq!(
        names,
        [
            "hello.call",
            "hello.greet",
            "packhost.describe",
            "packhost.packs",
            "packhost.result_grep",
            "packhost.result_read",
            "packhost.result_select",
            "packhost.search"
        ]
    );
    // What is not on the list does not exist, as far as this caller knows.
    let refused = call(&client, "hello.whoami", json!({})).await;
    assert!(is_error(&refused));
    assert_eq!(
        text(&refused),
        "UNKNOWN_FUNCTION: pack `hello` has no function `whoami` (has: greet, call)"
    );
    // Nor through a tool that calls back into the host.
    let nested = call(&client, "hello.call", json!({"tool": "hello.whoami"})).await;
    assert_eq!(error_code(&nested), "UNKNOWN_FUNCTION");
    // `run` is not on the list either.
    let run = call(&client, "run", json!({"command": "hello.greet('x')"})).await;
    let unknown = call(&client, "nosuch", json!({})).await;
    assert_eq!(
        text(&run).replace("`run`", "`nosuch`"),
        text(&unknown),
        "`run` is not on the list"
    );
    assert!(
        text(&unknown).contains("tools: hello.*, packhost.*"),
        "{}",
        text(&unknown)
    );
    assert!(!is_error(
        &call(&client, "hello.greet", json!({"name": "x"})).await
    ));
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused() {
    let host = HttpHost::start(&hello_section(""), &[]).await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let post =
        |header: (&'static str, &'static str)| host.post(body).header(header.0, header.1).send();
    let rebound = post(("host", "evil.example:80")).await.unwrap();
    assert_eq!(
        rebound.status(),
        403,
        "a foreign Host is a DNS-rebinding attempt"
    );
    let foreign = post(("origin", "http://evil.example")).await.unwrap();
    assert_eq!(foreign.status(), 403, "a foreign Origin is refused");
    let fine = post(("user-agent", "test")).await.unwrap();
    assert_eq!(fine.status(), 200);
}

#[tokio::test]
async fn oversized_requests_are_refused() {
    let host = HttpHost::start(
        &format!("{}[http]\nmax_request_bytes = 65536\n", hello_section("")),
        &[],
    )
    .await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":"{}"}}}}"#,
        "x".repeat(200_000)
    );
    let response = host.post(big).send().await.unwrap();
    assert_eq!(response.status(), 413);
    // And the host still serves.
    assert!(host.client(None).await.is_ok());
}

#[tokio::test]
async fn a_public_address_needs_auth_or_insecure() {
    let output = packhost_cli(&hello_section(""), &["serve", "--http", "0.0.0.0:0"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("refusing to serve on 0.0.0.0:0 without authentication"),
        "{stderr}"
    );
    assert!(stderr.contains("packhost token new"), "{stderr}");
}

#[tokio::test]
async fn metrics_count_calls_by_tool_and_outcome() {
    let host = HttpHost::start(&hello_section(""), &[]).await;
    let client = host.client(None).await.unwrap();
    call(&client, "hello.greet", json!({"name": "m"})).await;
    call(&client, "hello.greet", json!({})).await;
    let metrics = host.metrics(None).await;
    assert!(
        metrics.contains("packhost_calls_total{tool=\"hello.greet\",outcome=\"ok\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics
            .contains("packhost_calls_total{tool=\"hello.greet\",outcome=\"INVALID_ARGUMENT\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("packhost_call_duration_seconds_count{tool=\"hello.greet\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("packhost_pack_load_failures 0"),
        "{metrics}"
    );
}

#[tokio::test]
async fn sigterm_lets_running_calls_finish() {
    let mut host = HttpHost::start(&hello_section(""), &[]).await;
    let client = host.client(None).await.unwrap();
    let running = tokio::spawn(async move {
        let result = call(&client, "hello.sleep", json!({"ms": 1500})).await;
        (result, client)
    });
    // Terminated once the call is surely under way (a loaded machine can
    // take a while to deliver it).
    for _ in 0..400 {
        if host
            .metrics(None)
            .await
            .contains("packhost_calls_running 1")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    host.terminate();
    // A stop that ended the session once the call was done, but before its
    // answer was written, left the client waiting for ever.
    let (result, _client) = tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .unwrap_or_else(|_| panic!("the call's answer never came:\n{}", host.stderr()))
        .unwrap();
    assert!(!is_error(&result), "{}", text(&result));
    assert_eq!(structured(&result)["text"], "slept 1500 ms");
    let mut status = None;
    for _ in 0..200 {
        status = host.child.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let status = status.unwrap_or_else(|| panic!("the host did not stop:\n{}", host.stderr()));
    assert!(status.success(), "{status:?}\n{}", host.stderr());
}

#[tokio::test]
async fn sessions_are_capped() {
    let host = HttpHost::start(
        &format!("{}[http]\nmax_sessions = 1\n", hello_section("")),
        &[],
    )
    .await;
    let first = host.client(None).await.expect("the first session opens");
    let error = host
        .client(None)
        .await
        .expect_err("a second session is over the cap");
    assert!(
        error.contains("503") || error.contains("too many open sessions"),
        "{error}"
    );
    // The open session keeps working.
    assert!(!is_error(
        &call(&first, "hello.greet", json!({"name": "s"})).await
    ));
    let metrics = host.metrics(None).await;
    assert!(metrics.contains("packhost_sessions 1"), "{metrics}");
}

#[tokio::test]
async fn one_callers_or_one_organisations_sessions_never_take_them_all() {
    let (ada, ada_entry) = token("ada", "acme", &[]);
    let (bob, bob_entry) = token("bob", "acme", &[]);
    let (eve, eve_entry) = token("eve", "evil", &[]);
    let config = format!(
        "{}\n[http]\nmax_sessions = 10\nmax_sessions_per_org = 3\nmax_sessions_per_caller = 2\n\
         {ada_entry}\n{bob_entry}\n{eve_entry}\n",
        hello_section("")
    );
    let host = HttpHost::start(&config, &[]).await;
    let _ada = [
        host.client(Some(&ada)).await.expect("ada's first"),
        host.client(Some(&ada)).await.expect("ada's second"),
    ];
    let refused = host.client(Some(&ada)).await.expect_err("ada's third");
    assert!(refused.contains("max_sessions_per_caller"), "{refused}");
    let _bob = host.client(Some(&bob)).await.expect("bob's first");
    let refused = host.client(Some(&bob)).await.expect_err("acme's fourth");
    assert!(refused.contains("max_sessions_per_org"), "{refused}");
    // Another organisation is untouched by acme's.
    let _eve = host.client(Some(&eve)).await.expect("eve's first");
}

#[tokio::test]
async fn without_sessions_every_post_stands_alone_and_answers_json() {
    let (token, entry) = token("ada", "acme", &[]);
    let host = HttpHost::start(
        &format!("{}\n[http]\nsessions = false\n{entry}\n", hello_section("")),
        &[],
    )
    .await;
    // A call with no initialize and no session before it, as a load
    // balancer may send it to any instance.
    let response = host
        .post(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hello.whoami","arguments":{}}}"#)
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(!response.headers().contains_key("mcp-session-id"));
    assert_eq!(response.headers()["content-type"], "application/json");
    let answer: Value = response.json().await.expect("a JSON body");
    assert_eq!(answer["id"], 7);
    let tools: Value = host
        .post(r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#)
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .expect("a JSON body");
    check_raw_call(&tools, "hello.whoami", &answer);
    assert_eq!(
        answer["result"]["structuredContent"]["org"], "acme",
        "{answer}"
    );
    // The token is still required, and rmcp's client works as usual.
    assert!(host.client(None).await.is_err());
    let client = host.client(Some(&token)).await.expect("connect");
    let greeting = call(&client, "hello.greet", json!({"name": "lb"})).await;
    assert!(!is_error(&greeting), "{}", text(&greeting));
}

#[tokio::test]
async fn a_client_that_goes_away_mid_call_leaves_no_process_behind() {
    goes_away_mid_call("").await;
}

#[tokio::test]
async fn without_sessions_a_client_that_goes_away_mid_call_leaves_no_process_behind() {
    goes_away_mid_call("[http]\nsessions = false\n").await;
}

async fn goes_away_mid_call(extra: &str) {
    // The code tells its group through a folder it may write.
    let shared = tempfile::tempdir().unwrap();
    let root = shared.path().display().to_string();
    let config = format!(
        "[packs.exec_py]\nconfig = {{ cwd_roots = [{root:?}], cwd_writable = true }}\n{extra}"
    );
    let host = HttpHost::start(&config, &[]).await;
    let marker = shared.path().join("pgid");
    let code = "import os, time\nopen('pgid', 'w').write(str(os.getpgid(0)))\ntime.sleep(60)";
    let client = host.client(None).await.unwrap();
    let running = tokio::spawn(async move {
        call(&client, "exec_py.run", json!({ "code": code, "cwd": root })).await;
    });
    let group: u32 = written(&marker, Duration::from_secs(10))
        .await
        .unwrap_or_else(|| panic!("the code never started:\n{}", host.stderr()));
    // The client vanishes: its task, its connection and its session with it.
    running.abort();
    let _ = running.await;
    // Measured: gone about 5 s later with sessions (rmcp ends the orphaned
    // request then), at once without.
    if let Err(live) = wait_group_gone(group, Duration::from_secs(15)).await {
        panic!("the code outlived its client: {live:?}\n{}", host.stderr());
    }
}
