//! Test support: the real `packhost` binary in a fresh directory, and an MCP
//! client (rmcp over the child's stdio) to talk to it. Every tool call made
//! through it has its result checked as the official MCP clients check it
//! ([`schemas`]).
//!
//! ```no_run
//! # async fn demo() {
//! let host = packhost_tests::TestHost::start("[packs.proj]\n").await;
//! let result = host.run("proj.list()").await;
//! assert!(!packhost_tests::is_error(&result));
//! # }
//! ```
#![deny(missing_docs)]

pub mod bench;
pub mod bystander;
pub mod downstream;
pub mod http;
pub mod instances;
pub mod jupyter;
pub mod oauth;
pub mod official;
pub mod postgres;
pub mod schemas;

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicUsize, Ordering},
    },
};

use rmcp::{
    ClientHandler, RoleClient, ServiceExt as _,
    model::{CallToolRequestParams, CallToolResult, ProgressNotificationParam},
    service::{NotificationContext, RunningService},
    transport::TokioChildProcess,
};
use serde_json::Value;
use tempfile::TempDir;

/// `<target>/debug`: where cargo put this test binary's parent directory.
pub fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // <target>/debug/deps/e2e-<hash> or <target>/debug/packhost-bench
    let dir = exe.parent().expect("binary dir");
    if dir.ends_with("deps") {
        dir.parent().expect("profile dir").to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// The `packhost` binary built beside the tests, or `$PACKHOST_BIN` (a
/// benchmark measuring another build, with its packs beside it, in the
/// same run).
pub fn packhost_bin() -> PathBuf {
    let bin = std::env::var_os("PACKHOST_BIN")
        .map_or_else(|| build_dir().join("packhost"), PathBuf::from);
    assert!(
        bin.is_file(),
        "{} is missing: build the workspace first (`./dev test` does)",
        bin.display()
    );
    bin
}

/// Build the Cargo project `tests/fixtures/<project>` (a pack that lives
/// outside the workspace) and return its library `lib<lib>.so`. The host
/// binary is not rebuilt: that is the point.
pub fn fixture_pack(project: &str, lib: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = built.get(project) {
        return path.clone();
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(project)
        .join("Cargo.toml");
    let output = cargo_outside("build", &manifest);
    assert!(
        output.status.success(),
        "building fixture `{project}` failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let path = build_dir().join(format!("lib{lib}.so"));
    assert!(path.is_file(), "{} was not built", path.display());
    built.insert(project.to_owned(), path.clone());
    path
}

/// `cargo <command>` (`build`, `test`) on the crate of `manifest`, which
/// lives outside the workspace, in the workspace's target dir with its dev
/// profile: what the workspace compiled is reused, so only the crate builds.
pub fn cargo_outside(command: &str, manifest: &Path) -> Output {
    let target_root = build_dir().parent().expect("target root").to_path_buf();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    Command::new(cargo)
        .args([command, "--quiet", "--manifest-path"])
        .arg(manifest)
        .arg("--target-dir")
        .arg(target_root)
        .args(["--config", "profile.dev.debug=\"line-tables-only\""])
        .args(["--config", "profile.dev.package.\"*\".debug=false"])
        .output()
        .expect("run cargo")
}

/// The conformance suite's fixture pack (a workspace member, built beside
/// the tests).
pub fn conformance_pack() -> PathBuf {
    let path = build_dir().join("libconformance.so");
    assert!(
        path.is_file(),
        "{} is missing: build the workspace first (`./dev test` does)",
        path.display()
    );
    path
}

/// The `hello` fixture pack's library.
pub fn hello_pack() -> PathBuf {
    fixture_pack("hello-pack", "hello")
}

/// A `[packs.hello]` section loading the fixture pack, plus `extra` lines.
pub fn hello_section(extra: &str) -> String {
    format!(
        "[packs.hello]\npath = \"{}\"\n{extra}\n",
        hello_pack().display()
    )
}

/// `[search]` with the sentence model `./dev test` installs and names in
/// `PACKHOST_SEARCH_MODEL`.
pub fn search_model_section() -> String {
    let model = std::env::var("PACKHOST_SEARCH_MODEL").expect(
        "PACKHOST_SEARCH_MODEL names the sentence model: run the tests through `./dev test`",
    );
    format!("[search]\nmodel = {model:?}\n")
}

/// Records what the server sends besides responses.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    /// Every progress notification, in arrival order.
    pub progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    /// How many `notifications/tools/list_changed` arrived.
    pub tools_changed: Arc<AtomicUsize>,
    /// Every `notifications/message` (logger, level, text), in arrival
    /// order.
    pub logs: Arc<Mutex<Vec<(String, String, String)>>>,
    /// The output schemas results are checked against.
    pub schemas: schemas::Schemas,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.fetch_add(1, Ordering::SeqCst);
    }

    #[allow(deprecated)] // MCP logging: deprecated in 2026-07-28, packhost serves 2025-11-25's
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level).unwrap_or_default();
        self.logs.lock().unwrap_or_else(|e| e.into_inner()).push((
            params.logger.unwrap_or_default(),
            level.as_str().unwrap_or_default().to_owned(),
            params.data.as_str().unwrap_or_default().to_owned(),
        ));
    }
}

/// A running `packhost serve` in its own directory with an MCP client.
pub struct TestHost {
    /// The MCP client session.
    pub client: RunningService<RoleClient, Recorder>,
    /// What the client heard besides responses.
    pub recorder: Recorder,
    /// The directory the host runs in (holds `packs.toml` and `stderr.log`).
    pub dir: TempDir,
    /// The host's process id.
    pub pid: u32,
}

/// A `packhost` command in `dir` with no `PACKHOST_*` or other variables of
/// ours leaking in.
pub fn packhost_command(dir: &Path) -> Command {
    let mut command = Command::new(packhost_bin());
    command.current_dir(dir).env_clear();
    for key in ["PATH", "HOME", "LANG", "RUST_BACKTRACE"] {
        if let Some(value) = std::env::var_os(key) {
            command.env(key, value);
        }
    }
    command
}

/// Run the CLI with `args` on `config` written to a fresh directory.
pub fn packhost_cli(config: &str, args: &[&str]) -> Output {
    let dir = TempDir::new().expect("temp dir");
    std::fs::write(dir.path().join("packs.toml"), config).expect("write config");
    packhost_command(dir.path())
        .args(args)
        .output()
        .expect("run packhost")
}

impl TestHost {
    /// Start `packhost serve` on `config` (the text of a `packs.toml`).
    pub async fn start(config: &str) -> Self {
        let dir = TempDir::new().expect("temp dir");
        std::fs::write(dir.path().join("packs.toml"), config).expect("write config");
        Self::start_in(dir).await
    }

    /// Start `packhost serve` in `dir`, which holds `packs.toml`.
    pub async fn start_in(dir: TempDir) -> Self {
        let stderr = std::fs::File::create(dir.path().join("stderr.log")).expect("stderr log");
        let mut command = tokio::process::Command::from(packhost_command(dir.path()));
        command.arg("serve");
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(Stdio::from(stderr))
            .spawn()
            .expect("spawn packhost");
        let pid = transport.id().expect("a running child has a pid");
        let recorder = Recorder::default();
        let client = recorder.clone().serve(transport).await.unwrap_or_else(|e| {
            let log = std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default();
            panic!("MCP handshake failed: {e}\nstderr:\n{log}")
        });
        Self {
            client,
            recorder,
            dir,
            pid,
        }
    }

    /// The host's resident memory, in KiB.
    pub fn rss_kib(&self) -> u64 {
        bench::memory_kib(self.pid, "VmRSS").unwrap_or(0)
    }

    /// The most the host has been resident since it started, in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        bench::memory_kib(self.pid, "VmHWM").unwrap_or(0)
    }

    /// `tools/call name args`; a protocol error fails the test, and so does
    /// a result the official MCP clients would refuse ([`schemas`]).
    pub async fn call(&self, name: &str, args: Value) -> CallToolResult {
        call(&self.client, name, args).await.unwrap_or_else(|e| {
            panic!(
                "tools/call {name} failed at the protocol level: {e}\n{}",
                self.stderr()
            )
        })
    }

    /// `tools/call run {command}`.
    pub async fn run(&self, command: &str) -> CallToolResult {
        self.call("run", serde_json::json!({ "command": command }))
            .await
    }

    /// What the host wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }
}

/// A `[results]` section that sends every result whole, for tests of a
/// pack's own caps (the host would otherwise keep them and send a preview).
pub const WHOLE_RESULTS: &str = "\n[results]\nmax_result_chars = 0\n";

/// The `typescript` npm package (7, the native compiler) that `./dev test`
/// installs and exports as `PACKHOST_TEST_TYPESCRIPT`.
pub fn typescript_package() -> PathBuf {
    std::env::var_os("PACKHOST_TEST_TYPESCRIPT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "PACKHOST_TEST_TYPESCRIPT is not set: run the tests with `./dev test`, which \
                 installs the typescript npm package"
            )
        })
}

/// The test venv's Python (ipykernel, jupyter_server, Pillow, `mcp`):
/// `PACKHOST_TEST_PYTHON`, which `./dev test` and `./dev bench` set, else
/// the venv they make.
pub fn venv_python() -> String {
    if let Ok(python) = std::env::var("PACKHOST_TEST_PYTHON") {
        return python;
    }
    let venv = PathBuf::from(std::env::var("HOME").unwrap_or_default())
        .join(".cache/packhost-venv/bin/python");
    assert!(
        venv.exists(),
        "no test venv: run `./dev test` (it installs tests/requirements.txt into \
         ~/.cache/packhost-venv), or set PACKHOST_TEST_PYTHON"
    );
    venv.display().to_string()
}

/// Wait until process group `group` has no live member (zombies do not
/// count: they only wait for their reaper); after `within`, `Err` with the
/// members still alive.
pub async fn wait_group_gone(group: u32, within: std::time::Duration) -> Result<(), Vec<u32>> {
    let deadline = std::time::Instant::now() + within;
    loop {
        let live = pack_process::live_members(group);
        if live.is_empty() {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            return Err(live);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// What code wrote to `path`, parsed, once the write has landed (the file
/// exists before it does); `None` when it has not after `within`.
pub async fn written<T: std::str::FromStr>(path: &Path, within: std::time::Duration) -> Option<T> {
    let deadline = std::time::Instant::now() + within;
    loop {
        let parsed = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.parse().ok());
        if parsed.is_some() || std::time::Instant::now() >= deadline {
            return parsed;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// `tools/call name args` through any client of ours (stdio or HTTP), its
/// result checked against the tool's output schema ([`schemas::call_tool`]).
pub async fn call(
    client: &RunningService<RoleClient, Recorder>,
    name: &str,
    args: Value,
) -> Result<CallToolResult, rmcp::service::ServiceError> {
    let mut params = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(map) = args {
        params = params.with_arguments(map);
    }
    schemas::call_tool(client, params).await
}

/// Whether the result is an error result.
pub fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// The structured content (`null` when absent).
pub fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

/// The first text content.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .find_map(|c| c.as_text().map(|t| t.text.clone()))
        .unwrap_or_default()
}

/// The error object of an error result, `{code, message, help?, data?}`:
/// in `_meta["packhost/error"]` (every error result has it), else in
/// structured content `{"error": …}` (`null` when neither).
pub fn error_of(result: &CallToolResult) -> Value {
    result
        .meta
        .as_ref()
        .and_then(|meta| meta.get("packhost/error"))
        .cloned()
        .unwrap_or_else(|| structured(result)["error"].clone())
}

/// The error code of an error result (see [`error_of`]), else the start of
/// its text.
pub fn error_code(result: &CallToolResult) -> String {
    match error_of(result)["code"].as_str() {
        Some(code) => code.to_owned(),
        None => text(result)
            .split(':')
            .next()
            .unwrap_or_default()
            .to_owned(),
    }
}

/// The first line of an error result's text: `CODE: what was wrong`, which
/// must also say what to do.
#[track_caller]
pub fn first_line(result: &CallToolResult) -> String {
    assert!(is_error(result), "expected an error, got {}", text(result));
    text(result).lines().next().unwrap_or_default().to_owned()
}

/// Assert the result succeeded and return its structured content.
#[track_caller]
pub fn ok(result: &CallToolResult) -> Value {
    assert!(
        !is_error(result),
        "expected success, got error: {}",
        text(result)
    );
    structured(result)
}

/// Assert the result failed with `code` and its text contains every one of
/// `parts`; return the text.
#[track_caller]
pub fn failed(result: &CallToolResult, code: &str, parts: &[&str]) -> String {
    assert!(
        is_error(result),
        "expected error {code}, got success: {}",
        text(result)
    );
    let text = text(result);
    assert_eq!(error_code(result), code, "error code; text: {text}");
    for part in parts {
        assert!(text.contains(part), "error text lacks {part:?}:\n{text}");
    }
    text
}
