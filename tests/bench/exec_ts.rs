//! `packhost-bench-exec-ts`: latency of `exec_ts.execute` on a line of
//! TypeScript through the real host, beside references measured in the same
//! run: `npx tsx` on the same file (how Srcbook runs TypeScript) and a bare
//! `node -e` spawn, all with the environment the pack gives its children.
//! This machine is shared and noisy: read ratios.
//!
//! Usage: `packhost-bench-exec-ts [--calls N] [--tsx-dir DIR]` (default 30
//! calls per row; tsx is installed with npm into DIR, default
//! `~/.cache/packhost-bench-tsx`, the first time).

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use packhost_tests::{TestHost, is_error, packhost_bin, structured, text};
use serde_json::json;

const CODE: &str = "const x: number = 1; console.log(x)";

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

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

/// The environment the pack gives its children (its default allow-list), so
/// the references start under the same conditions: some variables change
/// node's start-up (`NODE_EXTRA_CA_CERTS` alone costs ~80 ms here).
fn same_env(command: &mut tokio::process::Command) -> &mut tokio::process::Command {
    command.env_clear();
    for key in ["PATH", "HOME", "LANG"] {
        if let Some(value) = std::env::var_os(key) {
            command.env(key, value);
        }
    }
    command
}

/// Run `command` `calls` times (after 3 warm-ups), checking it prints "1".
async fn spawn_samples(calls: usize, make: impl Fn() -> tokio::process::Command) -> Vec<Duration> {
    let mut samples = Vec::new();
    for i in 0..calls + 3 {
        let started = Instant::now();
        let output = same_env(&mut make())
            .output()
            .await
            .expect("spawn reference");
        let elapsed = started.elapsed();
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "1\n",
            "reference failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        if i >= 3 {
            samples.push(elapsed);
        }
    }
    samples
}

/// `exec_ts.execute(CODE)` through a host whose pack keeps `pool_size`
/// idle node processes.
async fn pack_samples(calls: usize, notebooks: &Path, pool_size: usize) -> Vec<Duration> {
    let config = format!(
        "[packs.exec_ts]\nconfig = {{ notebooks_dir = {:?}, pool_size = {pool_size} }}\n",
        notebooks.display().to_string()
    );
    let host = TestHost::start(&config).await;
    let mut samples = Vec::new();
    for i in 0..calls + 3 {
        let started = Instant::now();
        let result = host.call("exec_ts.execute", json!({ "code": CODE })).await;
        let elapsed = started.elapsed();
        assert!(!is_error(&result), "{}", text(&result));
        assert_eq!(structured(&result)["stdout"], "1\n");
        if i >= 3 {
            samples.push(elapsed);
        }
    }
    host.client.cancel().await.expect("stop client");
    samples
}

#[tokio::main]
async fn main() {
    let calls: usize = arg("--calls").and_then(|v| v.parse().ok()).unwrap_or(30);
    let tsx_dir = arg("--tsx-dir").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/packhost-bench-tsx")
    });
    let tsx = ensure_tsx(&tsx_dir);
    let work = tempfile::TempDir::new().expect("temp dir");
    let file = work.path().join("bench.ts");
    std::fs::write(&file, CODE).expect("write bench.ts");

    let notebooks = work.path().join("notebooks");
    let pooled = pack_samples(calls, &notebooks, 2).await;
    let unpooled = pack_samples(calls, &notebooks, 0).await;
    let node = spawn_samples(calls, || {
        let mut c = tokio::process::Command::new("node");
        c.args(["-e", "console.log(1)"]);
        c
    })
    .await;
    let npx_tsx = spawn_samples(calls, || {
        let mut c = tokio::process::Command::new("npx");
        c.args(["--no-install", "tsx"])
            .arg(&file)
            .current_dir(&tsx_dir);
        c
    })
    .await;
    let tsx_direct = spawn_samples(calls, || {
        let mut c = tokio::process::Command::new(&tsx);
        c.arg(&file);
        c
    })
    .await;

    let (pack, unpooled, node, npx_tsx, tsx_direct) = (
        median(pooled),
        median(unpooled),
        median(node),
        median(npx_tsx),
        median(tsx_direct),
    );
    let ratio = |a: Duration, b: Duration| format!("{:.2}x", a.as_secs_f64() / b.as_secs_f64());
    println!(
        "exec_ts benchmark: {calls} calls per row, medians, binary {}",
        packhost_bin().display()
    );
    println!("| metric | median | target | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| `exec_ts.execute('{CODE}')` via host | {} | - | - |",
        ms(pack)
    );
    println!(
        "| same, `pool_size = 0` (a node spawned per call) | {} | - | - |",
        ms(unpooled)
    );
    println!(
        "| `npx tsx bench.ts` (same run) | {} | pack ≤ 0.2 × | pack = {} |",
        ms(npx_tsx),
        ratio(pack, npx_tsx)
    );
    println!(
        "| `node_modules/.bin/tsx bench.ts` (same run) | {} | - | pack = {} |",
        ms(tsx_direct),
        ratio(pack, tsx_direct)
    );
    println!(
        "| bare `node -e 'console.log(1)'` (same run) | {} | pack ≤ 1.2 × | pack = {} |",
        ms(node),
        ratio(pack, node)
    );
}
