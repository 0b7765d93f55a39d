//! `packhost-bench-exec-ts`: latency of `exec_ts.execute` on a line of
//! TypeScript through the real host, beside references measured in the same
//! run: `npx tsx` on the same file (how Srcbook runs TypeScript), the tsx
//! binary itself, and a bare `node -e` spawn, all with the environment the
//! pack gives its children. This machine is shared and noisy: read ratios.
//!
//! Usage: `packhost-bench-exec-ts [--calls N] [--gap-ms N] [--tsx-dir DIR]`
//! (defaults 30 calls per row; pack calls spaced by 100 ms, as between an
//! agent's calls, so the warm pool has refilled, and back to back; with the
//! sandbox on and with `sandbox = "off"`; tsx is installed with npm into
//! DIR, default `~/.cache/packhost-bench-tsx`, the first time).

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

const CODE: &str = "const x: number = 1; console.log(x)";

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

#[tokio::main]
async fn main() {
    let calls = arg("--calls", 30);
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
    let execute = "`exec_ts.execute` (TypeScript) median";
    let rows = [
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
