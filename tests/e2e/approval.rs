//! Approval before a destructive call made from code (`[approval]`),
//! through the real binary and the official Python client on 2025-11-25
//! (stdio, so the question goes out as a server -> client elicitation):
//! Python and TypeScript code delete a notebook session that
//! `[approval.deletes]` guards. Accepted: deleted, asked once. Declined:
//! kept, and the code caught `DECLINED`. A client without elicitation:
//! kept, and the code caught `APPROVAL_UNAVAILABLE`. Over HTTP, an
//! approval remembered by one organisation's user is not another's. On
//! 2026-07-28 (raw
//! HTTP) the question is an `input_required` result; the retry's answer
//! resumes the held code, whose earlier side effects are not made twice.

use std::{process::Stdio, time::Duration};

use packhost_tests::{
    TestHost, downstream::everything_stdio, failed, http::HttpHost, packhost_bin, packhost_cli,
    typescript_package, venv_python,
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Python code mode: create a session, try to delete it, say what happened.
const PYTHON: &str = "```python
s = exec_ts.session_create(title='approval')['sessionId']
try:
    exec_ts.session_delete(sessionId=s)
    outcome = 'deleted'
except PackError as e:
    outcome = e.code
left = [x['sessionId'] for x in exec_ts.session_list()['sessions']]
{'outcome': outcome, 'kept': s in left}
```";

/// The same in TypeScript code mode.
const TYPESCRIPT: &str = "```ts
const s = (await exec_ts.session_create({ title: 'approval' })).sessionId;
let outcome: string;
try {
  await exec_ts.session_delete({ sessionId: s });
  outcome = 'deleted';
} catch (e) {
  outcome = (e as PackError).code;
}
const left = (await exec_ts.session_list({})).sessions.map((x) => x.sessionId);
({ outcome, kept: left.includes(s) })
```";

/// A folder with a config of the code packs whose `session_delete` needs
/// approval, `remember` as given, and `extra` appended.
fn setup(remember: &str, extra: &str) -> TempDir {
    let dir = TempDir::new().expect("temp dir");
    let config = format!(
        "[identity]\nuser = \"ada\"\norg = \"acme\"\n\n\
         [packs.exec_py]\n\
         [packs.exec_ts]\nconfig = {{ notebooks_dir = {notebooks:?}, typescript = {typescript:?} }}\n\n\
         [approval.deletes]\ncalls = [\"*.session_delete\"]\nremember = {remember:?}\n\n{extra}\n",
        notebooks = dir.path().join("notebooks"),
        typescript = typescript_package(),
    );
    std::fs::write(dir.path().join("packs.toml"), config).unwrap();
    dir
}

/// The two code blocks, as calls of `run`.
fn both_blocks() -> Value {
    json!([
        {"id": "python", "tool": "run", "arguments": {"command": PYTHON}},
        {"id": "typescript", "tool": "run", "arguments": {"command": TYPESCRIPT}},
    ])
}

/// A host over stdio in `dir`, for the client to start.
fn stdio(dir: &TempDir) -> Value {
    let env: serde_json::Map<String, Value> = ["PATH", "HOME", "LANG"]
        .into_iter()
        .filter_map(|key| Some((key.to_owned(), std::env::var(key).ok()?.into())))
        .collect();
    json!({"stdio": {
        "command": packhost_bin(),
        "args": ["serve", "--config", dir.path().join("packs.toml")],
        "cwd": dir.path(),
        "env": env,
        "stderr": dir.path().join("stderr.log"),
    }})
}

/// Run the Python client on `transport`, its user giving `answer` to every
/// question (`None`: a client without elicitation), making `calls`; one
/// line per call. `host_log` tells what the host logged.
async fn drive(
    dir: &TempDir,
    transport: Value,
    answer: Option<Value>,
    calls: Value,
    host_log: impl Fn() -> String,
) -> Vec<Value> {
    let count = calls.as_array().map_or(0, Vec::len);
    let spec = json!({"transport": transport, "answer": answer, "calls": calls});
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("official-clients/approval.py");
    let mut command = tokio::process::Command::new(venv_python());
    command
        .arg(script)
        .arg(&spec_path)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(300), command.output())
        .await
        .expect("the client finishes within 5 minutes")
        .expect("run the client");
    assert!(
        output.status.success(),
        "the client failed ({}):\n{}\nhost stderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        host_log(),
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert_eq!(
        lines.len(),
        count,
        "{lines:#?}\nhost stderr:\n{}",
        host_log()
    );
    lines
}

/// Both code blocks over stdio, the user giving `answer`.
async fn over_stdio(answer: Option<Value>) -> Vec<Value> {
    let dir = setup("no", "");
    let log = || std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default();
    drive(&dir, stdio(&dir), answer, both_blocks(), log).await
}

/// Each code block ended with `outcome`, the session `kept` or not, after
/// `asked` questions about the delete.
#[track_caller]
fn each_block(lines: &[Value], outcome: &str, kept: bool, asked: usize) {
    for line in lines {
        let id = &line["id"];
        assert_eq!(line["isError"], false, "{id}: {line}");
        let result = &line["structuredContent"]["result"];
        assert_eq!(
            result,
            &json!({"outcome": outcome, "kept": kept}),
            "{id}: {line}"
        );
        let questions = line["asked"].as_array().unwrap();
        assert_eq!(questions.len(), asked, "{id}: {line}");
        for question in questions {
            let question = question.as_str().unwrap();
            assert!(question.contains("`exec_ts.session_delete`"), "{question}");
            assert!(question.contains("[approval.deletes]"), "{question}");
            assert!(question.contains("\"sessionId\""), "{question}");
        }
    }
}

#[tokio::test]
async fn an_accepted_delete_from_code_is_made_once() {
    let answer = json!({"action": "accept", "content": {"decision": "accept"}});
    each_block(&over_stdio(Some(answer)).await, "deleted", false, 1);
}

#[tokio::test]
async fn a_declined_delete_from_code_is_not_made_and_the_code_sees_declined() {
    let answer = json!({"action": "decline"});
    each_block(&over_stdio(Some(answer)).await, "DECLINED", true, 1);
}

#[tokio::test]
async fn a_client_without_elicitation_gets_approval_unavailable() {
    each_block(&over_stdio(None).await, "APPROVAL_UNAVAILABLE", true, 0);
}

#[tokio::test]
async fn a_remembered_approval_is_its_organisations_only() {
    let (acme, acme_entry) = crate::http::token("ada", "acme", &[]);
    let (globex, globex_entry) = crate::http::token("ada", "globex", &[]);
    let dir = setup("30m", &format!("{acme_entry}\n{globex_entry}"));
    let config = std::fs::read_to_string(dir.path().join("packs.toml")).unwrap();
    let host = HttpHost::start(&config, &[]).await;
    let log = || host.stderr();
    let python = || json!([{"id": "python", "tool": "run", "arguments": {"command": PYTHON}}]);
    let http = |token: &str| json!({"http": {"url": host.url(), "token": token}});
    let remember = json!({"action": "accept", "content": {"decision": "accept", "remember": true}});
    // Ada of acme approves and asks to be left alone for 30 minutes...
    let lines = drive(&dir, http(&acme), Some(remember), python(), log).await;
    each_block(&lines, "deleted", false, 1);
    // ...so her next session, which cannot even be asked, deletes.
    let lines = drive(&dir, http(&acme), None, python(), log).await;
    each_block(&lines, "deleted", false, 0);
    // Ada of globex is another caller: asked, and here unable to answer.
    let lines = drive(&dir, http(&globex), None, python(), log).await;
    each_block(&lines, "APPROVAL_UNAVAILABLE", true, 0);
}

/// The params of a 2026-07-28 `tools/call` of `run` with `command`,
/// declaring elicitation; `retry`: the answers and `requestState` of a
/// retry.
fn run_params(command: &str, retry: Option<(Value, &str)>) -> Value {
    let mut params = json!({
        "name": "run",
        "arguments": {"command": command},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "approval-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        },
    });
    if let Some((responses, state)) = retry {
        params["inputResponses"] = responses;
        params["requestState"] = json!(state);
    }
    params
}

/// POST `params` (a `tools/call` of `run`) to `host` on 2026-07-28: the
/// JSON-RPC response.
async fn post(host: &HttpHost, params: &Value) -> Value {
    let messages = host.stateless_call(None, params).await;
    messages.last().cloned().expect("a response")
}

#[tokio::test]
async fn over_mrtr_the_retry_resumes_the_held_code_which_runs_once() {
    // Created before the question: made again, a second session would stay.
    let code = "```python
s = exec_ts.session_create(title='approval')['sessionId']
exec_ts.session_delete(sessionId=s)
len(exec_ts.session_list()['sessions'])
```";
    let host = HttpHost::start_in(setup("no", ""), &[], &[]).await;
    let first = post(&host, &run_params(code, None)).await;
    let asked = &first["result"];
    assert_eq!(
        asked["resultType"],
        "input_required",
        "{first}\n{}",
        host.stderr()
    );
    let questions = asked["inputRequests"].as_object().unwrap();
    assert_eq!(questions.len(), 1, "{first}");
    let (key, question) = questions.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create");
    let message = question["params"]["message"].as_str().unwrap();
    assert!(message.contains("`exec_ts.session_delete`"), "{message}");
    let state = asked["requestState"].as_str().expect("a requestState");
    let accept = json!({"action": "accept", "content": {"decision": "accept"}});
    let responses = json!({ key.as_str(): accept });
    let done = post(&host, &run_params(code, Some((responses, state)))).await;
    let result = &done["result"];
    assert_eq!(result["isError"], false, "{done}\n{}", host.stderr());
    assert_eq!(result["structuredContent"]["result"], 0, "{done}");
}

/// The code of [`over_mrtr_the_retry_resumes_the_held_code_which_runs_once`]:
/// creates a session, deletes it (asking), and counts the sessions left.
const CREATE_THEN_DELETE: &str = "```python
s = exec_ts.session_create(title='approval')['sessionId']
exec_ts.session_delete(sessionId=s)
len(exec_ts.session_list()['sessions'])
```";

/// The key and state of the approval question `answer` asks.
fn asked(answer: &Value) -> (String, String) {
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let key = result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap();
    let state = result["requestState"].as_str().expect("a requestState");
    (key.clone(), state.to_owned())
}

fn yes(key: &str) -> Value {
    json!({ key: {"action": "accept", "content": {"decision": "accept"}} })
}

/// How many notebook sessions `host`'s caller has.
async fn sessions_left(host: &HttpHost) -> Value {
    let listed = post(host, &run_params("exec_ts.session_list()", None)).await;
    let sessions = &listed["result"]["structuredContent"]["sessions"];
    json!(sessions.as_array().map(Vec::len))
}

#[tokio::test]
async fn over_mrtr_a_replayed_yes_makes_no_second_call() {
    let host = HttpHost::start_in(setup("no", ""), &[], &[]).await;
    let (key, state) = asked(&post(&host, &run_params(CREATE_THEN_DELETE, None)).await);
    let retry = run_params(CREATE_THEN_DELETE, Some((yes(&key), &state)));
    let done = post(&host, &retry).await;
    assert_eq!(done["result"]["structuredContent"]["result"], 0, "{done}");
    // The same retry again (a client's, or anyone's who saw it): each
    // replay ran the code from the start and left a session behind.
    for _ in 0..3 {
        let replayed = post(&host, &retry).await;
        assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
        let message = replayed["error"]["message"].as_str().unwrap();
        assert!(message.contains("used already"), "{message}");
    }
    assert_eq!(sessions_left(&host).await, 0, "{}", host.stderr());
}

#[tokio::test]
async fn over_mrtr_an_answer_sent_before_the_question_is_ignored_and_asked() {
    // The same arguments every time, so the same question key.
    let code = "```python
try:
    exec_ts.session_delete(sessionId='s-1')
    outcome = 'deleted'
except PackError as e:
    outcome = e.code
outcome
```";
    let host = HttpHost::start_in(setup("no", ""), &[], &[]).await;
    // The key names the call and its arguments: anyone can compute it.
    let (key, _) = asked(&post(&host, &run_params(code, None)).await);
    let mut pre_answered = run_params(code, None);
    pre_answered["inputResponses"] = yes(&key);
    let answer = post(&host, &pre_answered).await;
    let (asked_again, state) = asked(&answer);
    assert_eq!(asked_again, key, "the same question, asked");
    // Answered as asked, the call is made (positive control).
    let retry = run_params(code, Some((yes(&key), &state)));
    let done = post(&host, &retry).await;
    assert_eq!(
        done["result"]["structuredContent"]["result"], "SESSION_NOT_FOUND",
        "{done}"
    );
}

#[tokio::test]
async fn a_rule_names_a_prefixless_server_packs_function_by_its_full_name() {
    let config = format!(
        "[packs.loose]\nkind = \"mcp\"\ncommand = {:?}\nprefix = false\n\n\
         [approval.loose_echo]\ncalls = [\"loose.echo\"]\n",
        everything_stdio()
    );
    // The client cannot be asked: a call the rule covers is refused.
    let host = TestHost::start(&config).await;
    let direct = host.call("echo", json!({"message": "hi"})).await;
    let from_run = host.run("loose.echo(message='hi')").await;
    for result in [direct, from_run] {
        failed(&result, "APPROVAL_UNAVAILABLE", &["[approval.loose_echo]"]);
    }
    let checked = packhost_cli(&config, &["check"]);
    let stdout = String::from_utf8_lossy(&checked.stdout);
    assert!(
        stdout.contains("[approval.loose_echo] asks before 1 function(s): loose.echo"),
        "{stdout}"
    );
}
