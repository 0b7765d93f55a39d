//! `packhost-bench-remote-mcp`: the proxy overhead of packhost in front of a
//! downstream MCP server. server-everything's `echo` is called three ways
//! with the same rmcp client code, each over stdio, in the same run:
//! directly (the bench spawns `node <entry> stdio` itself), through packhost
//! as `remote_mcp.execute_tool` (integration added by the real CLI), and
//! through packhost as the server pack `everything.echo`. Then
//! `prompts/get` and `resources/read`, directly and relayed by the server
//! pack, alternating request by request.
//!
//! Latency: `--calls` sequential calls per route (default 1000) after
//! `--warmup` untimed ones (default 50); the routes alternate call by call
//! (`--block N`: every N calls) so that all three see the same machine load. Throughput: 16 concurrent
//! callers sharing one client per route, `--concurrent-calls` in all
//! (default 4000). Every result is checked (not an error, echoes the
//! message), so a failing route gives no figures.
//!
//! Usage: `packhost-bench-remote-mcp [--calls N] [--warmup N] [--block N]
//! [--concurrent-calls N] [--host-log FILE]`; `--host-log` keeps packhost's
//! stderr (a `call done elapsed_ms=` line per call, and remote_mcp's
//! `duration_ms=`), to see where the added time goes.
//!
//! Needs `PACKHOST_TEST_EVERYTHING` (server-everything's entry, as for the
//! e2e tests) and the `packhost` binary and `libremote_mcp.so` built in the
//! same profile as this binary.

use std::{
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use packhost_tests::{
    Recorder, TestHost,
    bench::{Row, arg, cpu_time, ms, percentile, print_table, ratio},
    downstream::{everything_stdio, integrations},
    is_error, text,
};
use rmcp::{
    RoleClient, ServiceExt as _,
    model::{
        CallToolRequestParams, CallToolResult, GetPromptRequestParams, ReadResourceRequestParams,
    },
    service::Peer,
    transport::{ConfigureCommandExt as _, TokioChildProcess},
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Concurrent callers in the throughput run.
const CALLERS: usize = 16;
/// The targets.
const ADDED_P50_TARGET: Duration = Duration::from_micros(500);
const THROUGHPUT_TARGET: f64 = 0.8;

/// One way of calling `echo`: a client and the `tools/call` it sends.
struct Route {
    name: &'static str,
    peer: Peer<RoleClient>,
    params: CallToolRequestParams,
}

impl Route {
    fn new(name: &'static str, peer: Peer<RoleClient>, tool: &str, args: Value) -> Self {
        let Value::Object(args) = args else {
            unreachable!("arguments are an object")
        };
        Self {
            name,
            peer,
            params: CallToolRequestParams::new(tool.to_owned()).with_arguments(args),
        }
    }

    /// One timed call; the result is checked after the clock stops.
    async fn call(&self) -> Duration {
        timed_call(&self.peer, &self.params, self.name).await
    }
}

async fn timed_call(
    peer: &Peer<RoleClient>,
    params: &CallToolRequestParams,
    name: &str,
) -> Duration {
    let started = Instant::now();
    let result = peer.call_tool(params.clone()).await;
    let elapsed = started.elapsed();
    let result = result.unwrap_or_else(|e| panic!("{name}: tools/call failed: {e}"));
    check(name, &result);
    elapsed
}

/// Not an error, and server-everything's answer is in it (as content for the
/// direct call, inside the structured result through packhost).
fn check(name: &str, result: &CallToolResult) {
    assert!(!is_error(result), "{name}: error result: {}", text(result));
    let body = serde_json::to_string(result).expect("serialise result");
    assert!(
        body.contains("Echo: hi"),
        "{name}: unexpected result {body}"
    );
}

/// `calls` calls from `CALLERS` tasks sharing the route's client; the wall time.
async fn throughput(route: &Route, calls: usize) -> Duration {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..CALLERS)
        .map(|_| {
            let (peer, params, next) =
                (route.peer.clone(), route.params.clone(), Arc::clone(&next));
            let name = route.name;
            tokio::spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    timed_call(&peer, &params, name).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("caller task");
    }
    started.elapsed()
}

/// server-everything spawned by the bench, with the client the hosts get.
async fn direct_client() -> rmcp::service::RunningService<RoleClient, Recorder> {
    let command = everything_stdio();
    let command = tokio::process::Command::new(&command[0]).configure(|c| {
        c.args(&command[1..]);
    });
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn server-everything");
    Recorder::default()
        .serve(transport)
        .await
        .expect("MCP handshake with server-everything")
}

/// packhost serving both `remote_mcp` (one integration, added by the CLI)
/// and the server pack `everything`; the integration's id.
async fn packhost() -> (TestHost, String) {
    let dir = TempDir::new().expect("temp dir");
    let database = dir.path().join("integrations.db").display().to_string();
    let config = format!(
        "[identity]\norg = \"bench\"\n\n[packs.remote_mcp]\nconfig = {{ database = {database:?} }}\n\n\
         [packs.everything]\nkind = \"mcp\"\ncommand = {:?}\n",
        everything_stdio()
    );
    std::fs::write(dir.path().join("packs.toml"), config).expect("write config");
    let mut args = vec!["add", "--org", "bench", "--name", "everything", "--"];
    let command = everything_stdio();
    args.extend(command.iter().map(String::as_str));
    let id = integrations(dir.path(), &args, &[]);
    (TestHost::start_in(dir).await, id)
}

#[tokio::main]
async fn main() {
    let calls = arg("--calls", 1000);
    let warmup = arg("--warmup", 50);
    let block = arg("--block", 1usize).max(1);
    let concurrent_calls = arg("--concurrent-calls", 4000);
    let host_log = arg("--host-log", String::new());
    let host_log = (!host_log.is_empty()).then_some(host_log);

    let direct = direct_client().await;
    let (host, id) = packhost().await;
    let routes = [
        Route::new(
            "direct",
            direct.peer().clone(),
            "echo",
            json!({"message": "hi"}),
        ),
        Route::new(
            "remote_mcp.execute_tool",
            host.client.peer().clone(),
            "remote_mcp.execute_tool",
            json!({"integrationId": id, "toolName": "echo", "parameters": {"message": "hi"}}),
        ),
        Route::new(
            "server pack everything.echo",
            host.client.peer().clone(),
            "everything.echo",
            json!({"message": "hi"}),
        ),
    ];

    for route in &routes {
        for _ in 0..warmup {
            route.call().await;
        }
    }
    let mut latencies = vec![Vec::with_capacity(calls); routes.len()];
    for start in (0..calls).step_by(block) {
        for (route, samples) in routes.iter().zip(&mut latencies) {
            for _ in start..(start + block).min(calls) {
                samples.push(route.call().await);
            }
        }
    }
    let mut walls = Vec::new();
    // packhost's own CPU per call in the concurrent run (none for direct).
    let mut host_cpu = Vec::new();
    for route in &routes {
        let before = cpu_time(host.pid);
        walls.push(throughput(route, concurrent_calls).await);
        host_cpu.push(
            before
                .zip(cpu_time(host.pid))
                .map(|(a, b)| (b - a) / concurrent_calls as u32),
        );
    }
    relayed(direct.peer(), host.client.peer(), calls, warmup).await;
    direct.cancel().await.expect("stop direct client");
    host.client.cancel().await.expect("stop host client");
    if let Some(file) = host_log {
        // Per call: the executor's `elapsed_ms` and remote_mcp's `duration_ms`.
        std::fs::copy(host.dir.path().join("stderr.log"), &file).expect("copy the host's log");
    }

    let direct_p50 = percentile(&latencies[0], 0.5);
    let direct_rate = concurrent_calls as f64 / walls[0].as_secs_f64();
    let mut rows = Vec::new();
    let mut verdicts = Vec::new();
    for (i, route) in routes.iter().enumerate() {
        let (p50, p99) = (
            percentile(&latencies[i], 0.5),
            percentile(&latencies[i], 0.99),
        );
        let rate = concurrent_calls as f64 / walls[i].as_secs_f64();
        let cpu = match host_cpu[i] {
            Some(cpu) if i > 0 => format!(" · packhost CPU {} µs/call", cpu.as_micros()),
            _ => String::new(),
        };
        let value = format!(
            "p50 {} · p99 {} · {rate:.0} calls/s @{CALLERS}{cpu}",
            ms(p50),
            ms(p99)
        );
        let (target, reference) = if i == 0 {
            ("-".to_owned(), "-".to_owned())
        } else {
            let added = p50.as_secs_f64() - direct_p50.as_secs_f64();
            let verdict = |met: bool| if met { "met" } else { "NOT met" };
            verdicts.push(format!(
                "{}: added p50 {}, throughput {}",
                route.name,
                verdict(added <= ADDED_P50_TARGET.as_secs_f64()),
                verdict(rate >= THROUGHPUT_TARGET * direct_rate)
            ));
            (
                format!(
                    "added p50 ≤ {} · calls/s ≥ {THROUGHPUT_TARGET} × direct",
                    ms(ADDED_P50_TARGET)
                ),
                format!(
                    "added p50 {:+.3} ms vs direct {} · direct {direct_rate:.0} calls/s",
                    added * 1000.0,
                    ms(direct_p50)
                ),
            )
        };
        rows.push(Row {
            metric: route.name.to_owned(),
            value,
            target,
            reference,
            // Same number of calls: the throughput ratio is the inverse wall-time ratio.
            ratio: ratio(walls[0], walls[i]),
        });
    }
    let order = if block == 1 {
        "routes alternating call by call".to_owned()
    } else {
        format!("routes alternating every {block} calls")
    };
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    print_table(
        &format!(
            "remote_mcp benchmark ({cpus} CPUs): server-everything `echo` over stdio, {calls} \
             sequential calls per route ({warmup} warm-up, {order}), {concurrent_calls} calls from \
             {CALLERS} concurrent callers; ratio = calls/s vs direct"
        ),
        &rows,
    );
    println!("targets (issue): {}", verdicts.join("; "));
}

/// `prompts/get` and `resources/read` of server-everything directly and
/// relayed by the server pack, alternating request by request: a row per
/// request, and whether the added p50 met the target.
async fn relayed(direct: &Peer<RoleClient>, host: &Peer<RoleClient>, calls: usize, warmup: usize) {
    const URI: &str = "demo://resource/dynamic/text/1";
    let prompt = |name: &str| GetPromptRequestParams::new(name.to_owned());
    let timed_prompt = |peer: Peer<RoleClient>, name: &'static str| async move {
        let started = Instant::now();
        let rendered = peer.get_prompt(prompt(name)).await;
        let elapsed = started.elapsed();
        let rendered = rendered.unwrap_or_else(|e| panic!("prompts/get {name}: {e}"));
        assert!(
            !rendered.messages.is_empty(),
            "prompts/get {name}: no messages"
        );
        elapsed
    };
    let timed_read = |peer: Peer<RoleClient>| async move {
        let started = Instant::now();
        let read = peer
            .read_resource(ReadResourceRequestParams::new(URI))
            .await;
        let elapsed = started.elapsed();
        let read = read.unwrap_or_else(|e| panic!("resources/read {URI}: {e}"));
        assert!(
            !read.contents.is_empty(),
            "resources/read {URI}: no contents"
        );
        elapsed
    };
    let mut samples: Vec<Vec<Duration>> = (0..4).map(|_| Vec::with_capacity(calls)).collect();
    for n in 0..warmup + calls {
        let round = [
            timed_prompt(direct.clone(), "simple-prompt").await,
            timed_prompt(host.clone(), "everything.simple_prompt").await,
            timed_read(direct.clone()).await,
            timed_read(host.clone()).await,
        ];
        if n >= warmup {
            for (kept, sample) in samples.iter_mut().zip(round) {
                kept.push(sample);
            }
        }
    }
    let mut rows = Vec::new();
    let mut verdicts = Vec::new();
    for (request, direct, relayed) in [
        ("prompts/get simple-prompt", &samples[0], &samples[1]),
        ("resources/read dynamic text", &samples[2], &samples[3]),
    ] {
        let (direct_p50, p50, p99) = (
            percentile(direct, 0.5),
            percentile(relayed, 0.5),
            percentile(relayed, 0.99),
        );
        let added = p50.as_secs_f64() - direct_p50.as_secs_f64();
        let met = if added <= ADDED_P50_TARGET.as_secs_f64() {
            "met"
        } else {
            "NOT met"
        };
        verdicts.push(format!("{request}: added p50 {met}"));
        rows.push(Row {
            metric: format!("{request} via the server pack"),
            value: format!("p50 {} · p99 {}", ms(p50), ms(p99)),
            target: format!("added p50 ≤ {}", ms(ADDED_P50_TARGET)),
            reference: format!(
                "direct p50 {} · added {:+.3} ms",
                ms(direct_p50),
                added * 1000.0
            ),
            ratio: ratio(direct_p50, p50),
        });
    }
    print_table(
        &format!(
            "relayed requests: server-everything over stdio, {calls} of each request per route \
             ({warmup} warm-up), direct and relayed alternating; ratio = direct p50 / relayed p50"
        ),
        &rows,
    );
    println!("targets (issue): {}", verdicts.join("; "));
}
