//! `packhost-bench-instances`: what several instances cost and give.
//!
//! 1. What the shared state adds: one instance keeping its state in
//!    PostgreSQL (`[state] database`) beside one keeping it in memory, in
//!    the same run, calls alternating between them: reading a page of a
//!    kept result (`packhost.result_read`), and a call that touches no
//!    state (`proj.list`); p50 and p99.
//! 2. One organisation floods kept results past its bounds through
//!    HAProxy: another's read of its own kept result with and without the
//!    flood, and the flooder's keeps; p50 and p99.
//! 3. Throughput through HAProxy (`deploy/local`, round robin): three
//!    instances beside one behind the same proxy, 16 concurrent clients
//!    calling `proj.list`; calls/s and the instances' CPU per call. On a
//!    2-core machine three instances cannot triple it: CPU per call says
//!    what each call costs.
//! 4. Mixed load: `--clients` (100) clients × `--load-calls` (100) mixed
//!    calls through HAProxy to three instances (`proj.list`, a Python
//!    block, a read that is kept, a page of a result kept before): once
//!    whole, then with one instance SIGKILLed halfway, then with their
//!    PostgreSQL (a cluster of the bench's own) stopped halfway for 3 s:
//!    the calls that fail and why, that calls succeed after, `/readyz`
//!    while it is down and after, and that every handle a client was
//!    given reads back whole afterwards.
//!
//! Needs PostgreSQL (`PACKHOST_TEST_POSTGRES_URL`, which `./dev bench`
//! sets) and haproxy. Usage: `packhost-bench-instances [--calls N]`
//! (sequential calls per figure, default 300) `[--concurrent-calls N]`
//! (default 1600).

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering::Relaxed},
    },
    time::{Duration, Instant},
};

use packhost_tests::{
    Recorder,
    bench::{Row, arg, cpu_time, percentile, print_table},
    call,
    downstream::postgres_database,
    http::{HttpHost, token},
    instances::{Instances, haproxy_installed},
    is_error,
    postgres::Cluster,
};
use rmcp::{RoleClient, service::RunningService};
use serde_json::json;
use tempfile::TempDir;

type Client = RunningService<RoleClient, Recorder>;

/// Concurrent clients in the throughput runs.
const CLIENTS: usize = 16;

/// A stateless instance's config on a project holding a 130 kB log, results
/// past 2,000 characters kept (`results`: more lines of `[results]`);
/// `extra` appended.
fn config(project: &TempDir, results: &str, extra: &str) -> String {
    format!(
        "[http]\nsessions = false\nshutdown_grace_secs = 1\n[results]\nmax_result_chars = 2000\n\
         {results}\n[packs.proj]\n[projects]\nlogs = {:?}\n{extra}\n",
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
    let memory = HttpHost::start(&config(project, "", ""), &[]).await;
    let shared = format!("[state]\ndatabase = {database:?}");
    let postgres = HttpHost::start(&config(project, "", &shared), &[]).await;
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

/// One organisation's bounds in the flood: 20 results, 1 MB.
const FLOOD_BOUNDS: &str = "max_results_per_org = 20\nmax_bytes_per_org = 1000000";

/// The mixed load's bounds: room for every handle its one caller is given
/// (100 clients keep 2,500 results), so a handle read back is checked for
/// what was stored, not for the bound pushing it out.
const LOAD_BOUNDS: &str = "max_results_per_user = 20000\nmax_results_per_org = 20000";

/// Kept results under a flood, through HAProxy to three instances: ada
/// (acme) reads a page of her kept result `calls` times alone, then while
/// [`CLIENTS`] clients of eve (evil) keep 130 kB results as fast as they
/// can, far past evil's bounds; p50 and p99 of ada's read with and without
/// the flood, and of eve's keeps.
async fn flood(project: &TempDir, database: &str, calls: usize) -> Vec<Row> {
    let (ada_token, ada) = token("ada", "acme", &["*"]);
    let (eve_token, eve) = token("eve", "evil", &["*"]);
    let config = config(project, FLOOD_BOUNDS, &format!("{ada}\n{eve}"));
    let instances = Instances::start(&config, database);
    let ada = instances.client(Some(&ada_token)).await.expect("ada");
    let handle = json!({"handle": kept(&ada).await});
    let mut alone = Vec::new();
    for _ in 0..calls {
        alone.push(timed(&ada, "packhost.result_read", handle.clone()).await);
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut floods = Vec::new();
    for _ in 0..CLIENTS {
        let eve = instances.client(Some(&eve_token)).await.expect("eve");
        let stop = Arc::clone(&stop);
        floods.push(tokio::spawn(async move {
            let read = json!({"name": "logs", "path": "app.log", "limit": 3000});
            let mut keeps = Vec::new();
            while !stop.load(Relaxed) {
                keeps.push(timed(&eve, "proj.read", read.clone()).await);
            }
            keeps
        }));
    }
    let mut flooded = Vec::new();
    for _ in 0..calls {
        flooded.push(timed(&ada, "packhost.result_read", handle.clone()).await);
    }
    stop.store(true, Relaxed);
    let mut keeps = Vec::new();
    for flood in floods {
        keeps.extend(flood.await.expect("eve's keeps"));
    }
    let mut rows = Vec::new();
    for (q, name) in [(0.5, "p50"), (0.99, "p99")] {
        let (with, without) = (percentile(&flooded, q), percentile(&alone, q));
        let metric = format!("acme reads a page of its kept result under evil's flood, {name}");
        rows.push(Row::timed(&metric, with, "-", "no flood", without));
    }
    for (q, name) in [(0.5, "p50"), (0.99, "p99")] {
        let metric = format!("evil keeps a 130 kB result past its bounds, {name}");
        let keep = percentile(&keeps, q);
        rows.push(Row::timed(
            &metric,
            keep,
            "-",
            "acme's read, no flood",
            percentile(&alone, 0.5),
        ));
    }
    rows
}

/// What happens halfway through a mixed load.
#[derive(Clone, Copy)]
enum Halfway<'a> {
    Nothing,
    /// Instance two is SIGKILLed.
    Kill,
    /// The instances' database is stopped at once, kept down for
    /// [`DOWN`], and started again.
    Restart(&'a Cluster),
}

/// How long the database stays down in a [`Halfway::Restart`].
const DOWN: Duration = Duration::from_secs(3);

/// Small logs that mixed loads read, each kept (past 2,000 characters) and
/// different, so a handle that reads another's text is caught.
const PARTS: usize = 4;

/// How long a client whose call failed waits before its next, as one that
/// retries would: the load then outlasts an outage.
const BACKOFF: Duration = Duration::from_millis(500);

/// One call of a mixed load.
struct Outcome {
    started: Instant,
    tool: &'static str,
    /// Why it failed.
    failure: Option<String>,
    /// The handle it was given, and the part it read.
    kept: Option<(String, usize)>,
    /// The first line of a read answered without a handle.
    unkept: Option<String>,
}

/// What a mixed load run saw.
struct Load {
    outcomes: Vec<Outcome>,
    /// When the disturbance began and when it ended.
    window: Option<(Instant, Instant)>,
    wall: Duration,
    /// Each given handle read back whole afterwards: those that differ from
    /// what their part reads as, or cannot be read, and why.
    unreadable: Vec<String>,
    /// `/readyz` of instance one while the database was down and after.
    readiness: Vec<String>,
}

/// The mixed call `i` of client `c`: `proj.list`, a Python block, a read of
/// a part (kept), a page of the result `handle` kept before the load.
fn mixed_call(c: usize, i: usize, handle: &str) -> (&'static str, serde_json::Value) {
    match (c + i) % 4 {
        0 => ("proj.list", json!({})),
        1 => (
            "run",
            json!({"command": format!("```python\n{i} * 2\n```")}),
        ),
        2 => ("proj.read", json!({"name": "logs", "path": part(c)})),
        _ => ("packhost.result_read", json!({"handle": handle})),
    }
}

fn part(c: usize) -> String {
    format!("part-{}.log", c % PARTS)
}

/// The handle a result was kept as, if it was.
fn handle_of(result: &rmcp::model::CallToolResult) -> Option<String> {
    let meta = result.meta.as_ref()?.get("packhost/result")?;
    Some(meta["handle"].as_str()?.to_owned())
}

/// Client `c`'s `calls` mixed calls, each counted in `done` once answered.
async fn client_calls(
    client: Client,
    (c, calls): (usize, usize),
    handle: Arc<String>,
    done: Arc<AtomicUsize>,
) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    for i in 0..calls {
        let (tool, args) = mixed_call(c, i, &handle);
        let started = Instant::now();
        let (mut failure, mut kept, mut unkept) = (None, None, None);
        match call(&client, tool, args).await {
            Ok(result) if is_error(&result) => failure = Some(packhost_tests::text(&result)),
            Ok(result) => match handle_of(&result) {
                Some(handle) => kept = Some((handle, c % PARTS)),
                None if tool == "proj.read" => {
                    let text = packhost_tests::text(&result);
                    unkept = text.lines().next().map(str::to_owned);
                }
                None => {}
            },
            Err(e) => failure = Some(e.to_string()),
        }
        if failure.is_some() {
            tokio::time::sleep(BACKOFF).await;
        }
        outcomes.push(Outcome {
            started,
            tool,
            failure,
            kept,
            unkept,
        });
        done.fetch_add(1, Relaxed);
    }
    outcomes
}

/// A kept result's whole text, read page by page.
async fn read_whole(client: &Client, handle: &str) -> Result<String, String> {
    let mut text = String::new();
    let mut offset = Some(0);
    while let Some(at) = offset {
        let args = json!({"handle": handle, "offset": at});
        let page = call(client, "packhost.result_read", args).await;
        let page = page.map_err(|e| e.to_string())?;
        if is_error(&page) {
            return Err(packhost_tests::text(&page));
        }
        let page = page.structured_content.unwrap_or_default();
        text.push_str(page["text"].as_str().unwrap_or_default());
        offset = page["next_offset"].as_u64();
    }
    Ok(text)
}

/// Every handle the load was given that does not read back whole as
/// `expected[part]`, and why.
async fn unreadable(client: &Client, outcomes: &[Outcome], expected: &[String]) -> Vec<String> {
    let mut bad = Vec::new();
    for (handle, part) in outcomes.iter().filter_map(|o| o.kept.as_ref()) {
        match read_whole(client, handle).await {
            Ok(text) if text == expected[*part] => {}
            Ok(text) => bad.push(format!("{handle}: {} chars, not the kept text", text.len())),
            Err(why) => bad.push(format!("{handle}: {why}")),
        }
    }
    bad
}

/// Instance one's `/readyz`: its status and how long it took.
async fn readyz(instances: &Instances) -> (u16, Duration) {
    let url = instances.instance_url(1).replace("/mcp", "/readyz");
    let started = Instant::now();
    let asked = packhost_tests::http::web_client()
        .get(url)
        .timeout(Duration::from_secs(15))
        .send()
        .await;
    (asked.map_or(0, |r| r.status().as_u16()), started.elapsed())
}

/// Stops the database, asks `/readyz` while it is down, starts it again
/// after [`DOWN`], and asks until `/readyz` is ready: the window it was
/// down, and what `/readyz` said.
async fn restart(instances: &Instances, cluster: &Cluster) -> ((Instant, Instant), Vec<String>) {
    let stopped = Instant::now();
    cluster.stop();
    let (status, took) = readyz(instances).await;
    let mut said = vec![format!("while down: {status} in {} ms", took.as_millis())];
    tokio::time::sleep(DOWN.saturating_sub(stopped.elapsed())).await;
    cluster.start_again();
    let started = Instant::now();
    loop {
        let (status, _) = readyz(instances).await;
        if status == 200 || started.elapsed() > Duration::from_secs(60) {
            let after = started.elapsed().as_millis();
            said.push(format!("after the restart: {status} within {after} ms"));
            return ((stopped, started), said);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The mixed load through three instances, `halfway` done once half the
/// calls are made; then each handle given is read back whole.
async fn mixed_load(
    config: &str,
    database: &str,
    (clients, calls): (usize, usize),
    halfway: Halfway<'_>,
) -> Load {
    let instances = Instances::start(config, database);
    let first = instances.client(None).await.expect("a client");
    let handle = Arc::new(kept(&first).await);
    let mut expected = Vec::new();
    for p in 0..PARTS {
        let read = call(
            &first,
            "proj.read",
            json!({"name": "logs", "path": part(p)}),
        );
        let kept = handle_of(&read.await.expect("tools/call")).expect("a part is kept");
        expected.push(read_whole(&first, &kept).await.expect("a part reads back"));
    }
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut runs = Vec::new();
    for c in 0..clients {
        let client = instances.client(None).await.expect("a client");
        let (handle, done) = (Arc::clone(&handle), Arc::clone(&done));
        let calls = client_calls(client, (c, calls), handle, done);
        runs.push(tokio::spawn(calls));
    }
    let (mut window, mut readiness) = (None, Vec::new());
    if !matches!(halfway, Halfway::Nothing) {
        while done.load(Relaxed) < clients * calls / 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    match halfway {
        Halfway::Nothing => {}
        Halfway::Kill => {
            instances.kill(2);
            window = Some((Instant::now(), Instant::now()));
        }
        Halfway::Restart(cluster) => {
            let (down, said) = restart(&instances, cluster).await;
            (window, readiness) = (Some(down), said);
        }
    }
    let mut outcomes = Vec::new();
    for run in runs {
        outcomes.extend(run.await.expect("a client's calls"));
    }
    let wall = started.elapsed();
    let unreadable = unreadable(&first, &outcomes, &expected).await;
    Load {
        outcomes,
        window,
        wall,
        unreadable,
        readiness,
    }
}

/// Prints what a mixed load saw: its rate, the calls that failed before,
/// during and more than a second after the disturbance, a sample of each
/// reason, and what was kept.
fn report(load: &Load) {
    let made = load.outcomes.len();
    let failed: Vec<&Outcome> = load
        .outcomes
        .iter()
        .filter(|o| o.failure.is_some())
        .collect();
    println!(
        "- {made} calls in {:.1} s ({:.0} calls/s); {} failed",
        load.wall.as_secs_f64(),
        made as f64 / load.wall.as_secs_f64(),
        failed.len()
    );
    if let Some((from, to)) = load.window {
        let later = |o: &&Outcome| o.started > to + Duration::from_secs(1);
        let after: Vec<_> = load.outcomes.iter().filter(later).collect();
        let failed_after = after.iter().filter(|o| o.failure.is_some()).count();
        let before = failed.iter().filter(|o| o.started < from).count();
        println!(
            "- of them {before} started before it (in flight), {} during it or within a second \
             after, {failed_after} of the {} started later",
            failed.len() - before - failed_after,
            after.len()
        );
    }
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for o in &failed {
        let why = o.failure.as_deref().unwrap_or_default();
        let reason: String = format!("{}: {why}", o.tool).chars().take(240).collect();
        *reasons.entry(reason).or_default() += 1;
    }
    for (reason, count) in reasons {
        println!("  - {count} x {reason}");
    }
    let reads = load.outcomes.iter().filter(|o| o.tool == "proj.read");
    let answered = reads.filter(|o| o.failure.is_none()).count();
    let kept = load.outcomes.iter().filter(|o| o.kept.is_some()).count();
    println!(
        "- proj.read answered {answered} times, {kept} with a handle; read back whole \
         afterwards: {} of {kept}",
        kept - load.unreadable.len()
    );
    if let Some(said) = load.outcomes.iter().find_map(|o| o.unkept.as_ref()) {
        println!("  - answered without a handle, e.g.: {said}");
    }
    for bad in load.unreadable.iter().take(5) {
        println!("  - unreadable: {bad}");
    }
    for said in &load.readiness {
        println!("- /readyz of instance one {said}");
    }
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
    for p in 0..PARTS {
        let lines: String = (1..=120)
            .map(|i| format!("2026-11-29T10:00:00 part {p} line {i} INFO ok\n"))
            .collect();
        std::fs::write(project.path().join(part(p)), lines).unwrap();
    }

    let rows = shared_state_cost(&project, &database, calls).await;
    print_table(
        &format!("What the shared state adds ({calls} calls each, back to back, alternating)"),
        &rows,
    );

    let rows = flood(&project, &database, calls).await;
    println!();
    print_table(
        &format!(
            "One organisation floods kept results ({CLIENTS} clients; bounds per organisation: \
             20 results, 1 MB)"
        ),
        &rows,
    );

    let config = config(&project, "", "");
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

    let with_python = format!(
        "{}[packs.exec_py]\n",
        self::config(&project, LOAD_BOUNDS, "")
    );
    let load = (clients, load_calls);
    let own = Cluster::start();
    let mut runs = vec![
        (Halfway::Nothing, "", database.clone()),
        (
            Halfway::Kill,
            ", instance two SIGKILLed halfway",
            database.clone(),
        ),
    ];
    if let Some(own) = &own {
        let what = ", their PostgreSQL stopped halfway (immediate) and started 3 s later";
        runs.push((Halfway::Restart(own), what, own.url()));
    }
    for (halfway, what, database) in runs {
        let seen = mixed_load(&with_python, &database, load, halfway).await;
        println!();
        println!(
            "Mixed load: {clients} clients x {load_calls} calls through HAProxy to three \
             instances{what}"
        );
        report(&seen);
    }
}
