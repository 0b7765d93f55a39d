//! `exec_ts` blocks in a fresh realm of a warm worker (the pack's
//! `realm.rs`): nothing of a block reaches the next, escapes from the realm
//! to the worker's own fail, runaway blocks time out without breaking the
//! next, blocks that need node still get a node process, workers start on
//! demand, are confined, and end when idle; so do the node processes kept
//! ready for blocks that need node.

use std::time::{Duration, Instant};

use packhost_tests::{TestHost, failed, is_error, ok, structured, text};
use serde_json::{Value, json};

use crate::exec_ts::Notebooks;

/// The host's node processes whose command line contains `marker`.
fn node_children(host: &TestHost, marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let parent = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().nth(1));
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            parent == Some(&host.pid.to_string())
                && cmdline.contains("node")
                && cmdline.contains(marker)
        })
        .collect()
}

/// The host's realm workers (node processes running the worker module).
fn workers(host: &TestHost) -> Vec<u32> {
    node_children(host, "packhost%3Aworker")
}

async fn ts(host: &TestHost, code: &str) -> Value {
    ok(&host.call("exec_ts.execute", json!({ "code": code })).await)
}

/// One worker, so that every block runs in the same one.
async fn one_worker(nb: &Notebooks) -> TestHost {
    nb.host_with(", realm_workers = 1").await
}

#[tokio::test]
async fn a_realm_never_sees_the_previous_blocks_globals() {
    let nb = Notebooks::new();
    let host = one_worker(&nb).await;
    let patched = ts(
        &host,
        "Object.prototype.leak = 'object';\n\
         Array.prototype.pwn = 'array';\n\
         Math.seen = 'math';\n\
         JSON.parse = () => 'patched';\n\
         setTimeout.mark = 'timers';\n\
         Promise.prototype.then = function () { return 'hijacked' };\n\
         [({}).leak, [].pwn, Math.seen, JSON.parse('1'), setTimeout.mark]",
    )
    .await;
    assert_eq!(
        patched["result"],
        json!(["object", "array", "math", "patched", "timers"]),
        "{patched}"
    );
    let worker = workers(&host);
    assert_eq!(worker.len(), 1, "one worker after a block: {worker:?}");
    let fresh = ts(
        &host,
        "const x: number = await Promise.resolve(1);\n\
         [x, ({}).leak ?? null, [].pwn ?? null, Math.seen ?? null, JSON.parse('1'), setTimeout.mark ?? null]",
    )
    .await;
    assert_eq!(
        fresh["result"],
        json!([1, null, null, null, 1, null]),
        "{fresh}"
    );
    assert_eq!(workers(&host), worker, "both blocks ran in the same worker");
}

/// Ways out of a realm to the worker's own (node's `process`): each block
/// answers `escaped` with what it reached, or why it could not.
const ESCAPES: &[&str] = &[
    // The classic: a function's constructor's constructor.
    "proj.list.constructor.constructor('return process')()",
    "(async () => {}).constructor('return process')()",
    "setTimeout.constructor('return process')()",
    // Dynamic import, whose errors node makes in its own realm.
    "(async () => { try { await [].constructor.constructor('return import(\"node:fs\")')() } catch (e) { return e.constructor.constructor('return process')() } })()",
    // Frames of the worker's own functions on the stack, through the V8
    // stack API, while it formats a value of the block's.
    "(() => { let seen; console.log('%s', { toString() { Error.prepareStackTrace = (_, frames) => frames; const frames = new Error().stack; Error.prepareStackTrace = undefined; seen = frames.map((f) => f.getThis() ?? f.getFunction()).find((x) => x !== undefined); return 'x'; } }); return seen ? seen.constructor.constructor('return process')() : 'no frame'; })()",
    // A getter inspect reads, and a Proxy, handed to the worker's inspect.
    "(() => { let caught = 'not called'; const value = new Proxy({}, { get(_, key, receiver) { caught = receiver; return undefined; }, ownKeys() { caught = 'ownKeys'; return []; } }); console.log(value); return typeof caught === 'object' ? caught.constructor.constructor('return process')() : caught; })()",
    // The prototype of a value the worker made (a pack call's failure).
    "(async () => { try { await proj.lst() } catch (e) { return e.constructor.constructor('return process')() } })()",
];

#[tokio::test]
async fn escapes_from_the_realm_to_the_workers_fail() {
    let nb = Notebooks::new();
    let config = format!(
        "[packs.exec_ts]\nconfig = {{ notebooks_dir = {}, realm_workers = 1 }}\n\
         [packs.proj]\n[projects]\nhere = \".\"\n",
        crate::exec_ts::toml_path(nb.root.path())
    );
    let host = TestHost::start(&config).await;
    for attempt in ESCAPES {
        let code = format!(
            "let escaped;\ntry {{ escaped = await {attempt}; }} catch (e) {{ escaped = `refused: ${{e}}`; }}\n\
             typeof escaped === 'object' && escaped !== null ? `escaped: ${{Object.keys(escaped).slice(0, 5)}}` : String(escaped)"
        );
        let result = host.call("exec_ts.execute", json!({ "code": code })).await;
        let out = structured(&result);
        let answer = out["result"].as_str().unwrap_or_default();
        assert!(
            !answer.starts_with("escaped") && !text(&result).contains("escaped:"),
            "{attempt}\nreached the worker's realm: {out}"
        );
        assert!(!workers(&host).is_empty(), "{attempt} ran in a worker");
    }
}

#[tokio::test]
async fn runaway_blocks_time_out_and_the_next_block_runs() {
    let nb = Notebooks::new();
    let host = one_worker(&nb).await;
    for runaway in [
        "console.log('before');\nwhile (true) {}",
        "console.log('before');\nfor (;;) await null;",
        "console.log('before');\nwhile (true) await new Promise((resolve) => setTimeout(resolve, 1));",
        "console.log('before');\nsetInterval(() => {}, 5);",
    ] {
        let started = Instant::now();
        let result = host
            .call(
                "exec_ts.execute",
                json!({ "code": runaway, "timeout": 700 }),
            )
            .await;
        let elapsed = started.elapsed();
        failed(&result, "TIMEOUT", &["time limit"]);
        let out = structured(&result);
        assert_eq!(out["exitCode"], 124, "{runaway}: {out}");
        assert_eq!(out["stdout"], "before\n", "{runaway}: {out}");
        assert!(
            elapsed < Duration::from_millis(3000),
            "{runaway}: answered after {elapsed:?}"
        );
        let next = ts(&host, "1 + 1").await;
        assert_eq!(next["result"], 2, "after {runaway}: {next}");
    }
}

#[tokio::test]
async fn an_uncaught_error_ends_the_block_as_it_ends_node() {
    let nb = Notebooks::new();
    let host = one_worker(&nb).await;
    let result = host
        .call(
            "exec_ts.execute",
            json!({"code": "setTimeout(() => console.log('never'), 50);\nconst a: number = 1;\nthrow new Error('kaboom ' + a);\n"}),
        )
        .await;
    failed(&result, "EXECUTION_ERROR", &["Error: kaboom 1 (line 3)"]);
    let out = structured(&result);
    let stderr = out["stderr"].as_str().unwrap();
    assert!(
        stderr.starts_with("Error: kaboom 1\n    at [eval1]:3:7"),
        "{stderr}"
    );
    assert_eq!(out["stdout"], "", "{out}");
    assert_eq!(out["exitCode"], 1, "{out}");
    // A rejection nothing handles ends it too; a timer's error as well.
    for (code, message) in [
        (
            "Promise.reject(new TypeError('unhandled'));\nawait new Promise((r) => setTimeout(r, 50));",
            "TypeError: unhandled",
        ),
        (
            "setTimeout(() => { throw new RangeError('in a timer') }, 1);",
            "RangeError: in a timer",
        ),
    ] {
        let result = host.call("exec_ts.execute", json!({ "code": code })).await;
        failed(&result, "EXECUTION_ERROR", &[message]);
    }
    assert_eq!(
        ts(&host, "'still serving'").await["result"],
        "still serving"
    );
}

#[tokio::test]
async fn blocks_that_need_node_get_a_node_process() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    // Nothing idles before a block needs it: no worker, no pooled node.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(node_children(&host, ""), Vec::<u32>::new());
    let out = ts(
        &host,
        "import fs from 'node:fs';\nconsole.log(typeof fs.readFileSync);\ntypeof process.pid",
    )
    .await;
    assert_eq!(out["stdout"], "function\n", "{out}");
    assert_eq!(out["result"], "number", "{out}");
    let out = ts(&host, "process.env.PATH !== undefined").await;
    assert_eq!(out["result"], true, "{out}");
    assert!(workers(&host).is_empty(), "node's blocks started a worker");
    // A block that needs nothing of node's runs in a worker.
    let out = ok(&host.run("```ts\nconst x: number = 1;\nx + 1\n```").await);
    assert_eq!(out["result"], 2, "{out}");
    assert_eq!(workers(&host).len(), 1);
}

#[tokio::test]
async fn node_processes_kept_ready_end_after_pool_idle_secs() {
    let nb = Notebooks::new();
    let host = nb.host_with(", pool_idle_secs = 1").await;
    let needs_node = "typeof process.pid";
    assert_eq!(ts(&host, needs_node).await["result"], "number");
    let ready = || node_children(&host, "--input-type=module");
    let deadline = Instant::now() + Duration::from_secs(5);
    while ready().is_empty() {
        assert!(Instant::now() < deadline, "no node process was kept ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready().is_empty() {
        assert!(
            Instant::now() < deadline,
            "ready node processes outlived pool_idle_secs: {:?}",
            ready()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // And the next block that needs node still gets one.
    assert_eq!(ts(&host, needs_node).await["result"], "number");
}

#[tokio::test]
async fn a_worker_is_confined_and_ends_when_idle() {
    let nb = Notebooks::new();
    let host = nb.host_with(", realm_idle_ms = 300").await;
    assert_eq!(ts(&host, "1 + 1").await["result"], 2);
    let worker = workers(&host);
    assert_eq!(worker.len(), 1, "{worker:?}");
    let status = std::fs::read_to_string(format!("/proc/{}/status", worker[0])).unwrap();
    for line in ["NoNewPrivs:\t1", "Seccomp:\t2"] {
        assert!(status.contains(line), "{line} missing:\n{status}");
    }
    let cgroup = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    assert_ne!(
        cgroup(worker[0]),
        cgroup(host.pid),
        "the worker has a cgroup of its own"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while !workers(&host).is_empty() {
        assert!(Instant::now() < deadline, "the idle worker did not end");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // And the next block starts one again.
    assert_eq!(ts(&host, "2 + 2").await["result"], 4);
}

#[tokio::test]
async fn sixteen_blocks_at_once_each_get_their_own_answer() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let calls = (0..16).map(|i| {
        let host = &host;
        async move {
            let code = format!("const i: number = {i};\nconsole.log('block', i);\nawait new Promise((r) => setTimeout(r, 20));\ni * 2");
            (i, host.call("exec_ts.execute", json!({ "code": code })).await)
        }
    });
    for (i, result) in futures_util::future::join_all(calls).await {
        assert!(!is_error(&result), "{}", text(&result));
        let out = structured(&result);
        assert_eq!(out["result"], i * 2, "{out}");
        assert_eq!(out["stdout"], format!("block {i}\n"), "{out}");
    }
    assert!(workers(&host).len() <= 2, "at most `realm_workers` workers");
}

#[tokio::test]
async fn a_cancelled_block_ends_its_worker_and_its_calls() {
    let nb = Notebooks::new();
    let host = TestHost::start(&format!(
        "[packs.exec_ts]\nconfig = {{ notebooks_dir = {}, realm_workers = 1 }}\n{}",
        crate::exec_ts::toml_path(nb.root.path()),
        packhost_tests::hello_section("")
    ))
    .await;
    let marker = nb.root.path().join("abandoned");
    let code = format!(
        "console.log('started');\nawait hello.sleep({{ ms: 60000, marker: {:?} }});",
        marker.display().to_string()
    );
    let call = host.call("exec_ts.execute", json!({ "code": code }));
    tokio::select! {
        result = call => panic!("the block should still be waiting: {}", text(&result)),
        () = async {
            while workers(&host).is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        } => {}
    }
    let worker = workers(&host);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !marker.exists() || workers(&host) == worker {
        assert!(
            Instant::now() < deadline,
            "after the cancel: worker {worker:?} → {:?}, nested call abandoned: {}",
            workers(&host),
            marker.exists()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(ts(&host, "1 + 1").await["result"], 2);
}
