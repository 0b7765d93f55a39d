//! `packhost-bench-exec-py`: `exec_py.run` latency through the real host
//! beside a bare `python3 -c` spawn measured in the same run, and the cost of
//! one bridged tool call from Python (code mode).
//!
//! Usage: `packhost-bench-exec-py [--calls N] [--bridged N]` (defaults 50 and
//! 200). Calls are spaced by `--gap-ms` (default 100) so that the warm pool
//! has refilled, as between an agent's calls, and also run back to back;
//! both with the sandbox on and with `sandbox = "off"`, so the cost of
//! confinement shows.

use std::time::{Duration, Instant};

use packhost_tests::{
    TestHost,
    bench::{Row, arg, ms, percentile, print_table, ratio, samples},
    is_error, structured, text,
};
use serde_json::json;

/// The interpreter behind `python3` (a pyenv shim would add ~300 ms).
fn real_python() -> String {
    let output = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 on PATH");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[tokio::main]
async fn main() {
    let calls = arg("--calls", 50);
    let bridged = arg("--bridged", 200);
    let gap = Duration::from_millis(arg("--gap-ms", 100));
    let python = real_python();

    let bare = samples(3, calls, async || {
        let status = tokio::process::Command::new(&python)
            .args(["-c", "1+1"])
            .status()
            .await
            .expect("spawn python");
        assert!(status.success());
    })
    .await;

    let config = |sandbox: &str| {
        format!(
            "[packs.exec_py]\nconfig = {{ sandbox = {sandbox:?} }}\n[packs.proj]\n[projects]\nbench = \"{}\"\n",
            env!("CARGO_MANIFEST_DIR")
        )
    };
    let unconfined = TestHost::start(&config("off")).await;
    let off_spaced = run_latency(&unconfined, calls, gap).await;
    let off_back_to_back = run_latency(&unconfined, calls, Duration::ZERO).await;
    unconfined.client.cancel().await.expect("stop client");
    let host = TestHost::start(&config("on")).await;
    let run = run_latency(&host, calls, gap).await;
    let back_to_back = run_latency(&host, calls, Duration::ZERO).await;

    // Per-call time measured inside Python, so the interpreter's start does not count.
    let code = format!(
        "import time\nts = []\nfor _ in range({bridged}):\n    t = time.perf_counter()\n    proj.list()\n    ts.append(time.perf_counter() - t)\nsorted(ts)[len(ts) // 2]"
    );
    let result = host
        .call("exec_py.run", json!({"code": code, "timeout_ms": 120_000}))
        .await;
    assert!(!is_error(&result), "{}", text(&result));
    let bridged_median =
        Duration::from_secs_f64(structured(&result)["result"].as_f64().expect("median"));
    let direct = samples(10, bridged, async || {
        let result = host.call("proj.list", json!({})).await;
        assert!(!is_error(&result));
    })
    .await;
    host.client.cancel().await.expect("stop client");

    let (bare50, run50, direct50) = (
        percentile(&bare, 0.5),
        percentile(&run, 0.5),
        percentile(&direct, 0.5),
    );
    let (back50, off50, off_back50) = (
        percentile(&back_to_back, 0.5),
        percentile(&off_spaced, 0.5),
        percentile(&off_back_to_back, 0.5),
    );
    print_table(
        &format!(
            "exec_py benchmark: {calls} calls spaced by {} ms, {bridged} bridged calls, python {python}",
            gap.as_millis()
        ),
        &[
            Row {
                metric: "`exec_py.run(\"1+1\")` through the host, median".into(),
                value: ms(run50),
                target: "≤ 0.5 × bare spawn".into(),
                reference: format!("`python3 -c 1+1` spawn: {}", ms(bare50)),
                ratio: ratio(run50, bare50),
            },
            Row {
                metric: "the same, back to back, median".into(),
                value: ms(back50),
                target: "-".into(),
                reference: format!("`python3 -c 1+1` spawn: {}", ms(bare50)),
                ratio: ratio(back50, bare50),
            },
            Row {
                metric: "spaced, confined vs `sandbox = \"off\"`, median".into(),
                value: ms(run50),
                target: "-".into(),
                reference: format!("unconfined: {}", ms(off50)),
                ratio: ratio(run50, off50),
            },
            Row {
                metric: "back to back, confined vs `sandbox = \"off\"`, median".into(),
                value: ms(back50),
                target: "-".into(),
                reference: format!("unconfined: {}", ms(off_back50)),
                ratio: ratio(back50, off_back50),
            },
            Row {
                metric: "`proj.list()` called from Python (bridge), median".into(),
                value: ms(bridged_median),
                target: "≤ 1 ms".into(),
                reference: format!("tools/call proj.list from the client: {}", ms(direct50)),
                ratio: ratio(bridged_median, direct50),
            },
        ],
    );
}

/// `exec_py.run("1+1")` at the client, `calls` times after 3 untimed ones,
/// each after `gap` (untimed: it lets the pool refill, as between an
/// agent's calls).
async fn run_latency(host: &TestHost, calls: usize, gap: Duration) -> Vec<Duration> {
    let mut run = Vec::with_capacity(calls);
    for i in 0..calls + 3 {
        tokio::time::sleep(gap).await;
        let started = Instant::now();
        let result = host.call("exec_py.run", json!({"code": "1+1"})).await;
        let elapsed = started.elapsed();
        assert!(!is_error(&result), "{}", text(&result));
        assert_eq!(structured(&result)["result"], 2);
        if i >= 3 {
            run.push(elapsed);
        }
    }
    run
}
