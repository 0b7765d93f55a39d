//! Every case runs on both backends, on the integrations store's harness
//! (`integrations_store::testing`): `sqlite::<case>` on a fresh file,
//! `postgres::<case>` on a fresh database.

use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::{CredentialAction, Event, Filter, Kind, Retention, Scope, Who, open, time};

fn who(org: &str, user: &str) -> Who {
    Who {
        org: org.into(),
        user: user.into(),
    }
}

/// A call event `seconds_ago` before now.
fn call_at(org: &str, user: &str, tool: &str, seconds_ago: u64) -> Event {
    let mut event = Event::call(&who(org, user), tool, "ok", Some(1.5), "r1", 0, None);
    event.at = time::format(SystemTime::now() - Duration::from_secs(seconds_ago));
    event
}

fn tools(events: &[Event]) -> Vec<&str> {
    events.iter().filter_map(|e| e.tool.as_deref()).collect()
}

async fn every_kind_round_trips(database: String) {
    let log = open(&database).await.unwrap();
    let ada = who("acme", "ada");
    let events = vec![
        Event::call(&ada, "exec_py.run", "ok", Some(12.5), "7", 0, None),
        Event::call(
            &ada,
            "proj.list",
            "NOT_FOUND",
            None,
            "7",
            1,
            Some("exec_py.run"),
        ),
        Event::approval(
            &ada,
            "proj.delete",
            "destructive",
            "accept",
            true,
            "8",
            json!({"name": "x", "token": "<hidden>"}),
        ),
        Event::sign_in_refused(None, None, "static", "invalid", "it is no configured token"),
        Event::sign_in_refused(
            Some("acme"),
            Some("bob"),
            "oauth",
            "expired",
            "it has expired",
        ),
        Event::credential(&ada, "github", CredentialAction::Refreshed, None),
    ];
    log.insert(&events).await.unwrap();
    let read = log.query(&Filter::new(Scope::All)).await.unwrap();
    assert_eq!(read, events, "oldest first, every field as written");
    assert_eq!(read[1].detail, json!({"depth": 1, "parent": "exec_py.run"}));
    assert_eq!(read[5].kind, Kind::Credential);
    assert_eq!(read[5].outcome, "refreshed");
    // Reopening (migrations already applied) keeps them.
    drop(log);
    let again = open(&database).await.unwrap();
    assert_eq!(
        again.query(&Filter::new(Scope::All)).await.unwrap().len(),
        6
    );
}

async fn an_organisation_reads_its_own_events_only(database: String) {
    let log = open(&database).await.unwrap();
    log.insert(&[
        call_at("acme", "ada", "proj.list", 30),
        call_at("globex", "gus", "proj.secret", 20),
        Event::sign_in_refused(None, None, "static", "invalid", "unknown token"),
    ])
    .await
    .unwrap();
    let acme = log
        .query(&Filter::new(Scope::Org("acme".into())))
        .await
        .unwrap();
    assert_eq!(tools(&acme), ["proj.list"]);
    let host = log.query(&Filter::new(Scope::Host)).await.unwrap();
    assert_eq!(host.len(), 1);
    assert_eq!(host[0].org, None);
    assert_eq!(host[0].kind, Kind::SignInRefused);
    let nobody = log
        .query(&Filter::new(Scope::Org("initech".into())))
        .await
        .unwrap();
    assert!(nobody.is_empty());
    assert_eq!(log.query(&Filter::new(Scope::All)).await.unwrap().len(), 3);
}

async fn filters_narrow_by_user_tool_kind_and_time(database: String) {
    let log = open(&database).await.unwrap();
    let mut approval = Event::approval(
        &who("acme", "ada"),
        "proj.delete",
        "r",
        "decline",
        false,
        "9",
        json!({}),
    );
    approval.at = time::format(SystemTime::now() - Duration::from_secs(5));
    log.insert(&[
        call_at("acme", "ada", "proj.list", 7200),
        call_at("acme", "bob", "proj.list", 1800),
        call_at("acme", "ada", "proj_x.list", 600),
        call_at("acme", "ada", "exec_py.run", 60),
        approval,
    ])
    .await
    .unwrap();
    let acme = || Filter::new(Scope::Org("acme".into()));
    let query = |filter: Filter| {
        let log = &log;
        async move { log.query(&filter).await.unwrap() }
    };
    let by_user = query(Filter {
        user: Some("bob".into()),
        ..acme()
    })
    .await;
    assert_eq!(by_user.len(), 1);
    assert_eq!(by_user[0].user.as_deref(), Some("bob"));
    let by_tool = query(Filter {
        tool: Some("proj.list".into()),
        ..acme()
    })
    .await;
    assert_eq!(by_tool.len(), 2);
    // `proj.*` is that pack's, not `proj_x`'s (no LIKE wildcard in `_`).
    let by_pack = query(Filter {
        tool: Some("proj.*".into()),
        ..acme()
    })
    .await;
    assert_eq!(tools(&by_pack), ["proj.list", "proj.list", "proj.delete"]);
    let by_kind = query(Filter {
        kind: Some(Kind::Approval),
        ..acme()
    })
    .await;
    assert_eq!(tools(&by_kind), ["proj.delete"]);
    let now = SystemTime::now();
    let window = Filter {
        since: Some(time::format(now - Duration::from_secs(3600))),
        until: Some(time::format(now - Duration::from_secs(30))),
        ..acme()
    };
    assert_eq!(
        tools(&query(window).await),
        ["proj.list", "proj_x.list", "exec_py.run"]
    );
    // The most recent two, oldest first.
    let latest = query(Filter { limit: 2, ..acme() }).await;
    assert_eq!(tools(&latest), ["exec_py.run", "proj.delete"]);
}

async fn retention_drops_the_old_and_the_oldest_past_the_count(database: String) {
    let log = open(&database).await.unwrap();
    let day = 86_400;
    let mut events = vec![
        call_at("acme", "ada", "proj.ancient", 40 * day),
        call_at("globex", "gus", "proj.ancient", 31 * day),
    ];
    for n in 0..5 {
        events.push(call_at("acme", "ada", &format!("proj.f{n}"), 100 - n));
    }
    events.push(call_at("globex", "gus", "proj.kept", 10));
    for n in 0..4 {
        let mut refused = Event::sign_in_refused(None, None, "static", "invalid", "unknown");
        refused.tool = Some(format!("host.{n}"));
        events.push(refused);
    }
    log.insert(&events).await.unwrap();
    let retention = Retention {
        max_age_days: 30,
        max_per_org: 3,
    };
    let pruned = log.prune(&retention, SystemTime::now()).await.unwrap();
    // 2 too old; acme 5 -> 3; globex 1 stays; host-level 4 -> 3.
    assert_eq!(pruned, 2 + 2 + 1);
    let left = log.query(&Filter::new(Scope::All)).await.unwrap();
    let org = |name: &str| {
        let events: Vec<&str> = left
            .iter()
            .filter(|e| e.org.as_deref() == Some(name))
            .filter_map(|e| e.tool.as_deref())
            .collect();
        events
    };
    assert_eq!(org("acme"), ["proj.f2", "proj.f3", "proj.f4"]);
    assert_eq!(org("globex"), ["proj.kept"]);
    let host: Vec<&str> = left
        .iter()
        .filter(|e| e.org.is_none())
        .filter_map(|e| e.tool.as_deref())
        .collect();
    assert_eq!(host, ["host.1", "host.2", "host.3"]);
    assert_eq!(
        log.prune(&retention, SystemTime::now()).await.unwrap(),
        0,
        "nothing more"
    );
}

async fn the_integrations_share_the_database(database: String) {
    // Either opened first, the other migrates beside it, and both reopen.
    let integrations = integrations_store::open(&database).await.unwrap();
    let log = open(&database).await.unwrap();
    log.insert(&[call_at("acme", "ada", "proj.list", 1)])
        .await
        .unwrap();
    assert!(integrations.list("acme").await.unwrap().is_empty());
    drop((integrations, log));
    let integrations = integrations_store::open(&database).await.unwrap();
    assert!(integrations.list("acme").await.unwrap().is_empty());
    let log = open(&database).await.unwrap();
    assert_eq!(log.query(&Filter::new(Scope::All)).await.unwrap().len(), 1);
}

integrations_store::on_both_backends!(
    every_kind_round_trips,
    an_organisation_reads_its_own_events_only,
    filters_narrow_by_user_tool_kind_and_time,
    retention_drops_the_old_and_the_oldest_past_the_count,
    the_integrations_share_the_database,
);

#[tokio::test]
async fn open_errors_hide_a_postgres_password() {
    let err = open("postgres://ada:hunter2@127.0.0.1:1/app")
        .await
        .err()
        .unwrap();
    assert!(!err.to_string().contains("hunter2"), "{err}");
    assert!(
        err.to_string()
            .contains("postgres://ada:***@127.0.0.1:1/app"),
        "{err}"
    );
}
