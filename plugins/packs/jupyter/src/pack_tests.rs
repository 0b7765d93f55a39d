//! Sessions belong to their creator: the pack called in-process as callers
//! of two organisations, with real kernels (the Python of
//! `PACKHOST_TEST_PYTHON`, which `./dev test` sets, else its venv).

use std::path::PathBuf;

use pack_sdk::{
    Value, codes, json,
    owned::Owner,
    testing::{
        PackTest,
        callers::{ada, bob, eve},
    },
};

use crate::pack;

fn python() -> String {
    if let Ok(python) = std::env::var("PACKHOST_TEST_PYTHON") {
        return python;
    }
    let venv = PathBuf::from(std::env::var("HOME").unwrap_or_default())
        .join(".cache/packhost-venv/bin/python");
    assert!(
        venv.exists(),
        "no Python with ipykernel: run `./dev test`, or set PACKHOST_TEST_PYTHON"
    );
    venv.display().to_string()
}

fn start(extra: Value) -> PackTest {
    // The test binary is not the host, whose binary is the sandbox's helper.
    let mut config = json!({ "python": python(), "sandbox": "off" });
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    PackTest::build(pack).config(config).start().unwrap()
}

async fn create(pack: &PackTest, owner: &Owner, args: Value) -> (String, String) {
    let out = pack.call(owner, "session_create", args).await.unwrap();
    let id = |key: &str| out[key].as_str().unwrap().to_owned();
    (id("session_id"), id("kernel_id"))
}

async fn listed(pack: &PackTest, owner: &Owner) -> Vec<String> {
    let out = pack.call(owner, "session_list", json!({})).await.unwrap();
    let sessions = out["sessions"].as_array().unwrap().iter();
    sessions
        .map(|s| s["session_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn another_caller_gets_what_an_unknown_id_gets() {
    let pack = start(json!({}));
    let (mine, _) = create(&pack, &ada(), json!({})).await;
    let (notebook, kernel) = create(&pack, &ada(), json!({"notebook_path": "a.ipynb"})).await;
    let (theirs, _) = create(&pack, &eve(), json!({})).await;
    let run = |id: &str| json!({"session_id": id, "code": "secret = 42; secret"});
    assert_eq!(
        pack.call(&ada(), "execute_code", run(&mine)).await.unwrap()["result"],
        "42"
    );
    let mut own = vec![mine.clone(), notebook.clone()];
    own.sort();
    assert_eq!(listed(&pack, &ada()).await, own);
    assert_eq!(listed(&pack, &eve()).await, [theirs.as_str()]);
    assert!(listed(&pack, &bob()).await.is_empty(), "share = user");
    let unknown = pack
        .call(&eve(), "execute_code", run("no-such-id"))
        .await
        .unwrap_err();
    assert_eq!(
        unknown.message(),
        format!("no session `no-such-id` (your sessions: {theirs})")
    );
    // Another organisation, by session and by kernel id, and another
    // user of ada's organisation: every function answers as for an id
    // nobody has, and lists none of ada's ids.
    for (caller, id) in [(eve(), &mine), (eve(), &kernel), (bob(), &notebook)] {
        let expected = pack
            .call(&caller, "execute_code", run("no-such-id"))
            .await
            .unwrap_err();
        for (function, args) in [
            ("execute_code", run(id)),
            ("interrupt", json!({"session_id": id})),
            ("restart", json!({"session_id": id})),
            ("session_close", json!({"session_id": id})),
        ] {
            let err = pack.call(&caller, function, args).await.unwrap_err();
            assert_eq!(err.code(), codes::SESSION_NOT_FOUND, "{function}: {err}");
            let message = err.message().replace(id.as_str(), "no-such-id");
            assert_eq!(message, expected.message(), "{function}");
            for own in [&mine, &notebook, &kernel] {
                assert!(!message.contains(own.as_str()), "{function}: {err}");
            }
        }
    }
    // Nothing of ada's was touched.
    let out = pack.call(&ada(), "execute_code", run(&mine)).await.unwrap();
    assert_eq!(out["execution_count"], 2, "ada's kernel ran nothing else");
    assert_eq!(listed(&pack, &ada()).await, own);
    pack.shutdown().await;
}

#[tokio::test]
async fn share_org_lets_the_organisation_share_and_nobody_else() {
    let pack = start(json!({"share": "org"}));
    let (session, _) = create(&pack, &ada(), json!({})).await;
    let run = |code: &str| json!({"session_id": session, "code": code});
    pack.call(&ada(), "execute_code", run("x = 7"))
        .await
        .unwrap();
    let out = pack.call(&bob(), "execute_code", run("x")).await.unwrap();
    assert_eq!(out["result"], "7");
    assert_eq!(listed(&pack, &bob()).await, [session.as_str()]);
    let err = pack
        .call(&eve(), "execute_code", run("x"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), codes::SESSION_NOT_FOUND);
    assert!(listed(&pack, &eve()).await.is_empty());
    pack.shutdown().await;
}

#[tokio::test]
async fn limits_count_per_owner_and_for_the_host() {
    let pack = start(json!({"max_sessions": 2, "max_sessions_per_owner": 1}));
    let (mine, _) = create(&pack, &ada(), json!({})).await;
    let err = pack
        .call(&ada(), "session_create", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), codes::LIMIT_EXCEEDED);
    assert_eq!(
        err.message(),
        format!(
            "you have 1 session(s) open, the most one owner may have is 1 \
             (`max_sessions_per_owner`): {mine}"
        )
    );
    let (theirs, _) = create(&pack, &eve(), json!({})).await;
    // The host is full: bob hears so, and nothing of ada's or eve's.
    let err = pack
        .call(&bob(), "session_create", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), codes::LIMIT_EXCEEDED);
    assert_eq!(
        err.message(),
        "this host has reached its limit of 2 open sessions (`max_sessions`)"
    );
    pack.call(&eve(), "session_close", json!({"session_id": theirs}))
        .await
        .unwrap();
    create(&pack, &bob(), json!({})).await;
    let list = pack.call(&bob(), "session_list", json!({})).await.unwrap();
    assert_eq!(
        (
            list["max_sessions"].clone(),
            list["max_sessions_per_owner"].clone()
        ),
        (json!(2), json!(1))
    );
    pack.shutdown().await;
}
