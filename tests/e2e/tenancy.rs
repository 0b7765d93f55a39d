//! Tenancy through the real binary over HTTP: callers of two organisations
//! (`acme`: ada and bob; `evil`: eve), each test run once with static
//! bearer tokens and once with access tokens of a real OpenID provider
//! (`[auth.oauth]`). State belongs to whoever created it: another caller
//! gets exactly what an unknown id gets, and listings and error messages
//! never show the owner's ids. Limits count per owner; `share = "org"` lets
//! one organisation share; a project named for one organisation is unknown
//! to the others; a function outside a caller's allow-list answers as one
//! that does not exist.

use packhost_tests::{
    Recorder, error_code, hello_section,
    http::HttpHost,
    is_error,
    oauth::{self, Provider},
    ok, structured, text,
};
use rmcp::{RoleClient, model::CallToolResult, service::RunningService};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::http::{call, token};

type Client = RunningService<RoleClient, Recorder>;

/// How callers sign in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SignIn {
    /// Static tokens (`[[auth.tokens]]`).
    Tokens,
    /// Access tokens of a real OpenID provider (`[auth.oauth]`).
    OAuth,
}

/// Each test once per way of signing in: `tenancy::<test>::{tokens,oauth}`.
macro_rules! with_each_sign_in {
    ($($test:ident),* $(,)?) => {$(
        mod $test {
            #[tokio::test]
            async fn tokens() {
                super::$test(super::SignIn::Tokens).await
            }

            #[tokio::test]
            async fn oauth() {
                super::$test(super::SignIn::OAuth).await
            }
        }
    )*};
}

with_each_sign_in!(
    jupyter_sessions_of_one_organisation_are_unknown_to_another,
    jupyter_limits_count_per_owner_and_for_the_host,
    exec_ts_notebooks_of_one_organisation_are_unknown_to_another_across_restarts,
    share_org_lets_one_organisation_share_its_sessions,
    a_project_named_for_one_organisation_is_unknown_to_the_others,
    a_function_outside_the_allow_list_answers_as_one_that_does_not_exist,
);

/// A host on `config` and its callers signed in as `sign_in` says.
struct SignedIn {
    host: HttpHost,
    /// The OpenID provider, while the host needs it.
    _provider: Option<Provider>,
    /// Each caller's bearer token, in the order they were asked for.
    tokens: Vec<String>,
}

/// A host on `config` with a bearer token for each of `callers` (user,
/// organisation, the tools they may call; `None`: all). With OAuth a scope
/// per tool pattern grants them: `tool:<pattern>`.
async fn sign_in(
    sign_in: SignIn,
    config: &str,
    callers: &[(&str, &str, Option<&[&str]>)],
) -> SignedIn {
    if sign_in == SignIn::Tokens {
        let mut config = config.to_owned();
        let mut tokens = Vec::new();
        for (user, org, tools) in callers {
            let (token, entry) = token(user, org, tools.unwrap_or_default());
            config = format!("{config}\n{entry}\n");
            tokens.push(token);
        }
        let host = HttpHost::start(&config, &[]).await;
        return SignedIn {
            host,
            _provider: None,
            tokens,
        };
    }
    let scopes_of = |tools: Option<&[&str]>| -> Vec<String> {
        tools.map_or_else(
            || vec!["tool:*".to_owned()],
            |tools| tools.iter().map(|tool| format!("tool:{tool}")).collect(),
        )
    };
    let clients: Vec<oauth::Client> = callers
        .iter()
        .map(|(user, org, tools)| oauth::Client::new(user, org, &scopes_of(*tools).join(" ")))
        .collect();
    let mut scopes: Vec<String> = callers
        .iter()
        .flat_map(|(_, _, tools)| scopes_of(*tools))
        .collect();
    scopes.sort();
    scopes.dedup();
    let table: String = scopes
        .iter()
        .map(|scope| format!("{scope:?} = [{:?}]\n", scope.trim_start_matches("tool:")))
        .collect();
    let provider = Provider::start(
        &clients,
        &scopes.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await;
    let config = format!(
        "{config}\n[auth.oauth]\nissuer = \"{}\"\nresource = \"{{resource}}\"\norg_claim = \"org\"\n\
         [auth.oauth.scopes]\n{table}",
        provider.issuer
    );
    let (host, resource) = oauth::start_host(&config).await;
    let mut tokens = Vec::new();
    for client in &clients {
        tokens.push(provider.token(client, &client.scope, &resource).await);
    }
    SignedIn {
        host,
        _provider: Some(provider),
        tokens,
    }
}

/// A host on `config` with ada and bob of `acme` and eve of `evil` signed
/// in, each allowed every tool.
struct Tenants {
    /// Runs until the test ends.
    _signed_in: SignedIn,
    ada: Client,
    bob: Client,
    eve: Client,
}

impl Tenants {
    async fn start(config: &str, how: SignIn) -> Self {
        let callers = [
            ("ada", "acme", None),
            ("bob", "acme", None),
            ("eve", "evil", None),
        ];
        let signed_in = sign_in(how, config, &callers).await;
        let host = &signed_in.host;
        let [ada, bob, eve] = [0, 1, 2].map(|i| signed_in.tokens[i].clone());
        Self {
            ada: host.client(Some(&ada)).await.expect("connect"),
            bob: host.client(Some(&bob)).await.expect("connect"),
            eve: host.client(Some(&eve)).await.expect("connect"),
            _signed_in: signed_in,
        }
    }
}

fn jupyter(extra: &str) -> String {
    let python = packhost_tests::venv_python();
    format!("[packs.jupyter]\ntimeout_ms = 600000\nconfig = {{ python = {python:?}{extra} }}\n")
}

fn exec_ts(notebooks: &TempDir, extra: &str) -> String {
    format!(
        "[packs.exec_ts]\ntimeout_ms = 600000\nconfig = {{ notebooks_dir = {:?}, pool_size = 0{extra} }}\n",
        notebooks.path().display().to_string()
    )
}

fn id(value: &Value, key: &str) -> String {
    value[key].as_str().expect(key).to_owned()
}

/// `stolen` (a call on someone else's `id`) failed exactly as `unknown`
/// (the same call on `unknown_id`, which nobody has) with `code`, and shows
/// none of `secrets` (the owner's other ids, its data) anywhere.
#[track_caller]
fn as_unknown(
    stolen: &CallToolResult,
    unknown: &CallToolResult,
    id: &str,
    unknown_id: &str,
    code: &str,
    secrets: &[&str],
) {
    assert!(is_error(stolen), "got: {}", text(stolen));
    assert_eq!(error_code(stolen), code, "{}", text(stolen));
    assert_eq!(
        text(stolen).replace(id, unknown_id),
        text(unknown),
        "someone else's id must read as an unknown one"
    );
    assert_eq!(
        structured(stolen).to_string().replace(id, unknown_id),
        structured(unknown).to_string()
    );
    let everything = format!("{stolen:?}");
    for secret in secrets.iter().filter(|s| **s != id) {
        assert!(
            !everything.contains(secret),
            "`{secret}` leaked: {everything}"
        );
    }
}

async fn jupyter_sessions_of_one_organisation_are_unknown_to_another(how: SignIn) {
    let t = Tenants::start(&jupyter(""), how).await;
    let plain = ok(&call(&t.ada, "jupyter.session_create", json!({})).await);
    let notebook = ok(&call(
        &t.ada,
        "jupyter.session_create",
        json!({"notebook_path": "books.ipynb"}),
    )
    .await);
    let session = id(&plain, "session_id");
    let (nb_session, nb_kernel) = (id(&notebook, "session_id"), id(&notebook, "kernel_id"));
    let run = |id: &str, code: &str| json!({"session_id": id, "code": code});
    ok(&call(
        &t.ada,
        "jupyter.execute_code",
        run(&session, "secret = 'acme-secret'"),
    )
    .await);
    let secrets = [
        session.as_str(),
        &nb_session,
        &nb_kernel,
        "acme-secret",
        "books.ipynb",
    ];
    // Eve (another organisation) and bob (another user of acme, `share` is
    // `user` by default) list none of ada's sessions.
    for client in [&t.eve, &t.bob] {
        let listed = ok(&call(client, "jupyter.session_list", json!({})).await);
        assert_eq!(listed["sessions"], json!([]), "{listed}");
    }
    // Every function that takes a session id, by session id and by kernel
    // id: what an id nobody has gets.
    for client in [&t.eve, &t.bob] {
        for id in [&session, &nb_session, &nb_kernel] {
            for (function, args) in [
                ("jupyter.execute_code", run(id, "secret")),
                ("jupyter.interrupt", json!({"session_id": id})),
                ("jupyter.restart", json!({"session_id": id})),
                ("jupyter.session_close", json!({"session_id": id})),
            ] {
                let stolen = call(client, function, args.clone()).await;
                let unknown_args = args.to_string().replace(id.as_str(), "s-unknown");
                let unknown = call(
                    client,
                    function,
                    serde_json::from_str(&unknown_args).unwrap(),
                )
                .await;
                as_unknown(
                    &stolen,
                    &unknown,
                    id,
                    "s-unknown",
                    "SESSION_NOT_FOUND",
                    &secrets,
                );
            }
        }
    }
    // Ada's sessions are as she left them: nothing ran, restarted or closed.
    let out = ok(&call(&t.ada, "jupyter.execute_code", run(&session, "secret")).await);
    assert_eq!(out["result"], "'acme-secret'");
    assert_eq!(out["execution_count"], 2);
    let listed = ok(&call(&t.ada, "jupyter.session_list", json!({})).await);
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 2, "{listed}");
    // Eve's own listing error names only hers.
    let mine = ok(&call(&t.eve, "jupyter.session_create", json!({})).await);
    let unknown = call(&t.eve, "jupyter.execute_code", run(&session, "1")).await;
    assert!(
        text(&unknown).contains(&format!("(your sessions: {})", id(&mine, "session_id"))),
        "{}",
        text(&unknown)
    );
}

async fn jupyter_limits_count_per_owner_and_for_the_host(how: SignIn) {
    let t = Tenants::start(
        &jupyter(", max_sessions = 2, max_sessions_per_owner = 1"),
        how,
    )
    .await;
    let mine = ok(&call(&t.ada, "jupyter.session_create", json!({})).await);
    let mine = id(&mine, "session_id");
    let refused = call(&t.ada, "jupyter.session_create", json!({})).await;
    assert_eq!(error_code(&refused), "LIMIT_EXCEEDED", "{}", text(&refused));
    assert!(
        text(&refused).contains("(`max_sessions_per_owner`)") && text(&refused).contains(&mine),
        "{}",
        text(&refused)
    );
    // Another organisation still has room of its own.
    let theirs = ok(&call(&t.eve, "jupyter.session_create", json!({})).await);
    let theirs = id(&theirs, "session_id");
    // Now the host is full: bob is told so, with no one else's ids.
    let full = call(&t.bob, "jupyter.session_create", json!({})).await;
    assert_eq!(error_code(&full), "LIMIT_EXCEEDED", "{}", text(&full));
    assert!(text(&full).contains("(`max_sessions`)"), "{}", text(&full));
    assert!(
        !text(&full).contains(&mine) && !text(&full).contains(&theirs),
        "{}",
        text(&full)
    );
    ok(&call(
        &t.eve,
        "jupyter.session_close",
        json!({"session_id": theirs}),
    )
    .await);
    ok(&call(&t.bob, "jupyter.session_create", json!({})).await);
}

/// Every `exec_ts` function that takes a session id, on `session`.
fn notebook_calls(session: &str, cell: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("exec_ts.cell_list", json!({"sessionId": session})),
        (
            "exec_ts.cell_create",
            json!({"sessionId": session, "source": "console.log(1)"}),
        ),
        (
            "exec_ts.cell_update",
            json!({"sessionId": session, "cellId": cell, "source": "console.log(2)"}),
        ),
        (
            "exec_ts.cell_execute",
            json!({"sessionId": session, "cellId": cell}),
        ),
        (
            "exec_ts.cell_delete",
            json!({"sessionId": session, "cellId": cell}),
        ),
        ("exec_ts.session_export", json!({"sessionId": session})),
        ("exec_ts.npm_install", json!({"sessionId": session})),
        ("exec_ts.session_delete", json!({"sessionId": session})),
    ]
}

async fn exec_ts_notebooks_of_one_organisation_are_unknown_to_another_across_restarts(how: SignIn) {
    let notebooks = TempDir::new().unwrap();
    let t = Tenants::start(&exec_ts(&notebooks, ""), how).await;
    let created = ok(&call(
        &t.ada,
        "exec_ts.session_create",
        json!({"title": "acme books"}),
    )
    .await);
    let session = id(&created, "sessionId");
    let cell = ok(&call(
        &t.ada,
        "exec_ts.cell_create",
        json!({"sessionId": session, "filename": "books.ts", "source": "console.log('acme-secret')"}),
    )
    .await);
    let cell = id(&cell, "cellId");
    let imported = ok(&call(
        &t.ada,
        "exec_ts.session_import",
        json!({"markdown": "# acme imported\n"}),
    )
    .await);
    let other = id(&imported, "sessionId");
    let secrets = [
        session.as_str(),
        &other,
        &cell,
        "acme-secret",
        "acme books",
        "books.ts",
    ];
    notebook_attacks(&t, &session, &cell, &secrets).await;
    notebook_intact(&t, &session, &cell).await;
    // The owner is on disk: a new host over the same notebooks knows it.
    drop(t);
    let t = Tenants::start(&exec_ts(&notebooks, ""), how).await;
    notebook_attacks(&t, &session, &cell, &secrets).await;
    notebook_intact(&t, &session, &cell).await;
}

/// Eve (another organisation) and bob (another user of acme) list none of
/// ada's notebooks, and every function on ada's `session` answers as for an
/// id nobody has.
async fn notebook_attacks(t: &Tenants, session: &str, cell: &str, secrets: &[&str]) {
    for client in [&t.eve, &t.bob] {
        let listed = ok(&call(client, "exec_ts.session_list", json!({})).await);
        assert_eq!(listed["sessions"], json!([]), "{listed}");
        for ((function, args), (_, unknown)) in notebook_calls(session, cell)
            .into_iter()
            .zip(notebook_calls("s-unknown", cell))
        {
            let stolen = call(client, function, args).await;
            let unknown = call(client, function, unknown).await;
            as_unknown(
                &stolen,
                &unknown,
                session,
                "s-unknown",
                "SESSION_NOT_FOUND",
                secrets,
            );
        }
    }
}

/// Ada's notebook as she left it: its cell, its output, both sessions.
async fn notebook_intact(t: &Tenants, session: &str, cell: &str) {
    let cells = ok(&call(&t.ada, "exec_ts.cell_list", json!({"sessionId": session})).await);
    assert_eq!(cells["cells"].as_array().unwrap().len(), 1, "{cells}");
    let out = ok(&call(
        &t.ada,
        "exec_ts.cell_execute",
        json!({"sessionId": session, "cellId": cell}),
    )
    .await);
    assert_eq!(out["stdout"], "acme-secret\n");
    let listed = ok(&call(&t.ada, "exec_ts.session_list", json!({})).await);
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 2, "{listed}");
}

async fn share_org_lets_one_organisation_share_its_sessions(how: SignIn) {
    let notebooks = TempDir::new().unwrap();
    let config = jupyter(", share = \"org\"") + &exec_ts(&notebooks, ", share = \"org\"");
    let t = Tenants::start(&config, how).await;
    let kernel = ok(&call(&t.ada, "jupyter.session_create", json!({})).await);
    let kernel = id(&kernel, "session_id");
    let run = |code: &str| json!({"session_id": kernel, "code": code});
    ok(&call(&t.ada, "jupyter.execute_code", run("shared = 6 * 7")).await);
    let out = ok(&call(&t.bob, "jupyter.execute_code", run("shared")).await);
    assert_eq!(out["result"], "42");
    let notebook = ok(&call(&t.ada, "exec_ts.session_create", json!({})).await);
    let notebook = id(&notebook, "sessionId");
    ok(&call(
        &t.bob,
        "exec_ts.cell_create",
        json!({"sessionId": notebook, "source": "console.log('by bob')"}),
    )
    .await);
    let listed = ok(&call(&t.bob, "exec_ts.session_list", json!({})).await);
    assert_eq!(listed["sessions"][0]["sessionId"], notebook.as_str());
    // The organisation, and only it.
    let stolen = call(&t.eve, "jupyter.execute_code", run("shared")).await;
    assert_eq!(
        error_code(&stolen),
        "SESSION_NOT_FOUND",
        "{}",
        text(&stolen)
    );
    let stolen = call(&t.eve, "exec_ts.cell_list", json!({"sessionId": notebook})).await;
    assert_eq!(
        error_code(&stolen),
        "SESSION_NOT_FOUND",
        "{}",
        text(&stolen)
    );
    for function in ["jupyter.session_list", "exec_ts.session_list"] {
        let listed = ok(&call(&t.eve, function, json!({})).await);
        assert_eq!(listed["sessions"], json!([]), "{function}: {listed}");
    }
}

async fn a_project_named_for_one_organisation_is_unknown_to_the_others(how: SignIn) {
    let (open, books) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    std::fs::write(books.path().join("ledger.txt"), "acme-secret\n").unwrap();
    let config = format!(
        "[packs.proj]\n{}\n[projects]\nopen = {:?}\nbooks = {{ path = {:?}, orgs = [\"acme\"] }}\n",
        hello_section(""),
        open.path().display().to_string(),
        books.path().display().to_string(),
    );
    let t = Tenants::start(&config, how).await;
    let names = |list: &Value| -> Vec<String> {
        let projects = list["projects"].as_array().unwrap().iter();
        projects
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let listed = ok(&call(&t.ada, "proj.list", json!({})).await);
    assert_eq!(names(&listed), ["books", "open"]);
    let listed = ok(&call(&t.eve, "proj.list", json!({})).await);
    assert_eq!(names(&listed), ["open"]);
    let read = json!({"name": "books", "path": "ledger.txt"});
    let out = ok(&call(&t.ada, "proj.read", read).await);
    assert_eq!(out["content"], "acme-secret\n");
    let books_path = books.path().display().to_string();
    let secrets = ["acme-secret", books_path.as_str()];
    for (function, args) in [
        ("proj.read", json!({"name": "books", "path": "ledger.txt"})),
        ("proj.path", json!({"name": "books"})),
        ("proj.ls", json!({"name": "books"})),
        ("proj.grep", json!({"name": "books", "pattern": "acme"})),
    ] {
        let stolen = call(&t.eve, function, args.clone()).await;
        let unknown = args.to_string().replace("\"books\"", "\"nope\"");
        let unknown = call(&t.eve, function, serde_json::from_str(&unknown).unwrap()).await;
        as_unknown(&stolen, &unknown, "books", "nope", "NOT_FOUND", &secrets);
    }
    // Code mode's catalog (what `proj.<project>` in Python is made from).
    let catalog = ok(&call(&t.eve, "hello.catalog", json!({})).await);
    assert_eq!(
        catalog["projects"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["open"]
    );
    let catalog = ok(&call(&t.ada, "hello.catalog", json!({})).await);
    assert_eq!(
        catalog["projects"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["books", "open"]
    );
}

/// `result` as one string to compare: the whole answer (text, structured
/// content, `_meta`) without the time a run of code took.
fn answer(result: &CallToolResult) -> String {
    fn untimed(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("execution_time_ms");
                map.values_mut().for_each(untimed);
            }
            Value::Array(items) => items.iter_mut().for_each(untimed),
            Value::String(text) if text.contains("execution_time_ms") => {
                let lines = text.lines().filter(|l| !l.contains("execution_time_ms"));
                *text = lines.collect::<Vec<_>>().join("\n");
            }
            _ => {}
        }
    }
    let mut value = serde_json::to_value(result).expect("a result is JSON");
    untimed(&mut value);
    value.to_string()
}

/// Identifiers of `text` (runs of letters, digits and `_`) with where
/// each starts.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    fn is_word(c: char) -> bool {
        c.is_ascii_alphanumeric() || c == '_'
    }
    text.char_indices()
        .filter(move |&(at, c)| is_word(c) && !text[..at].ends_with(is_word))
        .map(move |(at, _)| {
            let end = text[at..]
                .find(|c| !is_word(c))
                .map_or(text.len(), |n| at + n);
            (at, &text[at..end])
        })
}

/// `text` with every whole word `from` written `to`.
fn rename(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (at, word) in words(text).filter(|(_, word)| *word == from) {
        out.push_str(&text[copied..at]);
        out.push_str(to);
        copied = at + word.len();
    }
    out.push_str(&text[copied..]);
    out
}

/// Every door (`tools/call`, `run`, Python, a pack calling back, describe)
/// answers a name outside the token's list byte for byte as one that exists
/// nowhere, but for the name asked, and names nothing outside the list.
async fn a_function_outside_the_allow_list_answers_as_one_that_does_not_exist(how: SignIn) {
    // Eve may call `run`, `exec_py.run` and three `hello` functions (`hi` is
    // an alias to one), not `proj`, `pl` (an alias to it) or `hello.whoami`;
    // bob the same without `exec_py.run` (so `pl()` is no call of Python's).
    let config = format!(
        "[packs.proj]\n[packs.exec_py]\n{}[aliases]\npl = \"proj.list\"\nhi = \"hello.greet\"\n\
         [snippets.listing]\nbody = \"proj.list()\"\n\
         [snippets.greeting]\nbody = \"hello.greet({{{{ who | tojson }}}})\"\n\
         [snippets.greeting.params]\nwho = {{ description = \"whom\" }}\n\
         [projects]\nhere = \".\"\n",
        hello_section("")
    );
    let allowed = ["run", "hello.greet", "hello.echo", "hello.call"];
    let with_python = [&allowed[..], &["exec_py.run"]].concat();
    let callers = [
        ("eve", "acme", Some(&with_python[..])),
        ("bob", "acme", Some(&allowed[..])),
    ];
    let signed_in = sign_in(how, &config, &callers).await;
    let host = &signed_in.host;
    let (eve_token, bob_token) = (&signed_in.tokens[0], &signed_in.tokens[1]);
    let eve = host.client(Some(eve_token)).await.expect("connect");
    let bob = host.client(Some(bob_token)).await.expect("connect");
    let tool = |name: &str| (name.to_owned(), json!({}));
    let run = |command: &str| ("run".to_owned(), json!({ "command": command }));
    let python = |code: &str| ("exec_py.run".to_owned(), json!({ "code": code }));
    let nested = |name: &str| ("hello.call".to_owned(), json!({ "tool": name }));
    let describe = |name: &str| ("packhost.describe".to_owned(), json!({ "name": name }));
    // (asked of a hidden name, the same of one that exists nowhere, the
    // hidden word, the unknown word in its place)
    let cases = [
        (tool("proj.lst"), tool("zzzz.lst"), "proj", "zzzz"),
        (tool("hello.whoam"), tool("hello.qqqqq"), "whoam", "qqqqq"),
        (
            tool("hello.whoami"),
            tool("hello.qqqqqq"),
            "whoami",
            "qqqqqq",
        ),
        (tool("pl"), tool("pm"), "pl", "pm"),
        (run("proj.lst()"), run("zzzz.lst()"), "proj", "zzzz"),
        (run("proj.list()"), run("qqqq.list()"), "proj", "qqqq"),
        (
            run("proj.read(1, 2, 3, 4, 5)"),
            run("zzzz.read(1, 2, 3, 4, 5)"),
            "proj",
            "zzzz",
        ),
        (
            run("hello.whoami(1, 2, 3, 4, 5)"),
            run("hello.qqqqqq(1, 2, 3, 4, 5)"),
            "whoami",
            "qqqqqq",
        ),
        (run("pl()"), run("pm()"), "pl", "pm"),
        // A snippet that calls a hidden function is no snippet of theirs.
        (run("$listing"), run("$zzzzzzz"), "listing", "zzzzzzz"),
        (python("proj.lst()"), python("zzzz.lst()"), "proj", "zzzz"),
        (
            python("hello.whoami(1, 2, 3, 4, 5)"),
            python("hello.qqqqqq(1, 2, 3, 4, 5)"),
            "whoami",
            "qqqqqq",
        ),
        (python("pl()"), python("pm()"), "pl", "pm"),
        (nested("proj.lst"), nested("zzzz.lst"), "proj", "zzzz"),
        (
            nested("hello.whoami"),
            nested("hello.qqqqqq"),
            "whoami",
            "qqqqqq",
        ),
        (nested("pl"), nested("pm"), "pl", "pm"),
        (describe("proj.lst"), describe("zzzz.lst"), "proj", "zzzz"),
        (describe("pl"), describe("pm"), "pl", "pm"),
    ];
    // Hidden names as the host writes names: whole words, and `list` (an
    // English word too, in describe's help) where it names a function.
    let hidden_words = [
        "proj", "whoami", "pl", "read", "path", "ls", "grep", "listing",
    ];
    let hidden_list = ["`list`", "list,", ", list", "has: list", ".list"];
    let mut leaks = Vec::new();
    let each = [("eve", &eve), ("bob", &bob)]
        .into_iter()
        .flat_map(|who| cases.iter().map(move |case| (who, case)));
    for ((who, client), ((name, args), (unknown_name, unknown_args), hidden, stand_in)) in each {
        let asked = format!("{who}: {name} {args}");
        if how == SignIn::OAuth && who == "bob" && name == "exec_py.run" {
            // Another caller's scope allows `exec_py.run`: bob is told to
            // step up (403, below), the same whatever the code.
            continue;
        }
        let hidden_answer = call(client, name, args.clone()).await;
        let unknown_answer = call(client, unknown_name, unknown_args.clone()).await;
        assert!(
            is_error(&hidden_answer),
            "{asked}: {}",
            text(&hidden_answer)
        );
        let (masked, unknown) = (
            rename(&answer(&hidden_answer), hidden, stand_in),
            answer(&unknown_answer),
        );
        if masked != unknown {
            leaks.push(format!("{asked}\n  answers {masked}\n  not as {unknown}"));
        }
        let named: Vec<&str> = words(&unknown)
            .map(|(_, word)| word)
            .filter(|word| hidden_words.contains(word))
            .chain(
                hidden_list
                    .into_iter()
                    .filter(|name| unknown.contains(name)),
            )
            .collect();
        if !named.is_empty() {
            leaks.push(format!("{asked}: the answer names {named:?}: {unknown}"));
        }
    }
    // `run`'s description lists the snippets they may use, and only those.
    for client in [&eve, &bob] {
        let tools = client.list_all_tools().await.unwrap();
        let run = tools.iter().find(|t| t.name == "run").unwrap();
        let description = run.description.as_deref().unwrap_or_default();
        assert!(description.contains("$greeting"), "{description}");
        assert!(!description.contains("$listing"), "{description}");
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n\n"));
    if how == SignIn::OAuth {
        for code in ["proj.lst()", "zzzz.lst()"] {
            let params = json!({"name": "exec_py.run", "arguments": {"code": code},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {}}});
            let answer = host.stateless_call(Some(bob_token), &params).await;
            assert_eq!(
                answer[0]["error"]["message"],
                "this call needs scope `tool:exec_py.run`: ask the authorization server for it",
                "{code}: {answer:?}"
            );
        }
    }
}
