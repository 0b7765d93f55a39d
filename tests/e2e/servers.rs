//! Server packs (`[packs.<name>] kind = "mcp"`): another MCP server's tools
//! as `<name>.<tool>` in `tools/list`, `run` and code mode.

use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use packhost_tests::{
    TestHost,
    downstream::{HttpServer, everything_stdio, fixture_mcp_bin, free_port},
    failed, is_error, ok, packhost_cli, text, wait_group_gone,
};
use serde_json::json;

fn stdio_section(name: &str, command: &[String]) -> String {
    format!("[packs.{name}]\nkind = \"mcp\"\ncommand = {command:?}\n")
}

fn http_section(name: &str, url: &str) -> String {
    format!("[packs.{name}]\nkind = \"mcp\"\nurl = {url:?}\n")
}

async fn tool_names(host: &TestHost) -> Vec<String> {
    host.client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

#[tokio::test]
async fn server_everything_is_a_pack_in_tools_run_and_code_mode() {
    let config = stdio_section("everything", &everything_stdio()) + "[packs.exec_py]\n";
    let host = TestHost::start(&config).await;
    let names = tool_names(&host).await;
    for tool in ["everything.echo", "everything.get_sum"] {
        assert!(
            names.iter().any(|n| n == tool),
            "{tool} missing from {names:?}"
        );
    }
    let echo = ok(&host
        .call("everything.echo", json!({"message": "direct"}))
        .await);
    assert_eq!(echo["text"], "Echo: direct");
    let run = ok(&host.run("everything.get_sum(2, b=40)").await);
    assert!(run["text"].as_str().unwrap().contains("42"), "{run}");
    let code = ok(&host
        .run("```python\nr = everything.echo(message='from python')\nr['text']\n```")
        .await);
    assert_eq!(code["result"], "Echo: from python");
    // Arguments are checked against the server's own schema before the call.
    let wrong = host.run("everything.get_sum(a='x', b=1)").await;
    failed(&wrong, "INVALID_ARGUMENT", &["get_sum"]);
}

#[tokio::test]
async fn a_stdio_server_ends_with_a_killed_host() {
    let fixture = vec![fixture_mcp_bin().display().to_string()];
    let host = TestHost::start(&stdio_section("fx", &fixture)).await;
    let pid = ok(&host.run("fx.pid()").await)["pid"].as_u64().unwrap() as u32;
    // SIGKILL: no clean-up code of the host runs. The server sees its stdin
    // close and exits; it leads its own process group.
    // SAFETY: sending a signal to our own child.
    unsafe {
        libc::kill(host.pid as libc::pid_t, libc::SIGKILL);
    }
    if let Err(live) = wait_group_gone(pid, Duration::from_secs(10)).await {
        panic!("the server outlived the killed host: {live:?}");
    }
}

#[tokio::test]
async fn failures_of_a_server_pack_are_results_and_a_crash_recovers() {
    let fixture = vec![fixture_mcp_bin().display().to_string()];
    let host = TestHost::start(&stdio_section("fx", &fixture)).await;
    failed(
        &host.run("fx.fail(message='no luck')").await,
        "EXECUTION_ERROR",
        &["no luck"],
    );
    let first = pid(&host).await;
    failed(
        &host.run("fx.crash()").await,
        "UPSTREAM_ERROR",
        &["closed the connection"],
    );
    if let Err(live) = wait_group_gone(first, Duration::from_secs(10)).await {
        panic!("the crashed server still runs: {live:?}");
    }
    // The crash was not sent to a new server (it would have crashed too: a
    // second start in the log).
    assert_eq!(connections(&host.stderr(), "fx"), 1, "{}", host.stderr());
    let echo = ok(&host.run("fx.echo(text='back')").await);
    assert_eq!(echo["text"], "echo: back");
    assert_eq!(connections(&host.stderr(), "fx"), 2, "{}", host.stderr());
}

/// The pid of the fixture server behind the server pack `fx`.
async fn pid(host: &TestHost) -> u32 {
    ok(&host.run("fx.pid()").await)["pid"]
        .as_u64()
        .expect("pid") as u32
}

/// How many times the host's log says server pack `name` was connected.
fn connections(log: &str, name: &str) -> usize {
    log.lines()
        .filter(|l| {
            l.contains(&format!("`{name}`: connected to"))
                || l.contains(&format!("`{name}`: reconnected to"))
        })
        .count()
}

#[tokio::test]
async fn a_killed_stdio_server_is_restarted_by_the_next_call() {
    let fixture = vec![fixture_mcp_bin().display().to_string()];
    let host = TestHost::start(&stdio_section("fx", &fixture)).await;
    let mut before = pid(&host).await;
    // Many rounds, as a killed server ends in steps (its main thread first,
    // the others and its pipes a moment later) and only some rounds call in
    // between.
    for round in 0..30 {
        // SAFETY: signalling the fixture server this test started.
        unsafe {
            libc::kill(before as libc::pid_t, libc::SIGKILL);
        }
        if let Err(live) = wait_group_gone(before, Duration::from_secs(10)).await {
            panic!("the killed server still runs: {live:?}");
        }
        let result = host.run("fx.pid()").await;
        assert!(
            !is_error(&result),
            "round {round}: the call after the kill failed: {}",
            text(&result)
        );
        let after = ok(&result)["pid"].as_u64().expect("pid") as u32;
        assert_ne!(after, before, "round {round}: the killed server answered");
        before = after;
    }
}

#[tokio::test]
async fn a_server_down_at_start_up_comes_back_when_it_answers() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let started = Instant::now();
    let host = TestHost::start(&(http_section("late", &url) + "[packs.proj]\n")).await;
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "a dead server held the start-up for {:?}",
        started.elapsed()
    );
    ok(&host.run("proj.list()").await);
    failed(
        &host.run("late.echo(text='x')").await,
        "UNKNOWN_FUNCTION",
        &["has not answered"],
    );

    assert_eq!(host.recorder.tools_changed.load(Ordering::SeqCst), 0);
    let _server = HttpServer::fixture(port);
    // The client is told, and its next tools/list has them.
    let deadline = Instant::now() + Duration::from_secs(40);
    while host.recorder.tools_changed.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "no tools/list_changed notification came"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(tool_names(&host).await.iter().any(|n| n == "late.echo"));
    let echo = ok(&host.run("late.echo(text='here')").await);
    assert_eq!(echo["text"], "echo: here");
}

#[test]
fn server_pack_sections_are_checked() {
    for (config, said) in [
        ("[packs.x]\nkind = \"mcp\"\n", "exactly one of `command`"),
        (
            "[packs.x]\nkind = \"mcp\"\nurl = \"ftp://h/mcp\"\n",
            "has scheme `ftp`",
        ),
        (
            "[packs.x]\nkind = \"mcp\"\ncommand = []\n",
            "`packs.x.command` is empty",
        ),
        (
            "[packs.x]\nurl = \"http://h/mcp\"\n",
            "add `kind = \"mcp\"`",
        ),
    ] {
        let output = packhost_cli(config, &["check"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{config}: {stderr}");
        assert!(
            stderr.contains(said),
            "{config}: expected `{said}` in {stderr}"
        );
    }
}
