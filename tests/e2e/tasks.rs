//! The tasks extension (SEP-2663) through the real binary over HTTP, on the
//! stateless 2026-07-28 wire with rmcp's client: a call of a function that
//! supports tasks answers with a task, whose result `tasks/get` reads; its
//! questions are answered with `tasks/update`; `tasks/cancel` stops the
//! work; a task is its caller's alone; a client that did not negotiate the
//! extension gets -32021 for `tasks/*`.

use std::time::{Duration, Instant};

use packhost_tests::{
    build_dir,
    http::{HttpHost, web_client},
    wait_group_gone, written,
};
use rmcp::{
    ClientHandler, RoleClient, ServiceExt as _,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities,
        ClientConfig, GetTaskParams, GetTaskResult, Implementation, ProtocolVersion, TaskPayload,
        UpdateTaskParams,
    },
    service::{ClientLifecycleMode, ClientServiceExt as _, RunningService},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

use crate::http::token;

/// A client that declares `capabilities`.
struct Client(Value);

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(self.0.clone()).expect("client capabilities");
        ClientConfig::new(capabilities, Implementation::new("tasks-e2e", "1"))
    }
}

/// Elicitation, and the tasks extension.
fn negotiating() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

fn transport(host: &HttpHost, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    let config = StreamableHttpClientTransportConfig::with_uri(host.url()).auth_header(token);
    StreamableHttpClientTransport::with_client(web_client(), config)
}

/// A client of the stateless 2026-07-28 wire, which declares its
/// capabilities in every request's `_meta`.
async fn connect(
    host: &HttpHost,
    token: &str,
    capabilities: Value,
) -> RunningService<RoleClient, Client> {
    let transport = transport(host, token);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    Client(capabilities)
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("connect")
}

/// The fixture pack of the conformance suite, and tokens of two
/// organisations: acme's (returned) and other's.
async fn host(extra: &str) -> (HttpHost, String, String) {
    let (acme, acme_entry) = token("ada", "acme", &[]);
    let (other, other_entry) = token("ada", "other", &[]);
    let lib = build_dir().join("libconformance.so");
    let config = format!(
        "[packs.conformance]\npath = \"{}\"\n{extra}\n{acme_entry}\n{other_entry}\n",
        lib.display()
    );
    (HttpHost::start(&config, &[]).await, acme, other)
}

async fn call(
    client: &RunningService<RoleClient, Client>,
    tool: &str,
    args: Value,
) -> CallToolResponse {
    let args = args.as_object().cloned().unwrap_or_default();
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
    client.call_tool_once(params).await.expect("tools/call")
}

/// The id of the task `tool` started.
async fn start(client: &RunningService<RoleClient, Client>, tool: &str, args: Value) -> String {
    match call(client, tool, args).await {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("`{tool}` did not start a task: {other:?}"),
    }
}

async fn get(client: &RunningService<RoleClient, Client>, id: &str) -> GetTaskResult {
    client
        .get_task(GetTaskParams::new(id))
        .await
        .expect("tasks/get")
}

/// The task once it has ended (or reached `input_required`).
async fn settled(client: &RunningService<RoleClient, Client>, id: &str) -> GetTaskResult {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let task = get(client, id).await;
        if !matches!(task.task.payload, TaskPayload::Working) {
            return task;
        }
        assert!(
            Instant::now() < deadline,
            "task {id} never settled: {task:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn error_code(error: rmcp::ServiceError) -> i32 {
    match error {
        rmcp::ServiceError::McpError(e) => e.code.0,
        other => panic!("not an MCP error: {other}"),
    }
}

#[tokio::test]
async fn a_call_run_as_a_task_completes_and_its_result_is_read() {
    let (host, acme, _) = host("").await;
    let client = connect(&host, &acme, negotiating()).await;
    let listed = client.list_all_tools().await.unwrap();
    let slow = listed
        .iter()
        .find(|t| t.name == "conformance.slow_compute")
        .unwrap();
    let declared = slow.meta.as_ref().map(|m| m.0.clone()).unwrap_or_default();
    assert_eq!(
        declared["io.modelcontextprotocol/tasks"],
        json!({"taskSupport": "optional"})
    );
    // A function that never runs as a task answers as always.
    let greeting = call(&client, "conformance.greet", json!({"name": "Ada"})).await;
    assert!(
        matches!(&greeting, CallToolResponse::Complete(r) if r.content[0].as_text().unwrap().text == "Hello, Ada!"),
        "{greeting:?}"
    );
    let id = start(
        &client,
        "conformance.slow_compute",
        json!({"seconds": 0.2, "label": "e2e"}),
    )
    .await;
    let task = settled(&client, &id).await;
    let TaskPayload::Completed { result } = task.task.payload else {
        panic!("{task:?}")
    };
    assert_eq!(result["structuredContent"]["text"], "computed e2e in 0.2 s");
    // A failure of the call is a completed task whose result says so.
    let id = start(&client, "conformance.failing_job", json!({})).await;
    let task = settled(&client, &id).await;
    let TaskPayload::Completed { result } = task.task.payload else {
        panic!("{task:?}")
    };
    assert_eq!(result["isError"], true, "{result:?}");
    // A pack's panic is the task's own failure.
    let id = start(&client, "conformance.protocol_error_job", json!({})).await;
    let task = settled(&client, &id).await;
    assert!(
        matches!(task.task.payload, TaskPayload::Failed { .. }),
        "{task:?}"
    );
}

#[tokio::test]
async fn a_task_asks_through_tasks_update() {
    let (host, acme, _) = host("").await;
    let client = connect(&host, &acme, negotiating()).await;
    let id = start(&client, "conformance.multi_input", json!({})).await;
    let task = settled(&client, &id).await;
    let TaskPayload::InputRequired { input_requests } = task.task.payload else {
        panic!("{task:?}")
    };
    let keys: Vec<String> = input_requests.keys().cloned().collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    let answer = |content: Value| json!({"action": "accept", "content": content});
    let first = [(
        keys[0].clone(),
        answer(json!({"name": "Ada", "confirm": true})),
    )];
    client
        .update_task(UpdateTaskParams::new(&id, first.into_iter().collect()))
        .await
        .expect("tasks/update");
    // One answer of two: it still waits, for the other only.
    let task = get(&client, &id).await;
    let TaskPayload::InputRequired { input_requests } = task.task.payload else {
        panic!("{task:?}")
    };
    assert_eq!(input_requests.keys().collect::<Vec<_>>(), [&keys[1]]);
    let second = [(
        keys[1].clone(),
        answer(json!({"name": "Ada", "confirm": true})),
    )];
    client
        .update_task(UpdateTaskParams::new(&id, second.into_iter().collect()))
        .await
        .expect("tasks/update");
    let task = settled(&client, &id).await;
    let TaskPayload::Completed { result } = task.task.payload else {
        panic!("{task:?}")
    };
    assert_eq!(
        result["structuredContent"]["text"], "name: Ada, confirmed: true",
        "{result:?}"
    );
}

#[tokio::test]
async fn cancelling_a_task_ends_its_work() {
    // The code tells its process group through a folder it may write.
    let shared = tempfile::tempdir().unwrap();
    let root = shared.path().display().to_string();
    let config =
        format!("[packs.exec_py]\nconfig = {{ cwd_roots = [{root:?}], cwd_writable = true }}\n");
    let (host, acme, _) = host(&config).await;
    let client = connect(&host, &acme, negotiating()).await;
    let code = "import os, time\nopen('pgid', 'w').write(str(os.getpgid(0)))\ntime.sleep(60)";
    let id = start(&client, "exec_py.run", json!({"code": code, "cwd": root})).await;
    let marker = shared.path().join("pgid");
    let group: u32 = written(&marker, Duration::from_secs(20))
        .await
        .unwrap_or_else(|| panic!("the code never started:\n{}", host.stderr()));
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .expect("tasks/cancel");
    let task = settled(&client, &id).await;
    assert!(
        matches!(task.task.payload, TaskPayload::Cancelled),
        "{task:?}"
    );
    if let Err(live) = wait_group_gone(group, Duration::from_secs(15)).await {
        panic!("the code outlived its task: {live:?}\n{}", host.stderr());
    }
    // Cancelling an ended task changes nothing.
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .expect("tasks/cancel of an ended task");
}

#[tokio::test]
async fn another_organisation_cannot_see_or_cancel_a_task() {
    let (host, acme, other) = host("").await;
    let owner = connect(&host, &acme, negotiating()).await;
    let stranger = connect(&host, &other, negotiating()).await;
    let id = start(&owner, "conformance.slow_compute", json!({"seconds": 30})).await;
    let unknown = stranger
        .get_task(GetTaskParams::new("no-such-task"))
        .await
        .unwrap_err()
        .to_string();
    let theirs = stranger
        .get_task(GetTaskParams::new(&id))
        .await
        .unwrap_err()
        .to_string();
    // Word for word what an id that never existed gets, but for the id.
    assert_eq!(theirs.replace(&id, "no-such-task"), unknown);
    let cancel = stranger.cancel_task(CancelTaskParams::new(&id)).await;
    assert_eq!(error_code(cancel.unwrap_err()), -32602);
    let update = stranger
        .update_task(UpdateTaskParams::new(&id, Default::default()))
        .await;
    assert_eq!(error_code(update.unwrap_err()), -32602);
    // The owner's task ran on, untouched.
    let task = get(&owner, &id).await;
    assert!(
        matches!(task.task.payload, TaskPayload::Working),
        "{task:?}"
    );
    owner.cancel_task(CancelTaskParams::new(&id)).await.unwrap();
}

#[tokio::test]
async fn without_the_extension_a_call_is_plain_and_tasks_are_refused() {
    let (host, acme, _) = host("").await;
    let client = connect(&host, &acme, json!({})).await;
    let plain = call(
        &client,
        "conformance.slow_compute",
        json!({"seconds": 0, "label": "plain"}),
    )
    .await;
    assert!(matches!(plain, CallToolResponse::Complete(_)), "{plain:?}");
    let refused = client.get_task(GetTaskParams::new("any")).await;
    assert_eq!(error_code(refused.unwrap_err()), -32021);
    // A function that runs only as a task is refused, naming the extension.
    let params = CallToolRequestParams::new("conformance.failing_job");
    let required = client.call_tool_once(params).await.unwrap_err();
    let rmcp::ServiceError::McpError(error) = required else {
        panic!("{required}")
    };
    assert_eq!(error.code.0, -32021);
    assert_eq!(
        error.data.unwrap()["requiredCapabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );
}

#[tokio::test]
async fn a_session_that_negotiated_at_initialize_gets_tasks() {
    let (host, acme, _) = host("").await;
    // The 2025-11-25 wire: capabilities once, in `initialize`.
    let client = Client(negotiating())
        .serve(transport(&host, &acme))
        .await
        .expect("initialize");
    let id = start(
        &client,
        "conformance.slow_compute",
        json!({"seconds": 0, "label": "session"}),
    )
    .await;
    let task = settled(&client, &id).await;
    assert!(
        matches!(task.task.payload, TaskPayload::Completed { .. }),
        "{task:?}"
    );
}
