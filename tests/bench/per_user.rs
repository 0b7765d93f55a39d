//! `packhost-bench-per-user`: what an integration that acts as each user
//! costs once its user signed in, against the same server reached with one
//! shared credential, in the same run. The server is the per-user upstream
//! of the e2e tests (`tests/oauth/upstream.mjs`: the official TypeScript
//! SDK's server behind its bearer-auth middleware, checking each JWT against
//! oidc-provider's keys); packhost serves it twice over HTTP, as integration
//! `shared` (a client_credentials token of the provider, `--bearer-token-env`)
//! and as `own` (`--per-user`, ada signed in once through the browser flow).
//! Per call, `own` adds the lookup of ada's token in SQLite and its
//! unsealing.
//!
//! Latency: `--calls` sequential `remote_mcp.execute_tool` calls per route
//! (default 400) after `--warmup` (default 30), the routes alternating call
//! by call; throughput: 16 concurrent callers per route, `--concurrent-calls`
//! in all (default 2000). Every answer is checked (the upstream's `whoami`).
//!
//! Needs what the OAuth e2e tests need (`PACKHOST_TEST_OIDC_PROVIDER`,
//! `PACKHOST_TEST_MCP_SDK`, node) and `packhost` and `libremote_mcp.so` built
//! in the same profile as this binary.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use packhost_tests::{
    bench::{Row, arg, ms, percentile, print_table, ratio},
    downstream::{free_port, integrations},
    http::{HttpHost, token, web_client},
    oauth::{Client, Provider, Upstream, sign_in},
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Concurrent callers in the throughput run.
const CALLERS: usize = 16;
/// The key per-user tokens are sealed with here.
const KEY: &str = "cGVyLXVzZXItdGVzdC1rZXktMzItYnl0ZXMtbG9uZyE";

/// The params of a 2026-07-28 `execute_tool` of `whoami` on `integration`.
fn whoami(integration: &str, answers: Option<(Value, &str)>) -> Value {
    let arguments = json!({"integrationId": integration, "toolName": "whoami"});
    let urls = json!({"elicitation": {"url": {}}});
    HttpHost::stateless_params("remote_mcp.execute_tool", arguments, urls, answers)
}

/// One call as `token`'s caller: its result, checked to come from `sub`.
async fn call(host: &HttpHost, token: &str, params: &Value, sub: &str) -> Duration {
    let started = Instant::now();
    let messages = host.stateless_call(Some(token), params).await;
    let took = started.elapsed();
    let result = &messages.last().expect("a response")["result"];
    let said = result["structuredContent"]["content"][0]["text"].as_str();
    assert_eq!(said, Some(sub), "{result}");
    took
}

#[tokio::main]
async fn main() {
    let calls = arg("--calls", 400);
    let warmup = arg("--warmup", 30);
    let concurrent_calls = arg("--concurrent-calls", 2000);

    let shared = Client::new("shared", "acme", "tracker");
    let provider = Provider::start_with_users(
        std::slice::from_ref(&shared),
        &[("ada", "acme")],
        &["tracker"],
    )
    .await;
    let upstream = Upstream::start(&provider.issuer).await;
    let shared_token = provider.token(&shared, "tracker", &upstream.url).await;

    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let dir = TempDir::new().unwrap();
    let database = dir.path().join("integrations.db").display().to_string();
    let (ada, ada_entry) = token("ada", "acme", &[]);
    let config = format!(
        "[packs.remote_mcp]\nconfig = {{ database = {database:?}, public_url = {base:?} }}\n\n\
         {ada_entry}\n"
    );
    std::fs::write(dir.path().join("packs.toml"), config).unwrap();
    let url = upstream.url.as_str();
    let shared_id = integrations(
        dir.path(),
        &[
            "add",
            "--org",
            "acme",
            "--name",
            "shared",
            "--url",
            url,
            "--bearer-token-env",
            "TOKEN",
        ],
        &[("TOKEN", &shared_token)],
    );
    let own_id = integrations(
        dir.path(),
        &[
            "add",
            "--org",
            "acme",
            "--name",
            "own",
            "--url",
            url,
            "--per-user",
        ],
        &[],
    );
    let host = HttpHost::start_at(
        dir,
        &format!("127.0.0.1:{port}"),
        &[],
        &[("PACKHOST_CREDENTIALS_KEY", KEY)],
    )
    .await;

    // Ada signs in to `own` once.
    let asked = host
        .stateless_call(Some(&ada), &whoami(&own_id, None))
        .await;
    let asked = &asked.last().expect("a response")["result"];
    let (key, question) = asked["inputRequests"]
        .as_object()
        .and_then(|questions| questions.iter().next())
        .unwrap_or_else(|| panic!("no sign-in asked: {asked}"));
    let link = question["params"]["url"].as_str().expect("a sign-in URL");
    let back = sign_in(link, "ada", &format!("{base}/oauth/callback/remote_mcp")).await;
    let page = web_client().get(&back).send().await.expect("the callback");
    assert_eq!(page.status(), 200);
    let state = asked["requestState"].as_str().expect("a requestState");
    let answers = json!({ key: {"action": "accept"} });
    call(&host, &ada, &whoami(&own_id, Some((answers, state))), "ada").await;

    let routes = [
        ("shared credential", whoami(&shared_id, None), "shared"),
        ("per-user credential", whoami(&own_id, None), "ada"),
    ];
    for _ in 0..warmup {
        for (_, params, sub) in &routes {
            call(&host, &ada, params, sub).await;
        }
    }
    let mut samples = [Vec::new(), Vec::new()];
    for _ in 0..calls {
        for (i, (_, params, sub)) in routes.iter().enumerate() {
            samples[i].push(call(&host, &ada, params, sub).await);
        }
    }
    let host = Arc::new(host);
    let mut walls = Vec::new();
    for &(_, ref params, sub) in &routes {
        let started = Instant::now();
        let callers: Vec<_> = (0..CALLERS)
            .map(|_| {
                let (host, ada, params) = (Arc::clone(&host), ada.clone(), params.clone());
                tokio::spawn(async move {
                    for _ in 0..concurrent_calls / CALLERS {
                        call(&host, &ada, &params, sub).await;
                    }
                })
            })
            .collect();
        for caller in callers {
            caller.await.expect("a caller");
        }
        walls.push(started.elapsed());
    }
    let done = (concurrent_calls / CALLERS * CALLERS) as f64;
    let p50 = |i: usize| percentile(&samples[i], 0.5);
    let p99 = |i: usize| percentile(&samples[i], 0.99);
    let rows: Vec<Row> = routes
        .iter()
        .enumerate()
        .map(|(i, (name, _, _))| Row {
            metric: format!("`remote_mcp.execute_tool`, {name}"),
            value: format!(
                "p50 {} · p99 {} · {:.0} calls/s @{CALLERS}",
                ms(p50(i)),
                ms(p99(i)),
                done / walls[i].as_secs_f64()
            ),
            target: if i == 0 {
                "-"
            } else {
                "p50 and calls/s within 10%"
            }
            .to_owned(),
            reference: format!("shared: p50 {}", ms(p50(0))),
            // p50 ratio, then the throughput ratio (the inverse wall time).
            ratio: format!(
                "p50 {} · calls/s {}",
                ratio(p50(i), p50(0)),
                ratio(walls[0], walls[i])
            ),
        })
        .collect();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    print_table(
        &format!(
            "per-user integrations ({cpus} CPUs): the TypeScript SDK's bearer-auth server over HTTP, \
             {calls} sequential calls per route ({warmup} warm-up, alternating), {concurrent_calls} \
             from {CALLERS} concurrent callers"
        ),
        &rows,
    );
}
