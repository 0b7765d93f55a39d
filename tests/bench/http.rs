//! `packhost-bench-http`: `proj.list` over streamable HTTP with 1, 16 and 64
//! concurrent clients (p50, p99, calls/s), beside the same load on one stdio
//! connection in the same run.
//!
//! Usage: `packhost-bench-http [--calls N]` (calls per client, default 200).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use packhost_tests::{
    TestHost,
    bench::{Row, arg, ms, percentile, print_table},
    http::HttpHost,
    is_error,
};
use rmcp::{RoleClient, model::CallToolRequestParams, service::RunningService};

type Client = RunningService<RoleClient, packhost_tests::Recorder>;

fn config() -> String {
    format!(
        "[packs.proj]\n[projects]\nbench = \"{}\"\n",
        env!("CARGO_MANIFEST_DIR")
    )
}

async fn list(client: &Client) -> Duration {
    let started = Instant::now();
    let result = client
        .call_tool(CallToolRequestParams::new("proj.list"))
        .await
        .expect("tools/call");
    assert!(!is_error(&result));
    started.elapsed()
}

/// `clients` tasks each making `calls` calls on its own client (or the same
/// one); returns every latency and the wall time.
async fn load(clients: Vec<Arc<Client>>, calls: usize) -> (Vec<Duration>, Duration) {
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|client| {
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(calls);
                for _ in 0..calls {
                    samples.push(list(&client).await);
                }
                samples
            })
        })
        .collect();
    let mut samples = Vec::new();
    for task in tasks {
        samples.extend(task.await.expect("load task"));
    }
    (samples, started.elapsed())
}

fn row(name: String, samples: &[Duration], wall: Duration, target: &str, reference: &str) -> Row {
    let rate = samples.len() as f64 / wall.as_secs_f64();
    Row {
        metric: name,
        value: format!(
            "p50 {} · p99 {} · {rate:.0} calls/s",
            ms(percentile(samples, 0.5)),
            ms(percentile(samples, 0.99))
        ),
        target: target.to_owned(),
        reference: reference.to_owned(),
        ratio: "-".to_owned(),
    }
}

#[tokio::main]
async fn main() {
    let calls = arg("--calls", 200);
    let http = HttpHost::start(&config(), &[]).await;
    let stdio = TestHost::start(&config()).await;
    let stdio_client = Arc::new(stdio.client);
    let mut rows = Vec::new();
    for (clients, target) in [(1, "-"), (16, "≥ 5000 calls/s"), (64, "p99 ≤ 10 ms")] {
        let mut connected = Vec::new();
        for _ in 0..clients {
            connected.push(Arc::new(http.client(None).await.expect("connect")));
        }
        list(&connected[0]).await; // warm-up
        let (samples, wall) = load(connected, calls).await;
        let (reference, reference_wall) =
            load(vec![Arc::clone(&stdio_client); clients], calls).await;
        let rate = reference.len() as f64 / reference_wall.as_secs_f64();
        let stdio_text = format!(
            "stdio, {clients} concurrent: p50 {} · p99 {} · {rate:.0} calls/s",
            ms(percentile(&reference, 0.5)),
            ms(percentile(&reference, 0.99))
        );
        rows.push(row(
            format!("HTTP, {clients} client(s) × {calls} calls"),
            &samples,
            wall,
            target,
            &stdio_text,
        ));
    }
    print_table(
        &format!("HTTP benchmark: proj.list, {calls} calls per client"),
        &rows,
    );
}
