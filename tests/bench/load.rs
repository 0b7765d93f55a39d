//! `packhost-load`: many concurrent HTTP clients making a mix of `run` calls
//! (`proj.list()`, a Python block through `exec_py`, `jupyter.execute_code`
//! on a shared session), twice; prints errors, throughput, latency and the
//! host's RSS after each round (it must not keep growing). Then 1,000 results
//! too large to send, which the host keeps: its RSS stays within the kept
//! results' bound.
//!
//! Usage: `packhost-load [--clients 100] [--calls 100]`. Needs a Python with
//! ipykernel in `PACKHOST_TEST_PYTHON` (`./dev test` makes one).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use packhost_tests::{
    bench::{arg, memory_kib, ms, percentile},
    http::HttpHost,
    is_error, structured, text,
};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

/// The bound of the kept results in this run.
const KEPT_BYTES: u64 = 32 << 20;

/// 1,000 results of 200,000 characters from 10 clients: each is kept (a
/// handle) instead of sent. The errors.
async fn large_results(host: &HttpHost) -> Vec<String> {
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let client = host.client(None).await.expect("connect");
        tasks.push(tokio::spawn(async move {
            let mut errors = Vec::new();
            for i in 0..100 {
                let command = json!({"command": format!("'{}' * 200_000", i % 10)});
                let params = CallToolRequestParams::new("run").with_arguments(args(command));
                match client.call_tool(params).await {
                    Ok(result)
                        if result
                            .meta
                            .as_ref()
                            .is_some_and(|m| m.get("packhost/result").is_some()) => {}
                    Ok(result) => errors.push(format!(
                        "not kept: {}",
                        text(&result).chars().take(200).collect::<String>()
                    )),
                    Err(e) => errors.push(e.to_string()),
                }
            }
            errors
        }));
    }
    let mut errors = Vec::new();
    for task in tasks {
        errors.extend(task.await.expect("client task"));
    }
    errors
}

fn args(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

struct Round {
    latencies: [Vec<Duration>; 3],
    errors: Vec<String>,
    wall: Duration,
}

async fn round(host: &HttpHost, clients: usize, calls: usize, session: &str) -> Round {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let client = Arc::new(host.client(None).await.expect("connect"));
        let session = session.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut latencies: [Vec<Duration>; 3] = Default::default();
            let mut errors = Vec::new();
            for i in 0..calls {
                let kind = (c + i) % 3;
                let (name, arguments) = match kind {
                    0 => ("run", json!({"command": "proj.list()"})),
                    1 => ("run", json!({"command": format!("x = {i}\nx * 2")})),
                    _ => (
                        "jupyter.execute_code",
                        json!({"session_id": session, "code": format!("{i} + 1")}),
                    ),
                };
                let call_started = Instant::now();
                match client
                    .call_tool(CallToolRequestParams::new(name).with_arguments(args(arguments)))
                    .await
                {
                    Ok(result) if !is_error(&result) => {
                        latencies[kind].push(call_started.elapsed())
                    }
                    Ok(result) => errors.push(text(&result)),
                    Err(e) => errors.push(e.to_string()),
                }
            }
            (latencies, errors)
        }));
    }
    let mut all = Round {
        latencies: Default::default(),
        errors: Vec::new(),
        wall: Duration::ZERO,
    };
    for task in tasks {
        let (latencies, errors) = task.await.expect("client task");
        for (kind, samples) in latencies.into_iter().enumerate() {
            all.latencies[kind].extend(samples);
        }
        all.errors.extend(errors);
    }
    all.wall = started.elapsed();
    all
}

#[tokio::main]
async fn main() {
    let clients = arg("--clients", 100);
    let calls = arg("--calls", 100);
    let python = packhost_tests::venv_python();
    let config = format!(
        "[packs.proj]\n[packs.exec_py]\n[packs.jupyter]\nconfig = {{ python = \"{python}\" }}\n\
         [projects]\nload = \"{}\"\n[http]\nmax_sessions = {}\n[results]\nmax_bytes = {KEPT_BYTES}\n",
        env!("CARGO_MANIFEST_DIR"),
        clients * 2 + 10
    );
    let host = HttpHost::start(&config, &[]).await;
    let setup = host.client(None).await.expect("connect");
    let created = setup
        .call_tool(
            CallToolRequestParams::new("jupyter.session_create").with_arguments(args(json!({}))),
        )
        .await
        .expect("session_create");
    assert!(!is_error(&created), "{}", text(&created));
    let session = structured(&created)["session_id"]
        .as_str()
        .expect("session id")
        .to_owned();
    let pid = host.child.id();
    println!("packhost load: {clients} HTTP clients × {calls} `run`/jupyter calls, two rounds");
    println!(
        "| round | calls | errors | calls/s | proj.list() p50/p99 | Python block p50/p99 | jupyter p50/p99 | host RSS after |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut rss = Vec::new();
    let mut errors = 0;
    for n in 1..=2 {
        let result = round(&host, clients, calls, &session).await;
        errors += result.errors.len();
        rss.push(memory_kib(pid, "VmRSS").unwrap_or(0));
        let done: usize = result.latencies.iter().map(Vec::len).sum();
        let cell = |samples: &Vec<Duration>| {
            format!(
                "{} / {}",
                ms(percentile(samples, 0.5)),
                ms(percentile(samples, 0.99))
            )
        };
        println!(
            "| {n} | {} | {} | {:.0} | {} | {} | {} | {:.1} MiB |",
            done + result.errors.len(),
            result.errors.len(),
            (done + result.errors.len()) as f64 / result.wall.as_secs_f64(),
            cell(&result.latencies[0]),
            cell(&result.latencies[1]),
            cell(&result.latencies[2]),
            rss[n - 1] as f64 / 1024.0
        );
        for error in result.errors.iter().take(5) {
            eprintln!("error: {error}");
        }
    }
    let growth = (rss[1] as f64 - rss[0] as f64) / rss[0] as f64 * 100.0;
    println!("\nRSS growth from round 1 to round 2: {growth:.1}% (target ≤ 10%)");
    let kept_errors = large_results(&host).await;
    for error in kept_errors.iter().take(5) {
        eprintln!("error: {error}");
    }
    let after = memory_kib(pid, "VmRSS").unwrap_or(0);
    let kept_growth_mib = (after as f64 - rss[1] as f64) / 1024.0;
    // The kept text, and as much again for the allocator's slack.
    let allowed_mib = 2.0 * KEPT_BYTES as f64 / (1 << 20) as f64;
    println!(
        "1,000 results of 200,000 characters kept as handles ({} errors): host RSS {:.1} MiB, \
         {kept_growth_mib:+.1} MiB over round 2 (kept results bounded at {} MiB; target ≤ +{allowed_mib:.0} MiB)",
        kept_errors.len(),
        after as f64 / 1024.0,
        KEPT_BYTES >> 20
    );
    errors += kept_errors.len();
    if errors > 0 || growth > 10.0 || kept_growth_mib > allowed_mib {
        eprintln!(
            "load: {errors} error(s), RSS growth {growth:.1}%, kept results {kept_growth_mib:+.1} MiB: FAILED"
        );
        std::process::exit(1);
    }
}
