//! `packhost-bench-context`: what a model reads, in tokens (o200k_base, the
//! tokenizer of OpenAI's current models, through `tiktoken-rs`), measured in
//! one run beside each other:
//!
//! - `tools/list` and the server's instructions with `[server] expose =
//!   "all"` and `"run"`, for the shipped packs.toml and for it with
//!   server-everything and a 245-tool catalog attached
//!   (tests/fixtures/catalog-200.json);
//! - the `run` description in each;
//! - finding the lines that mention an id in a 2 MB log and a 5 MB JSON
//!   file through `proj.read`, with every result sent whole (plain tools)
//!   and with large results kept as handles (a preview per page, then
//!   `packhost.result_grep`);
//! - search: how often the intended tool is in the top 3 for the 50 tasks
//!   of tests/fixtures/catalog-queries.json, over the catalog alone (each
//!   service a pack) and through `packhost.search` in the host above; and
//!   top-1 and top-3 on the held-out tasks of issue #27
//!   (tests/fixtures/discovery-eval.json), its test half and its tuning
//!   half, over the catalog alone; and the host's first search over 2,000
//!   tools. `--discovery` prints the search table alone.

use std::path::Path;

use packhost_tests::{
    TestHost,
    bench::{Row, print_table},
    downstream::{CATALOG_SERVICES, catalog_section, everything_stdio},
    is_error, structured, text,
};
use rmcp::model::{CallToolResult, Tool};
use serde_json::{Value, json};
use tempfile::TempDir;
use tiktoken_rs::o200k_base_singleton;

use discovery::queries;

mod discovery;

const DISCOVERY: &str =
    "Discovery (issue #27): `packhost.search` ranking over the 245-tool catalog, quality and cost";

/// The id the task looks for.
const NEEDLE: &str = "pay_7731";

fn tokens(text: &str) -> usize {
    o200k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}

/// What a client holds after `initialize` and `tools/list`: the tools as
/// JSON (the form a client hands a model) and the instructions.
async fn surface(host: &TestHost) -> (usize, usize, usize) {
    let tools: Vec<Tool> = host.client.list_all_tools().await.expect("tools/list");
    let listed = serde_json::to_string(&tools).expect("tools are JSON");
    let instructions = host
        .client
        .peer_info()
        .and_then(|info| info.instructions.clone())
        .unwrap_or_default();
    let run = tools
        .iter()
        .find(|t| t.name == "run")
        .and_then(|t| t.description.clone())
        .unwrap_or_default();
    (
        tokens(&listed) + tokens(&instructions),
        tools.len(),
        tokens(&run),
    )
}

/// The shipped packs.toml with `packhost` at the repository, `expose`
/// set, and `extra` sections.
fn shipped(expose: &str, work: &Path, extra: &str) -> String {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository");
    let shipped = std::fs::read_to_string(repo.join("packs.toml")).expect("packs.toml");
    let shipped = shipped
        .replace("[server]\n", &format!("[server]\nexpose = {expose:?}\n"))
        .replace(
            "packhost = \".\"",
            &format!(
                "packhost = {:?}\nwork = {:?}",
                repo.display().to_string(),
                work.display().to_string()
            ),
        );
    format!("{shipped}\n{extra}")
}

/// A 2 MB log and a 5 MB JSON file, each mentioning the needle a few times.
fn files(dir: &Path) {
    let log: String = (0..26_000)
        .map(|i| {
            let what = if i % 5000 == 17 {
                format!("charge failed for {NEEDLE}: card declined")
            } else {
                format!("request {i} served in {} ms", i % 97)
            };
            format!(
                "2026-11-24T10:{:02}:{:02}Z INFO api {what}\n",
                (i / 60) % 60,
                i % 60
            )
        })
        .collect();
    std::fs::write(dir.join("app.log"), log).expect("write the log");
    let records: Vec<Value> = (0..40_000)
        .map(|i| {
            let payment = if i % 9000 == 4 { NEEDLE.to_owned() } else { format!("pay_{i:05}") };
            json!({"id": i, "payment": payment, "customer": format!("cus_{:04}", i % 1000), "amount": i % 500, "note": "monthly plan renewal"})
        })
        .collect();
    let json = serde_json::to_string_pretty(&json!({"records": records})).expect("JSON");
    std::fs::write(dir.join("data.json"), json).expect("write the JSON");
}

/// Tokens of every result a model reads to find the needle's lines in
/// `path`, and the largest single result: page through with `proj.read`,
/// and where a page comes back as a handle, grep it.
async fn find_lines(host: &TestHost, path: &str) -> (usize, usize, usize) {
    let (mut total, mut largest, mut found) = (0, 0, 0);
    let mut read = |result: &CallToolResult| {
        assert!(!is_error(result), "{}", text(result));
        let seen = tokens(&text(result));
        total += seen;
        largest = largest.max(seen);
    };
    let mut offset = 0;
    loop {
        let page = host
            .call(
                "proj.read",
                json!({"name": "work", "path": path, "offset": offset, "limit": 100_000}),
            )
            .await;
        read(&page);
        let handle = page
            .meta
            .as_ref()
            .and_then(|meta| meta.get("packhost/result"))
            .and_then(|kept| kept["handle"].as_str().map(str::to_owned));
        match handle {
            Some(handle) => {
                let grep = host
                    .call(
                        "packhost.result_grep",
                        json!({"handle": handle, "pattern": NEEDLE}),
                    )
                    .await;
                read(&grep);
                found += structured(&grep)["total_matches"].as_u64().unwrap_or(0) as usize;
            }
            None => {
                found += structured(&page)["content"]
                    .as_str()
                    .map_or(0, |content| content.matches(NEEDLE).count());
            }
        }
        let page = structured(&page);
        if !page["truncated"].as_bool().unwrap_or(false) {
            break;
        }
        offset += page["lines"].as_u64().expect("lines read") as usize;
    }
    (total, largest, found)
}

/// How many of the 50 checked-in tasks find their tool in the top 3.
async fn search_hits(host: &TestHost) -> (usize, usize) {
    let queries = queries();
    let mut hits = 0;
    for query in &queries {
        let found = host
            .call("packhost.search", json!({"query": query.query, "limit": 3}))
            .await;
        assert!(!is_error(&found), "{}", text(&found));
        let names: Vec<String> = structured(&found)["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str().map(str::to_owned))
            .collect();
        let wanted = std::iter::once(&query.expected).chain(&query.also);
        if wanted
            .into_iter()
            .any(|w| names.iter().any(|n| n.ends_with(&format!(".{w}"))))
        {
            hits += 1;
        } else {
            eprintln!(
                "search miss: {:?} wants {} -> {names:?}",
                query.query, query.expected
            );
        }
    }
    (hits, queries.len())
}

fn row(metric: &str, value: usize, target: &str, reference: &str, of: usize) -> Row {
    Row {
        metric: metric.to_owned(),
        value: format!("{value} tokens"),
        target: target.to_owned(),
        reference: format!("{reference}: {of} tokens"),
        ratio: format!("{:.2}x", value as f64 / of.max(1) as f64),
    }
}

#[tokio::main]
async fn main() {
    // `--discovery`: the search table alone, without the token table's hosts.
    if std::env::args().any(|a| a == "--discovery") {
        print_table(DISCOVERY, &discovery::rows().await);
        return;
    }
    let work = TempDir::new().expect("temp dir");
    files(work.path());
    // Each service of the catalog a server of its own, as a team attaches them.
    let services: String = CATALOG_SERVICES
        .iter()
        .map(|service| catalog_section(service, Some(service)))
        .collect();
    let attached = format!(
        "[packs.everything]\nkind = \"mcp\"\ncommand = {:?}\n{services}",
        everything_stdio(),
    );
    let mut surfaces = Vec::new();
    for extra in ["", attached.as_str()] {
        let mut pair = Vec::new();
        for expose in ["all", "run"] {
            let host = TestHost::start(&shipped(expose, work.path(), extra)).await;
            pair.push(surface(&host).await);
            host.client.cancel().await.expect("stop client");
        }
        surfaces.push(pair);
    }
    let whole =
        TestHost::start(&(shipped("all", work.path(), "") + "\n[results]\nmax_result_chars = 0\n"))
            .await;
    let plain_log = find_lines(&whole, "app.log").await;
    let plain_json = find_lines(&whole, "data.json").await;
    whole.client.cancel().await.expect("stop client");
    let kept = TestHost::start(&shipped("run", work.path(), &attached)).await;
    let handles_log = find_lines(&kept, "app.log").await;
    let handles_json = find_lines(&kept, "data.json").await;
    let (hits, queries) = search_hits(&kept).await;
    kept.client.cancel().await.expect("stop client");
    let with_model = memory_after_search(&shipped("run", work.path(), ""), true).await;
    let without_model = memory_after_search(
        &shipped("run", work.path(), "").replace(MODEL_LINE, ""),
        false,
    )
    .await;
    assert_eq!(plain_log.2, handles_log.2, "both ways find the same lines");
    assert_eq!(
        plain_json.2, handles_json.2,
        "both ways find the same lines"
    );

    let [shipped_all, shipped_run] = [surfaces[0][0], surfaces[0][1]];
    let [big_all, big_run] = [surfaces[1][0], surfaces[1][1]];
    let rows = vec![
        row(
            &format!(
                "tools/list + instructions, shipped packs, `run` mode ({} tools)",
                shipped_run.1
            ),
            shipped_run.0,
            "≤ 1,500",
            &format!("`all` mode ({} tools)", shipped_all.1),
            shipped_all.0,
        ),
        row(
            &format!(
                "the same + server-everything + 245-tool catalog, `run` mode ({} tools)",
                big_run.1
            ),
            big_run.0,
            "≤ 1,500",
            &format!("`all` mode ({} tools)", big_all.1),
            big_all.0,
        ),
        row(
            "`run` description, shipped packs",
            shipped_run.2,
            "-",
            "with the catalog attached",
            big_run.2,
        ),
        row(
            &format!(
                "find `{NEEDLE}` in a 2 MB log ({} lines): all results read, handles",
                handles_log.2
            ),
            handles_log.0,
            "-",
            "plain tools, every page whole",
            plain_log.0,
        ),
        row(
            "  largest single result, handles",
            handles_log.1,
            "≤ budget",
            "plain tools",
            plain_log.1,
        ),
        row(
            &format!(
                "find `{NEEDLE}` in a 5 MB JSON ({} lines): all results read, handles",
                handles_json.2
            ),
            handles_json.0,
            "-",
            "plain tools, every page whole",
            plain_json.0,
        ),
        row(
            "  largest single result, handles",
            handles_json.1,
            "≤ budget",
            "plain tools",
            plain_json.1,
        ),
        Row {
            metric: "`packhost.search` in the host (the 16 services as servers beside the shipped packs and server-everything): intended tool in the top 3, older 50 tasks".to_owned(),
            value: format!("{hits}/{queries}"),
            target: "≥ 46/50".to_owned(),
            reference: "-".to_owned(),
            ratio: format!("{:.0}%", 100.0 * hits as f64 / queries as f64),
        },
    ];
    print_table(
        "What a model reads (o200k_base tokens); results budget 20,000 characters",
        &rows,
    );
    let mut discovery = discovery::rows().await;
    let mib = |kib: u64| kib as f64 / 1024.0;
    for (metric, with, without) in [
        (
            "host RSS once searches rank by meaning (+5 searches), shipped packs, with the sentence model",
            with_model.settled,
            without_model.settled,
        ),
        (
            "host peak RSS until then (model load, the catalog embedded)",
            with_model.peak,
            without_model.peak,
        ),
    ] {
        discovery.push(Row {
            metric: metric.to_owned(),
            value: format!("{:.1} MiB", mib(with)),
            target: "-".to_owned(),
            reference: format!("without `[search] model`: {:.1} MiB", mib(without)),
            ratio: format!("{:+.1} MiB", mib(with) - mib(without)),
        });
    }
    discovery.push(discovery::install_row());
    print_table(DISCOVERY, &discovery);
}

/// The shipped packs.toml's line that gives search its sentence model.
const MODEL_LINE: &str = "model = \"~/.cache/packhost-models/all-MiniLM-L6-v2\"";

/// The host's memory once searches answer by meaning when the model is on
/// (loaded by the first search, the catalog's tools embedded) and
/// five more have run, a host in use rather than the warm-up's last moment:
/// resident then, and the most it was resident before (loading the model,
/// the warm-up's batches), in KiB.
async fn memory_after_search(config: &str, by_meaning: bool) -> Memory {
    let host = TestHost::start(config).await;
    let search = async || {
        let found = host
            .call(
                "packhost.search",
                json!({"query": "read a file in a project"}),
            )
            .await;
        assert!(!is_error(&found), "{}", text(&found));
        structured(&found)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while search().await["by_meaning"] != by_meaning {
        assert!(
            std::time::Instant::now() < deadline,
            "search ranks by meaning within a minute"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    for _ in 0..5 {
        search().await;
    }
    let memory = Memory {
        settled: host.rss_kib(),
        peak: host.peak_rss_kib(),
    };
    host.client.cancel().await.expect("stop client");
    memory
}

/// KiB resident after a search, and at most before it.
struct Memory {
    settled: u64,
    peak: u64,
}
