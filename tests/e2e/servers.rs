//! Server packs (`[packs.<name>] kind = "mcp"`): another MCP server's tools
//! as `<name>.<tool>` in `tools/list`, `run` and code mode.

use std::{
    path::{Path, PathBuf},
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

/// The server's own titles and annotations reach `tools/list`, and its
/// content blocks (images, resource links) reach the client as it sent them.
#[tokio::test]
async fn server_everything_titles_annotations_and_content_pass_through() {
    let host = TestHost::start(&stdio_section("everything", &everything_stdio())).await;
    let tools = host.client.list_all_tools().await.expect("tools/list");
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let hints = |name: &str| {
        let a = tool(name).annotations.clone().expect("annotations");
        (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        )
    };
    // As server-everything declares them (its tools/echo.js, gzip-file-as-resource.js).
    assert_eq!(tool("everything.echo").title.as_deref(), Some("Echo Tool"));
    assert_eq!(
        hints("everything.echo"),
        (Some(true), Some(false), Some(true), Some(false))
    );
    assert_eq!(
        tool("everything.gzip_file_as_resource").title.as_deref(),
        Some("GZip File as Resource Tool")
    );
    assert_eq!(
        hints("everything.gzip_file_as_resource"),
        (Some(false), Some(false), Some(true), Some(true))
    );

    let image = host.call("everything.get_tiny_image", json!({})).await;
    ok(&image);
    let blocks: Vec<_> = image.content.iter().filter_map(|c| c.as_image()).collect();
    assert_eq!(blocks.len(), 1, "{:?}", image.content);
    assert_eq!(blocks[0].mime_type, "image/png");
    // The text is the server's, without the base64.
    let said = text(&image);
    assert!(!said.contains(&blocks[0].data), "{said}");
    let links = host
        .call("everything.get_resource_links", json!({"count": 2}))
        .await;
    ok(&links);
    let uris: Vec<&str> = links
        .content
        .iter()
        .filter_map(|c| c.as_resource_link())
        .map(|link| link.uri.as_str())
        .collect();
    assert_eq!(uris.len(), 2, "{:?}", links.content);
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

/// How many times the host's log says a caller's connection to server pack
/// `name` was made (each caller has its own: `name@org/user/session`).
fn connections(log: &str, name: &str) -> usize {
    log.lines()
        .filter(|l| l.contains(&format!("`{name}@")))
        .filter(|l| l.contains("`: connected to") || l.contains("`: reconnected to"))
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

#[tokio::test]
async fn a_server_that_dies_at_start_up_says_why_in_the_log_without_its_secrets() {
    // Split, so that the command line (in the log too) does not say it.
    let code =
        "console.error('boom: missing ' + 'config X, token ' + process.env.TOKEN); process.exit(1)";
    let command = ["node", "-e", code].map(str::to_owned);
    let section = stdio_section("boom", &command) + "env = { TOKEN = \"s3cr3t\" }\n";
    let host = TestHost::start(&section).await;
    let log = host.stderr();
    assert!(
        log.lines().any(|l| l.contains("is not answering")
            && l.contains("its stderr ends: boom: missing config X, token ***")),
        "{log}"
    );
    assert!(!log.contains("s3cr3t"), "a secret leaked: {log}");
}

#[tokio::test]
async fn tools_whose_names_normalise_alike_are_both_served() {
    // The fixture lists `get-sum`, then `get_sum`.
    let fixture = vec![fixture_mcp_bin().display().to_string(), "--twins".into()];
    let host = TestHost::start(&stdio_section("fx", &fixture)).await;
    let names = tool_names(&host).await;
    for tool in ["fx.get_sum", "fx.get_sum_2"] {
        assert!(
            names.iter().any(|n| n == tool),
            "{tool} missing from {names:?}"
        );
    }
    // The name that is already an identifier keeps it.
    let sum = ok(&host.run("fx.get_sum(2, 3)").await);
    assert_eq!(sum["text"], "get_sum: 5");
    let sum = ok(&host.call("fx.get_sum_2", json!({"a": 2, "b": 3})).await);
    assert_eq!(sum["text"], "get-sum: 5");
    let log = host.stderr();
    assert!(
        log.lines().any(|l| l.contains("WARN")
            && l.contains("tools `get_sum` and `get-sum` of the server both make `get_sum`")
            && l.contains("`get-sum` is served as `fx.get_sum_2`")),
        "{log}"
    );
}

#[test]
fn an_alias_into_a_server_pack_that_answers_is_checked_at_start() {
    let fixture = vec![fixture_mcp_bin().display().to_string()];
    let config = stdio_section("fx", &fixture) + "[aliases]\nsay = \"fx.ech\"\n";
    let output = packhost_cli(&config, &["check"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "/packs.toml:5: `aliases.say` = \"fx.ech\": pack `fx` has no function `ech`; \
             did you mean `fx.echo`?"
        ),
        "{stderr}"
    );
}

#[tokio::test]
async fn an_alias_into_a_server_that_answers_late_is_checked_when_it_does() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let config = http_section("late", &url) + "[aliases]\nsay = \"late.ech\"\n";
    let host = TestHost::start(&config).await;
    let _server = HttpServer::fixture(port);
    let warning = "/packs.toml:5: `aliases.say` = \"late.ech\": pack `late` has no function \
                   `ech`; did you mean `late.echo`?";
    let deadline = Instant::now() + Duration::from_secs(40);
    while !host
        .stderr()
        .lines()
        .any(|l| l.contains("WARN") && l.contains(warning))
    {
        assert!(
            Instant::now() < deadline,
            "no warning about the alias:\n{}",
            host.stderr()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ok(&host.run("late.echo(text='x')").await);
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

/// What a confined stdio server of the fixture tries that must be refused:
/// `(tool, arguments)`, each answered `ok: ...` or `denied: ...`.
pub(crate) fn escapes(host_dir: &Path) -> Vec<(&'static str, serde_json::Value)> {
    let home = std::env::var("HOME").expect("HOME is set for the tests");
    vec![
        ("read", json!({"path": "/etc/shadow"})),
        ("read", json!({"path": home})),
        ("read", json!({"path": host_dir.join("packs.toml")})),
        ("signal_parent", json!({})),
    ]
}

/// What the fixture's tool answered (`ok: ...` or `denied: ...`).
fn answer(result: &rmcp::model::CallToolResult) -> String {
    ok(result)["text"].as_str().expect("text").to_owned()
}

#[tokio::test]
async fn a_stdio_server_is_confined_and_still_reaches_the_network() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address").to_string();
    let fixture = vec![fixture_mcp_bin().display().to_string()];
    // With the sandbox off every attempt succeeds: the attempts are real.
    for sandbox in ["on", "off"] {
        let config = stdio_section("fx", &fixture) + &format!("sandbox = {sandbox:?}\n");
        let host = TestHost::start(&config).await;
        for (tool, args) in escapes(host.dir.path()) {
            let said = answer(&host.call(&format!("fx.{tool}"), args.clone()).await);
            let expected = if sandbox == "on" { "denied: " } else { "ok: " };
            assert!(
                said.starts_with(expected),
                "sandbox {sandbox}: {tool} {args} said {said}"
            );
        }
        let connected = answer(&host.call("fx.connect", json!({"addr": addr})).await);
        assert!(
            connected.starts_with("ok: "),
            "sandbox {sandbox}: {connected}"
        );
        let warned = host.stderr().contains("the server runs unconfined");
        assert_eq!(warned, sandbox == "off", "{}", host.stderr());
    }
}

/// The folder server-everything was installed into (`npm install --prefix`).
fn npm_prefix() -> PathBuf {
    let entry = PathBuf::from(everything_stdio()[1].clone());
    entry
        .ancestors()
        .find(|a| a.ends_with("node_modules"))
        .and_then(Path::parent)
        .expect("server-everything lives in a node_modules folder")
        .to_owned()
}

#[tokio::test]
async fn an_npx_server_runs_confined() {
    // npx runs npm, which wants a writable cache: the server's HOME (its
    // scratch folder) has one.
    let command = ["npx", "--prefix", &npm_prefix().display().to_string()]
        .into_iter()
        .chain(["mcp-server-everything", "stdio"])
        .map(String::from)
        .collect::<Vec<_>>();
    let host = TestHost::start(&stdio_section("everything", &command)).await;
    let echo = ok(&host
        .call("everything.echo", json!({"message": "through npx"}))
        .await);
    assert_eq!(echo["text"], "Echo: through npx", "{}", host.stderr());
}

#[tokio::test]
async fn a_server_the_sandbox_refuses_says_why() {
    // Past the kernel's `fs.nr_open`: no process may have that many files,
    // so the helper cannot set the bound and refuses to start the server.
    let fixture = vec![fixture_mcp_bin().display().to_string()];
    let config = stdio_section("fx", &fixture) + "limits = { open_files = 4000000000 }\n";
    let host = TestHost::start(&config).await;
    // The call says why, not only that it has not answered.
    failed(
        &host.run("fx.echo(text='x')").await,
        "UNKNOWN_FUNCTION",
        &[
            "has not answered (last try: ",
            "the sandbox refused to start it: cannot set the open_files bound",
        ],
    );
    // Start-up says why in the log.
    let log = host.stderr();
    assert!(
        log.contains("the sandbox refused to start it: cannot set the open_files bound"),
        "{log}"
    );
}

#[test]
fn sandbox_settings_of_server_packs_are_checked() {
    for (config, said) in [
        (
            "[packs.x]\nkind = \"mcp\"\nurl = \"http://h/mcp\"\nsandbox = \"off\"\n",
            "`packs.x.sandbox` confines a stdio server",
        ),
        (
            "[packs.x]\nkind = \"mcp\"\ncommand = [\"s\"]\nlimits = { memory_mb = 0 }\n",
            "`limits.memory_mb` is 0",
        ),
        ("[packs.exec_py]\nwrite = [\"/x\"]\n", "in its `config`"),
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

#[tokio::test]
async fn a_subscription_hears_of_tools_that_appear() {
    use rmcp::model::{ServerNotification, SubscriptionFilter};
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let host = packhost_tests::http::HttpHost::start(&http_section("late", &url), &[]).await;
    let client = host.stateless_client().await.expect("server/discover");
    let wanted = SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = client
        .peer()
        .listen(wanted.clone())
        .await
        .expect("subscriptions/listen");
    assert_eq!(subscription.acknowledged(), &wanted);
    let _server = HttpServer::fixture(port);
    let heard = tokio::time::timeout(Duration::from_secs(40), subscription.next())
        .await
        .expect("a notification within the retry delay")
        .expect("the stream");
    assert!(
        matches!(
            heard,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{heard:?}"
    );
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "late.echo"));
}
