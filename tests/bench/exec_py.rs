//! `packhost-bench-exec-py`: `exec_py.run` latency through the real host
//! beside a bare `python3 -c` spawn measured in the same run, and the cost of
//! one bridged tool call from Python (code mode).
//!
//! Usage: `packhost-bench-exec-py [--calls N] [--bridged N]` (defaults 50 and
//! 200). Calls are spaced by `--gap-ms` (default 100) so that the warm pool
//! has refilled, as between an agent's calls.

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

    let config = format!(
        "[packs.exec_py]\n[packs.proj]\n[projects]\nbench = \"{}\"\n",
        env!("CARGO_MANIFEST_DIR")
    );
    let host = TestHost::start(&config).await;
    let mut run = Vec::with_capacity(calls);
    for i in 0..calls + 3 {
        // The pause is not timed: it lets the pool refill, as between an agent's calls.
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
                metric: "`proj.list()` called from Python (bridge), median".into(),
                value: ms(bridged_median),
                target: "≤ 1 ms".into(),
                reference: format!("tools/call proj.list from the client: {}", ms(direct50)),
                ratio: ratio(bridged_median, direct50),
            },
        ],
    );
}
