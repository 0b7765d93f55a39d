//! `packhost-bench-jupyter`: `jupyter.execute_code("x+1")` on a warm session
//! through the real host, beside, in the same run, Python's `jupyter_client`
//! doing the same directly against its own kernel (calls alternate, so both
//! see the same machine load) and the reference
//! `jupyter-mcp-server` doing it through its MCP tool (against a Jupyter
//! Server started here on loopback); and kernel start → first result. Each
//! pack figure is also measured with `sandbox = "off"` (a second host, its
//! calls alternating with the confined one's), so confinement's cost shows.
//!
//! Usage: `packhost-bench-jupyter [--calls N] [--starts N] [--mcp-calls N]`
//! (defaults 200, 5, 20; jupyter-mcp-server takes about a second a call).
//! Python comes from `PACKHOST_TEST_PYTHON` (set by `./dev bench`), else
//! `~/.cache/packhost-venv/bin/python`.

use std::{
    path::PathBuf,
    process::Stdio,
    time::{Duration, Instant},
};

use packhost_tests::{
    TestHost,
    bench::{Row, arg, percentile, print_table},
    is_error,
    jupyter::JupyterServer,
    structured, text, venv_python,
};
use rmcp::{
    ServiceExt,
    model::CallToolRequestParams,
    transport::{ConfigureCommandExt, TokioChildProcess},
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

/// Python's `jupyter_client` against its own kernel (IPC, like the pack),
/// driven line by line so that its calls interleave with the host's: both
/// see the same machine load. `start` times kernel start → first result;
/// `exec` times `x+1` on a warm kernel. Each answers with milliseconds.
const JUPYTER_CLIENT: &str = r#"
import sys, tempfile, time, os
from jupyter_client.manager import KernelManager
os.chdir(tempfile.mkdtemp())
quiet = lambda msg: None
def start():
    km = KernelManager(kernel_name="python3", transport="ipc")
    km.start_kernel(extra_arguments=["--HistoryManager.enabled=False"])
    kc = km.client(); kc.start_channels(); kc.wait_for_ready(timeout=60)
    kc.execute_interactive("1", output_hook=quiet, timeout=30)
    return km, kc
km, kc = start()
kc.execute_interactive("x = 1", output_hook=quiet, timeout=30)
print("ready", flush=True)
for line in sys.stdin:
    t = time.perf_counter()
    if line.strip() == "start":
        km2, kc2 = start()
        ms = (time.perf_counter() - t) * 1000
        kc2.stop_channels(); km2.shutdown_kernel(now=True)
    else:
        reply = kc.execute_interactive("x+1", output_hook=quiet, timeout=30)
        ms = (time.perf_counter() - t) * 1000
        assert reply["content"]["status"] == "ok"
    print(ms, flush=True)
kc.stop_channels(); km.shutdown_kernel(now=True)
"#;

/// The running reference.
struct Reference {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Reference {
    async fn start(python: &str) -> Self {
        let mut child = tokio::process::Command::new(python)
            .args(["-c", JUPYTER_CLIENT])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("run the jupyter_client reference");
        let stdin = child.stdin.take().expect("stdin");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        let ready = lines.next_line().await.expect("read").expect("a line");
        assert_eq!(ready, "ready", "the jupyter_client reference did not start");
        Self {
            child,
            stdin,
            lines,
        }
    }

    /// Run `command` and return the time it measured.
    async fn time(&mut self, command: &str) -> Duration {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .expect("write");
        let line = self.lines.next_line().await.expect("read").expect("a line");
        Duration::from_secs_f64(line.trim().parse::<f64>().expect("milliseconds") / 1000.0)
    }
}

async fn call_ok(host: &TestHost, name: &str, args: Value) -> Value {
    let result = host.call(name, args).await;
    assert!(!is_error(&result), "{name}: {}", text(&result));
    structured(&result)
}

/// Kernel start → first result: `session_create` + the first `execute_code`
/// (closing the session is not timed).
async fn time_start(host: &TestHost) -> Duration {
    let started = Instant::now();
    let session = call_ok(host, "jupyter.session_create", json!({})).await;
    let id = session["session_id"].clone();
    let out = call_ok(
        host,
        "jupyter.execute_code",
        json!({"session_id": id, "code": "1"}),
    )
    .await;
    let elapsed = started.elapsed();
    assert_eq!(out["result"], "1");
    call_ok(host, "jupyter.session_close", json!({"session_id": id})).await;
    elapsed
}

/// A session holding `x = 1`, for the warm calls.
async fn warm_session(host: &TestHost) -> Value {
    let session = call_ok(host, "jupyter.session_create", json!({})).await["session_id"].clone();
    call_ok(
        host,
        "jupyter.execute_code",
        json!({"session_id": session, "code": "x = 1"}),
    )
    .await;
    session
}

/// `execute_code("x+1")` on a warm session.
async fn time_exec(host: &TestHost, session: &Value) -> Duration {
    let started = Instant::now();
    let out = call_ok(
        host,
        "jupyter.execute_code",
        json!({"session_id": session, "code": "x+1"}),
    )
    .await;
    let elapsed = started.elapsed();
    assert_eq!(out["result"], "2");
    elapsed
}

/// `execute_code("x+1")` through jupyter-mcp-server's MCP tool.
async fn jupyter_mcp_server(python: &str, calls: usize) -> Result<Vec<Duration>, String> {
    let server = JupyterServer::start(python)?;
    let binary = PathBuf::from(python).with_file_name("jupyter-mcp-server");
    if !binary.exists() {
        return Err(format!(
            "{} is missing (pip install jupyter-mcp-server)",
            binary.display()
        ));
    }
    let command = tokio::process::Command::new(&binary).configure(|c| {
        c.args([
            "start",
            "--transport",
            "stdio",
            "--document-id",
            "bench.ipynb",
        ])
        .args([
            "--jupyter-url",
            &server.url,
            "--jupyter-token",
            &server.token,
        ]);
    });
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let client = ().serve(transport).await.map_err(|e| e.to_string())?;
    let call = async |code: &str| -> Result<(), String> {
        let params = CallToolRequestParams::new("execute_code").with_arguments(
            json!({ "code": code })
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        let result = client.call_tool(params).await.map_err(|e| e.to_string())?;
        if result.is_error == Some(true) {
            return Err(format!("execute_code failed: {:?}", result.content));
        }
        Ok(())
    };
    call("x = 1").await?;
    let mut out = Vec::with_capacity(calls);
    for i in 0..calls + 2 {
        let started = Instant::now();
        call("x+1").await?;
        if i >= 2 {
            out.push(started.elapsed());
        }
    }
    let _ = client.cancel().await;
    drop(server);
    Ok(out)
}

#[tokio::main]
async fn main() {
    let calls = arg("--calls", 200);
    let starts = arg("--starts", 5);
    let mcp_calls = arg("--mcp-calls", 20);
    let python = venv_python();

    let mut reference = Reference::start(&python).await;
    let config = |sandbox: &str| {
        format!(
            "[packs.jupyter]\ntimeout_ms = 600000\nconfig = {{ python = {python:?}, sandbox = {sandbox:?} }}\n"
        )
    };
    let host = TestHost::start(&config("on")).await;
    // The same pack unconfined, its calls alternating with the confined
    // host's: the difference is what the sandbox costs under the same load.
    let off = TestHost::start(&config("off")).await;

    // Kernel start → first result, alternating with the reference.
    let (mut start, mut off_start, mut raw_start) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..starts {
        start.push(time_start(&host).await);
        off_start.push(time_start(&off).await);
        raw_start.push(reference.time("start").await);
    }

    // Warm sessions: one call each, in turn.
    let (session, off_session) = (warm_session(&host).await, warm_session(&off).await);
    let (mut warm, mut off_warm, mut raw) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..calls + 10 {
        let ours = time_exec(&host, &session).await;
        let unconfined = time_exec(&off, &off_session).await;
        let theirs = reference.time("exec").await;
        if i >= 10 {
            warm.push(ours);
            off_warm.push(unconfined);
            raw.push(theirs);
        }
    }
    host.client.cancel().await.expect("stop client");
    off.client.cancel().await.expect("stop client");
    drop(reference.stdin);
    let _ = reference.child.wait().await;

    let mcp = jupyter_mcp_server(&python, mcp_calls).await;

    let p50 = |s: &[Duration]| percentile(s, 0.5);
    let p99 = |s: &[Duration]| percentile(s, 0.99);
    let row = Row::timed;
    let (warm50, off50, raw50) = (p50(&warm), p50(&off_warm), p50(&raw));
    let (start50, off_start50, raw_start50) = (p50(&start), p50(&off_start), p50(&raw_start));
    // Labels of more than one row.
    let median = "`execute_code(\"x+1\")` warm session, median";
    let (exec, exec99) = ("jupyter_client `execute_interactive`", "jupyter_client p99");
    let first = "jupyter_client start + wait_for_ready + execute";
    let mut rows = vec![
        row(median, warm50, "≤ 1.0 × jupyter_client", exec, raw50),
        row(
            "`execute_code(\"x+1\")` warm session, p99",
            p99(&warm),
            "-",
            exec99,
            p99(&raw),
        ),
        row("same, `sandbox = \"off\"`, median", off50, "-", exec, raw50),
        row(
            "same, `sandbox = \"off\"`, p99",
            p99(&off_warm),
            "-",
            exec99,
            p99(&raw),
        ),
    ];
    match &mcp {
        Ok(mcp) => rows.push(row(
            median,
            warm50,
            "≤ 0.3 × jupyter-mcp-server",
            &format!("jupyter-mcp-server `execute_code` ({} calls)", mcp.len()),
            p50(mcp),
        )),
        Err(e) => eprintln!("jupyter-mcp-server not measured: {e}"),
    }
    rows.extend([
        row(
            "kernel start → first result (session_create + execute), median",
            start50,
            "-",
            first,
            raw_start50,
        ),
        row(
            "same, `sandbox = \"off\"`",
            off_start50,
            "-",
            first,
            raw_start50,
        ),
        row(
            "warm median, confined vs `sandbox = \"off\"`",
            warm50,
            "-",
            "unconfined",
            off50,
        ),
        row(
            "kernel start, confined vs `sandbox = \"off\"`",
            start50,
            "-",
            "unconfined",
            off_start50,
        ),
    ]);
    print_table(
        &format!("jupyter benchmark: {calls} warm calls, {starts} starts, python {python}"),
        &rows,
    );
}
