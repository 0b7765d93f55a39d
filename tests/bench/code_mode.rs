//! `packhost-bench-code-mode`: the cost of calling packs from code (code
//! mode) in TypeScript (`exec_ts.execute`) beside Python (`exec_py.run`) and
//! plain `tools/call`, all through one host in the same run: one bridged
//! call, 100 in a row, 100 at once, and what `typecheck: true` adds to an
//! `exec_ts.execute` call. This machine is shared and noisy: read ratios.
//!
//! Usage: `packhost-bench-code-mode [--bridged N] [--calls N] [--gap-ms N]`
//! (defaults 200 bridged calls timed inside the code, 30 `exec_ts.execute`
//! calls with and 30 without the type check, interleaved and spaced by
//! 100 ms so that the warm pool has refilled, as between an agent's calls).

use std::time::{Duration, Instant};

use packhost_tests::{
    TestHost,
    bench::{Row, arg, percentile, print_table, samples},
    is_error, structured, text, typescript_package,
};
use serde_json::{Value, json};

/// How many calls the sequential and concurrent rows make.
const BATCH: usize = 100;

/// Untimed bridged calls first, so the per-call figures leave out the
/// channel's first use.
const WARMUP: usize = 10;

/// A small program for the type check rows: it calls a pack and returns a
/// number, so the check reads the pack's declarations.
const CHECKED: &str = "const listed = await proj.list();\nlisted.projects.length + 1";

/// Bridged call times measured inside the code, so the interpreter's start
/// and the `tools/call` around it do not count.
struct Inside {
    median: Duration,
    sequential: Duration,
    concurrent: Duration,
}

/// `exec_ts.execute(code)`; fails with the error text unless it ran cleanly.
async fn execute(host: &TestHost, code: &str, typecheck: bool) -> Value {
    let result = host
        .call(
            "exec_ts.execute",
            json!({"code": code, "typecheck": typecheck, "timeout": 120_000}),
        )
        .await;
    assert!(!is_error(&result), "{}", text(&result));
    let out = structured(&result);
    assert_eq!(out["exitCode"], 0, "{out}");
    out
}

/// `field` of `result` as a duration, given in seconds × `unit`.
fn duration(result: &Value, field: &str, unit: f64) -> Duration {
    let value = result[field]
        .as_f64()
        .unwrap_or_else(|| panic!("`{field}` missing from {result}"));
    Duration::from_secs_f64(value / unit)
}

async fn typescript_inside(host: &TestHost, bridged: usize) -> Inside {
    let code = format!(
        "for (let i = 0; i < {WARMUP}; i++) await proj.list();\n\
         const times: number[] = [];\n\
         for (let i = 0; i < {bridged}; i++) {{\n\
         \x20 const t = performance.now();\n\
         \x20 await proj.list();\n\
         \x20 times.push(performance.now() - t);\n\
         }}\n\
         times.sort((a, b) => a - b);\n\
         let t = performance.now();\n\
         for (let i = 0; i < {BATCH}; i++) await proj.list();\n\
         const sequential = performance.now() - t;\n\
         t = performance.now();\n\
         await Promise.all(Array.from({{ length: {BATCH} }}, () => proj.list()));\n\
         const concurrent = performance.now() - t;\n\
         ({{ median: times[Math.floor(times.length / 2)], sequential, concurrent }})"
    );
    let result = &execute(host, &code, false).await["result"];
    Inside {
        median: duration(result, "median", 1000.0),
        sequential: duration(result, "sequential", 1000.0),
        concurrent: duration(result, "concurrent", 1000.0),
    }
}

async fn python_inside(host: &TestHost, bridged: usize) -> Inside {
    let code = format!(
        "import time\n\
         from concurrent.futures import ThreadPoolExecutor\n\
         for _ in range({WARMUP}):\n    proj.list()\n\
         ts = []\n\
         for _ in range({bridged}):\n    t = time.perf_counter()\n    proj.list()\n    ts.append(time.perf_counter() - t)\n\
         t = time.perf_counter()\n\
         for _ in range({BATCH}):\n    proj.list()\n\
         sequential = time.perf_counter() - t\n\
         with ThreadPoolExecutor(16) as pool:\n    t = time.perf_counter()\n    list(pool.map(lambda _: proj.list(), range({BATCH})))\n    concurrent = time.perf_counter() - t\n\
         {{\"median\": sorted(ts)[len(ts) // 2], \"sequential\": sequential, \"concurrent\": concurrent}}"
    );
    let result = host
        .call("exec_py.run", json!({"code": code, "timeout_ms": 120_000}))
        .await;
    assert!(!is_error(&result), "{}", text(&result));
    let result = &structured(&result)["result"];
    Inside {
        median: duration(result, "median", 1.0),
        sequential: duration(result, "sequential", 1.0),
        concurrent: duration(result, "concurrent", 1.0),
    }
}

/// `exec_ts.execute(CHECKED)` at the client with the type check and
/// without, `calls` times each after 3 untimed pairs; interleaved so that
/// both share the machine's noise.
async fn typecheck_samples(
    host: &TestHost,
    calls: usize,
    gap: Duration,
) -> (Vec<Duration>, Vec<Duration>) {
    let (mut checked, mut unchecked) = (Vec::new(), Vec::new());
    for i in 0..calls + 3 {
        for (typecheck, times) in [(true, &mut checked), (false, &mut unchecked)] {
            tokio::time::sleep(gap).await;
            let started = Instant::now();
            let out = execute(host, CHECKED, typecheck).await;
            let elapsed = started.elapsed();
            assert_eq!(out["result"], 2, "{out}");
            if i >= 3 {
                times.push(elapsed);
            }
        }
    }
    (checked, unchecked)
}

#[tokio::main]
async fn main() {
    let bridged = arg("--bridged", 200);
    let calls = arg("--calls", 30);
    let gap = Duration::from_millis(arg("--gap-ms", 100));
    let config = format!(
        "[packs.exec_py]\n[packs.exec_ts]\nconfig = {{ typescript = {:?} }}\n[packs.proj]\n\
         [projects]\nbench = {:?}\n",
        typescript_package().display().to_string(),
        env!("CARGO_MANIFEST_DIR"),
    );
    let host = TestHost::start(&config).await;

    let ts = typescript_inside(&host, bridged).await;
    let py = python_inside(&host, bridged).await;
    let direct = samples(10, bridged, async || {
        let result = host.call("proj.list", json!({})).await;
        assert!(!is_error(&result), "{}", text(&result));
    })
    .await;
    let (checked, unchecked) = typecheck_samples(&host, calls, gap).await;
    host.client.cancel().await.expect("stop client");

    let median = |s: &[Duration]| percentile(s, 0.5);
    let (direct, checked, unchecked) = (median(&direct), median(&checked), median(&unchecked));
    let row = Row::timed;
    let rows = [
        row(
            "`await proj.list()` from TypeScript (bridge), median inside node",
            ts.median,
            "≤ 1 ms",
            "`proj.list()` from Python, median inside `exec_py.run`",
            py.median,
        ),
        row(
            "same",
            ts.median,
            "-",
            "tools/call proj.list from the client, median",
            direct,
        ),
        row(
            &format!("{BATCH} sequential bridged calls, TypeScript, total"),
            ts.sequential,
            "-",
            "Python",
            py.sequential,
        ),
        row(
            &format!("{BATCH} concurrent bridged calls (`Promise.all`), TypeScript, total"),
            ts.concurrent,
            "-",
            "Python, `ThreadPoolExecutor(16)` (its channel serialises calls)",
            py.concurrent,
        ),
        row(
            "same",
            ts.concurrent,
            "-",
            &format!("TypeScript, {BATCH} sequential"),
            ts.sequential,
        ),
        row(
            "`exec_ts.execute` with `typecheck: true`, median at the client",
            checked,
            "-",
            "`typecheck: false`",
            unchecked,
        ),
        // Zero when the check is lost in the noise.
        row(
            "type check alone (difference of medians)",
            checked.saturating_sub(unchecked),
            "-",
            "unchecked call",
            unchecked,
        ),
    ];
    print_table(
        &format!(
            "code mode benchmark: {bridged} bridged calls timed inside the code, {calls} \
             `exec_ts.execute` calls per type check row, spaced by {} ms",
            gap.as_millis()
        ),
        &rows,
    );
}
