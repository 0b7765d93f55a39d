//! What the model costs: load time, one short query (p50 and p99 of 50),
//! and the 245 tools of `tests/fixtures/catalog-200.json` (name,
//! description and parameters: ~30 words each). Run it release-built:
//! `PACKHOST_SEARCH_MODEL=<dir> cargo run --release -p sentence-embedding --example cost`.

use std::path::Path;
use std::time::{Duration, Instant};

use sentence_embedding::Model;
use serde_json::Value;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::var_os("PACKHOST_SEARCH_MODEL")
        .ok_or("PACKHOST_SEARCH_MODEL must name the model's directory (`./dev test` sets it)")?;
    let started = Instant::now();
    let model = Model::load(Path::new(&dir))?;
    println!("load: {:.0?}", started.elapsed());

    let query = "who is carrying the pager this weekend";
    model.embed(&[query])?;
    let mut times: Vec<Duration> = (0..50)
        .map(|_| {
            let started = Instant::now();
            model.embed(&[query]).map(|_| started.elapsed())
        })
        .collect::<Result<_, _>>()?;
    times.sort();
    println!("one query: p50 {:.1?}, p99 {:.1?}", times[25], times[49]);

    let texts = catalog_texts()?;
    let words = texts
        .iter()
        .map(|t| t.split_whitespace().count())
        .sum::<usize>()
        / texts.len();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let started = Instant::now();
    model.embed(&texts)?;
    println!(
        "{} tools (~{words} words each): {:.0?}",
        texts.len(),
        started.elapsed()
    );
    Ok(())
}

/// Each fixture tool as one text: its name in words, its description, and
/// its parameters' names and descriptions.
fn catalog_texts() -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../tests/fixtures/catalog-200.json"
    );
    let tools: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    Ok(tools
        .iter()
        .map(|tool| {
            let mut text = format!(
                "{}. {}",
                tool["name"].as_str().unwrap_or_default().replace('_', " "),
                tool["description"].as_str().unwrap_or_default()
            );
            if let Some(params) = tool["inputSchema"]["properties"].as_object() {
                for (name, param) in params {
                    text += &format!(
                        " {name}: {}",
                        param["description"].as_str().unwrap_or_default()
                    );
                }
            }
            text
        })
        .collect())
}
