//! Several instances behind a load balancer, as `deploy/` sets them up:
//! three packhosts behind a real HAProxy (round robin, no stickiness), one
//! PostgreSQL. What one instance keeps, any other answers for, to its owner
//! only; an answer used through one instance is refused by all, and an
//! approval remembered through one holds on all; a notebook session made
//! through one is run and changed through the others; an instance that
//! dies is routed around.

use packhost_tests::{
    build_dir, call,
    downstream::postgres_database,
    failed,
    http::{HttpHost, token, web_client},
    instances::{Instances, haproxy_installed},
    ok, text,
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
    let Some((instances, _project, [ada_token, eve_token])) = start_with(notebooks) else {
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
