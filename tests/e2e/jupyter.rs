//! `jupyter` through the real host, with a real ipykernel: the `local`
//! backend (kernels launched by the pack over ZeroMQ) and the `server` backend
//! (a real `jupyter server` started here on loopback with a token).
//!
//! The Python with ipykernel, jupyter_server and Pillow comes from
//! `PACKHOST_TEST_PYTHON` (set by `./dev test`), else the venv `./dev test`
//! makes in `~/.cache/packhost-venv`.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use packhost_tests::{
    TestHost, WHOLE_RESULTS,
    bystander::Bystander,
    failed,
    http::{HttpHost, web_client},
    is_error,
    jupyter::JupyterServer,
    ok, structured, text, venv_python,
};
use serde_json::{Value, json};

/// A `[packs.jupyter]` section; `extra` is more `key = value` of its config.
/// Results whole: these tests are of the pack's own output, not of the
/// host keeping large results.
fn config(extra: &str) -> String {
    let python = venv_python();
    format!(
        "[packs.jupyter]\ntimeout_ms = 600000\nconfig = {{ python = {python:?}{extra} }}\n{WHOLE_RESULTS}"
    )
}

async fn host() -> TestHost {
    TestHost::start(&config("")).await
}

async fn create(host: &TestHost) -> String {
    let out = ok(&host.call("jupyter.session_create", json!({})).await);
    out["session_id"].as_str().expect("session_id").to_owned()
}

async fn exec(host: &TestHost, session: &str, code: &str) -> Value {
    ok(&host
        .call(
            "jupyter.execute_code",
            json!({ "session_id": session, "code": code }),
        )
        .await)
}

async fn exec_err(host: &TestHost, session: &str, code: &str, timeout: f64) -> Value {
    let result = host
        .call(
            "jupyter.execute_code",
            json!({ "session_id": session, "code": code, "timeout": timeout }),
        )
        .await;
    assert!(
        is_error(&result),
        "expected an error, got {}",
        text(&result)
    );
    structured(&result)
}

// ---- the checks both backends pass ----

async fn prints_and_keeps_state(host: &TestHost) {
    let session = create(host).await;
    let out = exec(host, &session, "print('hello')").await;
    assert_eq!(out["stdout"], "hello\n");
    assert_eq!(out["success"], true);
    exec(host, &session, "x = 42").await;
    assert_eq!(exec(host, &session, "print(x)").await["stdout"], "42\n");
    let out = exec(host, &session, "x + 1").await;
    assert_eq!(out["result"], "43");
    assert_eq!(out["stdout"], "");
}

async fn exceptions_come_back_precisely(host: &TestHost) {
    let session = create(host).await;
    let result = host
        .call(
            "jupyter.execute_code",
            json!({ "session_id": session, "code": "print('before')\n1/0" }),
        )
        .await;
    failed(
        &result,
        "EXECUTION_ERROR",
        &["ZeroDivisionError", "division by zero"],
    );
    let body = structured(&result);
    assert_eq!(body["success"], false);
    assert_eq!(body["error_type"], "ZeroDivisionError");
    assert_eq!(body["error_message"], "division by zero");
    assert_eq!(body["stdout"], "before\n");
    let traceback = body["traceback"].as_str().unwrap();
    assert!(traceback.contains("ZeroDivisionError"), "{traceback}");
    assert!(traceback.contains("1/0"), "{traceback}");
    assert!(
        !traceback.contains('\x1b'),
        "colour codes left: {traceback:?}"
    );
}

async fn bad_arguments_are_refused(host: &TestHost) {
    let result = host
        .call(
            "jupyter.execute_code",
            json!({ "session_id": "no-such-session", "code": "1" }),
        )
        .await;
    failed(&result, "SESSION_NOT_FOUND", &["no-such-session"]);
    let session = create(host).await;
    for timeout in [301.0, 0.0] {
        let result = host
            .call(
                "jupyter.execute_code",
                json!({ "session_id": session, "code": "1", "timeout": timeout }),
            )
            .await;
        failed(&result, "INVALID_ARGUMENT", &["timeout"]);
    }
    // Empty code is allowed and does nothing.
    let out = exec(host, &session, "").await;
    assert_eq!(
        (out["stdout"].clone(), out["result"].clone()),
        (json!(""), Value::Null)
    );
}

async fn images_come_back_as_image_content(host: &TestHost) {
    let session = create(host).await;
    let result = host
        .call(
            "jupyter.execute_code",
            json!({
                "session_id": session,
                "code": "from PIL import Image\nImage.new('RGB', (40, 30), 'red')",
            }),
        )
        .await;
    let out = ok(&result);
    let image = &out["images"][0];
    assert_eq!(image["mime"], "image/png", "{out}");
    assert_eq!(
        (image["width"].clone(), image["height"].clone()),
        (json!(40), json!(30))
    );
    let blocks: Vec<_> = result.content.iter().filter_map(|c| c.as_image()).collect();
    assert_eq!(
        blocks.len(),
        1,
        "one image content block: {:?}",
        result.content
    );
    assert_eq!(blocks[0].mime_type, "image/png");
    assert_eq!(blocks[0].data, image["data_base64"].as_str().unwrap());
    // The text mentions the image; its base64 is only in the image block.
    let text = text(&result);
    assert!(
        text.contains("bytes of base64, sent as an image block")
            && !text.contains(image["data_base64"].as_str().unwrap()),
        "{text}"
    );
}

async fn a_timeout_interrupts_and_keeps_the_session(host: &TestHost) {
    let session = create(host).await;
    exec(host, &session, "y = 7").await;
    let body = exec_err(
        host,
        &session,
        "print('looping')\nwhile True:\n    pass",
        2.0,
    )
    .await;
    assert_eq!(body["error_type"], "TimeoutError", "{body}");
    assert!(
        body["error_message"]
            .as_str()
            .unwrap()
            .contains("state is kept"),
        "{body}"
    );
    assert_eq!(body["stdout"], "looping\n", "partial output: {body}");
    assert_eq!(exec(host, &session, "print(y)").await["stdout"], "7\n");
}

async fn three_megabytes_arrive_complete(host: &TestHost) {
    let session = create(host).await;
    let out = exec(
        host,
        &session,
        "for i in range(30000):\n    print(f'{i:09d}' + 'y' * 90)",
    )
    .await;
    let stdout = out["stdout"].as_str().unwrap();
    assert_eq!(stdout.len(), 30000 * 100, "all 3 MB arrive");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 30000);
    assert!(lines[0].starts_with("000000000y") && lines[29999].starts_with("000029999y"));
    let out = exec(host, &session, "print('z' * 3_000_000)").await;
    assert_eq!(out["stdout"].as_str().unwrap().len(), 3_000_001);
}

async fn notebook_sessions_have_their_own_kernel_id(host: &TestHost) {
    let out = ok(&host
        .call(
            "jupyter.session_create",
            json!({ "notebook_path": "analysis.ipynb" }),
        )
        .await);
    let (session, kernel) = (
        out["session_id"].as_str().unwrap().to_owned(),
        out["kernel_id"].as_str().unwrap().to_owned(),
    );
    assert_ne!(session, kernel);
    exec(host, &session, "z = 5").await;
    // A kernel id works where a session id does.
    assert_eq!(exec(host, &kernel, "print(z)").await["stdout"], "5\n");
    let plain = ok(&host.call("jupyter.session_create", json!({})).await);
    assert_eq!(plain["session_id"], plain["kernel_id"]);
    let list = ok(&host.call("jupyter.session_list", json!({})).await);
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&session.as_str()), "{list}");
    let closed = ok(&host
        .call("jupyter.session_close", json!({ "session_id": session }))
        .await);
    assert_eq!(closed["action"], "closed");
    let result = host
        .call(
            "jupyter.execute_code",
            json!({ "session_id": session, "code": "1" }),
        )
        .await;
    failed(&result, "SESSION_NOT_FOUND", &[&session]);
}

// ---- local backend ----

#[tokio::test]
async fn local_prints_and_keeps_state() {
    prints_and_keeps_state(&host().await).await;
}

#[tokio::test]
async fn local_exceptions_come_back_precisely() {
    exceptions_come_back_precisely(&host().await).await;
}

#[tokio::test]
async fn local_bad_arguments_are_refused() {
    bad_arguments_are_refused(&host().await).await;
}

#[tokio::test]
async fn local_images_come_back_as_image_content() {
    images_come_back_as_image_content(&host().await).await;
}

#[tokio::test]
async fn local_a_timeout_interrupts_and_keeps_the_session() {
    a_timeout_interrupts_and_keeps_the_session(&host().await).await;
}

#[tokio::test]
async fn local_three_megabytes_arrive_complete() {
    three_megabytes_arrive_complete(&host().await).await;
}

#[tokio::test]
async fn local_notebook_sessions_have_their_own_kernel_id() {
    notebook_sessions_have_their_own_kernel_id(&host().await).await;
}

async fn a_dead_kernel_says_so_until_restarted(host: &TestHost) {
    let session = create(host).await;
    let body = exec_err(host, &session, "import os; os._exit(1)", 30.0).await;
    assert_eq!(body["error_type"], "KernelDied", "{body}");
    // Still dead on the next call, and listed as dead.
    let body = exec_err(host, &session, "1", 30.0).await;
    assert_eq!(body["error_type"], "KernelDied", "{body}");
    assert!(
        body["error_message"]
            .as_str()
            .unwrap()
            .contains("jupyter.restart"),
        "{body}"
    );
    let list = ok(&host.call("jupyter.session_list", json!({})).await);
    assert_eq!(list["sessions"][0]["state"], "dead", "{list}");
    let done = ok(&host
        .call("jupyter.restart", json!({ "session_id": session }))
        .await);
    assert_eq!(done["action"], "restarted");
    assert_eq!(exec(host, &session, "print(2 + 2)").await["stdout"], "4\n");
}

#[tokio::test]
async fn local_a_dead_kernel_says_so_until_restarted() {
    a_dead_kernel_says_so_until_restarted(&host().await).await;
}

#[tokio::test]
async fn local_a_loop_that_ignores_interrupts_gets_the_kernel_restarted() {
    let host = host().await;
    let session = create(&host).await;
    exec(&host, &session, "w = 1").await;
    let code = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)";
    let body = exec_err(&host, &session, code, 1.0).await;
    assert_eq!(body["error_type"], "TimeoutError", "{body}");
    assert!(
        body["error_message"]
            .as_str()
            .unwrap()
            .contains("restarted"),
        "{body}"
    );
    // A fresh kernel: the old state is gone, the session works.
    let body = exec_err(&host, &session, "w", 30.0).await;
    assert_eq!(body["error_type"], "NameError", "{body}");
    assert_eq!(
        exec(&host, &session, "print('back')").await["stdout"],
        "back\n"
    );
}

#[tokio::test]
async fn local_interrupt_stops_a_running_execution() {
    let host = host().await;
    let session = create(&host).await;
    let running = host.call(
        "jupyter.execute_code",
        json!({ "session_id": session, "code": "import time\nfor i in range(600):\n    time.sleep(0.1)" }),
    );
    let interrupt = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        ok(&host
            .call("jupyter.interrupt", json!({ "session_id": session }))
            .await)
    };
    let (result, done) = tokio::join!(running, interrupt);
    assert_eq!(done["action"], "interrupted");
    let body = structured(&result);
    assert_eq!(body["error_type"], "KeyboardInterrupt", "{body}");
}

#[tokio::test]
async fn local_long_executions_report_progress() {
    let host = host().await;
    let session = create(&host).await;
    let out = exec(&host, &session, "import time; time.sleep(5.5); 'slept'").await;
    assert_eq!(out["result"], "'slept'");
    let progress = host.recorder.progress.lock().unwrap().clone();
    // One report every 2 s: at least two in 5.5 s.
    assert!(progress.len() >= 2, "{progress:?}");
    assert!(
        progress.iter().all(|p| p.total == Some(30.0)),
        "{progress:?}"
    );
}

#[tokio::test]
async fn local_session_limit_and_idle_expiry() {
    let host = TestHost::start(&config(", max_sessions = 1, session_ttl_secs = 2")).await;
    let session = create(&host).await;
    let result = host.call("jupyter.session_create", json!({})).await;
    failed(&result, "LIMIT_EXCEEDED", &["max_sessions", &session]);
    // Idle past the TTL: closed by the pack, its kernel gone.
    let pid = exec(&host, &session, "import os; os.getpid()").await["result"]
        .as_str()
        .unwrap()
        .parse::<u32>()
        .unwrap();
    let started = Instant::now();
    loop {
        let list = ok(&host.call("jupyter.session_list", json!({})).await);
        if list["sessions"].as_array().unwrap().is_empty() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "not expired: {list}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_gone(pid, Duration::from_secs(10));
    // Room again.
    create(&host).await;
}

#[tokio::test]
async fn local_missing_ipykernel_names_the_fix() {
    // A Python without ipykernel: a bare venv of the test interpreter.
    let dir = tempfile::TempDir::new().unwrap();
    let status = Command::new(venv_python())
        .args(["-m", "venv", "--without-pip"])
        .arg(dir.path().join("bare"))
        .status()
        .unwrap();
    assert!(status.success());
    let bare = dir.path().join("bare/bin/python");
    let host = TestHost::start(&format!(
        "[packs.jupyter]\nconfig = {{ python = {:?} }}\n",
        bare.display().to_string()
    ))
    .await;
    let result = host.call("jupyter.session_create", json!({})).await;
    failed(
        &result,
        "NOT_FOUND",
        &["ipykernel", "pip install ipykernel"],
    );
}

/// The kernel's pid, from inside it.
async fn kernel_pid(host: &TestHost) -> u32 {
    let session = create(host).await;
    exec(host, &session, "import os; os.getpid()").await["result"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Whether `pid` runs (a zombie does not count: it waits for its reaper).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some(Some('Z' | 'X')))
        }
        Err(_) => false,
    }
}

#[track_caller]
fn wait_gone(pid: u32, within: Duration) {
    let started = Instant::now();
    while alive(pid) {
        assert!(
            started.elapsed() < within,
            "kernel process {pid} still runs {within:?} later"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test]
async fn local_sigterm_of_the_host_shuts_kernels_down() {
    let host = host().await;
    let pid = kernel_pid(&host).await;
    assert!(alive(pid));
    // SAFETY: signalling the host child this test started.
    unsafe { libc::kill(host.pid as i32, libc::SIGTERM) };
    wait_gone(pid, Duration::from_secs(10));
}

#[tokio::test]
async fn local_sigkill_of_the_host_leaves_no_kernel_behind() {
    let host = host().await;
    let pid = kernel_pid(&host).await;
    assert!(alive(pid));
    // SAFETY: signalling the host child this test started.
    unsafe { libc::kill(host.pid as i32, libc::SIGKILL) };
    // The kernel polls its parent once a second (JPY_PARENT_PID).
    wait_gone(pid, Duration::from_secs(10));
}

/// A session whose kernel died (`os._exit(1)`) and was reaped, and a
/// process outside packhost that has since taken the kernel's pid.
async fn a_dead_kernel_and_its_pid_taken(host: &TestHost) -> (String, Bystander) {
    let session = create(host).await;
    let pid = exec(host, &session, "import os; os.getpid()").await["result"]
        .as_str()
        .unwrap()
        .parse::<u32>()
        .unwrap();
    let body = exec_err(host, &session, "import os; os._exit(1)", 30.0).await;
    assert_eq!(body["error_type"], "KernelDied", "{body}");
    // The pack reaps it (it polls its kernels): then its number is free.
    let started = Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "kernel process {pid} not reaped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (session, Bystander::spawn(pid))
}

/// Issue 23: once a dead kernel is reaped its pid may go to any process;
/// nothing the pack does with the session after (interrupt, restart, close,
/// the host's shutdown) may signal that process or its group.
#[tokio::test]
async fn local_a_dead_kernels_pid_taken_by_another_process_gets_no_signal() {
    let host = host().await;
    let (session, bystander) = a_dead_kernel_and_its_pid_taken(&host).await;
    let result = host
        .call("jupyter.interrupt", json!({ "session_id": session }))
        .await;
    bystander.assert_untouched("jupyter.interrupt");
    failed(&result, "UPSTREAM_ERROR", &["cannot interrupt", "ended"]);
    ok(&host
        .call("jupyter.session_close", json!({ "session_id": session }))
        .await);
    bystander.assert_untouched("jupyter.session_close");

    let (session, bystander) = a_dead_kernel_and_its_pid_taken(&host).await;
    let done = ok(&host
        .call("jupyter.restart", json!({ "session_id": session }))
        .await);
    assert_eq!(done["action"], "restarted");
    bystander.assert_untouched("jupyter.restart");

    let (_session, bystander) = a_dead_kernel_and_its_pid_taken(&host).await;
    // SAFETY: signalling the host child this test started.
    unsafe { libc::kill(host.pid as i32, libc::SIGTERM) };
    wait_gone(host.pid, Duration::from_secs(20));
    bystander.assert_untouched("the host's shutdown");
}

// ---- local kernels are confined (the sandbox is on by default) ----

/// Runs `code`, which the sandbox must refuse: `PermissionError` in the kernel.
async fn refused(host: &TestHost, session: &str, code: &str) {
    let body = exec_err(host, session, code, 30.0).await;
    assert_eq!(body["error_type"], "PermissionError", "{code}: {body}");
}

#[tokio::test]
async fn local_kernel_cannot_read_the_system_secrets_or_the_home() {
    let host = host().await;
    let session = create(&host).await;
    refused(&host, &session, "open('/etc/shadow').read()").await;
    let home = std::env::var("HOME").expect("HOME");
    let secret = tempfile::Builder::new()
        .prefix(".packhost-secret-")
        .tempdir_in(&home)
        .unwrap();
    let file = secret.path().join("token.txt");
    std::fs::write(&file, "s3cret").unwrap();
    refused(
        &host,
        &session,
        &format!("open({:?}).read()", file.display().to_string()),
    )
    .await;
    refused(&host, &session, &format!("import os; os.listdir({home:?})")).await;
    // Its own home is its session's folder.
    let out = exec(
        &host,
        &session,
        "import os; os.path.expanduser('~') == os.getcwd()",
    )
    .await;
    assert_eq!(out["result"], "True", "{out}");
}

#[tokio::test]
async fn local_kernel_writes_only_in_its_own_folder() {
    let host = host().await;
    let session = create(&host).await;
    let outside = tempfile::TempDir::new().unwrap();
    let planted = outside.path().join("planted.txt");
    refused(
        &host,
        &session,
        &format!("open({:?}, 'w').write('x')", planted.display().to_string()),
    )
    .await;
    assert!(!planted.exists());
    // Its folder and its TMPDIR are its own.
    let code = "import tempfile\nwith tempfile.NamedTemporaryFile() as f:\n    f.write(b'x')\nopen('notes.txt', 'w').write('ok')\nopen('notes.txt').read()";
    assert_eq!(exec(&host, &session, code).await["result"], "'ok'");
}

#[tokio::test]
async fn local_kernel_cannot_kill_the_host() {
    let host = host().await;
    let session = create(&host).await;
    let parent = exec(&host, &session, "import os; os.getppid()").await;
    assert_eq!(
        parent["result"],
        host.pid.to_string(),
        "the host is its parent"
    );
    refused(
        &host,
        &session,
        "import os, signal; os.kill(os.getppid(), signal.SIGKILL)",
    )
    .await;
    // The host serves on, a new kernel too.
    assert_eq!(exec(&host, &session, "print(1)").await["stdout"], "1\n");
    let other = create(&host).await;
    assert_eq!(exec(&host, &other, "print(2)").await["stdout"], "2\n");
}

#[tokio::test]
async fn local_kernel_cannot_reach_the_network() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let host = host().await;
    let session = create(&host).await;
    refused(
        &host,
        &session,
        &format!("import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"),
    )
    .await;
    // Nor UDP, nor Unix sockets (a database's, say).
    refused(
        &host,
        &session,
        "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)",
    )
    .await;
    refused(
        &host,
        &session,
        "import socket; socket.socket(socket.AF_UNIX)",
    )
    .await;
}

#[tokio::test]
async fn local_kernel_cannot_read_another_sessions_folder() {
    let host = host().await;
    let (mine, theirs) = (create(&host).await, create(&host).await);
    let code = "import os\nopen('secret.txt', 'w').write('theirs')\nprint(os.getcwd(), end='')";
    let folder = exec(&host, &theirs, code).await["stdout"]
        .as_str()
        .unwrap()
        .to_owned();
    refused(
        &host,
        &mine,
        &format!("open({folder:?} + '/secret.txt').read()"),
    )
    .await;
    refused(&host, &mine, &format!("import os; os.listdir({folder:?})")).await;
}

#[tokio::test]
async fn local_kernel_past_its_memory_bound_gives_limit_exceeded() {
    let host = TestHost::start(&config(", limits = { memory_mb = 300 }")).await;
    let session = create(&host).await;
    exec(&host, &session, "kept = 1").await;
    // 600 MB, every page touched.
    let result = host
        .call(
            "jupyter.execute_code",
            json!({ "session_id": session, "code": "hog = [b'x' * (50 << 20) for _ in range(12)]" }),
        )
        .await;
    failed(&result, "LIMIT_EXCEEDED", &["limits.memory_mb", "memory"]);
    assert_eq!(structured(&result)["error_type"], "LimitExceeded");
    // Dead until restarted; then a fresh kernel within the same bound.
    let body = exec_err(&host, &session, "kept", 30.0).await;
    assert_eq!(body["error_type"], "KernelDied", "{body}");
    ok(&host
        .call("jupyter.restart", json!({ "session_id": session }))
        .await);
    assert_eq!(
        exec(&host, &session, "print('back')").await["stdout"],
        "back\n"
    );
}

// ---- server backend: a real `jupyter server` on loopback ----

/// A real `jupyter server` for this test's host.
fn jupyter_server() -> JupyterServer {
    JupyterServer::start(&venv_python()).unwrap_or_else(|e| panic!("{e}"))
}

/// The host config using `server` as the jupyter backend.
fn server_config(server: &JupyterServer) -> String {
    config(&format!(
        ", backend = \"server\", url = {:?}, token = {:?}",
        server.url, server.token
    ))
}

#[tokio::test]
async fn server_core_behaviour() {
    let server = jupyter_server();
    let host = TestHost::start(&server_config(&server)).await;
    prints_and_keeps_state(&host).await;
    exceptions_come_back_precisely(&host).await;
    bad_arguments_are_refused(&host).await;
    notebook_sessions_have_their_own_kernel_id(&host).await;
    let list = ok(&host.call("jupyter.session_list", json!({})).await);
    assert_eq!(list["backend"], "server");
}

#[tokio::test]
async fn server_images_timeouts_and_large_output() {
    let server = jupyter_server();
    let host = TestHost::start(&server_config(&server)).await;
    images_come_back_as_image_content(&host).await;
    a_timeout_interrupts_and_keeps_the_session(&host).await;
    three_megabytes_arrive_complete(&host).await;
}

#[tokio::test]
async fn server_a_dead_kernel_says_so_until_restarted() {
    let server = jupyter_server();
    let host = TestHost::start(&server_config(&server)).await;
    a_dead_kernel_says_so_until_restarted(&host).await;
}

#[tokio::test]
async fn server_a_wrong_token_is_unauthorized() {
    let server = jupyter_server();
    let host = TestHost::start(&config(&format!(
        ", backend = \"server\", url = {:?}, token = \"wrong\"",
        server.url
    )))
    .await;
    let result = host.call("jupyter.session_create", json!({})).await;
    failed(&result, "UNAUTHORIZED", &[&server.url, "token"]);
}

#[tokio::test]
async fn a_host_whose_jupyter_server_does_not_answer_is_not_ready() {
    let server = jupyter_server();
    let host = HttpHost::start(&server_config(&server), &[]).await;
    let ready = || web_client().get(format!("{}/readyz", host.base)).send();
    assert_eq!(ready().await.unwrap().status(), 200);
    let token = server.token.clone();
    drop(server);
    let refused = ready().await.unwrap();
    assert_eq!(refused.status(), 503);
    // The reason is the log's, never a stranger's.
    let body = refused.text().await.unwrap();
    assert_eq!(body, "not ready: a pack cannot serve calls\n");
    let log = host.stderr();
    assert!(
        log.contains("not ready") && log.contains("jupyter"),
        "{log}"
    );
    assert!(!log.contains(&token), "{log}");
}
