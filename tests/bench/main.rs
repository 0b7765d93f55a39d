//! `packhost-bench`: cold start, dispatch latency and memory of the real
//! binary over stdio, each beside a reference measured in the same run (this
//! machine is shared and noisy: read ratios, not absolutes).
//!
//! Usage: `packhost-bench [--starts N] [--calls N]` (defaults 20 and 1000).

use std::time::{Duration, Instant};

use packhost_tests::{
    TestHost,
    bench::{Row, arg, memory_kib, ms, percentile, print_table, ratio, samples},
    is_error, packhost_bin, text,
};
use rmcp::model::{CallToolRequestParams, ClientRequest};
use serde_json::json;

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
    (host, reference)
}

#[tokio::main]
async fn main() {
    let starts = arg("--starts", 20);
    let calls = arg("--calls", 1000);
    let mut rows = Vec::new();

    let (start, start_ref) = cold_start(starts).await;
    let (start50, start_ref50) = (percentile(&start, 0.5), percentile(&start_ref, 0.5));
    rows.push(Row {
        metric: "cold start (spawn→initialize→tools/list), median".into(),
        value: ms(start50),
        target: "≤ 50 ms".into(),
        reference: format!("spawn `true`: {}", ms(start_ref50)),
        ratio: ratio(start50, start_ref50),
    });

    let host = TestHost::start(&config()).await;
    let warmup = calls / 10;
    let ping = samples(warmup, calls, async || {
        host.client
            .send_request(ClientRequest::PingRequest(Default::default()))
            .await
            .expect("ping");
    })
    .await;
    let run = samples(warmup, calls, async || {
        let result = host.run("proj.list()").await;
        assert!(!is_error(&result), "{}", text(&result));
    })
    .await;
    let arguments = json!({}).as_object().cloned().unwrap_or_default();
    let direct = samples(warmup, calls, async || {
        let params = CallToolRequestParams::new("proj.list").with_arguments(arguments.clone());
        let result = host.client.call_tool(params).await.expect("tools/call");
        assert!(!is_error(&result), "{}", text(&result));
    })
    .await;
    let ping50 = percentile(&ping, 0.5);
    for (metric, samples, p, target) in [
        ("`run` proj.list() p50", &run, 0.5, "≤ 0.3 ms"),
        ("`run` proj.list() p99", &run, 0.99, "-"),
        ("tools/call proj.list p50", &direct, 0.5, "-"),
        ("tools/call proj.list p99", &direct, 0.99, "-"),
    ] {
        let value = percentile(samples, p);
        rows.push(Row {
            metric: metric.into(),
            value: ms(value),
            target: target.into(),
            reference: format!("ping p50: {}", ms(ping50)),
            ratio: ratio(value, ping50),
        });
    }

    let rss = Some(host.rss_kib()).filter(|k| *k > 0);
    let self_rss = memory_kib(std::process::id(), "VmRSS");
    let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
    rows.push(Row {
        metric: "host RSS after start + calls".into(),
        value: rss.map_or("n/a".into(), mib),
        target: "≤ 30 MB".into(),
        reference: self_rss.map_or("n/a".into(), |k| format!("this client: {}", mib(k))),
        ratio: match (rss, self_rss) {
            (Some(a), Some(b)) => format!("{:.2}x", a as f64 / b as f64),
            _ => "n/a".into(),
        },
    });
    host.client.cancel().await.expect("stop client");

    print_table(
        &format!(
            "packhost benchmark: {starts} starts, {calls} calls per latency row, binary {}",
            packhost_bin().display()
        ),
        &rows,
    );
}
