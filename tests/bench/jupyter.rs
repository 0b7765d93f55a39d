//! `packhost-bench-jupyter`: `jupyter.execute_code("x+1")` on a warm session
//! through the real host, beside, in the same run, Python's `jupyter_client`
//! doing the same directly against its own kernel and the reference
//! `jupyter-mcp-server` doing it through its MCP tool (against a Jupyter
//! Server started here on loopback); and kernel start → first result.
//!
//! Usage: `packhost-bench-jupyter [--calls N] [--starts N] [--mcp-calls N]`
//! (defaults 200, 5, 20; jupyter-mcp-server takes about a second a call).
//! Python comes from `PACKHOST_TEST_PYTHON` (set by `./dev bench`), else
//! `~/.cache/packhost-venv/bin/python`.

use std::{
    net::TcpListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use packhost_tests::{
    TestHost,
    bench::{Row, arg, ms, percentile, print_table, ratio, samples},
    is_error, structured, text,
};
use rmcp::{
    ServiceExt,
    model::CallToolRequestParams,
    transport::{ConfigureCommandExt, TokioChildProcess},
};
use serde_json::{Value, json};

/// Python's `jupyter_client` against its own kernel (IPC, like the pack).
const JUPYTER_CLIENT: &str = r#"
import json, sys, tempfile, time, os
from jupyter_client.manager import KernelManager
calls, starts = int(sys.argv[1]), int(sys.argv[2])
os.chdir(tempfile.mkdtemp())
quiet = lambda msg: None
def start():
    km = KernelManager(kernel_name="python3", transport="ipc")
    km.start_kernel(extra_arguments=["--HistoryManager.enabled=False"])
    kc = km.client(); kc.start_channels(); kc.wait_for_ready(timeout=60)
    kc.execute_interactive("1", output_hook=quiet, timeout=30)
    return km, kc
start_ms = []
for _ in range(starts):
    t = time.perf_counter(); km, kc = start(); start_ms.append((time.perf_counter() - t) * 1000)
    kc.stop_channels(); km.shutdown_kernel(now=True)
km, kc = start()
kc.execute_interactive("x = 1", output_hook=quiet, timeout=30)
samples = []
for i in range(calls + 10):
    t = time.perf_counter()
    reply = kc.execute_interactive("x+1", output_hook=quiet, timeout=30)
    if i >= 10: samples.append((time.perf_counter() - t) * 1000)
    assert reply["content"]["status"] == "ok"
kc.stop_channels(); km.shutdown_kernel(now=True)
print(json.dumps({"start_ms": start_ms, "samples_ms": samples}))
"#;

fn python() -> String {
    std::env::var("PACKHOST_TEST_PYTHON").unwrap_or_else(|_| {
        PathBuf::from(std::env::var("HOME").unwrap_or_default())
            .join(".cache/packhost-venv/bin/python")
            .display()
            .to_string()
    })
}

fn millis(values: &Value) -> Vec<Duration> {
    values
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_f64)
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .collect()
}

async fn call_ok(host: &TestHost, name: &str, args: Value) -> Value {
    let result = host.call(name, args).await;
    assert!(!is_error(&result), "{name}: {}", text(&result));
    structured(&result)
}

/// A `jupyter server` on loopback, killed (group and all) on drop.
struct JupyterServer {
    child: Child,
    url: String,
    token: String,
    _root: tempfile::TempDir,
}

impl JupyterServer {
    fn start(python: &str) -> Result<Self, String> {
        let root = tempfile::TempDir::new().map_err(|e| e.to_string())?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let token = format!("bench{}", std::process::id());
        let mut command = Command::new(python);
        command
            .args(["-m", "jupyter_server", "--no-browser", "--allow-root"])
            .arg("--ServerApp.ip=127.0.0.1")
            .arg(format!("--ServerApp.port={port}"))
            .arg(format!("--IdentityProvider.token={token}"))
            .arg(format!("--ServerApp.root_dir={}", root.path().display()))
            .env("JUPYTER_CONFIG_DIR", root.path().join("config"))
            .env("JUPYTER_RUNTIME_DIR", root.path().join("runtime"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let server = Self {
            child: command.spawn().map_err(|e| e.to_string())?,
            url: format!("http://127.0.0.1:{port}"),
            token,
            _root: root,
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if started.elapsed() > Duration::from_secs(60) {
                return Err("jupyter server did not listen within 60 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(server)
    }
}

impl Drop for JupyterServer {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: signalling the process group started above.
        unsafe { libc::killpg(pgid, libc::SIGTERM) };
        std::thread::sleep(Duration::from_secs(2));
        // SAFETY: as above.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
        let _ = self.child.wait();
    }
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
        c.args(["start", "--transport", "stdio", "--document-id", "bench.ipynb"])
            .args(["--jupyter-url", &server.url, "--jupyter-token", &server.token]);
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
    let python = python();

    // Python's jupyter_client, its own kernel.
    let output = tokio::process::Command::new(&python)
        .args(["-c", JUPYTER_CLIENT])
        .arg(calls.to_string())
        .arg(starts.to_string())
        .stderr(Stdio::inherit())
        .output()
        .await
        .expect("run the jupyter_client reference");
    assert!(
        output.status.success(),
        "the jupyter_client reference failed"
    );
    let reference: Value = serde_json::from_slice(&output.stdout).expect("its JSON");
    let (raw, raw_start) = (
        millis(&reference["samples_ms"]),
        millis(&reference["start_ms"]),
    );

    // packhost: start → first result, then a warm session.
    let config =
        format!("[packs.jupyter]\ntimeout_ms = 600000\nconfig = {{ python = {python:?} }}\n");
    let host = TestHost::start(&config).await;
    let mut start = Vec::with_capacity(starts);
    for _ in 0..starts {
        let started = Instant::now();
        let session = call_ok(&host, "jupyter.session_create", json!({})).await;
        let id = session["session_id"].clone();
        let out = call_ok(
            &host,
            "jupyter.execute_code",
            json!({"session_id": id, "code": "1"}),
        )
        .await;
        start.push(started.elapsed());
        assert_eq!(out["result"], "1");
        call_ok(&host, "jupyter.session_close", json!({"session_id": id})).await;
    }
    let session = call_ok(&host, "jupyter.session_create", json!({})).await["session_id"].clone();
    call_ok(
        &host,
        "jupyter.execute_code",
        json!({"session_id": session, "code": "x = 1"}),
    )
    .await;
    let warm = samples(10, calls, async || {
        let out = call_ok(
            &host,
            "jupyter.execute_code",
            json!({"session_id": session, "code": "x+1"}),
        )
        .await;
        assert_eq!(out["result"], "2");
    })
    .await;
    host.client.cancel().await.expect("stop client");

    let mcp = jupyter_mcp_server(&python, mcp_calls).await;

    let (warm50, raw50) = (percentile(&warm, 0.5), percentile(&raw, 0.5));
    let mut rows = vec![
        Row {
            metric: "`execute_code(\"x+1\")` warm session, median".into(),
            value: ms(warm50),
            target: "≤ 1.0 × jupyter_client".into(),
            reference: format!("jupyter_client `execute_interactive`: {}", ms(raw50)),
            ratio: ratio(warm50, raw50),
        },
        Row {
            metric: "`execute_code(\"x+1\")` warm session, p99".into(),
            value: ms(percentile(&warm, 0.99)),
            target: "-".into(),
            reference: format!("jupyter_client p99: {}", ms(percentile(&raw, 0.99))),
            ratio: ratio(percentile(&warm, 0.99), percentile(&raw, 0.99)),
        },
    ];
    match &mcp {
        Ok(mcp) => {
            let mcp50 = percentile(mcp, 0.5);
            rows.push(Row {
                metric: "`execute_code(\"x+1\")` warm session, median".into(),
                value: ms(warm50),
                target: "≤ 0.3 × jupyter-mcp-server".into(),
                reference: format!(
                    "jupyter-mcp-server `execute_code` ({} calls): {}",
                    mcp.len(),
                    ms(mcp50)
                ),
                ratio: ratio(warm50, mcp50),
            });
        }
        Err(e) => eprintln!("jupyter-mcp-server not measured: {e}"),
    }
    let (start50, raw_start50) = (percentile(&start, 0.5), percentile(&raw_start, 0.5));
    rows.push(Row {
        metric: "kernel start → first result (session_create + execute), median".into(),
        value: ms(start50),
        target: "-".into(),
        reference: format!(
            "jupyter_client start + wait_for_ready + execute: {}",
            ms(raw_start50)
        ),
        ratio: ratio(start50, raw_start50),
    });
    print_table(
        &format!("jupyter benchmark: {calls} warm calls, {starts} starts, python {python}"),
        &rows,
    );
}
