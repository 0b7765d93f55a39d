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

/// CPU time (user + system) a process has used so far, from `/proc`.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After `(comm)`: utime and stime are fields 14 and 15 of the line.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
        .sum();
    // SAFETY: sysconf only reads a constant.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_micros(ticks * 1_000_000 / per_second)
}

/// CPU per call of the host and of this client process over one load.
struct CpuCost {
    host: Duration,
    client: Duration,
}

fn row(
    name: String,
    samples: &[Duration],
    wall: Duration,
    cpu: &CpuCost,
    target: &str,
    reference: &str,
) -> Row {
    let rate = samples.len() as f64 / wall.as_secs_f64();
    let calls = samples.len().max(1) as u32;
    Row {
        metric: name,
        value: format!(
            "p50 {} · p99 {} · {rate:.0} calls/s · CPU per call: host {} µs, client {} µs",
            ms(percentile(samples, 0.5)),
            ms(percentile(samples, 0.99)),
            (cpu.host / calls).as_micros(),
            (cpu.client / calls).as_micros()
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
        let (host_before, client_before) =
            (cpu_time(http.child.id()), cpu_time(std::process::id()));
        let (samples, wall) = load(connected, calls).await;
        let cpu = CpuCost {
            host: cpu_time(http.child.id()) - host_before,
            client: cpu_time(std::process::id()) - client_before,
        };
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
            &cpu,
            target,
            &stdio_text,
        ));
    }
    print_table(
        &format!("HTTP benchmark: proj.list, {calls} calls per client"),
        &rows,
    );
}
