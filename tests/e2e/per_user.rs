//! Integrations that act per user (`packhost integrations add --per-user`):
//! a real OpenID provider (oidc-provider, `tests/oauth/provider.mjs`), an
//! MCP server that takes only its tokens for itself and records who called
//! (the official TypeScript SDK's server, `tests/oauth/upstream.mjs`), and
//! packhost between them. Each user is sent to sign in (a URL elicitation on
//! 2025-11-25, an `input_required` URL request on 2026-07-28), their
//! browser comes back to packhost's `/oauth/callback`, and their call goes
//! on as them. A sign-in link works once; tokens are sealed in the
//! database and appear nowhere else. The official TypeScript SDK client
//! goes through the same sign-in (`tests/official-clients/per-user.mjs`).

use std::time::Duration;

use packhost_tests::{
    downstream::{free_port, integrations},
    http::{Events, HttpHost, RawSession, token, web_client},
    oauth::{Provider, Upstream, sign_in},
    official::script_lines,
    packhost_command,
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// The key packhost seals tokens with here (32 bytes, base64).
const KEY: &str = "cGVyLXVzZXItdGVzdC1rZXktMzItYnl0ZXMtbG9uZyE";

struct Setup {
    provider: Provider,
    upstream: Upstream,
    host: HttpHost,
    /// The integration's id.
    id: String,
    ada: String,
    bob: String,
    /// `http://127.0.0.1:<port>`: packhost's public URL.
    base: String,
}

/// A packhost serving `remote_mcp` (and `exec_py`) to ada and bob of acme,
/// whose integration `tracker` is the upstream, per user (added with
/// `options` too); the provider's tokens last `lifetimes` (access, refresh)
/// seconds.
async fn setup(lifetimes: (u64, u64), options: &[&str]) -> Setup {
    let provider =
        Provider::for_users(&[("ada", "acme"), ("bob", "acme")], &["tracker"], lifetimes).await;
    let upstream = Upstream::start(&provider.issuer).await;
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let dir = TempDir::new().unwrap();
    let database = dir.path().join("integrations.db").display().to_string();
    let (ada, ada_entry) = token("ada", "acme", &[]);
    let (bob, bob_entry) = token("bob", "acme", &[]);
    let config = format!(
        "[packs.remote_mcp]\nconfig = {{ database = {database:?}, public_url = {base:?} }}\n\n\
         [packs.exec_py]\n\n[audit]\n\n{ada_entry}\n\n{bob_entry}\n"
    );
    std::fs::write(dir.path().join("packs.toml"), config).unwrap();
    let add = [
        "add",
        "--org",
        "acme",
        "--name",
        "tracker",
        "--url",
        &upstream.url,
        "--per-user",
    ];
    let id = integrations(dir.path(), &[&add[..], options].concat(), &[]);
    let env = [("PACKHOST_CREDENTIALS_KEY", KEY)];
    let host = HttpHost::start_at(dir, &format!("127.0.0.1:{port}"), &[], &env).await;
    Setup {
        provider,
        upstream,
        host,
        id,
        ada,
        bob,
        base,
    }
}

impl Setup {
    fn callback(&self) -> String {
        format!("{}/oauth/callback/remote_mcp", self.base)
    }

    /// The audit trail's credential events, as (user, action), oldest
    /// first, and all it printed, once it has every one of `expected`
    /// (events are written in the background).
    async fn credential_events(
        &self,
        expected: &[(&str, &str)],
    ) -> (Vec<(String, String)>, String) {
        for _ in 0..50 {
            let (events, printed) = self.credential_events_now();
            let has = |(user, action): &(&str, &str)| {
                events.iter().any(|(u, a)| u == user && a == action)
            };
            if expected.iter().all(has) {
                return (events, printed);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (events, _) = self.credential_events_now();
        panic!("the audit trail has {events:?}, not all of {expected:?}");
    }

    fn credential_events_now(&self) -> (Vec<(String, String)>, String) {
        let dir = self.host.dir.path();
        let output = packhost_command(dir)
            .args(["audit", "--org", "acme", "--kind", "credential"])
            .output()
            .expect("run packhost audit");
        let printed = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let events: Vec<Value> = printed
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let pairs = events
            .iter()
            .map(|e| {
                (
                    e["user"].as_str().unwrap().to_owned(),
                    e["outcome"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        (pairs, printed)
    }

    fn whoami(&self) -> Value {
        json!({"integrationId": self.id, "toolName": "whoami"})
    }

    /// A 2026-07-28 `tools/call` of `tool` as `token`'s caller (declaring
    /// URL elicitation), with a retry's `answers` and state: the result.
    async fn stateless(
        &self,
        token: &str,
        tool: &str,
        arguments: Value,
        retry: Option<(Value, &str)>,
    ) -> Value {
        let urls = json!({"elicitation": {"url": {}}});
        let params = HttpHost::stateless_params(tool, arguments, urls, retry);
        let messages = self.host.stateless_call(Some(token), &params).await;
        let last = messages.last().cloned().expect("a response");
        last.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("no result: {last}\n{}", self.host.stderr()))
    }

    /// `login` (whose packhost token is `token`) calls `whoami` on
    /// 2026-07-28, is asked to sign in, signs in and answers: the result.
    async fn sign_in_stateless(&self, token: &str, login: &str) -> Value {
        let asked = self
            .stateless(token, "remote_mcp.execute_tool", self.whoami(), None)
            .await;
        let (key, url, state) = url_question(&asked);
        let back = sign_in(&url, login, &self.callback()).await;
        assert_eq!(open(&back).await.0, 200, "{}", self.host.stderr());
        let answers = json!({ key: {"action": "accept"} });
        self.stateless(
            token,
            "remote_mcp.execute_tool",
            self.whoami(),
            Some((answers, &state)),
        )
        .await
    }
}

/// The one question of an `input_required` result, a URL elicitation:
/// its key, URL and the request state.
fn url_question(asked: &Value) -> (String, String, String) {
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let questions = asked["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(questions.len(), 1, "{asked}");
    let (key, question) = questions.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    assert_eq!(question["params"]["mode"], "url", "{asked}");
    let url = question["params"]["url"]
        .as_str()
        .expect("a url")
        .to_owned();
    let state = asked["requestState"].as_str().expect("a requestState");
    (key.clone(), url, state.to_owned())
}

/// What `whoami` answered in a result of `remote_mcp.execute_tool`.
fn answered(result: &Value) -> String {
    assert_eq!(result["isError"], false, "{result}");
    let content = &result["structuredContent"]["content"][0]["text"];
    content
        .as_str()
        .unwrap_or_else(|| panic!("{result}"))
        .to_owned()
}

/// GET `url` as a browser: its status and page.
async fn open(url: &str) -> (u16, String) {
    let response = web_client().get(url).send().await.expect("GET");
    let status = response.status().as_u16();
    (status, response.text().await.expect("a page"))
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

#[tokio::test]
async fn each_user_signs_in_once_and_reaches_the_upstream_as_themselves() {
    let mut setup = setup((300, 3600), &[]).await;
    let ada = setup.ada.clone();
    let bob = setup.bob.clone();

    // Ada, on 2025-11-25: the question rides her call's stream.
    let session: RawSession = setup
        .host
        .open_session(Some(&ada), json!({"elicitation": {"url": {}}}))
        .await;
    let sent = session.post(
        Some(&ada),
        &call(1, "remote_mcp.execute_tool", setup.whoami()),
    );
    let mut events = Events::of(sent.send().await.unwrap());
    let asked = events.next().await.expect("the sign-in question").message;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let params = &asked["params"];
    assert_eq!(params["mode"], "url", "{asked}");
    assert!(
        params["elicitationId"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{asked}"
    );
    assert!(
        params["message"].as_str().unwrap().contains("`tracker`"),
        "{asked}"
    );
    let url = params["url"].as_str().unwrap();
    assert!(url.starts_with(&setup.provider.issuer), "{url}");
    let yes = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}});
    assert_eq!(
        session
            .post(Some(&ada), &yes)
            .send()
            .await
            .unwrap()
            .status(),
        202
    );
    let back = sign_in(url, "ada", &setup.callback()).await;
    let (status, page) = open(&back).await;
    assert_eq!(status, 200, "{page}\n{}", setup.host.stderr());
    assert!(page.contains("signed in"), "{page}");
    let done = events.response(&json!(1)).await;
    assert_eq!(answered(&done["result"]), "ada", "{done}");
    let ada_calls = setup.upstream.calls();
    assert_eq!(ada_calls.len(), 1, "{ada_calls:?}");
    assert_eq!(ada_calls[0].sub, "ada");

    // The link worked once: its replay, and a guessed state, get the same
    // page and store nothing.
    let (replayed, replay_page) = open(&back).await;
    assert_eq!(replayed, 400, "{replay_page}");
    let guessed = format!(
        "{}?state=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA&code=x",
        setup.callback()
    );
    assert_eq!(open(&guessed).await, (400, replay_page));

    // Her next call, on the other wire, asks nothing.
    let again = setup
        .stateless(&ada, "remote_mcp.execute_tool", setup.whoami(), None)
        .await;
    assert_eq!(answered(&again), "ada", "{again}");

    // Bob, on 2026-07-28, is asked separately and reaches it as himself.
    let bobs = setup.sign_in_stateless(&bob, "bob").await;
    assert_eq!(answered(&bobs), "bob", "{bobs}\n{}", setup.host.stderr());
    let calls = setup.upstream.calls();
    assert_eq!(
        calls.iter().map(|c| c.sub.as_str()).collect::<Vec<_>>(),
        ["ada", "bob"]
    );
    assert_ne!(calls[0].token, calls[1].token);

    // Code acts as its caller, and sees neither token nor key.
    let code = format!(
        "```python\nimport os\nr = remote_mcp.execute_tool(integrationId='{}', toolName='whoami')\n\
         [r['content'][0]['text'], os.environ.get('PACKHOST_CREDENTIALS_KEY')]\n```",
        setup.id
    );
    let ran = setup
        .stateless(&bob, "run", json!({"command": code}), None)
        .await;
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(
        ran["structuredContent"]["result"],
        json!(["bob", null]),
        "{ran}"
    );

    // No token anywhere but sealed in the database.
    let tokens: Vec<String> = [ada_calls, calls, setup.upstream.calls()]
        .concat()
        .into_iter()
        .map(|c| c.token)
        .collect();
    let mut seen = vec![
        ("the host's log", setup.host.stderr()),
        ("a result", format!("{done}{again}{bobs}{ran}")),
    ];
    for file in ["integrations.db", "integrations.db-wal"] {
        let bytes = std::fs::read(setup.host.dir.path().join(file)).unwrap_or_default();
        seen.push((file, String::from_utf8_lossy(&bytes).into_owned()));
    }
    for token in &tokens {
        // A JWT's signature is its most secret-looking part.
        let signature = token.rsplit('.').next().unwrap();
        for (place, text) in &seen {
            assert!(!text.contains(signature), "a token in {place}");
        }
    }

    // Ada signs herself out; bob is revoked by the admin: each is asked again.
    let out = setup
        .stateless(
            &ada,
            "remote_mcp.sign_out",
            json!({"integrationId": setup.id}),
            None,
        )
        .await;
    assert_eq!(out["structuredContent"]["signedOut"], true, "{out}");
    let revoke = ["revoke", "--org", "acme", "--user", "bob", &setup.id];
    let revoked = integrations(setup.host.dir.path(), &revoke, &[]);
    assert!(revoked.contains("revoked 1"), "{revoked}");
    for caller in [&ada, &bob] {
        let asked = setup
            .stateless(caller, "remote_mcp.execute_tool", setup.whoami(), None)
            .await;
        url_question(&asked);
    }

    // Declining the sign-in is the call's answer.
    let asked = setup
        .stateless(&ada, "remote_mcp.execute_tool", setup.whoami(), None)
        .await;
    let (key, _, state) = url_question(&asked);
    let no = json!({ key: {"action": "decline"} });
    let declined = setup
        .stateless(
            &ada,
            "remote_mcp.execute_tool",
            setup.whoami(),
            Some((no, &state)),
        )
        .await;
    assert_eq!(declined["isError"], true, "{declined}");
    assert_eq!(
        declined["_meta"]["packhost/error"]["code"], "DECLINED",
        "{declined}"
    );
    assert!(
        setup.upstream.calls().is_empty(),
        "nobody reached the upstream since"
    );

    // The audit trail has each user's credential events, and no token.
    let expected = [
        ("ada", "granted"),
        ("ada", "used"),
        ("bob", "granted"),
        ("bob", "used"),
        ("ada", "revoked"),
        ("bob", "revoked"),
    ];
    let (events, printed) = setup.credential_events(&expected).await;
    for user in ["ada", "bob"] {
        let first = events.iter().find(|(u, _)| u == user);
        assert_eq!(
            first.map(|(_, a)| a.as_str()),
            Some("granted"),
            "{events:?}"
        );
    }
    for token in &tokens {
        assert!(
            !printed.contains(token.rsplit('.').next().unwrap()),
            "a token in the audit trail"
        );
    }
}

#[tokio::test]
async fn an_expired_token_is_refreshed_and_an_expired_refresh_asks_again() {
    // Access tokens last 2 s, refresh tokens 8 s.
    let mut setup = setup((2, 8), &[]).await;
    let ada = setup.ada.clone();
    let first = setup.sign_in_stateless(&ada, "ada").await;
    // Her tokens were issued before now.
    let signed_in = std::time::Instant::now();
    assert_eq!(answered(&first), "ada", "{first}\n{}", setup.host.stderr());

    tokio::time::sleep(Duration::from_secs(3)).await;
    let refreshed = setup
        .stateless(&ada, "remote_mcp.execute_tool", setup.whoami(), None)
        .await;
    assert_eq!(
        answered(&refreshed),
        "ada",
        "{refreshed}\n{}",
        setup.host.stderr()
    );
    let calls = setup.upstream.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_ne!(
        calls[0].token, calls[1].token,
        "the expired token was refreshed"
    );

    tokio::time::sleep(Duration::from_secs(9).saturating_sub(signed_in.elapsed())).await;
    let asked = setup
        .stateless(&ada, "remote_mcp.execute_tool", setup.whoami(), None)
        .await;
    url_question(&asked);
    assert!(setup.upstream.calls().is_empty());
    let expected = [("ada", "granted"), ("ada", "refreshed"), ("ada", "revoked")];
    setup.credential_events(&expected).await;
}

#[tokio::test]
async fn the_official_typescript_client_signs_its_user_in_when_asked() {
    let mut setup = setup((300, 3600), &[]).await;
    let spec = json!({
        "url": setup.host.url(),
        "token": setup.bob,
        "integration": setup.id,
        "login": "bob",
        "callback": setup.callback(),
    });
    let lines = script_lines("node", "per-user.mjs", &spec, &setup.host).await;
    let line = |key: &str| {
        let found = lines.iter().find_map(|line| line.get(key));
        found
            .cloned()
            .unwrap_or_else(|| panic!("no {key} in {lines:?}"))
    };
    assert_eq!(line("asked")["mode"], "url", "{lines:?}");
    // Told when the sign-in was done, under the question's id.
    assert_eq!(
        line("completed"),
        line("asked")["elicitationId"],
        "{lines:?}"
    );
    assert_eq!(line("page"), 200, "{lines:?}");
    assert_eq!(answered(&line("result")), "bob", "{lines:?}");
    let calls = setup.upstream.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].sub, "bob");
}

#[tokio::test]
async fn a_sign_in_link_opened_by_someone_else_stores_nothing() {
    // The upstream trusts packhost's provider: its `sub` must be the user.
    let mut setup = setup((300, 3600), &["--oauth-same-user"]).await;
    let bob = setup.bob.clone();
    let asked = setup
        .stateless(&bob, "remote_mcp.execute_tool", setup.whoami(), None)
        .await;
    let (_, link, _) = url_question(&asked);
    // Ada opens bob's link and signs in as herself.
    let back = sign_in(&link, "ada", &setup.callback()).await;
    let (status, page) = open(&back).await;
    assert_eq!(status, 403, "{page}\n{}", setup.host.stderr());
    assert!(page.contains("another account"), "{page}");
    // Nothing was stored for bob: he is asked again, signs in himself, and
    // reaches the upstream as bob.
    let again = setup.sign_in_stateless(&bob, "bob").await;
    assert_eq!(answered(&again), "bob", "{again}");
    let calls = setup.upstream.calls();
    assert_eq!(
        calls.iter().map(|c| c.sub.as_str()).collect::<Vec<_>>(),
        ["bob"]
    );
}
