//! `packhost-bench-exec-ts`: latency of TypeScript through the real host,
//! beside references measured in the same run.
//! - `run` of a TypeScript block that needs nothing of node's (it runs in a
//!   fresh realm of a warm worker), back to back and 16 at once, beside the
//!   same block made to need node (`void process`: a node process per
//!   call, the path every block took before) and a bare `node -e` spawn;
//! - `exec_ts.execute` on the node path: beside `npx tsx` on the same file
//!   (how Srcbook runs TypeScript), the tsx binary itself, and a bare
//!   `node -e` spawn, all with the environment the pack gives its children.
//!
//! This machine is shared and noisy: read ratios.
//!
//! Usage: `packhost-bench-exec-ts [--calls N] [--gap-ms N] [--run-calls N]
//! [--concurrent N] [--tsx-dir DIR]` (defaults 30 calls per `execute` row,
//! spaced by 100 ms, as between an agent's calls, so the warm pool has
//! refilled, and back to back; with the sandbox on and with `sandbox =
//! "off"`; 300 `run` calls back to back per path and 320 at 16 in flight;
//! tsx is installed with npm into DIR, default `~/.cache/packhost-bench-tsx`,
//! the first time).

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use packhost_tests::{
    TestHost,
    bench::{Row, arg, percentile, print_table, samples},
    is_error, structured, text,
};
use serde_json::json;

/// What `execute` runs on the node path (`void process` sends it there).
const CODE: &str = "const x: number = 1; void process; console.log(x)";

/// The `run` blocks: `1+1` in a realm, and made to need node.
const REALM_BLOCK: &str = "```ts\n1+1\n```";
const NODE_BLOCK: &str = "```ts\nvoid process;\n1+1\n```";

/// How many `run` calls are in flight at once in the concurrent rows.
const IN_FLIGHT: usize = 16;

/// tsx in `dir/node_modules`, installed with npm when missing.
fn ensure_tsx(dir: &Path) -> PathBuf {
    let bin = dir.join("node_modules/.bin/tsx");
    if !bin.exists() {
        eprintln!("==> installing tsx into {}", dir.display());
        std::fs::create_dir_all(dir).expect("tsx cache dir");
        let status = std::process::Command::new("npm")
            .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
            .arg(dir)
            .arg("tsx")
            .stdout(Stdio::null())
            .status()
            .expect("run npm (is Node.js installed?)");
        assert!(status.success(), "npm install tsx failed");
    }
    bin
}

/// A command with the environment the pack gives its children (its default
/// allow-list), so every row starts under the same conditions: some
/// variables change node's start-up (`NODE_EXTRA_CA_CERTS` alone costs
/// ~80 ms here).
fn command(program: impl AsRef<std::ffi::OsStr>) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command.env_clear();
    for key in ["PATH", "HOME", "LANG"] {
        if let Some(value) = std::env::var_os(key) {
            command.env(key, value);
        }
    }
    command
}

/// Time `make()` `calls` times (after 3 warm-ups), checking it prints "1".
async fn spawn_samples(calls: usize, make: impl Fn() -> tokio::process::Command) -> Vec<Duration> {
    samples(3, calls, async || {
        let output = make().output().await.expect("spawn reference");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "1\n",
            "reference failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    })
    .await
}

/// `exec_ts.execute(CODE)` through a host whose pack keeps `pool_size` idle
/// node processes, with `sandbox` on or off, calls spaced by `gap`.
async fn pack_samples(
    calls: usize,
    notebooks: &Path,
    pool_size: usize,
    sandbox: &str,
    gap: Duration,
) -> Vec<Duration> {
    let config = format!(
        "[packs.exec_ts]\nconfig = {{ notebooks_dir = {:?}, pool_size = {pool_size}, sandbox = {sandbox:?} }}\n",
        notebooks.display().to_string()
    );
    let host = TestHost::start(&config).await;
    // The pool fills in the background from the host's start.
    tokio::time::sleep(gap).await;
    let mut all = Vec::new();
    for _ in 0..calls + 3 {
        let one = samples(0, 1, async || {
            let result = host.call("exec_ts.execute", json!({ "code": CODE })).await;
            assert!(!is_error(&result), "{}", text(&result));
            assert_eq!(structured(&result)["stdout"], "1\n");
        })
        .await;
        all.extend(one);
        tokio::time::sleep(gap).await;
    }
    host.client.cancel().await.expect("stop client");
    all.split_off(3)
}

/// `run block` through `host`, checking that it answers 2.
async fn run_block(host: &TestHost, block: &str) {
    let result = host.run(block).await;
    assert!(!is_error(&result), "{}", text(&result));
    assert_eq!(structured(&result)["result"], 2, "{}", text(&result));
}

/// `run block` back to back `calls` times (after 10 warm-ups), then
/// `concurrent` times with [`IN_FLIGHT`] in flight: the latencies and the
/// calls per second.
async fn run_samples(
    host: &TestHost,
    block: &str,
    calls: usize,
    concurrent: usize,
) -> (Vec<Duration>, f64) {
    let back_to_back = samples(10, calls, async || run_block(host, block).await).await;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let started = std::time::Instant::now();
    let lanes = (0..IN_FLIGHT).map(|_| async {
        while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < concurrent {
            run_block(host, block).await;
        }
    });
    futures_util::future::join_all(lanes).await;
    let per_second = concurrent as f64 / started.elapsed().as_secs_f64();
    (back_to_back, per_second)
}

/// A row of calls per second beside a reference of the same run.
fn throughput(metric: &str, value: f64, target: &str, name: &str, reference: f64) -> Row {
    Row {
        metric: metric.to_owned(),
        value: format!("{value:.0} calls/s"),
        target: target.to_owned(),
        reference: format!("{name}: {reference:.0} calls/s"),
        ratio: format!("{:.2}x", value / reference),
    }
}

#[tokio::main]
async fn main() {
    let calls = arg("--calls", 30);
    let run_calls = arg("--run-calls", 300);
    let concurrent = arg("--concurrent", 320);
    let gap = Duration::from_millis(arg("--gap-ms", 100));
    let tsx_dir = arg("--tsx-dir", String::new());
    let tsx_dir = if tsx_dir.is_empty() {
        PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/packhost-bench-tsx")
    } else {
        PathBuf::from(tsx_dir)
    };
    let tsx = ensure_tsx(&tsx_dir);
    let work = tempfile::TempDir::new().expect("temp dir");
    let file = work.path().join("bench.ts");
    std::fs::write(&file, CODE).expect("write bench.ts");
    let notebooks = work.path().join("notebooks");

    let host = TestHost::start(&format!(
        "[packs.exec_ts]\nconfig = {{ notebooks_dir = {:?} }}\n",
        notebooks.display().to_string()
    ))
    .await;
    let (realm, realm_per_second) = run_samples(&host, REALM_BLOCK, run_calls, concurrent).await;
    let (process, process_per_second) = run_samples(&host, NODE_BLOCK, run_calls, concurrent).await;
    host.client.cancel().await.expect("stop client");

    let pooled = pack_samples(calls, &notebooks, 2, "on", gap).await;
    let unpooled = pack_samples(calls, &notebooks, 0, "on", gap).await;
    let back_to_back = pack_samples(calls, &notebooks, 2, "on", Duration::ZERO).await;
    let off = pack_samples(calls, &notebooks, 2, "off", gap).await;
    let off_back_to_back = pack_samples(calls, &notebooks, 2, "off", Duration::ZERO).await;
    let node = spawn_samples(calls, || {
        let mut c = command("node");
        c.args(["-e", "console.log(1)"]);
        c
    })
    .await;
    let npx_tsx = spawn_samples(calls, || {
        let mut c = command("npx");
        c.args(["--no-install", "tsx"])
            .arg(&file)
            .current_dir(&tsx_dir);
        c
    })
    .await;
    let tsx_bin = spawn_samples(calls, || {
        let mut c = command(&tsx);
        c.arg(&file);
        c
    })
    .await;

    let median = |s: &[Duration]| percentile(s, 0.5);
    let p99 = |s: &[Duration]| percentile(s, 0.99);
    let (realm50, realm99, process50, process99) =
        (median(&realm), p99(&realm), median(&process), p99(&process));
    let (pooled, unpooled, node, npx_tsx, tsx_bin) = (
        median(&pooled),
        median(&unpooled),
        median(&node),
        median(&npx_tsx),
        median(&tsx_bin),
    );
    let (back_to_back, off, off_back_to_back) = (
        median(&back_to_back),
        median(&off),
        median(&off_back_to_back),
    );
    let row = Row::timed;
    let run = "`run` TypeScript `1+1` (realm), back to back";
    let node_path = "same block needing node (a process per call)";
    let execute = "`exec_ts.execute` (TypeScript, node path) median";
    let rows = [
        row(
            &format!("{run}, p50"),
            realm50,
            "≤ 5 ms",
            &format!("{node_path}, p50"),
            process50,
        ),
        row(&format!("{run}, p50"), realm50, "-", "bare `node -e`", node),
        row(
            &format!("{run}, p99"),
            realm99,
            "-",
            &format!("{node_path}, p99"),
            process99,
        ),
        throughput(
            &format!("`run` TypeScript `1+1` (realm), {IN_FLIGHT} in flight"),
            realm_per_second,
            "≥ 200 calls/s",
            node_path,
            process_per_second,
        ),
        row(execute, pooled, "≤ 0.2x", "`npx tsx bench.ts`", npx_tsx),
        row(execute, pooled, "-", "tsx binary", tsx_bin),
        row(execute, pooled, "≤ 1.2x", "bare `node -e`", node),
        row(
            "same, `pool_size = 0` (node spawned per call)",
            unpooled,
            "-",
            "bare `node -e`",
            node,
        ),
        row(
            "same, back to back",
            back_to_back,
            "-",
            "bare `node -e`",
            node,
        ),
        row(
            "spaced, confined vs `sandbox = \"off\"`",
            pooled,
            "-",
            "unconfined",
            off,
        ),
        row(
            "back to back, confined vs `sandbox = \"off\"`",
            back_to_back,
            "-",
            "unconfined",
            off_back_to_back,
        ),
    ];
    print_table(
        &format!(
            "exec_ts benchmark: {calls} calls per row, {} ms between pack calls",
            gap.as_millis()
        ),
        &rows,
    );
}
