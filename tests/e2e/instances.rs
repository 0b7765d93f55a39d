//! Several instances behind a load balancer, as `deploy/` sets them up:
//! three packhosts behind a real HAProxy (round robin, no stickiness), one
//! PostgreSQL. What one instance keeps, any other answers for, to its owner
//! only; an instance that dies is routed around.

use packhost_tests::{
    call, downstream::postgres_database, failed, http::token, instances::Instances,
    instances::haproxy_installed, ok, text,
};
use serde_json::json;
use tempfile::TempDir;

/// Three instances, a project holding a log of ~130 kB, results past 2,000
/// characters kept, and callers `ada` (acme) and `eve` (evil).
fn start() -> Option<(Instances, TempDir, [String; 2])> {
    let database = postgres_database()?;
    if !haproxy_installed() {
        return None;
    }
    let project = TempDir::new().unwrap();
    let log: String = (1..=3000)
        .map(|i| format!("2026-11-29T10:00:00 line {i} INFO ok\n"))
        .collect();
    std::fs::write(project.path().join("app.log"), log).unwrap();
    let (ada_token, ada) = token("ada", "acme", &["*"]);
    let (eve_token, eve) = token("eve", "evil", &["*"]);
    let config = format!(
        "[http]\nsessions = false\n[results]\nmax_result_chars = 2000\n[packs.proj]\n\
         [projects]\nlogs = {:?}\n{ada}\n{eve}\n",
        project.path().display().to_string()
    );
    let instances = Instances::start(&config, &database);
    Some((instances, project, [ada_token, eve_token]))
}

#[tokio::test]
async fn a_kept_result_is_read_through_every_instance_by_its_owner_alone() {
    let Some((instances, _project, [ada_token, eve_token])) = start() else {
        return;
    };
    let ada = instances.client(Some(&ada_token)).await.unwrap();
    let read = json!({"name": "logs", "path": "app.log", "limit": 3000});
    let kept = call(&ada, "proj.read", read).await.unwrap();
    let handle = kept.meta.as_ref().unwrap()["packhost/result"]["handle"]
        .as_str()
        .expect("the result was kept")
        .to_owned();
    let eve = instances.client(Some(&eve_token)).await.unwrap();
    // Round robin: six reads reach each instance twice.
    for _ in 0..6 {
        let page = call(&ada, "packhost.result_read", json!({"handle": handle}));
        let page = ok(&page.await.unwrap());
        assert!(
            page["text"].as_str().unwrap().contains("line 1 INFO"),
            "{page}"
        );
        let refused = call(&eve, "packhost.result_read", json!({"handle": handle}));
        failed(
            &refused.await.unwrap(),
            "NOT_FOUND",
            &["is unknown or has expired"],
        );
    }
    for n in 1..=3 {
        assert!(
            instances.log(n).contains("packhost.result_read"),
            "instance {n} answered no read:\n{}",
            instances.log(n)
        );
    }

    // A crash: the proxy sends what never reached it elsewhere.
    instances.kill(2);
    for _ in 0..6 {
        let page = call(&ada, "packhost.result_read", json!({"handle": handle}));
        let page = page.await.unwrap();
        assert!(text(&page).contains("line 1 INFO"), "{}", text(&page));
    }
}
