//! `remote_mcp` through the real binary, against the real third-party
//! server-everything (stdio and streamable HTTP) and the in-repo fixture
//! server (crashes, failures, hangs); integrations stored by the real
//! `packhost integrations` CLI in SQLite and PostgreSQL.

use std::{
    path::{Path, PathBuf},
    process::Output,
    time::Duration,
};

use packhost_tests::{
    TestHost,
    downstream::{
        HttpServer, everything_stdio, fixture_mcp_bin, free_port, integrations,
        integrations_output, postgres_database,
    },
    error_code, failed,
    http::HttpHost,
    is_error, ok, structured, text, wait_group_gone,
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// A directory whose `packs.toml` serves `remote_mcp` as `org` with the
/// integrations in `database` (default: a SQLite file inside it) and `extra`
/// keys in the pack's config (`, idle_secs = 1`).
fn org_dir(org: &str, database: Option<&str>, extra: &str) -> TempDir {
    let dir = TempDir::new().expect("temp dir");
    let database = database.map_or_else(
        || dir.path().join("integrations.db").display().to_string(),
        str::to_owned,
    );
    let read = servers_read();
    std::fs::write(
        dir.path().join("packs.toml"),
        format!(
            "[identity]\nuser = \"ada\"\norg = {org:?}\n\n[packs.remote_mcp]\nconfig = {{ database = {database:?}, read = {read:?}{extra} }}\n"
        ),
    )
    .expect("write config");
    dir
}

/// What the test servers need to read besides the system: an
/// organisation's program path never makes its folder readable, the pack's
/// `read` does.
pub(crate) fn servers_read() -> Vec<String> {
    let fixture_folder = fixture_mcp_bin().parent().expect("a folder").to_owned();
    let entry = PathBuf::from(everything_stdio()[1].clone());
    let node_modules = entry
        .ancestors()
        .find(|a| a.ends_with("node_modules"))
        .expect("server-everything lives in a node_modules folder")
        .to_owned();
    [fixture_folder, node_modules, PathBuf::from(&python().1)]
        .map(|p| p.display().to_string())
        .to_vec()
}

/// `python3`'s real executable (not a pyenv shim, which runs pyenv's own
/// scripts) and the installation it reads.
fn python() -> &'static (String, String) {
    static PYTHON: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();
    PYTHON.get_or_init(|| {
        let output = std::process::Command::new("python3")
            .args([
                "-c",
                "import sys; print(sys.executable); print(sys.base_prefix)",
            ])
            .output()
            .expect("python3 runs");
        let stdout = String::from_utf8(output.stdout).expect("UTF-8");
        let mut lines = stdout.lines().map(str::to_owned);
        let executable = lines.next().expect("sys.executable");
        (executable, lines.next().expect("sys.base_prefix"))
    })
}

/// Wait (at most 10 s) until the server process `pid` is gone: stdio servers
/// lead their own process group, so none of it may be left.
async fn wait_until_gone(pid: u32, what: &str) {
    if let Err(live) = wait_group_gone(pid, Duration::from_secs(10)).await {
        panic!("{what} (pid {pid}) still runs: {live:?}");
    }
}

/// `integrations add --org org --name name -- command...`: the new id.
fn add_stdio(dir: &Path, org: &str, name: &str, command: &[String]) -> String {
    let mut args = vec!["add", "--org", org, "--name", name, "--"];
    args.extend(command.iter().map(String::as_str));
    integrations(dir, &args, &[])
}

fn add_http(dir: &Path, org: &str, name: &str, url: &str) -> String {
    integrations(
        dir,
        &["add", "--org", org, "--name", name, "--url", url],
        &[],
    )
}

fn fixture() -> Vec<String> {
    vec![fixture_mcp_bin().display().to_string()]
}

async fn execute(
    host: &TestHost,
    id: &str,
    tool: &str,
    parameters: Value,
) -> rmcp::model::CallToolResult {
    host.call(
        "remote_mcp.execute_tool",
        json!({"integrationId": id, "toolName": tool, "parameters": parameters}),
    )
    .await
}

#[tokio::test]
async fn calls_a_tool_of_server_everything_over_stdio() {
    let dir = org_dir("acme", None, "");
    let id = add_stdio(dir.path(), "acme", "everything", &everything_stdio());
    let host = TestHost::start_in(dir).await;
    let result = ok(&execute(&host, &id, "echo", json!({"message": "hi"})).await);
    assert_eq!(result["isError"], false);
    assert_eq!(result["content"][0]["text"], "Echo: hi");
    // The same through `run`.
    let run = ok(&host
        .run(&format!(
            "remote_mcp.execute_tool({id:?}, \"echo\", {{\"message\": \"again\"}})"
        ))
        .await);
    assert_eq!(run["content"][0]["text"], "Echo: again");
    // A downstream image reaches the client as an image block, its base64
    // not in the text.
    let image = execute(&host, &id, "get-tiny-image", json!({})).await;
    let blocks: Vec<_> = image.content.iter().filter_map(|c| c.as_image()).collect();
    assert_eq!(blocks.len(), 1, "{:?}", image.content);
    assert!(
        !text(&image).contains(&blocks[0].data),
        "base64 in the text"
    );
}

#[tokio::test]
async fn calls_a_tool_of_server_everything_over_http() {
    let server = HttpServer::everything();
    let dir = org_dir("acme", None, "");
    let id = add_http(dir.path(), "acme", "everything", &server.url);
    let host = TestHost::start_in(dir).await;
    let result = ok(&execute(&host, &id, "echo", json!({"message": "over http"})).await);
    assert_eq!(result["content"][0]["text"], "Echo: over http");
    let tools = ok(&host
        .call("remote_mcp.list_tools", json!({"integrationId": id}))
        .await);
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"echo") && names.contains(&"get-sum"),
        "{names:?}"
    );
}

#[tokio::test]
async fn a_failing_or_missing_downstream_tool_is_the_servers_answer() {
    let dir = org_dir("acme", None, "");
    let fixture_id = add_stdio(dir.path(), "acme", "fixture", &fixture());
    let everything_id = add_stdio(dir.path(), "acme", "everything", &everything_stdio());
    let host = TestHost::start_in(dir).await;

    let failed_tool = execute(&host, &fixture_id, "fail", json!({"message": "disk full"})).await;
    assert!(is_error(&failed_tool));
    assert_eq!(
        structured(&failed_tool),
        json!({"isError": true, "content": null, "errorMessage": "disk full"})
    );
    assert!(
        text(&failed_tool).contains("disk full"),
        "{}",
        text(&failed_tool)
    );

    for (id, tool) in [
        (&everything_id, "no_such_tool"),
        (&fixture_id, "no_such_tool"),
    ] {
        let missing = execute(&host, id, tool, json!({})).await;
        assert!(is_error(&missing));
        let body = structured(&missing);
        assert_eq!(body["isError"], true);
        assert_eq!(body["content"], Value::Null);
        assert!(
            body["errorMessage"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
    }
    // The host and the connections keep serving.
    let echo = ok(&execute(&host, &everything_id, "echo", json!({"message": "still"})).await);
    assert_eq!(echo["content"][0]["text"], "Echo: still");
}

#[tokio::test]
async fn refuses_unknown_foreign_and_disabled_integrations() {
    let dir = org_dir("acme", None, "");
    let ours = add_stdio(dir.path(), "acme", "fixture", &fixture());
    let theirs = add_stdio(dir.path(), "globex", "fixture", &fixture());
    integrations(dir.path(), &["disable", "--org", "acme", &ours], &[]);
    let host = TestHost::start_in(dir).await;

    let missing = execute(&host, "int_0000000000000000", "echo", json!({})).await;
    failed(
        &missing,
        "NOT_FOUND",
        &["int_0000000000000000", "list_integrations"],
    );

    let foreign = execute(&host, &theirs, "echo", json!({"text": "x"})).await;
    let message = failed(&foreign, "ACCESS_DENIED", &["another organisation"]);
    assert!(
        !message.contains("globex"),
        "the other org is not named: {message}"
    );

    let disabled = execute(&host, &ours, "echo", json!({"text": "x"})).await;
    failed(&disabled, "DISABLED", &["disabled", "integrations enable"]);

    // Enabled again by the CLI, the next call goes through (no restart).
    integrations(host.dir.path(), &["enable", "--org", "acme", &ours], &[]);
    let echo = ok(&execute(&host, &ours, "echo", json!({"text": "back"})).await);
    assert_eq!(echo["content"][0]["text"], "echo: back");

    // Listings show only the caller's organisation.
    let listed = ok(&host.call("remote_mcp.list_integrations", json!({})).await);
    let ids: Vec<&str> = listed["integrations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["id"].as_str())
        .collect();
    assert_eq!(ids, vec![ours.as_str()]);
}

#[tokio::test]
async fn without_an_organisation_every_function_is_unauthorized() {
    let dir = org_dir("", None, "");
    let id = add_stdio(dir.path(), "acme", "fixture", &fixture());
    let host = TestHost::start_in(dir).await;
    for (tool, args) in [
        (
            "remote_mcp.execute_tool",
            json!({"integrationId": id, "toolName": "echo"}),
        ),
        ("remote_mcp.list_tools", json!({"integrationId": id})),
        ("remote_mcp.list_integrations", json!({})),
    ] {
        failed(
            &host.call(tool, args).await,
            "UNAUTHORIZED",
            &["organisation"],
        );
    }
}

#[tokio::test]
async fn the_organisation_is_never_an_argument() {
    let dir = org_dir("globex", None, "");
    let id = add_stdio(dir.path(), "acme", "fixture", &fixture());
    let host = TestHost::start_in(dir).await;
    let smuggled = host
        .call(
            "remote_mcp.execute_tool",
            json!({"integrationId": id, "toolName": "echo", "organizationId": "acme"}),
        )
        .await;
    failed(&smuggled, "INVALID_ARGUMENT", &["organizationId"]);
    let plain = execute(&host, &id, "echo", json!({"text": "x"})).await;
    assert_eq!(error_code(&plain), "ACCESS_DENIED");
}

#[tokio::test]
async fn each_bearer_token_calls_as_its_own_organisation() {
    let (acme_token, acme_entry) = crate::http::token("ada", "acme", &[]);
    let (globex_token, globex_entry) = crate::http::token("bob", "globex", &[]);
    let dir = TempDir::new().unwrap();
    let database = dir.path().join("integrations.db").display().to_string();
    let config = format!(
        "[packs.remote_mcp]\nconfig = {{ database = {database:?}, read = {:?} }}\n\n{acme_entry}\n\n{globex_entry}\n",
        servers_read()
    );
    std::fs::write(dir.path().join("packs.toml"), &config).unwrap();
    let id = add_stdio(dir.path(), "acme", "fixture", &fixture());
    let host = HttpHost::start(&config, &[]).await;
    let args = json!({"integrationId": id, "toolName": "echo", "parameters": {"text": "hi"}});
    let acme = host.client(Some(&acme_token)).await.unwrap();
    let result = crate::http::call(&acme, "remote_mcp.execute_tool", args.clone()).await;
    assert_eq!(ok(&result)["content"][0]["text"], "echo: hi");
    let globex = host.client(Some(&globex_token)).await.unwrap();
    let result = crate::http::call(&globex, "remote_mcp.execute_tool", args).await;
    assert_eq!(error_code(&result), "ACCESS_DENIED");
}

#[tokio::test]
async fn unexpected_failures_are_upstream_errors_without_secrets() {
    let dir = org_dir("acme", None, "");
    let missing_program = add_stdio(
        dir.path(),
        "acme",
        "missing",
        &["/nonexistent/mcp-server".to_owned()],
    );
    let closed_port = format!("http://127.0.0.1:{}/mcp", free_port());
    let refused = integrations(
        dir.path(),
        &[
            "add",
            "--org",
            "acme",
            "--name",
            "refused",
            "--url",
            &closed_port,
            "--bearer-token-env",
            "SECRET_TOKEN",
        ],
        &[("SECRET_TOKEN", "s3cr3t-token-value")],
    );
    let crashing = add_stdio(dir.path(), "acme", "crashing", &fixture());
    let host = TestHost::start_in(dir).await;

    failed(
        &execute(&host, &missing_program, "echo", json!({})).await,
        "UPSTREAM_ERROR",
        &["cannot start"],
    );
    let refused = execute(&host, &refused, "echo", json!({})).await;
    failed(&refused, "UPSTREAM_ERROR", &["127.0.0.1"]);
    failed(
        &execute(&host, &crashing, "crash", json!({})).await,
        "UPSTREAM_ERROR",
        &["closed the connection"],
    );
    // The crashed server is started again for the next call.
    let echo = ok(&execute(&host, &crashing, "echo", json!({"text": "alive"})).await);
    assert_eq!(echo["content"][0]["text"], "echo: alive");

    let listed = ok(&host.call("remote_mcp.list_integrations", json!({})).await);
    let everything_said = format!("{}{listed}{}", text(&refused), host.stderr());
    assert!(
        !everything_said.contains("s3cr3t-token-value"),
        "a credential leaked: {everything_said}"
    );
}

#[tokio::test]
async fn a_downstream_that_hangs_times_out_and_others_keep_answering() {
    let dir = org_dir("acme", None, "");
    let slow = integrations(
        dir.path(),
        &[
            "add",
            "--org",
            "acme",
            "--name",
            "slow",
            "--timeout-ms",
            "300",
            "--",
        ]
        .into_iter()
        .chain([fixture_mcp_bin().to_str().unwrap()])
        .collect::<Vec<_>>(),
        &[],
    );
    let other = add_stdio(dir.path(), "acme", "other", &fixture());
    let host = TestHost::start_in(dir).await;
    let (hung, answered) = tokio::join!(
        execute(&host, &slow, "sleep", json!({"ms": 60_000})),
        execute(&host, &other, "echo", json!({"text": "meanwhile"})),
    );
    failed(&hung, "UPSTREAM_ERROR", &["no answer within 300 ms"]);
    assert_eq!(ok(&answered)["content"][0]["text"], "echo: meanwhile");
}

#[tokio::test]
async fn every_execution_is_logged_without_its_parameters() {
    let dir = org_dir("acme", None, "");
    let id = add_stdio(dir.path(), "acme", "fixture", &fixture());
    let host = TestHost::start_in(dir).await;
    ok(&execute(&host, &id, "echo", json!({"text": "private-marker-42"})).await);
    execute(&host, &id, "fail", json!({"message": "x"})).await;
    let log = host.stderr();
    let line = |outcome: &str| {
        log.lines()
            .find(|l| {
                l.contains("execute_tool")
                    && l.contains(&format!("integration={id}"))
                    && l.contains(&format!("outcome={outcome}"))
            })
            .map(str::to_owned)
    };
    let success = line("ok").unwrap_or_else(|| panic!("no log line for the call:\n{log}"));
    for part in ["org=acme", "tool=echo", "duration_ms="] {
        assert!(success.contains(part), "{part} missing: {success}");
    }
    assert!(line("EXECUTION_ERROR").is_some(), "{log}");
    assert!(
        !log.contains("private-marker-42"),
        "parameters were logged:\n{log}"
    );
}

/// The fixture's pid, through `remote_mcp`.
async fn downstream_pid(host: &TestHost, id: &str) -> u32 {
    let result = ok(&execute(host, id, "pid", json!({})).await);
    result["structuredContent"]["pid"].as_u64().expect("pid") as u32
}

#[tokio::test]
async fn one_connection_serves_many_calls_and_a_killed_server_is_restarted() {
    let dir = org_dir("acme", None, "");
    let id = add_stdio(dir.path(), "acme", "fixture", &fixture());
    let host = TestHost::start_in(dir).await;
    let first = downstream_pid(&host, &id).await;
    for _ in 0..20 {
        assert_eq!(
            downstream_pid(&host, &id).await,
            first,
            "a new process per call"
        );
    }
    // Killed between two calls, the server is started again by the very next
    // call, which succeeds: the pool sees the dead connection before it
    // sends. Many rounds, as a killed server ends in steps (its main thread
    // first, the others and its pipes a moment later) and only some rounds
    // call in between.
    let mut pid = first;
    for round in 0..30 {
        // SAFETY: signalling the fixture server this test started.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
        wait_until_gone(pid, "the killed server").await;
        let result = execute(&host, &id, "pid", json!({})).await;
        assert!(
            !is_error(&result),
            "round {round}: the call after the kill failed: {}",
            text(&result)
        );
        let next = ok(&result)["structuredContent"]["pid"]
            .as_u64()
            .expect("pid") as u32;
        assert_ne!(next, pid, "round {round}: the killed server answered");
        pid = next;
    }
}

/// How many times the host's log says a server of integration `id` was
/// connected (its process started, for a stdio server), on the
/// integration's own connection or on a caller's (`id@org/user`).
fn connections(log: &str, id: &str) -> usize {
    let ours = |key: &str| key == id || key.starts_with(&format!("{id}@"));
    log.lines()
        .filter(|line| {
            let parts: Vec<&str> = line.split('`').collect();
            parts.windows(2).any(|pair| {
                ours(pair[0])
                    && (pair[1].starts_with(": connected to")
                        || pair[1].starts_with(": reconnected to"))
            })
        })
        .count()
}

/// A stdio MCP server (Python) that closes its stdin on its first tool call,
/// answers it with its pid, and runs on until its stdout is closed: the next
/// request written to it fails with a broken pipe, having reached nobody.
const STOPS_READING: &str = r#"
import json, os, select, sys

def reply(request, key, value):
    message = {"jsonrpc": "2.0", "id": request["id"], key: value}
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    if request.get("method") == "initialize":
        reply(request, "result", {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stops-reading", "version": "1"},
        })
    elif request.get("method") == "tools/call":
        os.close(0)
        reply(request, "result", {"content": [{"type": "text", "text": str(os.getpid())}]})
        break
    else:
        reply(request, "error", {"code": -32601, "message": "unknown method"})
# Until the host closes our stdout (or a minute).
poll = select.poll()
poll.register(1, 0)
poll.poll(60_000)
"#;

#[tokio::test]
async fn a_request_the_server_could_not_read_goes_to_a_new_server() {
    let dir = org_dir("acme", None, "");
    let command = [python().0.as_str(), "-c", STOPS_READING].map(str::to_owned);
    let id = add_stdio(dir.path(), "acme", "stops-reading", &command);
    let host = TestHost::start_in(dir).await;
    let pid = async || {
        let result = execute(&host, &id, "pid", json!({})).await;
        ok(&result)["content"][0]["text"]
            .as_str()
            .expect("the pid as text")
            .to_owned()
    };
    let first = pid().await;
    // The first server lives on but reads no more: the write fails (broken
    // pipe), so the request certainly did not reach it and goes to a new one.
    let second = pid().await;
    assert_ne!(first, second);
    let log = host.stderr();
    assert_eq!(connections(&log, &id), 2, "{log}");
    assert!(log.contains("before the request was sent"), "{log}");
}

#[tokio::test]
async fn a_server_that_dies_during_a_call_fails_that_call_and_it_is_not_sent_again() {
    let dir = org_dir("acme", None, "");
    let id = add_stdio(dir.path(), "acme", "fixture", &fixture());
    let host = TestHost::start_in(dir).await;
    let first = downstream_pid(&host, &id).await;
    // `crash` exits the server once it has the request: that call fails,
    // and is not sent to a new server (which would crash too, a second
    // start in the log).
    failed(
        &execute(&host, &id, "crash", json!({})).await,
        "UPSTREAM_ERROR",
        &["closed the connection"],
    );
    wait_until_gone(first, "the crashed server").await;
    assert_eq!(connections(&host.stderr(), &id), 1, "{}", host.stderr());
    // The next call starts one new server.
    assert_ne!(downstream_pid(&host, &id).await, first);
    assert_eq!(connections(&host.stderr(), &id), 2, "{}", host.stderr());
}

#[tokio::test]
async fn fifty_concurrent_calls_across_two_integrations() {
    let server = HttpServer::fixture(0);
    let dir = org_dir("acme", None, "");
    let stdio = add_stdio(dir.path(), "acme", "everything", &everything_stdio());
    let http = add_http(dir.path(), "acme", "fixture", &server.url);
    let host = TestHost::start_in(dir).await;
    let calls = (0..50).map(|i| {
        let (id, tool, args, expected) = if i % 2 == 0 {
            (
                &stdio,
                "echo",
                json!({"message": format!("m{i}")}),
                format!("Echo: m{i}"),
            )
        } else {
            (
                &http,
                "echo",
                json!({"text": format!("m{i}")}),
                format!("echo: m{i}"),
            )
        };
        let host = &host;
        async move {
            let result = execute(host, id, tool, args).await;
            assert_eq!(ok(&result)["content"][0]["text"], expected.as_str());
        }
    });
    futures_util::future::join_all(calls).await;
}

#[tokio::test]
async fn an_http_session_the_server_forgot_is_reinitialised() {
    let mut server = HttpServer::fixture(0);
    let port = server.port;
    let dir = org_dir("acme", None, "");
    let id = add_http(dir.path(), "acme", "fixture", &server.url);
    let host = TestHost::start_in(dir).await;
    let before = downstream_pid(&host, &id).await;
    // A new server process on the same port knows no session.
    server.kill();
    let _restarted = HttpServer::fixture(port);
    let after = downstream_pid(&host, &id).await;
    assert_ne!(before, after);
}

#[tokio::test]
async fn integrations_live_in_postgresql_too() {
    let Some(database) = postgres_database() else {
        return;
    };
    let dir = org_dir("acme", Some(&database), "");
    let id = add_stdio(dir.path(), "acme", "everything", &everything_stdio());
    let listed = integrations(dir.path(), &["list", "--org", "acme", "--json"], &[]);
    assert!(listed.contains(&id), "{listed}");
    let host = TestHost::start_in(dir).await;
    let result = ok(&execute(&host, &id, "echo", json!({"message": "from postgres"})).await);
    assert_eq!(result["content"][0]["text"], "Echo: from postgres");
    integrations(host.dir.path(), &["disable", "--org", "acme", &id], &[]);
    failed(
        &execute(&host, &id, "echo", json!({"message": "x"})).await,
        "DISABLED",
        &[],
    );
}

#[tokio::test]
async fn the_cli_validates_and_hides_secrets() {
    let dir = org_dir("acme", None, "");
    let bad = integrations_output(
        dir.path(),
        &[
            "add",
            "--org",
            "acme",
            "--name",
            "x",
            "--url",
            "ftp://example.com/mcp",
        ],
        &[],
    );
    assert!(!bad.status.success());
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(said.contains("http://"), "{said}");
    let id = integrations(
        dir.path(),
        &[
            "add",
            "--org",
            "acme",
            "--name",
            "api",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--bearer-token-env",
            "TOKEN",
        ],
        &[("TOKEN", "very-secret")],
    );
    let listed = integrations(dir.path(), &["list", "--org", "acme", "--json"], &[]);
    assert!(
        listed.contains(&id) && !listed.contains("very-secret"),
        "{listed}"
    );
    let foreign = integrations_output(dir.path(), &["remove", "--org", "globex", &id], &[]);
    assert!(!foreign.status.success(), "another org removed it");
    integrations(dir.path(), &["remove", "--org", "acme", &id], &[]);
    let empty = integrations(dir.path(), &["list", "--org", "acme"], &[]);
    assert!(empty.contains("no integrations"), "{empty}");
}

#[tokio::test]
async fn private_addresses_can_be_forbidden() {
    let server = HttpServer::fixture(0);
    let dir = org_dir("acme", None, ", forbid_private_addresses = true");
    let literal = add_http(dir.path(), "acme", "literal", &server.url);
    let by_name = add_http(
        dir.path(),
        "acme",
        "by-name",
        &format!("http://localhost:{}/mcp", server.port),
    );
    let host = TestHost::start_in(dir).await;
    failed(
        &execute(&host, &literal, "echo", json!({"text": "x"})).await,
        "UPSTREAM_ERROR",
        &["private or loopback"],
    );
    // A name is checked where it is resolved: `localhost` is refused too.
    let named = execute(&host, &by_name, "echo", json!({"text": "x"})).await;
    assert_eq!(error_code(&named), "UPSTREAM_ERROR", "{}", text(&named));
    // The server itself was never reached.
    assert!(!host.stderr().contains("echo: x"));
}

#[tokio::test]
async fn https_integrations_speak_tls() {
    // The fixture answers plain HTTP: a TLS handshake with it fails, which
    // shows that https is spoken (a client without TLS would refuse the
    // scheme instead).
    let server = HttpServer::fixture(0);
    let dir = org_dir("acme", None, "");
    let tls = add_http(
        dir.path(),
        "acme",
        "tls",
        &format!("https://127.0.0.1:{}/mcp", server.port),
    );
    let host = TestHost::start_in(dir).await;
    let result = execute(&host, &tls, "echo", json!({"text": "x"})).await;
    failed(
        &result,
        "UPSTREAM_ERROR",
        &["handshake failed", "corrupt message"],
    );
}

#[tokio::test]
async fn idle_connections_close_and_the_pool_is_capped() {
    let dir = org_dir("acme", None, ", idle_secs = 1, max_connections = 1");
    let first = add_stdio(dir.path(), "acme", "first", &fixture());
    let second = add_stdio(dir.path(), "acme", "second", &fixture());
    let host = TestHost::start_in(dir).await;
    // A second integration past `max_connections = 1` closes the first's.
    let a = downstream_pid(&host, &first).await;
    let b = downstream_pid(&host, &second).await;
    wait_until_gone(a, "the evicted connection's server").await;
    // Unused for longer than `idle_secs`, the other one closes too.
    wait_until_gone(b, "the idle connection's server").await;
    let again = downstream_pid(&host, &first).await;
    assert!(again != a && again != b);
}

#[tokio::test]
async fn a_server_that_never_answers_the_handshake_is_given_up_and_stopped() {
    // A "server" that reads nothing and says nothing, and tells its pid in
    // the one folder outside its own it may write.
    let shared = TempDir::new().expect("temp dir");
    let extra = format!(", connect_timeout_ms = 500, write = [{:?}]", shared.path());
    let dir = org_dir("acme", None, &extra);
    let pid_file = shared.path().join("mute.pid");
    let script = format!("echo $$ > {}; exec sleep 60", pid_file.display());
    let mute = add_stdio(
        dir.path(),
        "acme",
        "mute",
        &["sh".to_owned(), "-c".to_owned(), script],
    );
    let host = TestHost::start_in(dir).await;
    failed(
        &execute(&host, &mute, "echo", json!({})).await,
        "UPSTREAM_ERROR",
        &["did not complete the MCP handshake within 500 ms"],
    );
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until_gone(pid, "the mute server, after its failed handshake").await;
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let server = HttpServer::fixture(0);
    let dir = org_dir("acme", None, "");
    let moved = add_http(
        dir.path(),
        "acme",
        "moved",
        &format!("http://127.0.0.1:{}/moved", server.port),
    );
    let direct = add_http(dir.path(), "acme", "direct", &server.url);
    let host = TestHost::start_in(dir).await;
    let refused = execute(&host, &moved, "echo", json!({"text": "x"})).await;
    assert_eq!(error_code(&refused), "UPSTREAM_ERROR", "{}", text(&refused));
    // The same server answers at its own address.
    let echo = ok(&execute(&host, &direct, "echo", json!({"text": "x"})).await);
    assert_eq!(echo["content"][0]["text"], "echo: x");
}

#[tokio::test]
async fn a_stdio_integration_runs_confined_by_the_packs_policy() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address").to_string();
    // With the sandbox off every attempt succeeds: the attempts are real.
    for sandbox in ["on", "off"] {
        let dir = org_dir("acme", None, &format!(", sandbox = {sandbox:?}"));
        let id = add_stdio(dir.path(), "acme", "fixture", &fixture());
        let database = dir.path().join("integrations.db");
        let mut attempts = crate::servers::escapes(dir.path());
        attempts.push(("read", json!({"path": database})));
        let host = TestHost::start_in(dir).await;
        for (tool, args) in attempts {
            let result = ok(&execute(&host, &id, tool, args.clone()).await);
            let said = result["content"][0]["text"].as_str().unwrap_or_default();
            let expected = if sandbox == "on" { "denied: " } else { "ok: " };
            assert!(
                said.starts_with(expected),
                "sandbox {sandbox}: {tool} {args} said {said}"
            );
        }
        let connected = ok(&execute(&host, &id, "connect", json!({"addr": addr})).await);
        let said = connected["content"][0]["text"].as_str().unwrap_or_default();
        assert!(said.starts_with("ok: "), "sandbox {sandbox}: {said}");
    }
}

#[tokio::test]
async fn an_integration_the_sandbox_refuses_says_why() {
    let dir = org_dir("acme", None, ", limits = { open_files = 4000000000 }");
    let id = add_stdio(dir.path(), "acme", "fixture", &fixture());
    let host = TestHost::start_in(dir).await;
    failed(
        &execute(&host, &id, "echo", json!({"text": "x"})).await,
        "UPSTREAM_ERROR",
        &["the sandbox refused to start it: cannot set the open_files bound"],
    );
}

/// A dependency-free MCP server (newline-delimited JSON-RPC on stdio) with
/// one tool, `greet`, that also tells its first argument, or reads the file
/// `path` when given one.
const TINY_SERVER: &str = r#"import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n');
for await (const line of createInterface({ input: process.stdin })) {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) continue;
  if (method === 'initialize') {
    send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'tiny', version: '1.0.0' } } });
  } else if (method === 'tools/list') {
    send({ id, result: { tools: [{ name: 'greet', inputSchema: { type: 'object', properties: { name: { type: 'string' } } } }] } });
  } else if (method === 'tools/call') {
    const { name, path } = params.arguments;
    let text = `hello ${name} (${process.argv[2]})`;
    if (path) {
      try { text = `read: ${readFileSync(path, 'utf8')}`; } catch (e) { text = `denied: ${e.code}`; }
    }
    send({ id, result: { content: [{ type: 'text', text }] } });
  } else {
    send({ id, error: { code: -32601, message: `no method ${method}` } });
  }
}
"#;

#[tokio::test]
async fn a_stdio_integration_reads_the_script_it_runs() {
    // The script lives outside node's install folder and the pack's `read`.
    let scripts = TempDir::new().expect("temp dir");
    let script = scripts.path().join("server.mjs");
    std::fs::write(&script, TINY_SERVER).expect("write the script");
    let dir = org_dir("acme", None, "");
    let command = ["node", &script.display().to_string(), "stdio"].map(str::to_owned);
    let id = add_stdio(dir.path(), "acme", "tiny", &command);
    let host = TestHost::start_in(dir).await;
    let tools = host
        .call("remote_mcp.list_tools", json!({"integrationId": id}))
        .await;
    assert!(
        !is_error(&tools) && text(&tools).contains("greet"),
        "{}",
        text(&tools)
    );
    let greeted = ok(&execute(&host, &id, "greet", json!({"name": "ada"})).await);
    assert_eq!(greeted["content"][0]["text"], "hello ada (stdio)");
}

#[tokio::test]
async fn an_integrations_own_sandbox_rules_widen_its_packs() {
    let scripts = TempDir::new().expect("temp dir");
    let script = scripts.path().join("server.mjs");
    std::fs::write(&script, TINY_SERVER).expect("write the script");
    let data = TempDir::new().expect("temp dir");
    let file = data.path().join("data.txt");
    std::fs::write(&file, "only for reader").expect("write the data");
    let dir = org_dir("acme", None, "");
    let script = script.display().to_string();
    let folder = data.path().display().to_string();
    let add = |name: &str, rules: &[&str]| {
        let mut args = vec!["add", "--org", "acme", "--name", name];
        args.extend(rules);
        args.extend(["--", "node", &script, "stdio"]);
        integrations_output(dir.path(), &args, &[])
    };
    let id_of = |output: Output| {
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    let plain = id_of(add("plain", &[]));
    let reader = id_of(add(
        "reader",
        &["--read", &folder, "--limits", "processes=64"],
    ));
    let unconfined = add("free", &["--sandbox", "off"]);
    let warned = String::from_utf8_lossy(&unconfined.stderr).into_owned();
    assert!(warned.contains("runs unconfined"), "{warned}");
    let free = id_of(unconfined);
    for (rules, said) in [
        (
            &["--limits", "memory_mb=0"][..],
            "`limits.memory_mb` is 0, which would refuse every child",
        ),
        (&["--limits", "memory=1"], "unknown field `memory`"),
        (&["--read", "data"], "`--read data` is not an absolute path"),
        (&["--sandbox", "maybe"], "give `on` or `off`"),
    ] {
        let output = add("bad", rules);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success() && stderr.contains(said),
            "{rules:?}: {stderr}"
        );
    }
    let listed = integrations(dir.path(), &["list", "--org", "acme", "--json"], &[]);
    assert!(
        listed.contains(&format!("\"read\":[{folder:?}]")),
        "{listed}"
    );
    let host = TestHost::start_in(dir).await;
    let read = async |id: &str| {
        let result = ok(&execute(&host, id, "greet", json!({"path": file})).await);
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(read(&plain).await, "denied: EACCES");
    assert_eq!(read(&reader).await, "read: only for reader");
    assert_eq!(read(&free).await, "read: only for reader");
    read(&free).await;
    let log = host.stderr();
    let warnings = log
        .lines()
        .filter(|line| line.contains("`free`") && line.contains("its server runs unconfined"));
    assert_eq!(warnings.count(), 1, "{log}");
    // The organisation sees its integrations, not the host's paths.
    let listed = text(&host.call("remote_mcp.list_integrations", json!({})).await);
    assert!(
        listed.contains(&reader) && !listed.contains(&folder),
        "{listed}"
    );
}

#[tokio::test]
async fn a_server_that_dies_at_start_says_why_without_its_secrets() {
    let dir = org_dir("acme", None, "");
    let node_e = |code: &str| ["node", "-e", code].map(str::to_owned);
    let boom = add_stdio(
        dir.path(),
        "acme",
        "boom",
        // Split, so that the command line (in the error too) does not say it.
        &node_e("console.error('boom: missing ' + 'config X'); process.exit(1)"),
    );
    let mut command = vec!["add", "--org", "acme", "--name", "leaky", "--env"];
    command.extend(["TOKEN=s3cr3t", "--", "node", "-e"]);
    command.push("console.error('starting with token ' + process.env.TOKEN); process.exit(1)");
    let leaky = integrations(dir.path(), &command, &[]);
    let host = TestHost::start_in(dir).await;
    failed(
        &execute(&host, &boom, "echo", json!({})).await,
        "UPSTREAM_ERROR",
        &["boom: missing config X"],
    );
    let said = failed(
        &execute(&host, &leaky, "echo", json!({})).await,
        "UPSTREAM_ERROR",
        &["starting with token ***"],
    );
    let everything_said = format!("{said}{}", host.stderr());
    assert!(
        !everything_said.contains("s3cr3t"),
        "a secret leaked: {everything_said}"
    );
}
