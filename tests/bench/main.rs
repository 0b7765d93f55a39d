//! `packhost-bench`: cold start, dispatch latency and memory of the real
//! binary over stdio, each beside a reference measured in the same run (this
//! machine is shared and noisy: read ratios, not absolutes).
//!
//! Usage: `packhost-bench [--starts N] [--calls N]` (defaults 20 and 1000).

use std::time::{Duration, Instant};

use packhost_tests::{TestHost, packhost_bin};
use rmcp::model::{CallToolRequestParams, ClientRequest};
use serde_json::json;

struct Row {
    metric: &'static str,
    value: String,
    target: &'static str,
    reference: String,
    ratio: String,
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.2}x", a.as_secs_f64() / b.as_secs_f64())
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config() -> String {
    let project = env!("CARGO_MANIFEST_DIR");
    format!("[packs.proj]\n\n[projects]\ntests = \"{project}\"\n")
}

/// Spawn → `initialize` answered → `tools/list` answered, per run.
async fn cold_start(runs: usize) -> (Vec<Duration>, Vec<Duration>) {
    let mut host = Vec::new();
    let mut reference = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let test_host = TestHost::start(&config()).await;
        test_host.client.list_all_tools().await.expect("tools/list");
        host.push(started.elapsed());
        test_host.client.cancel().await.expect("stop client");
        // Reference: the same spawn of a process that does nothing.
        let started = Instant::now();
        tokio::process::Command::new("true")
            .status()
            .await
            .expect("spawn true");
        reference.push(started.elapsed());
    }
    host.sort();
    reference.sort();
    (host, reference)
}

async fn latencies(host: &TestHost, calls: usize, f: impl AsyncFn(&TestHost)) -> Vec<Duration> {
    for _ in 0..calls / 10 {
        f(host).await; // warm-up
    }
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        f(host).await;
        samples.push(started.elapsed());
    }
    samples.sort();
    samples
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn child_pid_of_self() -> Option<u32> {
    let me = std::process::id().to_string();
    let bin = packhost_bin();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let ppid = stat.rsplit(')').next()?.split_whitespace().nth(1)?;
            let exe = std::fs::read_link(entry.path().join("exe")).ok()?;
            (ppid == me && exe == bin).then_some(pid)
        })
}

#[tokio::main]
async fn main() {
    let starts = arg("--starts", 20);
    let calls = arg("--calls", 1000);
    let mut rows = Vec::new();

    let (start, start_ref) = cold_start(starts).await;
    rows.push(Row {
        metric: "cold start (spawn→initialize→tools/list), median",
        value: ms(percentile(&start, 0.5)),
        target: "≤ 50 ms",
        reference: format!("spawn `true`: {}", ms(percentile(&start_ref, 0.5))),
        ratio: ratio(percentile(&start, 0.5), percentile(&start_ref, 0.5)),
    });

    let host = TestHost::start(&config()).await;
    let ping = latencies(&host, calls, async |h| {
        h.client
            .send_request(ClientRequest::PingRequest(Default::default()))
            .await
            .expect("ping");
    })
    .await;
    let run = latencies(&host, calls, async |h| {
        let result = h.run("proj.list()").await;
        assert!(
            !packhost_tests::is_error(&result),
            "{}",
            packhost_tests::text(&result)
        );
    })
    .await;
    let direct = latencies(&host, calls, async |h| {
        let result = h
            .client
            .call_tool(
                CallToolRequestParams::new("proj.list")
                    .with_arguments(json!({}).as_object().unwrap().clone()),
            )
            .await
            .expect("tools/call");
        assert!(!packhost_tests::is_error(&result));
    })
    .await;
    let ping50 = percentile(&ping, 0.5);
    for (metric, samples, target) in [
        ("`run` proj.list() p50", &run, "≤ 0.3 ms"),
        ("`run` proj.list() p99", &run, "-"),
        ("tools/call proj.list p50", &direct, "-"),
        ("tools/call proj.list p99", &direct, "-"),
    ] {
        let p = if metric.ends_with("p99") { 0.99 } else { 0.5 };
        let value = percentile(samples, p);
        rows.push(Row {
            metric,
            value: ms(value),
            target,
            reference: format!("ping p50: {}", ms(ping50)),
            ratio: ratio(value, ping50),
        });
    }

    let rss = child_pid_of_self().and_then(rss_kib);
    let self_rss = rss_kib(std::process::id());
    rows.push(Row {
        metric: "host RSS after start + calls",
        value: rss.map_or("n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
        target: "≤ 30 MB",
        reference: self_rss.map_or("n/a".into(), |k| {
            format!("this client: {:.1} MiB", k as f64 / 1024.0)
        }),
        ratio: match (rss, self_rss) {
            (Some(a), Some(b)) => format!("{:.2}x", a as f64 / b as f64),
            _ => "n/a".into(),
        },
    });
    host.client.cancel().await.expect("stop client");

    println!(
        "packhost benchmark: {starts} starts, {calls} calls per latency row, binary {}",
        packhost_bin().display()
    );
    println!("| metric | value | target | reference (same run) | ratio |");
    println!("|---|---|---|---|---|");
    for row in rows {
        println!(
            "| {} | {} | {} | {} | {} |",
            row.metric, row.value, row.target, row.reference, row.ratio
        );
    }
}
