//! `packhost-bench-instances`: what several instances cost and give.
//!
//! 1. What the shared state adds: one instance keeping its state in
//!    PostgreSQL (`[state] database`) beside one keeping it in memory, in
//!    the same run, calls alternating between them: reading a page of a
//!    kept result (`packhost.result_read`), and a call that touches no
//!    state (`proj.list`); p50 and p99.
//! 2. Throughput through HAProxy (`deploy/local`, round robin): three
//!    instances beside one behind the same proxy, 16 concurrent clients
//!    calling `proj.list`; calls/s and the instances' CPU per call. On a
//!    2-core machine three instances cannot triple it: CPU per call says
//!    what each call costs.
//! 3. Mixed load: `--clients` (100) clients × `--load-calls` (100) mixed
//!    calls through HAProxy to three instances (`proj.list`, a Python
//!    block, a page of a kept result made through another instance): once
//!    whole, then with one instance SIGKILLed halfway (the calls that fail,
//!    and that every client is answered after it).
//!
//! Needs PostgreSQL (`PACKHOST_TEST_POSTGRES_URL`, which `./dev bench`
//! sets) and haproxy. Usage: `packhost-bench-instances [--calls N]`
//! (sequential calls per figure, default 300) `[--concurrent-calls N]`
//! (default 1600).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use packhost_tests::{
    Recorder,
    bench::{Row, arg, cpu_time, percentile, print_table},
    call,
    downstream::postgres_database,
    http::HttpHost,
    instances::{Instances, haproxy_installed},
    is_error,
};
use rmcp::{RoleClient, service::RunningService};
use serde_json::json;
use tempfile::TempDir;

type Client = RunningService<RoleClient, Recorder>;

/// Concurrent clients in the throughput runs.
const CLIENTS: usize = 16;

/// A stateless instance's config on a project holding a 130 kB log, results
/// past 2,000 characters kept; `extra` appended.
fn config(project: &TempDir, extra: &str) -> String {
    format!(
        "[http]\nsessions = false\nshutdown_grace_secs = 1\n[results]\nmax_result_chars = 2000\n\
         [packs.proj]\n[projects]\nlogs = {:?}\n{extra}\n",
        project.path().display().to_string()
    )
}

async fn timed(client: &Client, tool: &str, args: serde_json::Value) -> Duration {
    let started = Instant::now();
    let result = call(client, tool, args).await.expect("tools/call");
    assert!(!is_error(&result), "{tool}: {result:?}");
    started.elapsed()
}

/// The handle of a freshly kept read of the log.
async fn kept(client: &Client) -> String {
    let read = json!({"name": "logs", "path": "app.log", "limit": 3000});
    let result = call(client, "proj.read", read).await.expect("tools/call");
    let meta = result.meta.expect("a kept result");
    meta.get("packhost/result").expect("its handle")["handle"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn shared_state_cost(project: &TempDir, database: &str, calls: usize) -> Vec<Row> {
    let memory = HttpHost::start(&config(project, ""), &[]).await;
    let shared = format!("[state]\ndatabase = {database:?}");
    let postgres = HttpHost::start(&config(project, &shared), &[]).await;
    let (m, p) = (
        memory.client(None).await.unwrap(),
        postgres.client(None).await.unwrap(),
    );
    let (m_handle, p_handle) = (kept(&m).await, kept(&p).await);
    let mut rows = Vec::new();
    for (what, tool, args) in [
        (
            "read a page of a kept result",
            "packhost.result_read",
            [json!({"handle": m_handle}), json!({"handle": p_handle})],
        ),
        (
            "a call that touches no state (proj.list)",
            "proj.list",
            [json!({}), json!({})],
        ),
    ] {
        let (mut in_memory, mut in_postgres) = (Vec::new(), Vec::new());
        for i in 0..calls + 20 {
            let (a, b) = (
                timed(&m, tool, args[0].clone()),
                timed(&p, tool, args[1].clone()),
            );
            // Alternate which goes first, so neither always finds a warmer cache.
            let (a, b) = if i % 2 == 0 {
                let a = a.await;
                (a, b.await)
            } else {
                let b = b.await;
                (a.await, b)
            };
            if i >= 20 {
                in_memory.push(a);
                in_postgres.push(b);
            }
        }
        for (q, name) in [(0.5, "p50"), (0.99, "p99")] {
            rows.push(Row::timed(
                &format!("{what}, state in PostgreSQL, {name}"),
                percentile(&in_postgres, q),
                "-",
                "state in memory",
                percentile(&in_memory, q),
            ));
        }
    }
    rows
}

/// Calls/s and CPU per call of `count` instances behind HAProxy.
async fn through_proxy(
    config: &str,
    database: &str,
    count: usize,
    calls: usize,
) -> (f64, Duration) {
    let instances = Instances::start_n(config, database, count);
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let client = instances
            .client(None)
            .await
            .expect("a client through the proxy");
        timed(&client, "proj.list", json!({})).await;
        clients.push(Arc::new(client));
    }
    let cpu = || -> Duration { (1..=count).filter_map(|n| cpu_time(instances.pid(n))).sum() };
    let before = cpu();
    let started = Instant::now();
    let each = calls / CLIENTS;
    let runs: Vec<_> = clients
        .iter()
        .map(|client| {
            let client = Arc::clone(client);
            tokio::spawn(async move {
                for _ in 0..each {
                    timed(&client, "proj.list", json!({})).await;
                }
            })
        })
        .collect();
    for run in runs {
        run.await.expect("a client's calls");
    }
    let elapsed = started.elapsed();
    let spent = cpu() - before;
    let made = (each * CLIENTS) as u32;
    (f64::from(made) / elapsed.as_secs_f64(), spent / made)
}

/// What a mixed load run saw.
struct Crash {
    made: usize,
    failed: Vec<String>,
    /// Failures of calls started more than a second after the kill: calls
    /// the proxy did not route around.
    failed_later: usize,
    wall: Duration,
}

/// The mixed load through three instances; with `crash`, instance two is
/// SIGKILLed once half the calls are made.
async fn mixed_load(
    config: &str,
    database: &str,
    (clients, calls): (usize, usize),
    crash: bool,
) -> Crash {
    use std::sync::{OnceLock, atomic::AtomicUsize, atomic::Ordering::Relaxed};
    let instances = Instances::start(config, database);
    let first = instances.client(None).await.expect("a client");
    let handle = Arc::new(kept(&first).await);
    let done = Arc::new(AtomicUsize::new(0));
    let killed_at = Arc::new(OnceLock::<Instant>::new());
    let started = Instant::now();
    let mut runs = Vec::new();
    for c in 0..clients {
        let client = Arc::new(instances.client(None).await.expect("a client"));
        let (handle, done, killed_at) = (
            Arc::clone(&handle),
            Arc::clone(&done),
            Arc::clone(&killed_at),
        );
        runs.push(tokio::spawn(async move {
            let (mut failed, mut later) = (Vec::new(), 0);
            for i in 0..calls {
                let (tool, args) = match (c + i) % 3 {
                    0 => ("proj.list", json!({})),
                    1 => (
                        "run",
                        json!({"command": format!("```python\n{i} * 2\n```")}),
                    ),
                    _ => ("packhost.result_read", json!({"handle": *handle})),
                };
                let call_started = Instant::now();
                let why = match call(&client, tool, args).await {
                    Ok(result) if !is_error(&result) => None,
                    Ok(result) => Some(packhost_tests::text(&result)),
                    Err(e) => Some(e.to_string()),
                };
                if let Some(why) = why {
                    let after = killed_at
                        .get()
                        .map(|at| call_started.saturating_duration_since(*at));
                    later += usize::from(after.is_some_and(|after| after > Duration::from_secs(1)));
                    failed.push(format!("{tool}: {why}"));
                }
                done.fetch_add(1, Relaxed);
            }
            (failed, later)
        }));
    }
    // Halfway, instance two dies without a word.
    while crash && done.load(Relaxed) < clients * calls / 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if crash {
        instances.kill(2);
        let _ = killed_at.set(Instant::now());
    }
    let mut seen = Crash {
        made: clients * calls,
        failed: Vec::new(),
        failed_later: 0,
        wall: Duration::ZERO,
    };
    for run in runs {
        let (failed, later) = run.await.expect("a client's calls");
        seen.failed.extend(failed);
        seen.failed_later += later;
    }
    seen.wall = started.elapsed();
    seen
}

#[tokio::main]
async fn main() {
    let calls = arg("--calls", 300);
    let concurrent = arg("--concurrent-calls", 1600);
    let clients = arg("--clients", 100);
    let load_calls = arg("--load-calls", 100);
    let Some(database) = postgres_database() else {
        return;
    };
    if !haproxy_installed() {
        return;
    }
    let project = TempDir::new().unwrap();
    let log: String = (1..=3000)
        .map(|i| format!("2026-11-29T10:00:00 line {i} INFO ok\n"))
        .collect();
    std::fs::write(project.path().join("app.log"), log).unwrap();

    let rows = shared_state_cost(&project, &database, calls).await;
    print_table(
        &format!("What the shared state adds ({calls} calls each, back to back, alternating)"),
        &rows,
    );

    let config = config(&project, "");
    let (one_rate, one_cpu) = through_proxy(&config, &database, 1, concurrent).await;
    let (three_rate, three_cpu) = through_proxy(&config, &database, 3, concurrent).await;
    println!();
    print_table(
        &format!("Through HAProxy, {CLIENTS} clients, {concurrent} proj.list calls"),
        &[
            Row {
                metric: "3 instances: calls/s".to_owned(),
                value: format!("{three_rate:.0}"),
                target: "-".to_owned(),
                reference: format!("1 instance: {one_rate:.0}"),
                ratio: format!("{:.2}x", three_rate / one_rate),
            },
            Row::timed(
                "3 instances: packhost CPU per call",
                three_cpu,
                "-",
                "1 instance",
                one_cpu,
            ),
        ],
    );

    let with_python = format!("{config}[packs.exec_py]\n");
    let load = (clients, load_calls);
    for crash in [false, true] {
        let seen = mixed_load(&with_python, &database, load, crash).await;
        println!();
        let what = if crash {
            ", instance two SIGKILLed halfway"
        } else {
            ""
        };
        println!(
            "Mixed load: {clients} clients x {load_calls} calls through HAProxy to three \
             instances{what}"
        );
        println!(
            "- {} calls in {:.1} s ({:.0} calls/s); {} failed, {} of them started more than a \
             second after the kill",
            seen.made,
            seen.wall.as_secs_f64(),
            seen.made as f64 / seen.wall.as_secs_f64(),
            seen.failed.len(),
            seen.failed_later
        );
        let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
        for failure in &seen.failed {
            let reason: String = failure.chars().take(160).collect();
            *reasons.entry(reason).or_default() += 1;
        }
        for (reason, count) in reasons {
            println!("  - {count} x {reason}");
        }
    }
}
