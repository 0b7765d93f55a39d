//! `exec_py` through the real host: value capture, errors with the user's
//! own line numbers, isolation, limits, and code mode.

use std::time::{Duration, Instant};

use packhost_tests::{
    TestHost, WHOLE_RESULTS, failed, hello_section, is_error, ok, structured, text,
    wait_group_gone, written,
};
use serde_json::{Value, json};

fn config(extra: &str) -> String {
    format!(
        "[packs.exec_py]\n{extra}\n[packs.proj]\n{}\n[aliases]\nprojects = \"proj.list\"\n[projects]\nhere = \".\"\n",
        hello_section("")
    )
}

async fn host() -> TestHost {
    TestHost::start(&config("")).await
}

async fn py(host: &TestHost, code: &str) -> Value {
    let result = host.call("exec_py.run", json!({ "code": code })).await;
    ok(&result)
}

async fn py_error(host: &TestHost, code: &str) -> Value {
    let result = host.call("exec_py.run", json!({ "code": code })).await;
    assert!(
        is_error(&result),
        "expected an error, got {}",
        text(&result)
    );
    structured(&result)
}

#[tokio::test]
async fn the_last_expression_is_the_result() {
    let host = host().await;
    let out = py(&host, "x = 2\nx * 21").await;
    assert_eq!(
        (out["result"].clone(), out["has_value"].clone()),
        (json!(42), json!(true))
    );
    assert_eq!(py(&host, "'lone'").await["result"], "lone");
    let out = py(&host, "print('hi')\n{'a': [1, (2, 3)]}").await;
    assert_eq!(out["stdout"], "hi\n");
    assert_eq!(out["result"], json!({"a": [1, [2, 3]]}));
}

#[tokio::test]
async fn a_top_level_return_ends_the_code_with_its_value() {
    let host = host().await;
    assert_eq!(
        py(
            &host,
            "for i in range(10):\n    if i == 3:\n        return i * 2\n'never'"
        )
        .await["result"],
        6
    );
    // A return inside a function is that function's, not the block's.
    let out = py(&host, "def f():\n    return 5\nf() + 1").await;
    assert_eq!(out["result"], 6);
}

#[tokio::test]
async fn no_value_and_none_are_different() {
    let host = host().await;
    let out = py(&host, "x = 1").await;
    assert_eq!(out["has_value"], false);
    assert_eq!(out["result"], Value::Null);
    assert!(
        out["note"].as_str().unwrap().contains("no return value"),
        "{out}"
    );
    let out = py(&host, "None").await;
    assert_eq!(out["has_value"], true);
    assert_eq!(out["result"], Value::Null);
    assert!(out.get("note").is_none(), "{out}");
    let out = py(&host, "def f():\n    pass\nf()").await;
    assert_eq!(out["has_value"], true);
}

#[tokio::test]
async fn values_that_are_not_json_come_back_as_repr() {
    let host = host().await;
    let out = py(
        &host,
        "class P:\n    def __repr__(self):\n        return 'P()'\nP()",
    )
    .await;
    assert_eq!(out["result"], Value::Null);
    assert_eq!(out["result_repr"], "P()");
    assert_eq!(py(&host, "float('nan')").await["result_repr"], "nan");
    assert_eq!(py(&host, "{1, 2} == {2, 1}").await["result"], true);
}

#[tokio::test]
async fn indentation_as_models_paste_it_is_fine() {
    let host = host().await;
    assert_eq!(
        py(&host, "    x = 4\n\n    y = 5\n\n\n    x * y").await["result"],
        20
    );
    // A block indented with a tab on one line and spaces on another.
    let out = py(&host, "if True:\n\tx = 1\n        y = 2\nx + y").await;
    assert_eq!(out["result"], 3);
}

#[tokio::test]
async fn a_syntax_error_points_at_the_users_line() {
    let host = host().await;
    // Lines count from the first line of the code inside the fence.
    let result = host.run("```python\nx = 1\nz = 3\ny = )\n```").await;
    let message = failed(
        &result,
        "INVALID_ARGUMENT",
        &["SyntaxError", "unmatched ')'", "line 3"],
    );
    let body = structured(&result);
    assert_eq!(body["error_type"], "SyntaxError");
    assert_eq!(body["success"], false);
    assert_eq!(body["line"], 3, "{message}");
    assert_eq!(body["column"], 5, "{message}");
    let traceback = body["traceback"].as_str().unwrap();
    assert!(
        traceback.starts_with("  File \"<code>\", line 3\n    y = )"),
        "{traceback}"
    );
    let result = host.run("```python\nx = 1\nx: int = 2\nx / 0\n```").await;
    assert_eq!(structured(&result)["line"], 3, "{}", text(&result));
}

#[tokio::test]
async fn a_runtime_error_shows_the_users_frames_with_their_lines() {
    let host = host().await;
    let body = py_error(
        &host,
        "def f(x):\n    return 1 / x\n\nprint('before')\nf(0)",
    )
    .await;
    assert_eq!(body["error_type"], "ZeroDivisionError");
    assert_eq!(body["error_message"], "division by zero");
    assert_eq!(body["line"], 2);
    assert_eq!(body["stdout"], "before\n");
    let traceback = body["traceback"].as_str().unwrap();
    assert!(traceback.contains("File \"<code>\", line 5"), "{traceback}");
    assert!(
        traceback.contains("File \"<code>\", line 2, in f"),
        "{traceback}"
    );
    assert!(traceback.contains("return 1 / x"), "{traceback}");
    assert!(
        !traceback.contains("<string>"),
        "runner frames leak: {traceback}"
    );
}

#[tokio::test]
async fn state_does_not_leak_between_calls() {
    let host = host().await;
    py(&host, "import builtins\nbuiltins.leak = 1\nglobal_x = 1").await;
    let body = py_error(&host, "global_x").await;
    assert_eq!(body["error_type"], "NameError");
    let out = py(&host, "import builtins\nhasattr(builtins, 'leak')").await;
    assert_eq!(out["result"], false);
}

#[tokio::test]
async fn a_timeout_kills_the_process_group_and_keeps_the_output() {
    let host = host().await;
    let code = "import subprocess, os\n\
                child = subprocess.Popen(['sleep', '60'])\n\
                print('child', child.pid, 'group', os.getpgid(0), flush=True)\n\
                import time\n\
                time.sleep(60)";
    let started = Instant::now();
    let result = host
        .call("exec_py.run", json!({"code": code, "timeout_ms": 1000}))
        .await;
    let elapsed = started.elapsed();
    failed(&result, "TIMEOUT", &["1000 ms"]);
    let body = structured(&result);
    assert_eq!(body["error_type"], "TimeoutError");
    assert!(elapsed < Duration::from_millis(2000), "{elapsed:?}");
    let stdout = body["stdout"].as_str().unwrap();
    let group: u32 = stdout
        .split_whitespace()
        .nth(3)
        .and_then(|g| g.parse().ok())
        .expect(stdout);
    if let Err(live) = wait_group_gone(group, Duration::from_secs(1)).await {
        panic!("process group {group} outlived the call: {live:?}");
    }
}

/// A call made from code gets what is left of the time of the call that
/// made it, not its own full limit, and is cut with it.
#[tokio::test]
async fn a_call_from_code_gets_what_is_left_of_its_callers_time() {
    let host = TestHost::start(&config("timeout_ms = 3000")).await;
    let out = py(&host, "import time\ntime.sleep(1)\nhello.remaining()['ms']").await;
    let left = out["result"].as_u64().expect("milliseconds");
    assert!(left > 0 && left <= 2000, "{left} ms left after 1 s of 3 s");

    let folder = tempfile::tempdir().unwrap();
    let marker = folder.path().join("abandoned");
    let code = format!(
        "import time\ntime.sleep(1)\nhello.sleep(ms=60000, marker={:?})",
        marker.display().to_string()
    );
    let started = Instant::now();
    let result = host.call("exec_py.run", json!({ "code": code })).await;
    failed(&result, "TIMEOUT", &["exec_py.run", "3 s"]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    for _ in 0..100 {
        if marker.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the call made from code outlived the call that made it");
}

/// A call ends at the runner's answer, not at its exit: what the code wrote
/// up to its last line is all there (more than a pipe holds), and a process
/// it left running, even in a session of its own, is killed with the call.
#[tokio::test]
async fn output_up_to_the_last_line_is_kept_and_leftovers_are_killed() {
    let host = TestHost::start(&(config("") + WHOLE_RESULTS)).await;
    let code = "import subprocess, sys\n\
                sleeper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n\
                sys.stdout.write('o' * 200000)\n\
                sys.stderr.write('e' * 200000)\n\
                print(' sleeper', sleeper.pid, end='')\n\
                41 + 1";
    let out = py(&host, code).await;
    assert_eq!(out["result"], 42);
    let stdout = out["stdout"].as_str().unwrap();
    let (written, sleeper) = stdout.split_once(" sleeper ").expect(stdout);
    assert_eq!(written, "o".repeat(200_000));
    assert_eq!(out["stderr"], "e".repeat(200_000));
    let sleeper: u32 = sleeper.parse().unwrap();
    if let Err(live) = wait_group_gone(sleeper, Duration::from_secs(2)).await {
        panic!("a process the code left in its own session outlived the call: {live:?}");
    }
}

#[tokio::test]
async fn huge_output_is_truncated_and_memory_stays_bounded() {
    // Results whole: the pack's cap is the point, not the host's handle.
    let host = TestHost::start(&(config("") + WHOLE_RESULTS)).await;
    let out = py(
        &host,
        "import sys\nfor _ in range(500):\n    sys.stdout.write('x' * 100_000 + '\\n')\n'done'",
    )
    .await;
    let stdout = out["stdout"].as_str().unwrap();
    assert!(
        stdout.ends_with("[Output truncated]"),
        "{}",
        &stdout[stdout.len() - 40..]
    );
    assert!(stdout.len() <= (1 << 20) + 30, "{}", stdout.len());
    assert_eq!(out["result"], "done");
}

#[tokio::test]
async fn the_hosts_secrets_do_not_reach_the_code() {
    let dir = tempfile::TempDir::new().unwrap();
    std::fs::write(dir.path().join("packs.toml"), config("")).unwrap();
    // TestHost clears the environment; a secret set on purpose must not leak.
    let mut command = packhost_tests::packhost_command(dir.path());
    command
        .env("PACKHOST_TEST_SECRET", "hunter2")
        .env("GITHUB_TOKEN", "ghp_x");
    let output = command
        .args(["call", "import os\nsorted(os.environ)"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("PATH") && stdout.contains("TMPDIR"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("GITHUB_TOKEN") && !stdout.contains("SECRET"),
        "{stdout}"
    );
}

#[tokio::test]
async fn code_mode_calls_packs_and_aliases() {
    let host = host().await;
    let out = py(&host, "x = proj.list()\nlen(x['projects'])").await;
    assert_eq!(out["result"], 1);
    assert_eq!(
        py(&host, "projects()['projects'][0]['name']").await["result"],
        "here"
    );
    assert_eq!(
        py(&host, "hello.greet('py', excitement=1)['text']").await["result"],
        "hello, py!"
    );
    // `run` hands a block that is not a single call to exec_py with the bridge on.
    let result = host.run("x = proj.list()\nlen(x['projects'])").await;
    assert_eq!(ok(&result)["result"], 1);
}

#[tokio::test]
async fn project_paths_are_path_objects() {
    let host = host().await;
    let here = host.dir.path().display().to_string();
    let out = py(&host, "p = proj.here / 'src'\n[type(p).__name__, str(p), isinstance(p, __import__('pathlib').Path)]").await;
    assert_eq!(
        out["result"],
        json!(["ProjectPath", format!("{here}/src"), true])
    );
    let body = py_error(&host, "proj.nothere").await;
    assert_eq!(body["error_type"], "AttributeError");
    let message = body["error_message"].as_str().unwrap();
    assert!(
        message.contains("projects: here") && message.contains("list"),
        "{message}"
    );
}

#[tokio::test]
async fn unknown_names_and_bad_arguments_explain_themselves() {
    let host = host().await;
    let body = py_error(&host, "nopack.fn()").await;
    assert_eq!(body["error_type"], "AttributeError");
    assert!(
        body["error_message"]
            .as_str()
            .unwrap()
            .contains("packs: exec_py, hello, packhost, proj"),
        "{body}"
    );
    let body = py_error(&host, "proj.lst()").await;
    assert_eq!(body["error_type"], "AttributeError");
    assert!(
        body["error_message"]
            .as_str()
            .unwrap()
            .contains("grep, list, ls, path, read")
            || body["error_message"].as_str().unwrap().contains("list"),
        "{body}"
    );
    let body = py_error(&host, "hello.greet()").await;
    assert_eq!(body["error_type"], "TypeError");
    assert!(
        body["error_message"]
            .as_str()
            .unwrap()
            .contains("hello.greet(name: string"),
        "{body}"
    );
    let body = py_error(&host, "hello.greet(name=5)").await;
    assert_eq!(body["error_type"], "TypeError");
    assert!(
        body["error_message"]
            .as_str()
            .unwrap()
            .contains("expected hello.greet(name: string"),
        "{body}"
    );
}

/// The host binds and checks a call's arguments wherever it comes from: the
/// same bad call reads the same from `run`, from `tools/call` and from code.
#[tokio::test]
async fn a_bad_call_reads_the_same_from_run_tools_call_and_code() {
    let host = host().await;
    let said = |result: &rmcp::model::CallToolResult| {
        let error = packhost_tests::error_of(result);
        assert_eq!(error["code"], "INVALID_ARGUMENT", "{error}");
        format!(
            "{}; {}",
            error["message"].as_str().unwrap(),
            error["help"].as_str().unwrap()
        )
    };
    let from_run = said(&host.run("hello.greet(name=5)").await);
    let from_tools_call = said(&host.call("hello.greet", json!({"name": 5})).await);
    let body = py_error(&host, "hello.greet(name=5)").await;
    assert_eq!(body["error_type"], "TypeError");
    assert_eq!(from_run, from_tools_call);
    assert_eq!(body["error_message"], from_run.as_str());
    assert!(
        from_run.contains("expected hello.greet(name: string"),
        "{from_run}"
    );
    // Positional arguments are bound by the host too.
    let from_run = said(&host.run("hello.greet('a', 1, 2, 3)").await);
    let body = py_error(&host, "hello.greet('a', 1, 2, 3)").await;
    assert_eq!(body["error_message"], from_run.as_str());
    assert!(from_run.contains("positional argument"), "{from_run}");
}

/// Threads of the code calling tools side by side each get their own
/// reply (the pack serves calls concurrently, replies in any order).
#[tokio::test]
async fn threads_calling_tools_at_once_get_their_own_answers() {
    let host = host().await;
    let code = "import threading\n\
                out = {}\n\
                def work(i):\n    out[i] = hello.echo(value=i)['value']\n\
                threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]\n\
                [t.start() for t in threads]\n\
                [t.join() for t in threads]\n\
                [out[i] for i in range(8)]";
    let out = py(&host, code).await;
    assert_eq!(out["result"], json!([0, 1, 2, 3, 4, 5, 6, 7]));
}

#[tokio::test]
async fn a_pack_error_is_raised_as_pack_error() {
    let host = host().await;
    let out = py(&host, "try:\n    proj.read('here', 'missing.txt')\nexcept PackError as e:\n    r = [e.code, 'missing.txt' in e.message]\nr").await;
    assert_eq!(out["result"], json!(["NOT_FOUND", true]));
    let body = py_error(&host, "hello.panic()").await;
    assert_eq!(body["error_type"], "PackError");
    assert!(
        body["error_message"]
            .as_str()
            .unwrap()
            .starts_with("INTERNAL"),
        "{body}"
    );
}

#[tokio::test]
async fn prints_around_tool_calls_do_not_corrupt_the_channel() {
    let host = host().await;
    let code = "import sys\nfor i in range(20):\n    print('{\"type\": \"value\"}', i)\n    sys.stderr.write('err\\n')\n    n = len(proj.list()['projects'])\nn";
    let out = py(&host, code).await;
    assert_eq!(out["result"], 1);
    assert_eq!(out["stdout"].as_str().unwrap().lines().count(), 20);
}

#[tokio::test]
async fn without_the_bridge_packs_are_not_there() {
    let host = host().await;
    let result = host
        .call(
            "exec_py.run",
            json!({"code": "proj.list()", "bridge": false}),
        )
        .await;
    let body = structured(&result);
    assert_eq!(body["error_type"], "AttributeError", "{body}");
}

#[tokio::test]
async fn cwd_must_be_inside_an_allowed_root() {
    let root = tempfile::TempDir::new().unwrap();
    std::fs::create_dir(root.path().join("work")).unwrap();
    let extra = format!("config = {{ cwd_roots = [\"{}\"] }}", root.path().display());
    let host = TestHost::start(&config(&extra)).await;
    let inside = root.path().join("work").canonicalize().unwrap();
    let result = host
        .call(
            "exec_py.run",
            json!({"code": "import os\nos.getcwd()", "cwd": inside}),
        )
        .await;
    assert_eq!(ok(&result)["result"], inside.display().to_string());
    let result = host
        .call("exec_py.run", json!({"code": "1", "cwd": "/etc"}))
        .await;
    failed(
        &result,
        "ACCESS_DENIED",
        &["`cwd` /etc is outside the allowed folders", "cwd_roots"],
    );
    // Without `cwd`: a fresh temporary folder, which is also TMPDIR.
    let out = py(&host, "import os, tempfile\n[os.getcwd() == os.environ['TMPDIR'], tempfile.gettempdir() == os.getcwd()]").await;
    assert_eq!(out["result"], json!([true, true]));
}

/// Processes whose command line holds the runner (the zygote is one) and
/// whose parent is `pid`.
fn interpreters_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let child: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let ppid: u32 = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            let cmdline = std::fs::read_to_string(entry.path().join("cmdline")).ok()?;
            (ppid == pid && cmdline.contains("packhost exec_py runner")).then_some(child)
        })
        .collect()
}

#[tokio::test]
async fn cancelling_the_call_kills_the_interpreter() {
    // The code tells its group through a folder it may write.
    let shared = tempfile::tempdir().unwrap();
    let root = shared.path().display().to_string();
    let host = TestHost::start(&config(&format!(
        "config = {{ cwd_roots = [{root:?}], cwd_writable = true }}"
    )))
    .await;
    let marker = shared.path().join("pgid");
    let code = "import os, time\nopen('pgid', 'w').write(str(os.getpgid(0)))\ntime.sleep(60)";
    let params = rmcp::model::CallToolRequestParams::new("exec_py.run").with_arguments(
        json!({"code": code, "cwd": root})
            .as_object()
            .unwrap()
            .clone(),
    );
    let call = packhost_tests::schemas::call_tool(&host.client, params);
    // Dropping the request future makes the client send notifications/cancelled,
    // once the code is surely running (a busy machine can take seconds).
    let group: u32 = tokio::select! {
        result = call => panic!("the code should still be sleeping: {result:?}"),
        group = written(&marker, Duration::from_secs(20)) => group.expect("the code never started"),
    };
    if let Err(live) = wait_group_gone(group, Duration::from_secs(2)).await {
        panic!("the interpreter outlived its cancelled call: {live:?}");
    }
}

#[tokio::test]
async fn idle_interpreters_end_with_the_host() {
    let host = host().await;
    py(&host, "1").await;
    let pid = host.pid;
    let mut idle = Vec::new();
    for _ in 0..100 {
        idle = interpreters_of(pid);
        if !idle.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(idle.len(), 1, "one warm zygote should be waiting");
    host.client.cancel().await.unwrap();
    for _ in 0..150 {
        if idle
            .iter()
            .all(|p| pack_process::live_members(*p).is_empty())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("idle interpreters outlived the host: {idle:?}");
}

/// Polls `interpreters_of(pid)` until `done` says so (up to 20 s).
async fn interpreters_until(pid: u32, done: impl Fn(&[u32]) -> bool) -> Vec<u32> {
    let mut seen = Vec::new();
    for _ in 0..1000 {
        seen = interpreters_of(pid);
        if done(&seen) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    seen
}

/// The pool follows demand: after `pool_idle_secs` without a call the pack
/// holds no Python at all (the ready children and the zygote are stopped),
/// and the next call starts them again.
#[tokio::test]
async fn an_idle_pack_stops_its_interpreters_and_the_next_call_starts_them() {
    let host = TestHost::start(&config("config = { pool_idle_secs = 1 }")).await;
    assert_eq!(py(&host, "1+1").await["result"], 2);
    let warm = interpreters_until(host.pid, |seen| !seen.is_empty()).await;
    assert_eq!(warm.len(), 1, "one warm zygote should be waiting");
    let idle = interpreters_until(host.pid, <[u32]>::is_empty).await;
    assert!(
        idle.is_empty(),
        "the zygote outlived the idle period: {idle:?}"
    );
    // The zygote stops only once its children are reaped; its own group
    // goes too (a killed process ends in steps).
    for zygote in &warm {
        if let Err(live) = wait_group_gone(*zygote, Duration::from_secs(5)).await {
            panic!("a process of zygote {zygote} outlived it: {live:?}");
        }
    }
    assert_eq!(py(&host, "2+2").await["result"], 4);
    let again = interpreters_until(host.pid, |seen| !seen.is_empty()).await;
    assert_eq!(again.len(), 1, "the next call starts a zygote again");
    assert_ne!(again, warm, "a new zygote, not the stopped one");
}

/// Calls logged as done by the host, in order (`tool=…` of each `call done`).
fn calls_done(host: &TestHost) -> Vec<String> {
    host.stderr()
        .lines()
        .filter(|line| line.contains("call done") || line.contains("call failed"))
        .filter_map(|line| {
            let tool = line.split("tool=").nth(1)?;
            Some(tool.split([' ', '}']).next()?.to_owned())
        })
        .collect()
}

#[tokio::test]
async fn a_call_of_a_name_that_is_no_tool_runs_as_python() {
    let host = host().await;
    // A pack call takes the host's fast path: no Python process.
    ok(&host.run("proj.list()").await);
    assert_eq!(calls_done(&host), ["proj.list"]);
    assert_eq!(ok(&host.run("abs(-3)").await)["result"], 3);
    assert_eq!(calls_done(&host), ["proj.list", "exec_py.run"]);
    assert_eq!(ok(&host.run("`max([4, 9])`").await)["result"], 9);
    assert_eq!(
        ok(&host.run("len(proj.list()['projects'])").await)["result"],
        1
    );
    assert_eq!(
        ok(&host.run("projects()").await)["projects"][0]["name"],
        "here"
    );
    // Python does not know it either: the error says what exists.
    let result = host.run("projetcs(limit=2)").await;
    let body = structured(&result);
    assert!(is_error(&result), "{}", text(&result));
    assert_eq!(body["error_type"], "NameError", "{body}");
    let message = body["error_message"].as_str().unwrap();
    for part in [
        "name 'projetcs' is not defined",
        "did you mean `projects`",
        "packs: exec_py, hello, packhost, proj",
        "aliases: projects",
        "`packhost.packs()` lists every function",
    ] {
        assert!(message.contains(part), "{part:?} missing from {message}");
    }
    // The closest few, never every function.
    assert!(!message.contains("hello.greet"), "{message}");
}
