//! Several instances behind a load balancer, as `deploy/` sets them up:
//! three packhosts behind a real HAProxy (round robin, no stickiness), one
//! PostgreSQL. What one instance keeps, any other answers for, to its owner
//! only; an answer used through one instance is refused by all, and an
//! approval remembered through one holds on all; a Jupyter or notebook
//! session made through one is used and changed through the others; an
//! instance that dies is routed around. Another organisation's caller, with
//! a valid token of its own, gets through the proxy and from each instance
//! what an unknown id gets, and one organisation's flood of kept results
//! pushes out only its own.

use packhost_tests::{
    Recorder, build_dir, call,
    downstream::postgres_database,
    error_of,
    http::{HttpHost, token, web_client},
    instances::{Instances, haproxy_installed},
    is_error, ok, structured, text, venv_python,
};
use rmcp::{RoleClient, service::RunningService};
use serde_json::{Value, json};
use tempfile::TempDir;

type Client = RunningService<RoleClient, Recorder>;

/// Three instances, a project holding a log of ~130 kB, results past 2,000
/// characters kept (with `results`, more lines of `[results]`), `proj.ls`
/// asked about first, and callers `ada` (acme) and `eve` (evil); `extra` is
/// added to the config.
fn start_with(results: &str, extra: &str) -> Option<(Instances, TempDir, [String; 2])> {
    let (config, database, project, tokens) = set_up(results, extra)?;
    Some((Instances::start(&config, &database), project, tokens))
}

/// What [`start_with`] starts: the config, the database, the project and
/// the tokens.
fn set_up(results: &str, extra: &str) -> Option<(String, String, TempDir, [String; 2])> {
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
        "[http]\nsessions = false\nshutdown_grace_secs = 1\n[results]\nmax_result_chars = 2000\n{results}\n[packs.proj]\n\
         [projects]\nlogs = {:?}\n[approval.listing]\ncalls = [\"proj.ls\"]\nremember = \"30m\"\n{ada}\n{eve}\n{extra}\n",
        project.path().display().to_string()
    );
    let config = config.replace("{database}", &database);
    Some((config, database, project, [ada_token, eve_token]))
}

fn start() -> Option<(Instances, TempDir, [String; 2])> {
    start_with("", "")
}

#[tokio::test]
async fn a_kept_result_is_read_through_every_instance_by_its_owner() {
    let Some((instances, _project, [ada_token, _])) = start() else {
        return;
    };
    let ada = instances.client(Some(&ada_token)).await.unwrap();
    let handle = kept_read(&ada, 3000).await;
    // Round robin: six reads reach each instance twice.
    for _ in 0..6 {
        let page = call(&ada, "packhost.result_read", json!({"handle": handle}));
        let page = ok(&page.await.unwrap());
        assert!(
            page["text"].as_str().unwrap().contains("line 1 INFO"),
            "{page}"
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

/// POST a 2026-07-28 `tools/call` with `params` to `url` as `token`'s
/// caller: the JSON-RPC response.
async fn post(url: &str, token: &str, params: &Value) -> Value {
    send(url, token, "tools/call", params).await
}

/// POST a 2026-07-28 request `method` with `params` to `url` as `token`'s
/// caller: the JSON-RPC response.
async fn send(url: &str, token: &str, method: &str, params: &Value) -> Value {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut post = web_client()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
        post = post.header("mcp-name", name);
    }
    post.json(&request)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The params of a 2026-07-28 `proj.ls` of the project, which is asked
/// about first; `retry`: the answers and state of a retry.
fn ls(retry: Option<(Value, &str)>) -> Value {
    let capabilities = json!({"elicitation": {}});
    HttpHost::stateless_params("proj.ls", json!({"name": "logs"}), capabilities, retry)
}

/// The key of the question `reply` asks, and its state.
fn asked(reply: &Value) -> (String, String) {
    let result = &reply["result"];
    assert_eq!(result["resultType"], "input_required", "{reply}");
    let questions = result["inputRequests"].as_object().unwrap();
    let key = questions.keys().next().unwrap().to_owned();
    (key, result["requestState"].as_str().unwrap().to_owned())
}

/// "Yes" to approval question `key`, to be remembered when `remember`.
fn yes(key: &str, remember: bool) -> Value {
    let content = json!({"decision": "accept", "remember": remember});
    json!({ key: {"action": "accept", "content": content} })
}

#[tokio::test]
async fn an_answer_used_through_one_instance_is_refused_by_the_others() {
    let Some((instances, _project, [ada_token, _])) = start() else {
        return;
    };
    let one = instances.instance_url(1);
    let (key, state) = asked(&post(&one, &ada_token, &ls(None)).await);
    let retry = ls(Some((yes(&key, false), &state)));
    let done = post(&one, &ada_token, &retry).await;
    assert!(done["result"]["structuredContent"].is_object(), "{done}");
    // The same retry replayed on each instance: no second listing.
    for n in 1..=3 {
        let replayed = post(&instances.instance_url(n), &ada_token, &retry).await;
        assert_eq!(
            replayed["error"]["code"], -32602,
            "instance {n}: {replayed}"
        );
        let message = replayed["error"]["message"].as_str().unwrap();
        assert!(message.contains("used already"), "instance {n}: {message}");
    }
}

#[tokio::test]
async fn an_approval_remembered_through_one_instance_holds_on_the_others() {
    let Some((instances, _project, [ada_token, eve_token])) = start() else {
        return;
    };
    let one = instances.instance_url(1);
    let (key, state) = asked(&post(&one, &ada_token, &ls(None)).await);
    let done = post(&one, &ada_token, &ls(Some((yes(&key, true), &state)))).await;
    assert!(done["result"]["structuredContent"].is_object(), "{done}");
    for n in 2..=3 {
        let url = instances.instance_url(n);
        let listed = post(&url, &ada_token, &ls(None)).await;
        let listing = &listed["result"]["structuredContent"]["entries"];
        assert!(listing.is_array(), "instance {n} asked again: {listed}");
        // Another organisation's caller is still asked.
        let theirs = post(&url, &eve_token, &ls(None)).await;
        assert_eq!(theirs["result"]["resultType"], "input_required", "{theirs}");
    }
}

#[tokio::test]
async fn a_call_held_on_one_instance_goes_on_there_when_its_retry_reaches_another() {
    // The trail in the shared database records each call code makes.
    let audit = "[packs.exec_py]\n[audit]\ndatabase = \"{database}\"\n";
    let Some((instances, _project, [ada_token, _])) = start_with("", audit) else {
        return;
    };
    let code = "```python\nproj.list()\nproj.ls(name='logs')['path']\n```";
    let run = |retry| {
        let capabilities = json!({"elicitation": {}});
        HttpHost::stateless_params("run", json!({"command": code}), capabilities, retry)
    };
    // Asked on instance one, after the code listed the projects...
    let one = instances.instance_url(1);
    let (key, state) = asked(&post(&one, &ada_token, &run(None)).await);
    // ...answered through instance two: the code goes on on instance one.
    let retry = run(Some((yes(&key, false), &state)));
    let done = post(&instances.instance_url(2), &ada_token, &retry).await;
    assert_eq!(done["result"]["structuredContent"]["result"], "", "{done}");
    // The trail is written in the background: wait for the block's event.
    for _ in 0..200 {
        if !instances
            .audit_events(&["--tool", "exec_py.run"])
            .is_empty()
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let trail = instances.audit_events(&["--tool", "proj.list"]);
    assert_eq!(trail.len(), 1, "proj.list ran again: {trail:#?}");
    assert!(
        instances.log(2).contains("forwarded"),
        "{}",
        instances.log(2)
    );
}

/// The conformance pack (its `slow_compute` becomes a task).
fn tasks_pack() -> String {
    let lib = build_dir().join("libconformance.so");
    format!(
        "[packs.conformance]\npath = {:?}\n",
        lib.display().to_string()
    )
}

/// The `_meta` of a 2026-07-28 request of a client with `capabilities`.
fn request_meta(capabilities: Value) -> Value {
    HttpHost::stateless_params("x", json!({}), capabilities, None)["_meta"].clone()
}

/// What a client that takes tasks can do.
fn takes_tasks() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// Starts `slow_compute` of `seconds` labelled `label` through `url` as
/// `token`'s caller: the `tasks/get` params of its task, and its id.
async fn start_task(url: &str, token: &str, seconds: f64, label: &str) -> (Value, String) {
    let args = json!({"seconds": seconds, "label": label});
    let slow = HttpHost::stateless_params("conformance.slow_compute", args, takes_tasks(), None);
    let started = post(url, token, &slow).await;
    let id = started["result"]["taskId"].as_str();
    let id = id.unwrap_or_else(|| panic!("no task: {started}"));
    (
        json!({"taskId": id, "_meta": request_meta(takes_tasks())}),
        id.to_owned(),
    )
}

/// `tasks/get` of `get` through `url` until the task completed.
async fn completed(url: &str, token: &str, get: &Value) -> Value {
    let mut task = Value::Null;
    for _ in 0..100 {
        task = send(url, token, "tasks/get", get).await;
        if task["result"]["status"] == "completed" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(task["result"]["status"], "completed", "{task}");
    task
}

#[tokio::test]
async fn a_task_started_through_one_instance_is_read_through_the_others_by_its_owner() {
    let Some((instances, _project, [ada_token, _])) = start_with("", &tasks_pack()) else {
        return;
    };
    let one = instances.instance_url(1);
    let (get, _) = start_task(&one, &ada_token, 0.3, "shared").await;
    let task = completed(&instances.instance_url(2), &ada_token, &get).await;
    let text = &task["result"]["result"]["structuredContent"]["text"];
    assert_eq!(text, "computed shared in 0.3 s", "{task}");
    // Ended, it is read through the others from the record of how it
    // ended, once its instance is gone too (given the moment it takes to
    // record it).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    instances.kill(1);
    for n in [2, 3] {
        let after = completed(&instances.instance_url(n), &ada_token, &get).await;
        assert_eq!(after["result"], task["result"], "{after}");
    }
}

/// The proxy and each instance: where another organisation tries.
fn everywhere(instances: &Instances) -> Vec<String> {
    let direct = (1..=3).map(|n| instances.instance_url(n));
    std::iter::once(instances.url.clone())
        .chain(direct)
        .collect()
}

/// `theirs` (a request naming someone else's `id`) was answered exactly as
/// `made_up` (the same request naming `unknown`, which nobody has): the
/// answers are equal once each id reads `ID`.
#[track_caller]
fn as_unknown(theirs: &Value, made_up: &Value, (id, unknown): (&str, &str)) {
    assert_eq!(
        theirs.to_string().replace(id, "ID"),
        made_up.to_string().replace(unknown, "ID"),
        "someone else's id must read as an unknown one"
    );
}

/// Eve's `method` with `params` (naming ada's `id`) and with the same
/// params naming `unknown`, through the proxy and each instance: each pair
/// answered alike, and refused (an error, or an error result).
async fn eve_as_unknown(
    instances: &Instances,
    eve: &str,
    (method, params): (&str, &Value),
    (id, unknown): (&str, &str),
) {
    let made_up: Value = serde_json::from_str(&params.to_string().replace(id, unknown)).unwrap();
    for url in everywhere(instances) {
        let theirs = send(&url, eve, method, params).await;
        let refused = theirs["error"].is_object() || theirs["result"]["isError"] == true;
        assert!(refused, "{method} through {url} was answered: {theirs}");
        as_unknown(
            &theirs,
            &send(&url, eve, method, &made_up).await,
            (id, unknown),
        );
    }
}

#[tokio::test]
async fn another_organisation_reads_no_kept_result_through_any_instance() {
    let Some((instances, _project, [ada_token, eve_token])) = start() else {
        return;
    };
    let ada = instances.client(Some(&ada_token)).await.unwrap();
    let handle = kept_read(&ada, 3000).await;
    let unknown = "r0123456789abcdef";
    let meta = request_meta(json!({}));
    for (tool, args) in [
        ("packhost.result_read", json!({"handle": handle})),
        (
            "packhost.result_grep",
            json!({"handle": handle, "pattern": "line"}),
        ),
        (
            "packhost.result_select",
            json!({"handle": handle, "path": "$"}),
        ),
    ] {
        let params = HttpHost::stateless_params(tool, args, json!({}), None);
        eve_as_unknown(
            &instances,
            &eve_token,
            ("tools/call", &params),
            (&handle, unknown),
        )
        .await;
    }
    let uri = json!({"uri": format!("packhost://results/{handle}"), "_meta": meta});
    eve_as_unknown(
        &instances,
        &eve_token,
        ("resources/read", &uri),
        (&handle, unknown),
    )
    .await;
    // Still there, for ada.
    let page = call(&ada, "packhost.result_read", json!({"handle": handle}));
    assert!(text(&page.await.unwrap()).contains("line 1 INFO"));
}

#[tokio::test]
async fn another_organisation_reaches_no_task_through_any_instance() {
    let Some((instances, _project, [ada_token, eve_token])) = start_with("", &tasks_pack()) else {
        return;
    };
    let one = instances.instance_url(1);
    // Long enough to be running while eve tries to cancel it.
    let (get, id) = start_task(&one, &ada_token, 3.0, "ada's").await;
    let unknown = "00000000-0000-4000-8000-000000000000";
    let answers = json!({"taskId": id, "inputResponses": {}, "_meta": get["_meta"]});
    for (method, params) in [
        ("tasks/get", &get),
        ("tasks/result", &get),
        ("tasks/update", &answers),
        ("tasks/cancel", &get),
    ] {
        eve_as_unknown(&instances, &eve_token, (method, params), (&id, unknown)).await;
    }
    // Ada's task ran on, uncancelled.
    let task = completed(&instances.url, &ada_token, &get).await;
    let text = &task["result"]["result"]["structuredContent"]["text"];
    assert_eq!(text, "computed ada's in 3 s", "{task}");
}

/// `state` with a character in its middle changed: a state nobody sealed.
fn forged(state: &str) -> String {
    let mut chars: Vec<char> = state.chars().collect();
    let at = (chars.len() / 2..chars.len())
        .find(|&i| chars[i].is_ascii_alphanumeric())
        .expect("a state is base64url");
    chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

#[tokio::test]
async fn another_organisation_answers_no_held_call_through_any_instance() {
    let Some((instances, _project, [ada_token, eve_token])) = start() else {
        return;
    };
    let one = instances.instance_url(1);
    let (key, state) = asked(&post(&one, &ada_token, &ls(None)).await);
    let retry = ls(Some((yes(&key, false), &state)));
    let made_up = ls(Some((yes(&key, false), &forged(&state))));
    // Ada's state, answered by eve: a state nobody sealed, unused by it.
    eve_as_unknown(
        &instances,
        &eve_token,
        ("tools/call", &retry),
        (&state, &forged(&state)),
    )
    .await;
    let done = post(&instances.instance_url(2), &ada_token, &retry).await;
    assert!(done["result"]["structuredContent"].is_object(), "{done}");
    // Replayed by eve once used: still unknown, not "used already".
    for url in everywhere(&instances) {
        let replayed = post(&url, &eve_token, &retry).await;
        assert_eq!(replayed, post(&url, &eve_token, &made_up).await, "{url}");
    }
}

/// What `reply` asks, less its state (each ask seals a new one).
fn question(reply: &Value) -> Value {
    let mut result = reply["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{reply}");
    result.as_object_mut().unwrap().remove("requestState");
    result
}

#[tokio::test]
async fn an_approval_remembered_in_one_organisation_holds_for_no_other_on_any_instance() {
    let Some((instances, _project, [ada_token, eve_token])) = start() else {
        return;
    };
    let one = instances.instance_url(1);
    let before = question(&post(&one, &eve_token, &ls(None)).await);
    let (key, state) = asked(&post(&one, &ada_token, &ls(None)).await);
    let done = post(&one, &ada_token, &ls(Some((yes(&key, true), &state)))).await;
    assert!(done["result"]["structuredContent"].is_object(), "{done}");
    // Eve is asked as she was before ada's approval was remembered.
    for url in everywhere(&instances) {
        let after = question(&post(&url, &eve_token, &ls(None)).await);
        assert_eq!(after, before, "{url}");
    }
}

/// The handle of a kept read of `lines` lines of the log by `client`.
async fn kept_read(client: &Client, lines: usize) -> String {
    let read = json!({"name": "logs", "path": "app.log", "limit": lines});
    let kept = call(client, "proj.read", read).await.unwrap();
    let handle = &kept.meta.as_ref().unwrap()["packhost/result"]["handle"];
    let handle = handle.as_str();
    handle
        .unwrap_or_else(|| panic!("not kept: {}", text(&kept)))
        .to_owned()
}

/// [`kept_read`], and the whole text it reads back as at once.
async fn keep(client: &Client, lines: usize) -> (String, String) {
    let handle = kept_read(client, lines).await;
    let whole = read_whole(client, &handle)
        .await
        .expect("read back at once");
    (handle, whole)
}

/// A kept result's whole text, page by page; the refusal's text if any.
async fn read_whole(client: &Client, handle: &str) -> Result<String, String> {
    let mut whole = String::new();
    let mut offset = Some(0);
    while let Some(at) = offset {
        let args = json!({"handle": handle, "offset": at});
        let page = call(client, "packhost.result_read", args).await.unwrap();
        if packhost_tests::is_error(&page) {
            return Err(text(&page));
        }
        let page = packhost_tests::structured(&page);
        whole.push_str(page["text"].as_str().unwrap());
        offset = page["next_offset"].as_u64();
    }
    Ok(whole)
}

#[tokio::test]
async fn one_organisation_flooding_kept_results_pushes_out_only_its_own() {
    // Per organisation: 3 results, 40 kB; in all, room for both.
    let bounds = "max_results_per_org = 3\nmax_bytes_per_org = 40000\n";
    let Some((instances, _project, [ada_token, eve_token])) = start_with(bounds, "") else {
        return;
    };
    let ada = instances.client(Some(&ada_token)).await.unwrap();
    let ada_kept = [keep(&ada, 100).await, keep(&ada, 200).await];
    let eve = std::sync::Arc::new(instances.client(Some(&eve_token)).await.unwrap());
    // Eve floods through the proxy: many at once past her count, then
    // larger ones past her bytes.
    let mut floods = Vec::new();
    for lines in std::iter::repeat_n(100, 12).chain(std::iter::repeat_n(400, 6)) {
        let eve = std::sync::Arc::clone(&eve);
        floods.push(tokio::spawn(async move { kept_read(&eve, lines).await }));
    }
    let mut flooded = Vec::new();
    for flood in floods {
        flooded.push(flood.await.unwrap());
    }
    let readable = futures_util::future::join_all(flooded.iter().map(|h| read_whole(&eve, h)));
    let readable = readable.await.iter().filter(|r| r.is_ok()).count();
    assert!((1..=3).contains(&readable), "eve holds {readable} of 18");
    // Ada's, kept before, read back whole.
    for (handle, whole) in &ada_kept {
        assert_eq!(
            read_whole(&ada, handle).await.as_ref(),
            Ok(whole),
            "{handle}"
        );
    }
}

/// The structured result of a 2026-07-28 `tools/call` reply, or its error
/// (code and message) as `{"error": …}`.
fn outcome(reply: &Value) -> Value {
    let result: rmcp::model::CallToolResult =
        serde_json::from_value(reply["result"].clone()).unwrap_or_else(|e| panic!("{e}: {reply}"));
    match is_error(&result) {
        true => json!({ "error": error_of(&result) }),
        false => structured(&result),
    }
}

/// `jupyter.<function>` with `arguments`, through instance `n`, as `token`.
async fn jupyter(
    instances: &Instances,
    n: usize,
    token: &str,
    function: &str,
    arguments: Value,
) -> Value {
    let name = format!("jupyter.{function}");
    let params = HttpHost::stateless_params(&name, arguments, json!({}), None);
    outcome(&post(&instances.instance_url(n), token, &params).await)
}

#[tokio::test]
async fn a_jupyter_session_is_used_through_every_instance_by_its_owner_alone() {
    // deploy/packs.toml's jupyter section: the server comes from deploy/local.
    let pack = "[packs.jupyter]\ntimeout_ms = 600000\nconfig = { backend = \"server\" }\n";
    let Some((config, database, _project, [ada_token, eve_token])) = set_up("", pack) else {
        return;
    };
    let instances = Instances::start_with_jupyter(&config, &database, &venv_python());
    let created = jupyter(&instances, 1, &ada_token, "session_create", json!({})).await;
    let id = created["session_id"]
        .as_str()
        .expect("a session")
        .to_owned();
    let run = async |n, token: &str, code: &str| {
        let args = json!({"session_id": id, "code": code});
        jupyter(&instances, n, token, "execute_code", args).await
    };
    // Its variables live in the one kernel every instance reaches.
    assert_eq!(run(2, &ada_token, "x = 41").await["error"], Value::Null);
    let read = run(3, &ada_token, "x + 1").await;
    assert_eq!(read["result"], "42", "{read}");
    let read = run(1, &ada_token, "x += 1; x").await;
    assert_eq!(read["result"], "42", "{read}");
    for n in 1..=3 {
        let listed = jupyter(&instances, n, &ada_token, "session_list", json!({})).await;
        assert_eq!(listed["sessions"][0]["session_id"], id.as_str(), "{listed}");
    }
    // Another organisation: on every instance, what an unknown id gets.
    for n in 1..=3 {
        let theirs = run(n, &eve_token, "x").await;
        let unknown = jupyter(
            &instances,
            n,
            &eve_token,
            "execute_code",
            json!({"session_id": "nope", "code": "x"}),
        )
        .await;
        assert_eq!(theirs["error"]["code"], "SESSION_NOT_FOUND", "{theirs}");
        assert_eq!(
            theirs["error"]["message"]
                .as_str()
                .unwrap()
                .replace(&id, "ID"),
            unknown["error"]["message"]
                .as_str()
                .unwrap()
                .replace("nope", "ID"),
        );
        let closed = jupyter(
            &instances,
            n,
            &eve_token,
            "session_close",
            json!({"session_id": id}),
        )
        .await;
        assert_eq!(closed["error"]["code"], "SESSION_NOT_FOUND", "{closed}");
        let listed = jupyter(&instances, n, &eve_token, "session_list", json!({})).await;
        assert_eq!(listed["sessions"], json!([]), "{listed}");
    }
    assert_eq!(run(2, &ada_token, "x").await["result"], "42");
    // Closed through one: gone on all, its kernel shut down on the server.
    let closed = jupyter(
        &instances,
        3,
        &ada_token,
        "session_close",
        json!({"session_id": id}),
    )
    .await;
    assert_eq!(closed["action"], "closed", "{closed}");
    for n in 1..=3 {
        let gone = run(n, &ada_token, "x").await;
        assert_eq!(gone["error"]["code"], "SESSION_NOT_FOUND", "{gone}");
    }
    assert_eq!(instances.jupyter_kernels(), json!([]));
}

#[tokio::test]
async fn the_recipe_serves_every_pack_of_its_packs_toml_through_the_proxy() {
    let Some(database) = postgres_database() else {
        return;
    };
    if !haproxy_installed() {
        return;
    }
    let instances = Instances::start_recipe(&database, &venv_python());
    let client = instances.client(None).await.unwrap();
    let run = call(&client, "exec_py.run", json!({"code": "6 * 7"}));
    assert_eq!(ok(&run.await.unwrap())["result"], 42);
    let created = call(&client, "jupyter.session_create", json!({}));
    let id = ok(&created.await.unwrap())["session_id"].clone();
    // Round robin: the session is used through each instance.
    for code in ["x = 6", "x *= 7", "x"] {
        let done = call(
            &client,
            "jupyter.execute_code",
            json!({"session_id": id, "code": code}),
        );
        let done = ok(&done.await.unwrap());
        assert_eq!(done["success"], true, "{done}");
    }
    let read = call(
        &client,
        "jupyter.execute_code",
        json!({"session_id": id, "code": "x"}),
    );
    assert_eq!(ok(&read.await.unwrap())["result"], "42");
    // Kernels on the Jupyter Server run unconfined: none of the instances'
    // secrets is in their environment.
    let code =
        "import os; [k for k, v in os.environ.items() if 'PACKHOST' in k or 'postgres' in v]";
    let seen = call(
        &client,
        "jupyter.execute_code",
        json!({"session_id": id, "code": code}),
    );
    assert_eq!(ok(&seen.await.unwrap())["result"], "[]");
    let listed = call(&client, "proj.list", json!({}));
    ok(&listed.await.unwrap());
}

/// `function` of `exec_ts` called at `url` as `token`'s caller, with no
/// question possible: the tool result.
async fn exec_ts(url: &str, token: &str, function: &str, args: Value) -> Value {
    let name = format!("exec_ts.{function}");
    let params = HttpHost::stateless_params(&name, args, json!({}), None);
    let reply = post(url, token, &params).await;
    assert!(reply["result"].is_object(), "{name}: {reply}");
    reply["result"].clone()
}

/// The structured result of a call that succeeded.
#[track_caller]
fn done(result: Value) -> Value {
    assert_ne!(result["isError"], true, "{result}");
    result["structuredContent"].clone()
}

#[tokio::test]
async fn a_notebook_session_made_through_one_instance_is_used_through_the_others_by_its_owner_alone()
 {
    // Each instance keeps its session folders under its own folder.
    let notebooks = "[packs.exec_ts]\nconfig = { notebooks_dir = \"notebooks\", pool_size = 0 }\n";
    let Some((instances, _project, [ada_token, eve_token])) = start_with("", notebooks) else {
        return;
    };
    let at = |n| instances.instance_url(n);
    let ada = |n, function, args| {
        let (url, token) = (at(n), ada_token.clone());
        async move { exec_ts(&url, &token, function, args).await }
    };
    let made = done(ada(1, "session_create", json!({"title": "acme"})).await);
    let session = made["sessionId"].as_str().unwrap().to_owned();
    let cell = |filename: &str, source: &str| json!({"sessionId": session, "filename": filename, "source": source});
    let utils = done(
        ada(
            1,
            "cell_create",
            cell("utils.ts", "export const x: number = 41;"),
        )
        .await,
    );
    let main = "import { x } from './utils.ts';\nconsole.log(x + 1);";
    let main = done(ada(1, "cell_create", cell("main.ts", main)).await);
    let run = json!({"sessionId": session, "cellId": main["cellId"]});
    for n in [2, 3] {
        let out = done(ada(n, "cell_execute", run.clone()).await);
        assert_eq!(out["stdout"], "42\n", "instance {n}");
        let listed = done(ada(n, "session_list", json!({})).await);
        assert_eq!(listed["sessions"][0]["sessionId"], session, "instance {n}");
        assert_eq!(listed["sessions"][0]["cells"], 2, "instance {n}");
    }
    // Three folders, each written from the database.
    for n in 1..=3 {
        let folder = instances.dir.path().join(format!("instance-{n}/notebooks"));
        assert!(folder.join(&session).join("src/utils.ts").is_file(), "{n}");
    }
    let update =
        json!({"sessionId": session, "cellId": utils["cellId"], "source": "export const x = 1;"});
    done(ada(2, "cell_update", update).await);
    assert_eq!(
        done(ada(3, "cell_execute", run.clone()).await)["stdout"],
        "2\n"
    );
    assert_eq!(
        done(ada(1, "cell_execute", run.clone()).await)["stdout"],
        "2\n"
    );
    let listed = done(ada(3, "cell_list", json!({"sessionId": session})).await);
    assert_eq!(listed["cells"][0]["source"], "export const x = 1;");

    // Another organisation: on every instance, what an unknown id gets.
    const UNKNOWN: &str = "unknown-session-7d2e";
    let calls = |id: &str| {
        let cell = utils["cellId"].clone();
        [
            ("cell_list", json!({"sessionId": id})),
            ("cell_execute", json!({"sessionId": id, "cellId": cell})),
            (
                "cell_update",
                json!({"sessionId": id, "cellId": cell, "source": "1"}),
            ),
            ("session_export", json!({"sessionId": id})),
            ("session_delete", json!({"sessionId": id})),
        ]
    };
    for n in 1..=3 {
        for ((function, theirs), (_, unknown)) in calls(&session).into_iter().zip(calls(UNKNOWN)) {
            let refused = exec_ts(&at(n), &eve_token, function, theirs).await;
            let expected = exec_ts(&at(n), &eve_token, function, unknown).await;
            assert_eq!(refused["isError"], true, "{function} on {n}: {refused}");
            let refused = refused.to_string().replace(&session, UNKNOWN);
            assert_eq!(refused, expected.to_string(), "{function} on instance {n}");
        }
        let theirs = done(exec_ts(&at(n), &eve_token, "session_list", json!({})).await);
        assert_eq!(theirs["sessions"], json!([]), "instance {n}");
    }

    let delete = json!({"sessionId": session, "cellId": utils["cellId"]});
    done(ada(3, "cell_delete", delete).await);
    let listed = done(ada(2, "cell_list", json!({"sessionId": session})).await);
    assert_eq!(listed["cells"].as_array().unwrap().len(), 1, "{listed}");
    done(ada(3, "session_delete", json!({"sessionId": session})).await);
    for n in 1..=3 {
        let gone = ada(n, "cell_list", json!({"sessionId": session})).await;
        let code = &gone["_meta"]["packhost/error"]["code"];
        assert_eq!(code, "SESSION_NOT_FOUND", "instance {n}: {gone}");
    }
}
