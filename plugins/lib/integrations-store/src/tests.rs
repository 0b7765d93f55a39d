//! Every case runs against both backends (`testing`): `sqlite::<case>` on a
//! file in a fresh temporary directory, `postgres::<case>` on a fresh
//! database. A case gets the string to [`open`] and may open it more than
//! once.

use std::collections::BTreeMap;

use serde_json::json;
use sqlx::Connection as _;

use crate::*;

/// The secret values the fixtures below carry: none may be listed or shown.
const SECRETS: [&str; 4] = [
    "bearer-secret-token",
    "header-secret-value",
    "env-secret-value",
    "auth-header-secret",
];

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// An HTTP integration with a bearer token and a secret header.
fn http(organization_id: &str, name: &str) -> NewIntegration {
    NewIntegration {
        organization_id: organization_id.into(),
        name: name.into(),
        transport: Transport::Http {
            url: "https://mcp.example.com/mcp".into(),
            headers: map(&[("X-Tenant", "header-secret-value")]),
        },
        auth: Some(Auth::Bearer {
            token: "bearer-secret-token".into(),
        }),
        timeout_ms: Some(30_000),
    }
}

/// A stdio integration with a secret env variable and a header auth.
fn stdio(organization_id: &str, name: &str) -> NewIntegration {
    NewIntegration {
        organization_id: organization_id.into(),
        name: name.into(),
        transport: Transport::Stdio {
            command: "npx".into(),
            args: vec![
                "-y".into(),
                "@modelcontextprotocol/server-everything".into(),
            ],
            env: map(&[("API_KEY", "env-secret-value")]),
            sandbox: Sandbox {
                mode: Mode::On,
                read: vec!["/srv/mcp".into()],
                write: vec![],
                limits: BTreeMap::from([("memory_mb".to_owned(), 512)]),
            },
        },
        auth: Some(Auth::Header {
            name: "X-Api-Key".into(),
            value: "auth-header-secret".into(),
        }),
        timeout_ms: None,
    }
}

/// An HTTP integration with nothing optional.
fn bare(organization_id: &str, name: &str) -> NewIntegration {
    NewIntegration {
        organization_id: organization_id.into(),
        name: name.into(),
        transport: Transport::Http {
            url: "http://127.0.0.1:8765/mcp".into(),
            headers: BTreeMap::new(),
        },
        auth: None,
        timeout_ms: None,
    }
}

fn names(integrations: &[Integration]) -> Vec<&str> {
    integrations.iter().map(|i| i.name.as_str()).collect()
}

fn assert_timestamp(text: &str) {
    // 2026-03-01T12:00:00.123456Z
    assert_eq!(text.len(), 27, "{text}");
    assert!(text.ends_with('Z') && &text[10..11] == "T", "{text}");
    assert!(text.starts_with("20"), "{text}");
}

// ---------------------------------------------------------------------------
// The cases, each run on both backends.

async fn add_then_get_round_trips(database: String) {
    let store = open(&database).await.unwrap();
    for new in [
        http("acme", "remote"),
        stdio("acme", "local"),
        bare("acme", "bare"),
    ] {
        let added = store.add(new.clone()).await.unwrap();
        assert!(added.id.starts_with("int_"), "{}", added.id);
        assert_eq!(added.id.len(), 20, "{}", added.id);
        assert!(
            added.id[4..]
                .chars()
                .all(|c| matches!(c, '0'..='9' | 'a'..='f')),
            "{}",
            added.id
        );
        assert_eq!(
            (&added.organization_id, &added.name, &added.transport),
            (&new.organization_id, &new.name, &new.transport)
        );
        assert_eq!((&added.auth, added.timeout_ms), (&new.auth, new.timeout_ms));
        assert!(added.enabled);
        assert_timestamp(&added.created_at);
        assert_eq!(added.created_at, added.updated_at);
        assert_eq!(store.get(&added.id).await.unwrap(), Some(added));
    }
    assert_eq!(store.get("int_0000000000000000").await.unwrap(), None);
    assert_eq!(store.get("").await.unwrap(), None);
}

async fn list_is_by_name_and_per_organization(database: String) {
    let store = open(&database).await.unwrap();
    for name in ["b", "A", "a.2", "a", "_x", "a-1"] {
        store.add(bare("acme", name)).await.unwrap();
    }
    store.add(stdio("globex", "b")).await.unwrap();
    let acme = store.list("acme").await.unwrap();
    // Bytewise on both backends, whatever PostgreSQL's locale.
    assert_eq!(names(&acme), ["A", "_x", "a", "a-1", "a.2", "b"]);
    assert!(acme.iter().all(|i| i.organization_id == "acme"));
    let globex = store.list("globex").await.unwrap();
    assert_eq!(names(&globex), ["b"]);
    assert_eq!(globex[0].transport, stdio("globex", "b").transport);
    assert_eq!(store.list("initech").await.unwrap(), []);
}

async fn a_name_is_unique_within_its_organization(database: String) {
    let store = open(&database).await.unwrap();
    let first = store.add(http("acme", "github")).await.unwrap();
    let err = store.add(stdio("acme", "github")).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::Conflict(
            "organization `acme` already has an integration named `github`; \
             choose another name or remove that one first"
                .into()
        )
    );
    // Names compare exactly; another organisation may use the name.
    store.add(http("acme", "GitHub")).await.unwrap();
    store.add(http("globex", "github")).await.unwrap();
    let acme = store.list("acme").await.unwrap();
    assert_eq!(names(&acme), ["GitHub", "github"]);
    assert_eq!(acme[1], first);
    // Once removed, the name is free again.
    store.remove("acme", &first.id).await.unwrap();
    store.add(stdio("acme", "github")).await.unwrap();
}

async fn concurrent_adds_of_one_name_conflict_but_one(database: String) {
    let store = open(&database).await.unwrap();
    let adds: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.add(http("acme", "same")).await })
        })
        .collect();
    let (mut added, mut conflicts) = (0, 0);
    for add in adds {
        match add.await.unwrap() {
            Ok(_) => added += 1,
            Err(StoreError::Conflict(_)) => conflicts += 1,
            Err(e) => panic!("expected a conflict, got {e:?}"),
        }
    }
    assert_eq!((added, conflicts), (1, 7));
    assert_eq!(store.list("acme").await.unwrap().len(), 1);
}

async fn set_enabled_toggles_and_bumps_updated_at(database: String) {
    let store = open(&database).await.unwrap();
    let added = store.add(http("acme", "github")).await.unwrap();
    let disabled = store.set_enabled("acme", &added.id, false).await.unwrap();
    assert!(!disabled.enabled);
    assert_timestamp(&disabled.updated_at);
    assert!(disabled.updated_at > added.updated_at);
    assert_eq!(disabled.created_at, added.created_at);
    assert_eq!(
        Integration {
            enabled: true,
            updated_at: added.updated_at.clone(),
            ..disabled.clone()
        },
        added,
        "only `enabled` and `updated_at` change"
    );
    assert_eq!(store.get(&added.id).await.unwrap(), Some(disabled.clone()));
    assert!(!store.list("acme").await.unwrap()[0].enabled);

    let enabled = store.set_enabled("acme", &added.id, true).await.unwrap();
    assert!(enabled.enabled);
    assert!(enabled.updated_at > disabled.updated_at);
    // Setting the state it has is fine, and still bumps.
    let again = store.set_enabled("acme", &added.id, true).await.unwrap();
    assert!(again.enabled && again.updated_at > enabled.updated_at);
}

async fn another_organizations_id_is_not_found(database: String) {
    let store = open(&database).await.unwrap();
    let theirs = store.add(http("globex", "github")).await.unwrap();
    let not_found = StoreError::NotFound(format!(
        "organization `acme` has no integration `{}`",
        theirs.id
    ));
    assert_eq!(
        store
            .set_enabled("acme", &theirs.id, false)
            .await
            .unwrap_err(),
        not_found
    );
    assert_eq!(
        store.remove("acme", &theirs.id).await.unwrap_err(),
        not_found
    );
    assert_eq!(store.get(&theirs.id).await.unwrap(), Some(theirs.clone()));
    assert_eq!(store.list("acme").await.unwrap(), []);
    let unknown = "int_ffffffffffffffff";
    assert!(matches!(
        store.set_enabled("globex", unknown, true).await,
        Err(StoreError::NotFound(message)) if message.contains(unknown)
    ));
    assert!(matches!(
        store.remove("globex", unknown).await,
        Err(StoreError::NotFound(_))
    ));
}

async fn remove_deletes(database: String) {
    let store = open(&database).await.unwrap();
    let gone = store.add(http("acme", "gone")).await.unwrap();
    let kept = store.add(stdio("acme", "kept")).await.unwrap();
    store.remove("acme", &gone.id).await.unwrap();
    assert_eq!(store.get(&gone.id).await.unwrap(), None);
    assert_eq!(store.list("acme").await.unwrap(), [kept]);
    assert!(matches!(
        store.remove("acme", &gone.id).await,
        Err(StoreError::NotFound(_))
    ));
}

async fn invalid_integrations_are_refused(database: String) {
    let store = open(&database).await.unwrap();
    let with_url = |url: &str| NewIntegration {
        transport: Transport::Http {
            url: url.into(),
            headers: BTreeMap::new(),
        },
        ..bare("acme", "x")
    };
    let with_headers = |headers: &[(&str, &str)]| NewIntegration {
        transport: Transport::Http {
            url: "https://mcp.example.com/".into(),
            headers: map(headers),
        },
        ..bare("acme", "x")
    };
    let with_command = |command: &str, env: &[(&str, &str)]| NewIntegration {
        transport: Transport::Stdio {
            command: command.into(),
            args: vec![],
            env: map(env),
            sandbox: Sandbox::default(),
        },
        ..bare("acme", "x")
    };
    let with_auth = |auth: Auth| NewIntegration {
        auth: Some(auth),
        ..http("acme", "x")
    };
    let with_sandbox = |sandbox: Sandbox| NewIntegration {
        transport: Transport::Stdio {
            command: "node".into(),
            args: vec![],
            env: BTreeMap::new(),
            sandbox,
        },
        ..bare("acme", "x")
    };
    let cases: Vec<(NewIntegration, &str)> = vec![
        (
            with_sandbox(Sandbox {
                read: vec!["srv/mcp".into()],
                ..Sandbox::default()
            }),
            "`--read srv/mcp` is not an absolute path; give the folder or file from `/`",
        ),
        (
            with_sandbox(Sandbox {
                limits: BTreeMap::from([("memory".to_owned(), 512)]),
                ..Sandbox::default()
            }),
            "limits: unknown field `memory`, expected one of `memory_mb`",
        ),
        (
            with_sandbox(Sandbox {
                limits: BTreeMap::from([("processes".to_owned(), 0)]),
                ..Sandbox::default()
            }),
            "`limits.processes` is 0",
        ),
        (bare("", "x"), "the organization id must not be empty"),
        (bare("  ", "x"), "the organization id must not be empty"),
        (bare("acme", ""), "the integration name must not be empty"),
        (
            bare("acme", "git hub"),
            "integration name \"git hub\" has ' '; use letters, digits, `_`, `.` and `-`",
        ),
        (bare("acme", "a/b"), "has '/'"),
        (bare("acme", "é"), "has 'é'"),
        (
            bare("acme", &"n".repeat(65)),
            "is 65 characters long; use at most 64",
        ),
        (
            with_url("ftp://example.com/"),
            "integration url: the URL has scheme `ftp`; give an absolute `http://` or `https://` URL",
        ),
        (with_url("file:///etc/passwd"), "has scheme `file`"),
        (
            with_url("mcp.example.com/mcp"),
            "integration url: the URL is not a valid URL (relative URL without a base)",
        ),
        (with_url(""), "is not a valid URL"),
        (with_url("https://"), "is not a valid URL (empty host)"),
        (
            with_url("https://mcp.example.com/a b"),
            "must not contain whitespace",
        ),
        (
            with_url(" https://mcp.example.com/"),
            "must not contain whitespace",
        ),
        (
            with_url("https://ada:pw-in-url@mcp.example.com/"),
            "must not contain credentials (`user:password@`)",
        ),
        (
            with_headers(&[("X Bad", "v")]),
            "header name \"X Bad\" is not valid",
        ),
        (with_headers(&[("", "v")]), "header name \"\" is not valid"),
        (
            with_headers(&[("X-A", "line\r\nX-Injected: header-secret-value")]),
            "the value of header `X-A` contains a control character",
        ),
        (
            with_headers(&[("X-A", "1"), ("x-a", "2")]),
            "header `x-a` is given twice",
        ),
        (
            NewIntegration {
                auth: Some(Auth::Bearer { token: "t".into() }),
                ..with_headers(&[("authorization", "Basic header-secret-value")])
            },
            "header `Authorization` is given both in `headers` and as the auth",
        ),
        (
            with_command("", &[]),
            "a stdio integration needs a `command`",
        ),
        (with_command("   ", &[]), "needs a `command`"),
        (with_command("npx\0", &[]), "must not contain NUL"),
        (
            with_command("npx", &[("A=B", "env-secret-value")]),
            "env variable name \"A=B\" is not valid",
        ),
        (
            with_command("npx", &[("", "env-secret-value")]),
            "env variable name \"\" is not valid",
        ),
        (
            with_auth(Auth::Bearer {
                token: String::new(),
            }),
            "the bearer token must be non-empty",
        ),
        (
            with_auth(Auth::Bearer {
                token: "Bearer bearer-secret-token".into(),
            }),
            "not `Bearer …`",
        ),
        (
            with_auth(Auth::Header {
                name: "X Key".into(),
                value: "auth-header-secret".into(),
            }),
            "header name \"X Key\" is not valid",
        ),
        (
            with_auth(Auth::Header {
                name: "X-Key".into(),
                value: String::new(),
            }),
            "the value of auth header `X-Key` must not be empty",
        ),
        (
            with_auth(Auth::Header {
                name: "X-Key".into(),
                value: "auth-header-secret\n".into(),
            }),
            "the value of header `X-Key` contains a control character",
        ),
        (
            NewIntegration {
                timeout_ms: Some(0),
                ..bare("acme", "x")
            },
            "`timeout_ms` must be between 1 and 9223372036854775807, got 0",
        ),
        (
            NewIntegration {
                timeout_ms: Some(u64::MAX),
                ..bare("acme", "x")
            },
            "got 18446744073709551615",
        ),
    ];
    for (new, expected) in cases {
        let shown = format!("{new:?}");
        match store.add(new).await {
            Err(StoreError::Invalid(message)) => {
                assert!(
                    message.contains(expected),
                    "for {shown}:\nexpected a message containing: {expected}\ngot: {message}"
                );
                for secret in SECRETS.iter().chain(&["pw-in-url"]) {
                    assert!(!message.contains(secret), "{message}");
                }
            }
            other => panic!("for {shown}: expected Invalid({expected:?}), got {other:?}"),
        }
    }
    assert_eq!(store.list("acme").await.unwrap(), []);
    // The edges that are fine.
    store.add(bare("acme", &"n".repeat(64))).await.unwrap();
    store.add(bare("acme", "Az09_.-")).await.unwrap();
    store
        .add(with_url("HTTPS://MCP.example.com:8443/x?y=1"))
        .await
        .unwrap();
    store
        .add(NewIntegration {
            timeout_ms: Some(i64::MAX as u64),
            ..bare("acme", "slow")
        })
        .await
        .unwrap();
}

async fn summary_hides_secrets(database: String) {
    let store = open(&database).await.unwrap();
    let remote = store.add(http("acme", "remote")).await.unwrap();
    let local = store.add(stdio("acme", "local")).await.unwrap();
    let bare = store.add(bare("acme", "bare")).await.unwrap();
    assert_eq!(
        remote.summary(),
        json!({
            "id": remote.id, "organization_id": "acme", "name": "remote", "enabled": true,
            "transport": "http", "url": "https://mcp.example.com/mcp", "headers": ["X-Tenant"],
            "auth": "bearer", "timeout_ms": 30000,
            "created_at": remote.created_at, "updated_at": remote.updated_at,
        })
    );
    assert_eq!(
        local.summary(),
        json!({
            "id": local.id, "organization_id": "acme", "name": "local", "enabled": true,
            "transport": "stdio", "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-everything"], "env": ["API_KEY"],
            "auth": "header:X-Api-Key", "timeout_ms": null,
            "created_at": local.created_at, "updated_at": local.updated_at,
        })
    );
    assert_eq!(bare.summary()["auth"], json!(null));
    assert_eq!(bare.summary()["headers"], json!([]));
    for integration in store.list("acme").await.unwrap() {
        let shown = [
            integration.summary().to_string(),
            format!("{integration:?}"),
            format!("{integration:#?}"),
        ];
        for (text, secret) in shown.iter().flat_map(|t| SECRETS.map(|s| (t, s))) {
            assert!(!text.contains(secret), "{secret} shown in {text}");
        }
    }
    // The secrets are stored all the same, for the code that connects.
    let stored = store.get(&local.id).await.unwrap().unwrap();
    assert_eq!(
        stored.auth,
        Some(Auth::Header {
            name: "X-Api-Key".into(),
            value: "auth-header-secret".into()
        })
    );
}

async fn reopening_keeps_data(database: String) {
    let first = open(&database).await.unwrap();
    let kept = first.add(stdio("acme", "kept")).await.unwrap();
    let kept = first.set_enabled("acme", &kept.id, false).await.unwrap();
    drop(first);
    // Each open runs the migrations again: no-ops once applied.
    let second = open(&database).await.unwrap();
    let third = open(&database).await.unwrap();
    assert_eq!(second.get(&kept.id).await.unwrap(), Some(kept.clone()));
    let added = third.add(http("acme", "added")).await.unwrap();
    assert_eq!(second.list("acme").await.unwrap(), [added, kept]);
}

/// Lookups see another process's writes at once, however often the same id
/// was looked up before: SQLite's lookups come from memory while its file
/// is unchanged (`cache.rs`).
async fn another_connections_writes_are_seen_at_once(database: String) {
    let (reader, writer) = (
        open(&database).await.unwrap(),
        open(&database).await.unwrap(),
    );
    let id = writer.add(http("acme", "github")).await.unwrap().id;
    let looked_up = async || reader.get(&id).await.unwrap().map(|found| found.enabled);
    assert_eq!(looked_up().await, Some(true));
    // Past the time after which the file's status is trusted: kept now.
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    assert_eq!(looked_up().await, Some(true));
    assert_eq!(looked_up().await, Some(true));
    writer.set_enabled("acme", &id, false).await.unwrap();
    assert_eq!(
        looked_up().await,
        Some(false),
        "a disable is seen by the next lookup"
    );
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    assert_eq!(looked_up().await, Some(false));
    writer.remove("acme", &id).await.unwrap();
    assert_eq!(
        looked_up().await,
        None,
        "a removal is seen by the next lookup"
    );
}

async fn credentials_are_per_user_and_go_with_their_integration(database: String) {
    let store = open(&database).await.unwrap();
    let id = store.add(http("acme", "tracker")).await.unwrap().id;
    let key = |user| CredentialKey {
        organization_id: "acme",
        user_id: user,
        integration_id: &id,
    };
    store
        .put_credential(key("ada"), "sealed-ada-1")
        .await
        .unwrap();
    store
        .put_credential(key("ada"), "sealed-ada-2")
        .await
        .unwrap();
    store
        .put_credential(key("bob"), "sealed-bob")
        .await
        .unwrap();
    assert_eq!(
        store.credential(key("ada")).await.unwrap().as_deref(),
        Some("sealed-ada-2")
    );
    assert_eq!(store.credential(key("eve")).await.unwrap(), None);
    let other_org = CredentialKey {
        organization_id: "globex",
        ..key("ada")
    };
    assert_eq!(store.credential(other_org).await.unwrap(), None);

    assert_eq!(
        store
            .remove_credentials("acme", &id, Some("ada"))
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.credential(key("ada")).await.unwrap(), None);
    assert_eq!(
        store.credential(key("bob")).await.unwrap().as_deref(),
        Some("sealed-bob")
    );
    assert_eq!(
        store.remove_credentials("globex", &id, None).await.unwrap(),
        0
    );

    store
        .put_credential(key("ada"), "sealed-ada-3")
        .await
        .unwrap();
    store.remove("acme", &id).await.unwrap();
    assert_eq!(store.credential(key("ada")).await.unwrap(), None);
    assert_eq!(store.credential(key("bob")).await.unwrap(), None);
}

async fn a_sign_in_is_taken_once_and_never_after_it_expires(database: String) {
    let store = open(&database).await.unwrap();
    let now = clock::unix_now();
    let sign_in = |digest: &str, expires_at| Authorization {
        state_digest: digest.to_owned(),
        organization_id: "acme".into(),
        user_id: "ada".into(),
        integration_id: "int_0123456789abcdef".into(),
        sealed: "sealed".into(),
        expires_at,
    };
    store
        .begin_authorization(&sign_in("live", now + 600))
        .await
        .unwrap();
    store
        .begin_authorization(&sign_in("stale", now - 1))
        .await
        .unwrap();
    assert_eq!(store.take_authorization("stale").await.unwrap(), None);
    assert_eq!(
        store.take_authorization("live").await.unwrap(),
        Some(sign_in("live", now + 600))
    );
    assert_eq!(
        store.take_authorization("live").await.unwrap(),
        None,
        "a replay"
    );
    assert_eq!(store.take_authorization("unknown").await.unwrap(), None);
}

/// The callback (one process) takes the sign-in and stores the token; the
/// call (another) waits for it.
async fn what_one_connection_takes_and_stores_another_sees(database: String) {
    let (call, callback) = (
        open(&database).await.unwrap(),
        open(&database).await.unwrap(),
    );
    let id = call.add(http("acme", "tracker")).await.unwrap().id;
    let who = CredentialKey {
        organization_id: "acme",
        user_id: "ada",
        integration_id: &id,
    };
    // The call looks its integration up first, as `remote_mcp` does.
    assert!(call.get(&id).await.unwrap().is_some());
    call.begin_authorization(&Authorization {
        state_digest: "digest".into(),
        organization_id: "acme".into(),
        user_id: "ada".into(),
        integration_id: who.integration_id.into(),
        sealed: "sealed".into(),
        expires_at: clock::unix_now() + 600,
    })
    .await
    .unwrap();
    assert!(
        callback
            .take_authorization("digest")
            .await
            .unwrap()
            .is_some()
    );
    callback.put_credential(who, "token").await.unwrap();
    assert_eq!(call.take_authorization("digest").await.unwrap(), None);
    assert_eq!(
        call.credential(who).await.unwrap().as_deref(),
        Some("token")
    );
}

crate::on_both_backends!(
    add_then_get_round_trips,
    list_is_by_name_and_per_organization,
    a_name_is_unique_within_its_organization,
    concurrent_adds_of_one_name_conflict_but_one,
    set_enabled_toggles_and_bumps_updated_at,
    another_organizations_id_is_not_found,
    remove_deletes,
    invalid_integrations_are_refused,
    summary_hides_secrets,
    reopening_keeps_data,
    another_connections_writes_are_seen_at_once,
    credentials_are_per_user_and_go_with_their_integration,
    a_sign_in_is_taken_once_and_never_after_it_expires,
    what_one_connection_takes_and_stores_another_sees,
);

// ---------------------------------------------------------------------------
// What needs no database, or only one of them.

#[tokio::test]
async fn open_creates_a_sqlite_file_and_its_directories() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a/b/c.db");
    let store = open(&format!("sqlite://{}", file.display())).await.unwrap();
    assert!(file.is_file());
    store.add(bare("acme", "x")).await.unwrap();
    // It holds secrets: the owner's only, and so are SQLite's own files.
    use std::os::unix::fs::PermissionsExt as _;
    for suffix in ["", "-wal", "-shm"] {
        let path = format!("{}{suffix}", file.display());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{path}");
    }
    drop(store);
    let store = open(file.to_str().unwrap()).await.unwrap();
    assert_eq!(names(&store.list("acme").await.unwrap()), ["x"]);
}

#[tokio::test]
async fn a_corrupt_row_is_an_error_that_quotes_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("integrations.db");
    let store = open(file.to_str().unwrap()).await.unwrap();
    let added = store.add(stdio("acme", "local")).await.unwrap();
    let mut raw = sqlx::SqliteConnection::connect(&format!("sqlite://{}", file.display()))
        .await
        .unwrap();
    sqlx::query("UPDATE integrations SET env = '\"env-secret-value\"'")
        .execute(&mut raw)
        .await
        .unwrap();
    let err = store.get(&added.id).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::Database(format!(
            "integration `{}` has a corrupt `env` column (not the JSON expected: \
             Data error at column 18); fix or remove that row",
            added.id
        ))
    );
}

#[tokio::test]
async fn open_refuses_an_empty_database() {
    for database in ["", "sqlite://"] {
        let err = open(database).await.err().unwrap();
        assert!(
            matches!(&err, StoreError::Invalid(m) if m.contains("names no file")),
            "{err:?}"
        );
    }
}

#[test]
fn a_sqlite_path_expands_a_leading_tilde() {
    let home = std::path::PathBuf::from(std::env::var_os("HOME").unwrap());
    for (database, path) in [
        ("~/data/i.db", home.join("data/i.db")),
        ("sqlite://~/i.db", home.join("i.db")),
        ("/srv/~/i.db", "/srv/~/i.db".into()),
        ("rel/i.db", "rel/i.db".into()),
    ] {
        assert_eq!(sqlite_path(database).unwrap(), path, "{database}");
    }
    let err = sqlite_path("~bob/i.db").unwrap_err();
    assert!(
        matches!(&err, StoreError::Invalid(m)
            if m.starts_with("database `~bob/i.db`: `~user` is not expanded")),
        "{err:?}"
    );
}

#[tokio::test]
async fn open_errors_hide_a_postgres_password() {
    // Nothing listens on port 1: the connection is refused.
    let err = open("postgres://ada:hunter2@127.0.0.1:1/app?password=hunter3&sslmode=disable")
        .await
        .err()
        .unwrap();
    let StoreError::Database(message) = &err else {
        panic!("{err:?}")
    };
    assert!(
        message.starts_with(
            "cannot connect to PostgreSQL database \
             `postgres://ada:***@127.0.0.1:1/app?password=***&sslmode=disable`: "
        ),
        "{message}"
    );
    assert!(!message.contains("hunter"), "{message}");
    let err = open("postgresql://ada:hunter2@127.0.0.1:1/app?sslmode=sideways")
        .await
        .err()
        .unwrap();
    assert!(matches!(&err, StoreError::Invalid(_)), "{err:?}");
    assert!(!err.to_string().contains("hunter"), "{err}");
}

#[test]
fn redact_replaces_passwords_only() {
    for (url, shown) in [
        (
            "postgres://ada:hunter2@db:5432/app",
            "postgres://ada:***@db:5432/app",
        ),
        ("postgres://ada@db/app", "postgres://ada@db/app"),
        (
            "postgres://db/app?password=x&user=ada",
            "postgres://db/app?password=***&user=ada",
        ),
        ("postgres://ada:hun@ter@db/app", "postgres://ada:***@db/app"),
        ("postgres://ada:hunter2@[::1/app", "postgres://***@[::1/app"),
    ] {
        assert_eq!(sql::redact(url), shown, "{url}");
    }
}

#[test]
fn default_database_is_under_the_xdg_data_home() {
    let path = |xdg: Option<&str>, home: Option<&str>| {
        default_database_in(xdg.map(Into::into), home.map(Into::into))
    };
    assert_eq!(
        path(Some("/data"), Some("/home/ada")),
        std::path::Path::new("/data/packhost/integrations.db")
    );
    for xdg in [None, Some(""), Some("relative")] {
        assert_eq!(
            path(xdg, Some("/home/ada")),
            std::path::Path::new("/home/ada/.local/share/packhost/integrations.db")
        );
    }
    assert!(default_database().ends_with("packhost/integrations.db"));
}

#[test]
fn timestamps_are_rfc3339_utc() {
    for (secs, micros, text) in [
        (0, 0, "1970-01-01T00:00:00.000000Z"),
        (951_782_400, 7, "2000-02-29T00:00:00.000007Z"),
        (1_234_567_890, 123_456, "2009-02-13T23:31:30.123456Z"),
        (1_709_251_199, 999_999, "2024-02-29T23:59:59.999999Z"),
        (4_102_531_199, 0, "2100-01-01T23:59:59.000000Z"),
    ] {
        assert_eq!(clock::rfc3339(secs, micros), text);
    }
    assert_timestamp(&clock::now());
}

#[test]
fn ids_are_random() {
    let ids: std::collections::HashSet<_> = (0..1000).map(|_| clock::new_id().unwrap()).collect();
    assert_eq!(ids.len(), 1000);
}

#[test]
fn debug_hides_secrets() {
    let shown = format!("{:?} {:?}", http("acme", "a"), stdio("acme", "b"));
    for secret in SECRETS {
        assert!(!shown.contains(secret), "{shown}");
    }
    assert!(
        shown.contains(r#"headers: {"X-Tenant": "<hidden>"}"#),
        "{shown}"
    );
    assert!(shown.contains(r#"Bearer { token: "<hidden>" }"#), "{shown}");
    assert!(shown.contains(r#"env: {"API_KEY": "<hidden>"}"#), "{shown}");
}

#[test]
fn transport_and_auth_serialize_with_a_type_tag() {
    let transport: Transport =
        serde_json::from_value(json!({"type": "stdio", "command": "uvx"})).unwrap();
    assert_eq!(
        transport,
        Transport::Stdio {
            command: "uvx".into(),
            args: vec![],
            env: BTreeMap::new(),
            sandbox: Sandbox::default(),
        }
    );
    let auth = Auth::Header {
        name: "X-Key".into(),
        value: "v".into(),
    };
    assert_eq!(
        serde_json::to_value(&auth).unwrap(),
        json!({"type": "header", "name": "X-Key", "value": "v"})
    );
    assert_eq!(auth.label(), "header:X-Key");
}
