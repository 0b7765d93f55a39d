//! Each case runs on both stores: the same bounds keep the same results.

use std::{sync::Arc, time::Duration};

use super::{Bounds, Kept, ResultStore};
use crate::{Owner, State};

type Store = Arc<dyn ResultStore>;

on_both!(
    a_result_is_its_owners_alone,
    a_users_flood_pushes_out_only_their_own_oldest,
    an_organisations_flood_never_pushes_out_another_organisations_results,
    counts_are_bounded_per_user_and_per_organisation,
    a_result_larger_than_a_bound_is_not_kept,
    an_expired_result_is_gone,
    any_text_comes_back_as_it_was_kept,
);

const HOUR: Duration = Duration::from_secs(3600);

const ROOMY: Bounds = Bounds {
    bytes: 1 << 20,
    org_bytes: 1 << 20,
    org_count: 1000,
    user_bytes: 1 << 20,
    user_count: 1000,
};

fn kept(org: &str, user: &str, text: &str) -> Kept {
    Kept {
        owner: Owner::new(org, user),
        tool: "proj.read".to_owned(),
        text: text.into(),
    }
}

/// Keeps `text` for `org`/`user` under a fresh handle, which it returns.
async fn keep(store: &Store, org: &str, user: &str, text: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let handle = format!("r{}-{n}", std::process::id());
    assert!(
        store
            .keep(&handle, &kept(org, user, text), HOUR)
            .await
            .unwrap()
    );
    handle
}

async fn has(store: &Store, org: &str, user: &str, handle: &str) -> bool {
    let owner = Owner::new(org, user);
    store.get(&owner, handle).await.unwrap().is_some()
}

async fn a_result_is_its_owners_alone(state: Arc<State>) {
    let store = state.results(ROOMY);
    let handle = keep(&store, "acme", "ada", &"x".repeat(500)).await;
    let ada = Owner::new("acme", "ada");
    let found = store.get(&ada, &handle).await.unwrap().unwrap();
    assert_eq!(found, kept("acme", "ada", &"x".repeat(500)));
    for (org, user) in [("acme", "bo"), ("evil", "ada")] {
        assert!(!has(&store, org, user, &handle).await);
        assert!(store.list(&Owner::new(org, user)).await.unwrap().is_empty());
    }
    let listed = store.list(&ada).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].handle.as_str(), listed[0].chars),
        (&*handle, 500)
    );
}

async fn a_users_flood_pushes_out_only_their_own_oldest(state: Arc<State>) {
    let store = state.results(Bounds {
        user_bytes: 1000,
        ..ROOMY
    });
    let bo = keep(&store, "acme", "bo", &"b".repeat(900)).await;
    let mut ada = Vec::new();
    for _ in 0..5 {
        ada.push(keep(&store, "acme", "ada", &"a".repeat(300)).await);
    }
    assert!(has(&store, "acme", "bo", &bo).await);
    let mut still = Vec::new();
    for handle in &ada {
        still.push(has(&store, "acme", "ada", handle).await);
    }
    assert_eq!(still, [false, false, true, true, true]);
}

async fn an_organisations_flood_never_pushes_out_another_organisations_results(state: Arc<State>) {
    let store = state.results(Bounds {
        bytes: 3000,
        ..ROOMY
    });
    let calm = keep(&store, "calm", "cy", &"c".repeat(1000)).await;
    let mut flood = Vec::new();
    for user in ["a", "b", "c", "d", "e", "f"] {
        flood.push(keep(&store, "flood", user, &"f".repeat(600)).await);
    }
    assert!(has(&store, "calm", "cy", &calm).await);
    assert!(has(&store, "flood", "f", &flood[5]).await);
    assert!(!has(&store, "flood", "a", &flood[0]).await);
}

async fn counts_are_bounded_per_user_and_per_organisation(state: Arc<State>) {
    let store = state.results(Bounds {
        user_count: 2,
        org_count: 3,
        ..ROOMY
    });
    let a: Vec<String> = [
        keep(&store, "acme", "ada", "1").await,
        keep(&store, "acme", "ada", "2").await,
        keep(&store, "acme", "ada", "3").await,
    ]
    .into();
    assert!(!has(&store, "acme", "ada", &a[0]).await);
    assert!(has(&store, "acme", "ada", &a[1]).await);
    let b1 = keep(&store, "acme", "bo", "4").await;
    let b2 = keep(&store, "acme", "bo", "5").await;
    // Four in the organisation: its oldest (ada's second) goes.
    assert!(!has(&store, "acme", "ada", &a[1]).await);
    for (user, handle) in [("ada", &a[2]), ("bo", &b1), ("bo", &b2)] {
        assert!(has(&store, "acme", user, handle).await);
    }
}

async fn a_result_larger_than_a_bound_is_not_kept(state: Arc<State>) {
    let store = state.results(Bounds {
        org_bytes: 100,
        ..ROOMY
    });
    let before = keep(&store, "acme", "ada", "small").await;
    let big = kept("acme", "ada", &"x".repeat(101));
    assert!(!store.keep("rbig", &big, HOUR).await.unwrap());
    assert!(!has(&store, "acme", "ada", "rbig").await);
    assert!(has(&store, "acme", "ada", &before).await);
}

async fn an_expired_result_is_gone(state: Arc<State>) {
    let store = state.results(ROOMY);
    let short = kept("acme", "ada", "soon gone");
    assert!(
        store
            .keep("rshort", &short, Duration::from_millis(1))
            .await
            .unwrap()
    );
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!has(&store, "acme", "ada", "rshort").await);
    let owner = Owner::new("acme", "ada");
    assert!(store.list(&owner).await.unwrap().is_empty());
}

async fn any_text_comes_back_as_it_was_kept(state: Arc<State>) {
    let store = state.results(ROOMY);
    let text = "nul \u{0} and é, 漢字, 🦀";
    let handle = keep(&store, "acme", "ada", text).await;
    let owner = Owner::new("acme", "ada");
    let found = store.get(&owner, &handle).await.unwrap().unwrap();
    assert_eq!(&*found.text, text);
    assert_eq!(store.list(&owner).await.unwrap()[0].chars, 18);
}
