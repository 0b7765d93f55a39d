//! `[auth.oauth]` against a real OpenID provider (oidc-provider, started by
//! the tests on loopback): discovery from the protected resource metadata,
//! the official TypeScript SDK's OAuth flows, the tokens refused (and
//! nothing run for them), key rotation, scopes as allow-lists, sessions
//! bound to the user, and `packhost check`. The tenancy attacks run with
//! OAuth identities too (`tenancy::<test>::oauth`).

use std::time::Duration;

use packhost_tests::{
    error_code, hello_section,
    http::{Events, HttpHost, RawSession, web_client},
    is_error,
    oauth::{Client, Provider, now, start_host},
    official::script_lines,
    packhost_cli, structured, text,
};
use serde_json::{Value, json};

const EVERY_SCOPE: &str = "tools:hello tools:run tools:code";
const SCOPES: [&str; 3] = ["tools:hello", "tools:run", "tools:code"];

fn ada() -> Client {
    Client::new("ada", "acme", EVERY_SCOPE)
}

fn eve() -> Client {
    Client::new("eve", "evil", EVERY_SCOPE)
}

/// The provider, and a host that accepts its tokens for its own resource.
/// Ada may also sign in as a user at its pages.
async fn start(packs: &str) -> (Provider, HttpHost, String) {
    start_with(packs, "").await
}

/// [`start`] with `oauth` lines added to `[auth.oauth]`.
async fn start_with(packs: &str, oauth: &str) -> (Provider, HttpHost, String) {
    let provider = Provider::start_with_users(&[ada(), eve()], &[("ada", "acme")], &SCOPES).await;
    let config = format!(
        "{packs}\n[auth.oauth]\nissuer = \"{}\"\nresource = \"{{resource}}\"\norg_claim = \"org\"\n\
         leeway_secs = 5\njwks_refetch_secs = 1\n{oauth}\n\
         [auth.oauth.scopes]\n\"tools:hello\" = [\"hello.*\"]\n\"tools:run\" = [\"run\"]\n\
         \"tools:code\" = [\"exec_py.*\", \"exec_ts.*\"]\n",
        provider.issuer
    );
    let (host, resource) = start_host(&config).await;
    (provider, host, resource)
}

/// A `tools/call` of `name` with `arguments` as bearer `token` (if any):
/// the HTTP status, the `WWW-Authenticate` header and the body.
async fn raw_call(
    host: &HttpHost,
    token: Option<&str>,
    name: &str,
    arguments: Value,
) -> (u16, String, String) {
    let params = json!({"name": name, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}});
    let response = host
        .stateless_request(token, &params)
        .send()
        .await
        .expect("POST");
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, challenge, response.text().await.unwrap_or_default())
}

/// The JSON-RPC result of a `tools/call` body (JSON or one SSE event).
fn result_of(body: &str) -> Value {
    let message = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| !data.is_empty())
        .unwrap_or(body);
    let message: Value = serde_json::from_str(message).unwrap_or_else(|_| panic!("{body}"));
    message["result"].clone()
}

/// Claims the provider's tokens for `resource` carry, for `client`.
fn claims(provider: &Provider, resource: &str, client: &Client) -> Value {
    let now = now();
    json!({"iss": provider.issuer, "aud": resource, "sub": client.client_id, "org": client.org,
        "client_id": client.client_id, "scope": client.scope, "iat": now - 10, "exp": now + 300,
        "jti": format!("forged-{now}")})
}

#[tokio::test]
async fn the_sdk_client_discovers_the_provider_from_the_metadata_signs_in_and_runs() {
    let (provider, host, resource) = start(&hello_section("")).await;
    // Without a token: 401 pointing at the metadata, which names the provider.
    let (status, challenge, _) = raw_call(&host, None, "run", json!({"command": "1"})).await;
    let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", host.base);
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );
    for url in [
        metadata_url.clone(),
        format!("{}/.well-known/oauth-protected-resource", host.base),
    ] {
        let metadata: Value = serde_json::from_str(
            &web_client()
                .get(&url)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap(),
        )
        .unwrap();
        assert_eq!(metadata["resource"], resource, "{url}");
        assert_eq!(metadata["authorization_servers"], json!([provider.issuer]));
        assert_eq!(
            metadata["scopes_supported"],
            json!(["tools:code", "tools:hello", "tools:run"])
        );
    }
    // The official SDK client follows it to the provider and back: as a
    // desktop client (ada signs in and consents at the provider's pages)
    // and as a script (eve's client credentials).
    let flows = [
        (
            json!({"flow": "authorization_code", "login": "ada"}),
            ("ada", "acme"),
        ),
        (
            json!({"flow": "client_credentials", "client_id": "eve",
                "client_secret": eve().secret(), "scope": EVERY_SCOPE}),
            ("eve", "evil"),
        ),
    ];
    for (flow, (user, org)) in flows {
        let mut spec = json!({"url": host.url(), "issuer": provider.issuer,
            "command": "hello.whoami()"});
        spec.as_object_mut()
            .unwrap()
            .extend(flow.as_object().unwrap().clone());
        let lines = sdk_client(&spec, &host).await;
        let discovered = &lines[0]["discovered"];
        assert_eq!(
            discovered["authorizationServerUrl"], provider.issuer,
            "{lines:?}"
        );
        assert_eq!(discovered["issuer"], provider.issuer);
        assert_eq!(discovered["resourceMetadata"]["resource"], resource);
        let claims = &lines[1]["claims"];
        assert_eq!(
            claims["aud"], resource,
            "the token is bound to packhost: {flow}"
        );
        assert_eq!(claims["iss"], provider.issuer);
        assert_eq!(claims["sub"], user);
        let result = &lines[2]["result"];
        assert_ne!(result["isError"], true, "{result}");
        assert_eq!(
            (
                &result["structuredContent"]["user"],
                &result["structuredContent"]["org"]
            ),
            (&json!(user), &json!(org)),
            "{flow}: {result}"
        );
    }
}

/// The lines `tests/official-clients/oauth.mjs` prints for `spec`.
async fn sdk_client(spec: &Value, host: &HttpHost) -> Vec<Value> {
    assert!(
        std::env::var_os("PACKHOST_TEST_MCP_SDK").is_some(),
        "PACKHOST_TEST_MCP_SDK is not set: run the tests with `./dev test`, which installs the SDK"
    );
    script_lines("node", "oauth.mjs", spec, host).await
}

#[tokio::test]
async fn tokens_that_are_not_valid_here_are_refused_with_the_challenge_and_run_nothing() {
    let (provider, host, resource) = start(&hello_section("")).await;
    let good = claims(&provider, &resource, &ada());
    let with = |changes: Value| {
        let mut claims = good.clone();
        for (key, value) in changes.as_object().unwrap() {
            claims[key] = value.clone();
        }
        claims
    };
    let now = now();
    // The provider's key signs these as it signs its own: each differs from
    // a valid token in one thing only.
    // (what the token is, why the log says it is refused, the token)
    let signed = [
        (
            "expired",
            "it has expired",
            with(json!({"iat": now - 900, "exp": now - 60})),
        ),
        (
            "not yet valid",
            "it is not valid yet",
            with(json!({"nbf": now + 60})),
        ),
        (
            "of another audience",
            "its audience is not this resource",
            with(json!({"aud": "http://127.0.0.1:1/mcp"})),
        ),
        (
            "of another issuer",
            "it was issued by another issuer",
            with(json!({"iss": "http://127.0.0.1:1"})),
        ),
    ];
    let mut refused = Vec::new();
    for (what, why, claims) in signed {
        refused.push((
            what,
            why,
            provider.forge(json!({}), claims, "provider").await,
        ));
    }
    for (what, why, sign) in [
        (
            "with a bad signature",
            "its signature does not verify",
            "foreign",
        ),
        (
            "unsigned (alg none)",
            "its header names no algorithm packhost knows",
            "none",
        ),
        (
            "HMAC keyed with the public key",
            "signed with HS256, which `auth.oauth.algorithms` does not accept",
            "public-as-hmac",
        ),
    ] {
        refused.push((
            what,
            why,
            provider.forge(json!({}), good.clone(), sign).await,
        ));
    }
    refused.push((
        "for another resource",
        "its audience is not this resource",
        provider
            .token(&ada(), EVERY_SCOPE, "http://127.0.0.1:1/mcp")
            .await,
    ));
    refused.push(("not a JWT", "not a JWT", "ph_not-a-jwt".to_owned()));
    let metadata = format!(
        "resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
        host.base
    );
    for (what, why, token) in &refused {
        let logged = host.stderr().len();
        let (status, challenge, body) =
            raw_call(&host, Some(token), "hello.whoami", json!({})).await;
        assert_eq!(status, 401, "a token {what}: {body}");
        assert!(
            challenge.starts_with("Bearer ") && challenge.contains(&metadata),
            "a token {what}: {challenge}"
        );
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "a token {what}: {challenge}"
        );
        assert!(
            !body.contains(token.as_str()),
            "a token {what}: the answer holds it"
        );
        // Refused for that reason (logged before the answer is sent).
        let log = host.stderr();
        assert!(
            log[logged..].contains(&format!("refused an access token: {why}")),
            "a token {what}: {}",
            &log[logged..]
        );
    }
    // Nothing ran for them: the organisation's figures count no call until
    // a valid token's, which the same forging signs (so each refusal above
    // is for the one thing it changed).
    let valid = provider.forge(json!({}), good.clone(), "provider").await;
    let calls = |metrics: &str| metrics.contains("packhost_calls_total{tool=\"hello.whoami\"");
    assert!(
        !calls(&host.metrics(Some(&valid)).await),
        "a refused token ran a call"
    );
    let (status, _, body) = raw_call(&host, Some(&valid), "hello.whoami", json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        result_of(&body)["structuredContent"]["org"],
        "acme",
        "{body}"
    );
    assert!(calls(&host.metrics(Some(&valid)).await));
    let issued = provider.token(&ada(), EVERY_SCOPE, &resource).await;
    let (status, _, body) = raw_call(&host, Some(&issued), "hello.whoami", json!({})).await;
    assert_eq!(status, 200, "the provider's own token: {body}");
    // Why goes to the log, never a token.
    let log = host.stderr();
    for (what, _, token) in refused.iter().chain([&("valid", "", valid)]) {
        let signature = token.rsplit('.').next().unwrap_or(token);
        assert!(
            signature.len() < 8 || !log.contains(signature),
            "the log holds the token {what}"
        );
    }
}

#[tokio::test]
async fn a_key_rotation_at_the_provider_is_followed_without_restart() {
    let (provider, host, resource) = start(&hello_section("")).await;
    let whoami = |token: String| {
        let host = &host;
        async move {
            raw_call(host, Some(&token), "hello.whoami", json!({}))
                .await
                .0
        }
    };
    let first = provider.token(&ada(), EVERY_SCOPE, &resource).await;
    assert_eq!(whoami(first.clone()).await, 200);
    // Past `jwks_refetch_secs`, so an unknown key may fetch the keys again.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    provider.rotate(true).await;
    let second = provider.token(&ada(), EVERY_SCOPE, &resource).await;
    assert_ne!(header(&first), header(&second), "signed by another key");
    assert_eq!(whoami(second.clone()).await, 200, "a new key is fetched");
    assert_eq!(
        whoami(first.clone()).await,
        200,
        "the old key is still published"
    );
    tokio::time::sleep(Duration::from_millis(1200)).await;
    provider.rotate(false).await;
    let third = provider.token(&ada(), EVERY_SCOPE, &resource).await;
    assert_eq!(whoami(third).await, 200, "the newest key is fetched");
    assert_eq!(
        whoami(first).await,
        401,
        "a key no longer published is refused"
    );
    assert_eq!(whoami(second).await, 401);
}

#[tokio::test]
async fn a_key_the_provider_stops_publishing_is_dropped_on_schedule() {
    let (provider, host, resource) = start_with(&hello_section(""), "jwks_refresh_secs = 1").await;
    let token = provider.token(&ada(), EVERY_SCOPE, &resource).await;
    let whoami = || raw_call(&host, Some(&token), "hello.whoami", json!({}));
    assert_eq!(whoami().await.0, 200);
    provider.rotate(false).await;
    // No token names the new key: only the schedule fetches the keys again.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (status, _, body) = whoami().await;
    assert_eq!(status, 401, "{body}");
    assert!(
        host.stderr()
            .contains("refused an access token: it is signed by a key the issuer does not publish"),
        "{}",
        host.stderr()
    );
}

/// A token's header, as sent (base64url): it names the key.
fn header(token: &str) -> &str {
    token.split('.').next().unwrap_or_default()
}

#[tokio::test]
async fn a_scope_that_does_not_allow_a_tool_refuses_it_from_every_path() {
    let notebooks = tempfile::TempDir::new().unwrap();
    let packs = format!(
        "[packs.exec_py]\n[packs.exec_ts]\nconfig = {{ notebooks_dir = {:?}, pool_size = 0 }}\n{}",
        notebooks.path().display().to_string(),
        hello_section("")
    );
    let (provider, host, resource) = start(&packs).await;
    let all = provider.token(&ada(), EVERY_SCOPE, &resource).await;
    let no_hello = provider
        .token(&ada(), "tools:run tools:code", &resource)
        .await;
    let hello_only = provider.token(&ada(), "tools:hello", &resource).await;
    let whoami = json!({});
    let run = json!({"command": "hello.whoami()"});
    let python = json!({"code": "print(hello.whoami()['org'])"});
    let typescript = json!({"code": "(await hello.whoami()).org"});
    // With the scope each path reaches the tool.
    for (tool, arguments) in [
        ("hello.whoami", &whoami),
        ("run", &run),
        ("exec_py.run", &python),
        ("exec_ts.execute", &typescript),
    ] {
        let (status, _, body) = raw_call(&host, Some(&all), tool, arguments.clone()).await;
        assert_eq!(status, 200, "{tool}: {body}");
        let result = result_of(&body);
        assert_ne!(result["isError"], true, "{tool}: {result}");
        assert!(result.to_string().contains("acme"), "{tool}: {result}");
    }
    // Without it, from `run`, Python and TypeScript the allow-list refuses
    // it as a pack that does not exist, as for a static token's allow-list.
    for (tool, arguments) in [
        ("run", &run),
        ("exec_py.run", &python),
        ("exec_ts.execute", &typescript),
    ] {
        let (status, _, body) = raw_call(&host, Some(&no_hello), tool, arguments.clone()).await;
        assert_eq!(status, 200, "{tool}: {body}");
        let result = result_of(&body);
        assert_eq!(result["isError"], true, "{tool}: {result}");
        assert!(!result.to_string().contains("acme"), "{tool}: {result}");
        assert!(result.to_string().contains("hello"), "{tool}: {result}");
    }
    let (_, _, body) = raw_call(&host, Some(&no_hello), "run", run.clone()).await;
    let (_, _, unknown) = raw_call(
        &host,
        Some(&no_hello),
        "run",
        json!({"command": "qqqqq.whoami()"}),
    )
    .await;
    assert_eq!(
        text_of(&body).replace("hello", "qqqqq"),
        text_of(&unknown),
        "the refusal reveals nothing an unknown pack's would not"
    );
    // A direct call is answered 403, naming the scope to add.
    let (status, challenge, _) = raw_call(&host, Some(&no_hello), "hello.whoami", whoami).await;
    assert_eq!(status, 403);
    assert_eq!(
        challenge,
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"tools:code tools:hello tools:run\", \
             resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", \
             error_description=\"this call needs scope tools:hello\"",
            host.base
        )
    );
    // `run` itself needs its scope.
    let (status, challenge, _) = raw_call(&host, Some(&hello_only), "run", run).await;
    assert_eq!(status, 403);
    assert!(
        challenge.contains("scope=\"tools:hello tools:run\""),
        "{challenge}"
    );
    // A tool no scope allows is refused as one that does not exist.
    let (status, _, body) = raw_call(&host, Some(&hello_only), "nosuch.tool", json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(result_of(&body)["isError"], true);
}

/// The text of a `tools/call` body's result.
fn text_of(body: &str) -> String {
    result_of(body)["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn the_organisation_of_a_token_is_its_own() {
    let (provider, host, resource) = start(&hello_section("")).await;
    let eve = provider.token(&eve(), EVERY_SCOPE, &resource).await;
    let client = host.client(Some(&eve)).await.expect("connect");
    let who = packhost_tests::call(&client, "hello.whoami", json!({}))
        .await
        .expect("tools/call");
    assert!(!is_error(&who), "{}", text(&who));
    assert_eq!(structured(&who)["org"], "evil");
    assert_eq!(structured(&who)["user"], "eve");
    let nested = packhost_tests::call(&client, "hello.call", json!({"tool": "hello.whoami"}))
        .await
        .expect("tools/call");
    assert_eq!(
        structured(&nested)["result"]["org"],
        "evil",
        "{}",
        error_code(&nested)
    );
}

#[tokio::test]
async fn check_names_what_is_wrong_with_the_section_and_the_issuer() {
    let section = |issuer: &str, extra: &str| {
        format!(
            "[auth.oauth]\nissuer = \"{issuer}\"\nresource = \"https://mcp.example.com/mcp\"\n{extra}"
        )
    };
    let check = |config: String| async move {
        let output = tokio::task::spawn_blocking(move || packhost_cli(&config, &["check"]))
            .await
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.code(), said)
    };
    let (code, said) = check(section(
        "http://login.example.com",
        "algorithms = [\"HS256\"]\n",
    ))
    .await;
    assert_eq!(code, Some(2), "{said}");
    for expected in [
        "`auth.oauth.issuer` = \"http://login.example.com\": must be `https`",
        "\"HS256\": HMAC is never accepted",
        "`auth.oauth` says nothing of the organisation",
    ] {
        assert!(said.contains(expected), "missing {expected:?} in:\n{said}");
    }
    let provider = Provider::start(&[ada()], &SCOPES).await;
    let (code, said) = check(section(&provider.issuer, "org = \"acme\"\n")).await;
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains(&format!(
            "ok    [auth.oauth] issuer {}: 1 signing key to check tokens for \
             https://mcp.example.com/mcp",
            provider.issuer
        )),
        "{said}"
    );
    // Its metadata names the issuer without the slash: a mix-up.
    let (code, said) = check(section(
        &format!("{}/", provider.issuer),
        "org = \"acme\"\n",
    ))
    .await;
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "is of issuer \"{}\", not `auth.oauth.issuer`",
            provider.issuer
        )),
        "{said}"
    );
    drop(provider);
    let (code, said) = check(section("http://127.0.0.1:1", "org = \"acme\"\n")).await;
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("error [auth.oauth] no metadata for issuer \"http://127.0.0.1:1\""),
        "{said}"
    );
}

#[tokio::test]
async fn a_session_belongs_to_its_user_across_their_tokens_and_to_no_one_else() {
    let (provider, host, resource) = start(&hello_section("")).await;
    let first = provider.token(&ada(), EVERY_SCOPE, &resource).await;
    let session = host.open_session(Some(&first), json!({})).await;
    let whoami = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "hello.whoami", "arguments": {}}});
    // A new token of the same user (a client refreshed it) keeps the session.
    let refreshed = provider.token(&ada(), "tools:hello", &resource).await;
    assert_ne!(first, refreshed);
    let response = session
        .post(Some(&refreshed), &whoami)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer = Events::of(response).response(&json!(1)).await;
    assert_eq!(
        answer["result"]["structuredContent"]["user"], "ada",
        "{answer}"
    );
    // Another user's valid token finds no such session.
    let eve = provider.token(&eve(), EVERY_SCOPE, &resource).await;
    let stolen = session.post(Some(&eve), &whoami).send().await.unwrap();
    let unknown = RawSession::named("no-such-session", &host)
        .post(Some(&eve), &whoami)
        .send()
        .await
        .unwrap();
    assert_eq!(stolen.status(), 404);
    assert_eq!(unknown.status(), 404);
    assert_eq!(stolen.text().await.unwrap(), unknown.text().await.unwrap());
}
