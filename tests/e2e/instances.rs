//! Several instances behind a load balancer, as `deploy/` sets them up:
//! three packhosts behind a real HAProxy (round robin, no stickiness), one
//! PostgreSQL. What one instance keeps, any other answers for, to its owner
//! only; an answer used through one instance is refused by all, and an
//! approval remembered through one holds on all; an instance that dies is
//! routed around.

use packhost_tests::{
    build_dir, call,
    downstream::postgres_database,
    error_of, failed,
    http::{HttpHost, token, web_client},
    instances::{Instances, haproxy_installed},
    is_error,
    jupyter::JupyterServer,
    ok, structured, text, venv_python,
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Three instances, a project holding a log of ~130 kB, results past 2,000
/// characters kept, `proj.ls` asked about first, and callers `ada` (acme)
/// and `eve` (evil); `extra` is added to the config.
fn start_with(extra: &str) -> Option<(Instances, TempDir, [String; 2])> {
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
        "[http]\nsessions = false\nshutdown_grace_secs = 1\n[results]\nmax_result_chars = 2000\n[packs.proj]\n\
         [projects]\nlogs = {:?}\n[approval.listing]\ncalls = [\"proj.ls\"]\nremember = \"30m\"\n{ada}\n{eve}\n{extra}\n",
        project.path().display().to_string()
    );
    let config = config.replace("{database}", &database);
    let instances = Instances::start(&config, &database);
    Some((instances, project, [ada_token, eve_token]))
}

fn start() -> Option<(Instances, TempDir, [String; 2])> {
    start_with("")
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
    let Some((instances, _project, [ada_token, _])) = start_with(audit) else {
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

#[tokio::test]
async fn a_task_started_through_one_instance_is_read_through_the_others_by_its_owner_alone() {
    let lib = build_dir().join("libconformance.so");
    let pack = format!(
        "[packs.conformance]\npath = {:?}\n",
        lib.display().to_string()
    );
    let Some((instances, _project, [ada_token, eve_token])) = start_with(&pack) else {
        return;
    };
    let capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let meta =
        HttpHost::stateless_params("x", json!({}), capabilities.clone(), None)["_meta"].clone();
    let args = json!({"seconds": 0.3, "label": "shared"});
    let slow = HttpHost::stateless_params("conformance.slow_compute", args, capabilities, None);
    let started = post(&instances.instance_url(1), &ada_token, &slow).await;
    let id = started["result"]["taskId"].as_str();
    let id = id
        .unwrap_or_else(|| panic!("no task: {started}"))
        .to_owned();
    let get = json!({"taskId": id, "_meta": meta});
    let mut task = Value::Null;
    for _ in 0..100 {
        task = send(&instances.instance_url(2), &ada_token, "tasks/get", &get).await;
        if task["result"]["status"] == "completed" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(task["result"]["status"], "completed", "{task}");
    let text = &task["result"]["result"]["structuredContent"]["text"];
    assert_eq!(text, "computed shared in 0.3 s", "{task}");
    // Another organisation's caller gets what an unknown id gets.
    let theirs = send(&instances.instance_url(3), &eve_token, "tasks/get", &get).await;
    let unknown = json!({"taskId": "no-such-task", "_meta": get["_meta"]});
    let none = send(
        &instances.instance_url(3),
        &eve_token,
        "tasks/get",
        &unknown,
    )
    .await;
    let message = |reply: &Value| {
        reply["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(message(&theirs).starts_with("no task"), "{theirs}");
    assert_eq!(
        message(&theirs).replace(&id, "ID"),
        message(&none).replace("no-such-task", "ID")
    );
    let cancel = send(&instances.instance_url(3), &eve_token, "tasks/cancel", &get).await;
    assert!(message(&cancel).starts_with("no task"), "{cancel}");
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
    let server = JupyterServer::start(&venv_python()).unwrap_or_else(|e| panic!("{e}"));
    let pack = format!(
        "[packs.jupyter]\ntimeout_ms = 600000\nconfig = {{ backend = \"server\", url = {:?}, token = {:?} }}\n",
        server.url, server.token
    );
    let Some((instances, _project, [ada_token, eve_token])) = start_with(&pack) else {
        return;
    };
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
    assert_eq!(server.kernels(), json!([]));
}
