//! The audit trail (`[audit]`) through the real binary over HTTP: calls (a
//! direct `tools/call`, `run` with a Python block and each pack function
//! it called), an approval asked and answered (its arguments masked), and
//! refused sign-ins (static tokens and OAuth access tokens), each
//! under its own organisation, on SQLite and PostgreSQL; `packhost audit`
//! filters them; over MCP an organisation's admin reads their own
//! organisation's events only, and anyone else cannot read at all.

use std::{process::Output, time::Duration};

use packhost_tests::{
    downstream::postgres_database,
    hello_section,
    http::HttpHost,
    oauth::{Client, Provider, now, start_host},
    packhost_cli, packhost_command,
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// A secret that goes into an approved call's arguments, and must never
/// reach the trail.
const SECRET: &str = "sk-live-4242";

/// Calls the Python block makes, the second one asked about first.
fn python_block() -> String {
    format!(
        "```python\nhello.greet(name='Ada')\nhello.echo(value={{'api_key': '{SECRET}', 'n': 1}})\n```"
    )
}

/// A host (hello and exec_py, `hello.echo` asking first) of organisations
/// acme (ada, admin; bob) and globex (gus, admin), keeping its trail in
/// `database` (a SQLite file when `None`). The tokens by user.
struct Setup {
    host: HttpHost,
    database: String,
    ada: String,
    bob: String,
    gus: String,
}

impl Setup {
    async fn start(database: Option<String>) -> Self {
        let dir = TempDir::new().expect("temp dir");
        let database =
            database.unwrap_or_else(|| dir.path().join("trail/audit.db").display().to_string());
        let (ada, ada_entry) = packhost_tests::http::token("ada", "acme", &[]);
        let (bob, bob_entry) = packhost_tests::http::token("bob", "acme", &[]);
        let (gus, gus_entry) = packhost_tests::http::token("gus", "globex", &[]);
        let config = format!(
            "{hello}\n[packs.exec_py]\n\n[approval.echoes]\ncalls = [\"hello.echo\"]\n\n\
             [audit]\ndatabase = {database:?}\n\n\
             {ada_entry}\nadmin = true\n\n{bob_entry}\n\n{gus_entry}\nadmin = true\n",
            hello = hello_section(""),
        );
        std::fs::write(dir.path().join("packs.toml"), config).unwrap();
        let host = HttpHost::start_in(dir, &[], &[]).await;
        Self {
            host,
            database,
            ada,
            bob,
            gus,
        }
    }

    /// A 2026-07-28 `tools/call` of `name` as `token`'s caller (a client
    /// that can be asked); `retry`: the answers and `requestState` of a
    /// retry. The JSON-RPC response.
    async fn call(
        &self,
        token: Option<&str>,
        name: &str,
        arguments: Value,
        retry: Option<(Value, &str)>,
    ) -> Value {
        let forms = json!({"elicitation": {}});
        let params = HttpHost::stateless_params(name, arguments, forms, retry);
        let messages = self.host.stateless_call(token, &params).await;
        messages.last().cloned().expect("a response")
    }

    /// `packhost audit --database <this trail> args`.
    fn audit(&self, args: &[&str]) -> Output {
        packhost_command(self.host.dir.path())
            .args(["audit", "--database", &self.database])
            .args(args)
            .output()
            .expect("run packhost audit")
    }

    /// The events `packhost audit args` prints.
    fn events(&self, args: &[&str]) -> Vec<Value> {
        let output = self.audit(args);
        assert!(
            output.status.success(),
            "packhost audit {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }

    /// Every event, once `enough` holds of them (the writer is in the
    /// background): waits up to 10 s.
    async fn once(&self, enough: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        for _ in 0..200 {
            let events = self.events(&["--limit", "10000"]);
            if enough(&events) {
                return events;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let events = self.events(&["--limit", "10000"]);
        panic!(
            "the trail never had what was expected: {events:#?}\n{}",
            self.host.stderr()
        );
    }

    /// What the test does as each user: ada calls `hello.whoami`, runs the
    /// Python block and approves the call it asks about, and calls a
    /// function that does not exist; gus calls
    /// `hello.whoami`; someone sends an unknown token, someone none.
    async fn act(&self) {
        let whoami = self
            .call(Some(&self.ada), "hello.whoami", json!({}), None)
            .await;
        assert_eq!(whoami["result"]["isError"], false, "{whoami}");
        let run = json!({"command": python_block()});
        let first = self.call(Some(&self.ada), "run", run.clone(), None).await;
        let asked = &first["result"];
        assert_eq!(asked["resultType"], "input_required", "{first}");
        let key = asked["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap();
        let state = asked["requestState"].as_str().unwrap();
        let yes = json!({ key: {"action": "accept", "content": {"decision": "accept"}} });
        let done = self
            .call(Some(&self.ada), "run", run, Some((yes, state)))
            .await;
        assert_eq!(
            done["result"]["isError"],
            false,
            "{done}\n{}",
            self.host.stderr()
        );
        let unknown = self
            .call(Some(&self.ada), "hello.nope", json!({}), None)
            .await;
        assert_eq!(unknown["result"]["isError"], true, "{unknown}");
        let globex = self
            .call(Some(&self.gus), "hello.whoami", json!({}), None)
            .await;
        assert_eq!(globex["result"]["isError"], false, "{globex}");
        for token in [Some("ph_not-a-token-of-ours"), None] {
            let refused = self
                .host
                .stateless_request(token, &json!({}))
                .send()
                .await
                .unwrap();
            assert_eq!(refused.status(), 401);
        }
    }
}

fn field<'a>(event: &'a Value, key: &str) -> &'a str {
    event[key].as_str().unwrap_or_default()
}

/// The events of `kind` for `tool`.
fn of<'a>(events: &'a [Value], kind: &str, tool: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| field(e, "kind") == kind && field(e, "tool") == tool)
        .collect()
}

/// Whether the trail holds everything [`Setup::act`] does.
fn complete(events: &[Value]) -> bool {
    let calls = |tool| of(events, "call", tool).len();
    calls("hello.whoami") >= 2
        && calls("exec_py.run") >= 1
        && calls("hello.greet") >= 1
        && calls("hello.echo") >= 1
        && calls("hello.nope") >= 1
        && !of(events, "approval", "hello.echo").is_empty()
        && events
            .iter()
            .filter(|e| field(e, "kind") == "sign_in_refused")
            .count()
            >= 2
}

async fn calls_approvals_and_refusals_are_recorded_each_under_its_organisation(
    database: Option<String>,
) {
    let setup = Setup::start(database).await;
    setup.act().await;
    let events = setup.once(complete).await;
    let text = serde_json::to_string(&events).unwrap();
    assert!(
        !text.contains(SECRET),
        "a masked argument reached the trail"
    );
    for token in [&setup.ada, &setup.bob, &setup.gus] {
        assert!(!text.contains(token.as_str()), "a token reached the trail");
    }
    assert!(
        !text.contains("ph_not-a-token-of-ours"),
        "a refused token reached the trail"
    );

    // A direct call, one per organisation.
    let whoami = of(&events, "call", "hello.whoami");
    let by = |org: &str| whoami.iter().find(|e| field(e, "org") == org).copied();
    let ada = by("acme").expect("ada's call");
    assert_eq!((field(ada, "user"), field(ada, "outcome")), ("ada", "ok"));
    assert!(
        ada["duration_ms"].as_f64().is_some_and(|ms| ms >= 0.0),
        "{ada}"
    );
    assert!(!field(ada, "request_id").is_empty(), "{ada}");
    assert_eq!(ada["detail"]["depth"], 0);
    assert_eq!(field(by("globex").expect("gus's call"), "user"), "gus");

    // `run` with a Python block: the code pack's call, and each function
    // the block called, made by it.
    let run = of(&events, "call", "exec_py.run");
    assert!(
        run.iter()
            .all(|e| field(e, "org") == "acme" && field(e, "user") == "ada")
    );
    assert!(run.iter().any(|e| field(e, "outcome") == "ok"), "{run:?}");
    for tool in ["hello.greet", "hello.echo"] {
        let nested = of(&events, "call", tool);
        assert_eq!(nested.len(), 1, "{tool} was called once: {nested:?}");
        assert_eq!(field(nested[0], "org"), "acme");
        assert_eq!(field(nested[0], "outcome"), "ok");
        assert_eq!(
            nested[0]["detail"],
            json!({"depth": 1, "parent": "exec_py.run"})
        );
    }

    // A call refused before any function started: no duration.
    let unknown = of(&events, "call", "hello.nope");
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert_eq!(field(unknown[0], "outcome"), "UNKNOWN_FUNCTION");
    assert_eq!(
        (field(unknown[0], "org"), field(unknown[0], "user")),
        ("acme", "ada")
    );
    assert!(unknown[0]["duration_ms"].is_null(), "{:?}", unknown[0]);

    // The approval asked and its answer, the secret masked.
    let approval = of(&events, "approval", "hello.echo");
    assert_eq!(approval.len(), 1, "{approval:?}");
    let approval = approval[0];
    assert_eq!(
        (
            field(approval, "org"),
            field(approval, "user"),
            field(approval, "outcome")
        ),
        ("acme", "ada", "accept")
    );
    assert_eq!(approval["detail"]["rule"], "echoes");
    let arguments = approval["detail"]["arguments"].as_str().unwrap();
    assert!(
        arguments.contains("\"api_key\": \"<hidden>\""),
        "{arguments}"
    );
    assert!(arguments.contains("\"n\": 1"), "{arguments}");

    // Refused sign-ins: no organisation can be trusted, so host-level.
    let refused: Vec<&Value> = events
        .iter()
        .filter(|e| field(e, "kind") == "sign_in_refused")
        .collect();
    let reasons: Vec<(&str, &str)> = refused
        .iter()
        .map(|e| (field(e, "outcome"), e["detail"]["method"].as_str().unwrap()))
        .collect();
    assert_eq!(reasons, [("unknown_token", "static"), ("missing", "none")]);
    assert!(
        refused
            .iter()
            .all(|e| e["org"].is_null() && e["user"].is_null())
    );

    filters_read_that_trail(&setup, &events);
}

/// `packhost audit`'s filters on the trail [`Setup::act`] left.
fn filters_read_that_trail(setup: &Setup, all: &[Value]) {
    let tools = |args: &[&str]| -> Vec<String> {
        let events = setup.events(args);
        events.iter().map(|e| field(e, "tool").to_owned()).collect()
    };
    let globex = setup.events(&["--org", "globex"]);
    assert_eq!(globex.len(), 1, "{globex:?}");
    assert_eq!(field(&globex[0], "user"), "gus");
    let acme = setup.events(&["--org", "acme"]);
    assert!(acme.iter().all(|e| field(e, "org") == "acme"));
    assert_eq!(
        acme.len(),
        all.iter().filter(|e| field(e, "org") == "acme").count()
    );
    let host = setup.events(&["--host"]);
    assert_eq!(host.len(), 2);
    assert!(host.iter().all(|e| e["org"].is_null()));
    assert!(setup.events(&["--user", "bob"]).is_empty());
    let ada = setup.events(&["--org", "acme", "--user", "ada", "--kind", "call"]);
    let calls_of_ada = acme
        .iter()
        .filter(|e| field(e, "kind") == "call" && field(e, "user") == "ada");
    assert_eq!(ada.len(), calls_of_ada.count());
    assert!(!ada.is_empty());
    let mut hello = tools(&["--tool", "hello.*", "--kind", "call"]);
    hello.sort();
    assert_eq!(
        hello,
        [
            "hello.echo",
            "hello.greet",
            "hello.nope",
            "hello.whoami",
            "hello.whoami"
        ]
    );
    assert_eq!(
        tools(&["--tool", "hello.echo", "--kind", "approval"]),
        ["hello.echo"]
    );
    assert_eq!(setup.events(&["--since", "1h"]).len(), all.len());
    assert!(setup.events(&["--until", "1h"]).is_empty());
    let last = setup.events(&["--limit", "1"]);
    assert_eq!(last, all[all.len() - 1..], "the most recent one");
    let first = field(&all[0], "at");
    let from_first = setup.events(&["--since", first]);
    assert_eq!(from_first.len(), all.len(), "--since is inclusive");
    // Wrong filters: exit 2, saying what was wrong and what would be right.
    for (args, expected) in [
        (
            &["--since", "yesterday"][..],
            "`--since`: `yesterday` is not a time",
        ),
        (
            &["--until", "3y"][..],
            "`--until`: `3y`: `y` is no unit of time; use s, m, h, d or w",
        ),
        (
            &["--since", "1h", "--until", "2h"][..],
            "is not before `--until`",
        ),
        (
            &["--limit", "0"][..],
            "`--limit`: 0 is out of range; give 1 to 10000",
        ),
        (
            &["--kind", "calls"][..],
            "`--kind`: `calls` is no event kind; use one of call, approval, sign_in_refused, credential",
        ),
    ] {
        let output = setup.audit(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[tokio::test]
async fn calls_approvals_and_refusals_are_recorded_on_sqlite() {
    calls_approvals_and_refusals_are_recorded_each_under_its_organisation(None).await;
}

#[tokio::test]
async fn calls_approvals_and_refusals_are_recorded_on_postgresql() {
    let Some(database) = postgres_database() else {
        return;
    };
    calls_approvals_and_refusals_are_recorded_each_under_its_organisation(Some(database)).await;
}

/// `packhost.audit` as `token`'s caller with `arguments`: the JSON-RPC
/// response.
async fn read_over_mcp(setup: &Setup, token: &str, arguments: Value) -> Value {
    setup
        .call(Some(token), "packhost.audit", arguments, None)
        .await
}

#[tokio::test]
async fn an_admin_reads_their_own_organisations_events_only_and_others_nothing() {
    let setup = Setup::start(None).await;
    setup.act().await;
    setup.once(complete).await;
    // Ada, acme's admin: acme's events, and nothing of globex's or the
    // host-level ones, whatever she asks for.
    let answer = read_over_mcp(&setup, &setup.ada, json!({"limit": 10000})).await;
    let result = &answer["result"]["structuredContent"];
    assert_eq!(result["org"], "acme", "{answer}");
    let events = result["events"].as_array().unwrap();
    assert!(!of(events, "call", "exec_py.run").is_empty(), "{answer}");
    assert!(!of(events, "approval", "hello.echo").is_empty(), "{answer}");
    for event in events {
        assert_eq!(
            event["org"], "acme",
            "another organisation's event: {event}"
        );
    }
    let text = answer.to_string();
    assert!(
        !text.contains("\"gus\"") && !text.contains("globex"),
        "{text}"
    );
    let gus_only = read_over_mcp(&setup, &setup.ada, json!({"user": "gus"})).await;
    assert_eq!(
        gus_only["result"]["structuredContent"]["count"], 0,
        "{gus_only}"
    );
    let refused = read_over_mcp(&setup, &setup.ada, json!({"kind": "sign_in_refused"})).await;
    assert_eq!(
        refused["result"]["structuredContent"]["count"], 0,
        "{refused}"
    );
    // No argument names an organisation.
    let other = read_over_mcp(&setup, &setup.ada, json!({"org": "globex"})).await;
    assert_eq!(other["result"]["isError"], true, "{other}");
    assert!(!other.to_string().contains("gus"), "{other}");
    // Gus, globex's admin: his call only.
    let answer = read_over_mcp(
        &setup,
        &setup.gus,
        json!({"kind": "call", "tool": "hello.*"}),
    )
    .await;
    let events = answer["result"]["structuredContent"]["events"]
        .as_array()
        .unwrap()
        .clone();
    let users: Vec<&str> = events.iter().map(|e| field(e, "user")).collect();
    assert_eq!(users, ["gus"], "{answer}");
    // Filters are checked, and say which argument is wrong.
    let wrong = read_over_mcp(&setup, &setup.ada, json!({"since": "yesterday"})).await;
    assert_eq!(wrong["result"]["isError"], true, "{wrong}");
    assert!(
        wrong
            .to_string()
            .contains("`since`: `yesterday` is not a time"),
        "{wrong}"
    );

    // Bob of acme is no admin: to him there is no such function, as for a
    // name that never existed (the same answer but for the name), from a
    // client and from code alike, and no listing or search shows it.
    let bob = read_over_mcp(&setup, &setup.bob, json!({})).await;
    let made_up = setup
        .call(Some(&setup.bob), "packhost.audix", json!({}), None)
        .await;
    assert_eq!(bob["result"]["isError"], true, "{bob}");
    assert_eq!(
        error_code_of(&bob),
        error_code_of(&made_up),
        "{bob}\n{made_up}"
    );
    let unnamed = |answer: &Value, name: &str| answer["result"].to_string().replace(name, "NAME");
    assert_eq!(unnamed(&bob, "audit"), unnamed(&made_up, "audix"));
    let from_code = |name: &'static str| {
        let code = format!(
            "```python\ntry:\n    packhost.{name}()\n    r = 'read'\nexcept Exception as e:\n    r = f'{{type(e).__name__}}: {{e}}'\nr\n```"
        );
        let setup = &setup;
        async move {
            let answer = setup
                .call(Some(&setup.bob), "run", json!({"command": code}), None)
                .await;
            let said = answer["result"]["structuredContent"]["result"].as_str();
            said.unwrap_or_else(|| panic!("{answer}"))
                .replace(name, "NAME")
        }
    };
    assert_eq!(from_code("audit").await, from_code("audix").await);
    for (token, listed) in [(&setup.bob, false), (&setup.ada, true)] {
        let client = setup.host.client(Some(token)).await.unwrap();
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names.contains(&"packhost.audit"), listed, "{names:?}");
        client.cancel().await.unwrap();
    }
    let search = setup
        .call(
            Some(&setup.bob),
            "packhost.search",
            json!({"query": "audit trail events"}),
            None,
        )
        .await;
    assert!(!search.to_string().contains("packhost.audit"), "{search}");
    let described = setup
        .call(
            Some(&setup.bob),
            "packhost.describe",
            json!({"name": "packhost"}),
            None,
        )
        .await;
    assert!(!described.to_string().contains("audit("), "{described}");
    let ada_described = setup
        .call(
            Some(&setup.ada),
            "packhost.describe",
            json!({"name": "packhost"}),
            None,
        )
        .await;
    assert!(
        ada_described.to_string().contains("audit("),
        "{ada_described}"
    );
}

/// The error code of a failed `tools/call` answer.
fn error_code_of(answer: &Value) -> String {
    let error = &answer["result"]["_meta"]["packhost/error"];
    error["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error code: {answer}"))
        .to_owned()
}

/// With `[auth.oauth]`: a refused access token the issuer signed (expired)
/// is filed under the organisation it names, one it did not sign is
/// host-level; `auth.oauth.admin_scope` makes an admin, who reads their own
/// organisation's events only (the refusal among them).
#[tokio::test]
async fn oauth_refusals_are_filed_by_the_issuers_word_and_oauth_admins_read_their_own() {
    let clients = [
        Client::new("ada", "acme", "tools:hello audit:read"),
        Client::new("eve", "evil", "tools:hello audit:read"),
    ];
    let provider = Provider::start(&clients, &["tools:hello", "audit:read"]).await;
    let trail = TempDir::new().unwrap();
    let database = trail.path().join("audit.db").display().to_string();
    let config = format!(
        "{hello}\n[audit]\ndatabase = {database:?}\n\n\
         [auth.oauth]\nissuer = \"{issuer}\"\nresource = \"{{resource}}\"\norg_claim = \"org\"\n\
         admin_scope = \"audit:read\"\n\n[auth.oauth.scopes]\n\"tools:hello\" = [\"hello.*\"]\n",
        hello = hello_section(""),
        issuer = provider.issuer,
    );
    let (host, resource) = start_host(&config).await;
    let setup = Setup {
        host,
        database,
        ada: provider
            .token(&clients[0], "tools:hello audit:read", &resource)
            .await,
        bob: provider.token(&clients[0], "tools:hello", &resource).await,
        gus: provider
            .token(&clients[1], "tools:hello audit:read", &resource)
            .await,
    };
    for token in [&setup.ada, &setup.gus] {
        let answer = setup
            .call(Some(token), "hello.whoami", json!({}), None)
            .await;
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    let now = now();
    let expired = json!({"iss": provider.issuer, "aud": resource, "sub": "ada", "org": "acme",
        "client_id": "ada", "scope": "tools:hello", "iat": now - 900, "exp": now - 60,
        "jti": format!("audit-{now}")});
    let refused = [
        provider.forge(json!({}), expired.clone(), "provider").await,
        provider.forge(json!({}), expired, "foreign").await,
    ];
    for token in &refused {
        let answer = setup
            .host
            .stateless_request(Some(token), &json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 401);
    }
    let events = setup
        .once(|events| {
            events
                .iter()
                .filter(|e| field(e, "kind") == "sign_in_refused")
                .count()
                >= 2
        })
        .await;
    let text = serde_json::to_string(&events).unwrap();
    for token in refused.iter().chain([&setup.ada, &setup.gus]) {
        assert!(!text.contains(token.as_str()), "a token reached the trail");
    }
    let refusals: Vec<(Value, Value, &str)> = events
        .iter()
        .filter(|e| field(e, "kind") == "sign_in_refused")
        .map(|e| (e["org"].clone(), e["user"].clone(), field(e, "outcome")))
        .collect();
    assert_eq!(
        refusals,
        [
            (json!("acme"), json!("ada"), "expired"),
            (Value::Null, Value::Null, "bad_signature"),
        ]
    );
    // Ada, admin by her scope: acme's events, her refused token among them.
    let answer = read_over_mcp(&setup, &setup.ada, json!({})).await;
    let events = answer["result"]["structuredContent"]["events"]
        .as_array()
        .unwrap()
        .clone();
    let seen: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (field(e, "kind"), field(e, "outcome")))
        .collect();
    assert_eq!(
        seen,
        [("call", "ok"), ("sign_in_refused", "expired")],
        "{answer}"
    );
    assert!(events.iter().all(|e| e["org"] == "acme"), "{answer}");
    // Eve, evil's admin: her call only.
    let answer = read_over_mcp(&setup, &setup.gus, json!({})).await;
    let events = answer["result"]["structuredContent"]["events"]
        .as_array()
        .unwrap()
        .clone();
    let users: Vec<&str> = events.iter().map(|e| field(e, "user")).collect();
    assert_eq!(users, ["eve"], "{answer}");
    // Ada's token without the admin scope reads nothing.
    let answer = read_over_mcp(&setup, &setup.bob, json!({})).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(error_code_of(&answer), "UNKNOWN_FUNCTION", "{answer}");
}

#[test]
fn check_opens_the_audit_database_and_says_where_it_records() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("trail/audit.db");
    let output = packhost_cli(
        &format!(
            "[audit]\ndatabase = {:?}\nkeep_days = 30\n",
            file.display().to_string()
        ),
        &["check"],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let expected = format!(
        "ok    [audit] records to {}, keeping 30 days and at most 1000000 events per organisation",
        file.display()
    );
    assert!(stdout.contains(&expected), "{stdout}");
    assert!(file.exists());
    // A database it cannot reach: exit 1, said without the password.
    let output = packhost_cli(
        "[audit]\ndatabase = \"postgres://ada:hunter2@127.0.0.1:1/trail\"\n",
        &["check"],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("error [audit] cannot connect to PostgreSQL database `postgres://ada:***@127.0.0.1:1/trail`"),
        "{stdout}"
    );
    assert!(!stdout.contains("hunter2"), "{stdout}");
}
