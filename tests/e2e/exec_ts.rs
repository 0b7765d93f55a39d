//! The `exec_ts` pack through the real host: buffered execution (JavaScript,
//! TypeScript, errors, timeouts, caps, environment), notebook sessions and
//! cells (create, run, import each other, errors, restart), `.src.md` export
//! and import, and `npm_install` from a local package.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use packhost_tests::{TestHost, WHOLE_RESULTS, failed, is_error, ok, structured, text};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use tempfile::TempDir;

/// A notebooks root of its own per test.
pub(crate) struct Notebooks {
    pub(crate) root: TempDir,
}

impl Notebooks {
    pub(crate) fn new() -> Self {
        Self {
            root: TempDir::new().unwrap(),
        }
    }

    /// The pack's config: this root, and `extra` (`, key = value`...).
    fn config(&self, extra: &str) -> String {
        format!(
            "[packs.exec_ts]\nconfig = {{ notebooks_dir = {}{extra} }}\n",
            toml_path(self.root.path())
        )
    }

    pub(crate) async fn host(&self) -> TestHost {
        TestHost::start(&self.config("")).await
    }

    pub(crate) async fn host_with(&self, extra: &str) -> TestHost {
        TestHost::start(&self.config(extra)).await
    }
}

pub(crate) fn toml_path(path: &Path) -> String {
    format!("{:?}", path.display().to_string())
}

/// Assert an error result that keeps the run shape; return that shape.
#[track_caller]
fn failed_run(result: &CallToolResult, code: &str) -> Value {
    assert!(is_error(result), "expected an error, got: {}", text(result));
    assert!(
        text(result).starts_with(&format!("{code}: ")),
        "expected {code}: {}",
        text(result)
    );
    let output = structured(result);
    for key in ["stdout", "stderr", "exitCode", "executionTime"] {
        assert!(output.get(key).is_some(), "no `{key}` in {output}");
    }
    output
}

async fn execute(host: &TestHost, args: Value) -> CallToolResult {
    host.call("exec_ts.execute", args).await
}

pub(crate) async fn create_session(host: &TestHost) -> String {
    let created = ok(&host.call("exec_ts.session_create", json!({})).await);
    created["sessionId"].as_str().unwrap().to_owned()
}

pub(crate) async fn create_cell(
    host: &TestHost,
    session: &str,
    filename: &str,
    source: &str,
) -> String {
    let created = ok(&host
        .call(
            "exec_ts.cell_create",
            json!({"sessionId": session, "filename": filename, "source": source}),
        )
        .await);
    assert_eq!(created["filename"], filename);
    created["cellId"].as_str().unwrap().to_owned()
}

pub(crate) async fn run_cell(host: &TestHost, session: &str, cell: &str) -> CallToolResult {
    host.call(
        "exec_ts.cell_execute",
        json!({"sessionId": session, "cellId": cell}),
    )
    .await
}

// ---------------------------------------------------------------- execute

#[tokio::test]
async fn javascript_prints_hello_world() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let output = ok(&execute(
        &host,
        json!({"code": "console.log(\"hello world\")", "language": "javascript"}),
    )
    .await);
    assert_eq!(output["stdout"], "hello world\n");
    assert_eq!(output["stderr"], "");
    assert_eq!(output["exitCode"], 0);
    assert!(output["executionTime"].is_u64(), "{output}");
}

#[tokio::test]
async fn stderr_and_a_non_zero_exit_are_an_error_result_with_the_run_shape() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let result = execute(
        &host,
        json!({"code": "console.error(\"error message\"); process.exit(1)", "language": "javascript"}),
    )
    .await;
    let output = failed_run(&result, "EXECUTION_ERROR");
    assert_eq!(output["stderr"], "error message\n");
    assert_eq!(output["stdout"], "");
    assert_eq!(output["exitCode"], 1);
}

#[tokio::test]
async fn typescript_types_are_stripped_before_node_runs_it() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    // TypeScript is the default language.
    let output = ok(&execute(
        &host,
        json!({"code": "const x: number = 42; console.log(x)"}),
    )
    .await);
    assert_eq!(output["stdout"], "42\n");
    let output = ok(&execute(
        &host,
        json!({"code": "interface P { name: string }\nenum E { A, B }\nconst p: P = { name: 'n' };\nconsole.log(p.name, E.B);"}),
    )
    .await);
    assert_eq!(output["stdout"], "n 1\n");
}

#[tokio::test]
async fn a_typescript_syntax_error_names_the_original_line() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let result = execute(
        &host,
        json!({"code": "const a = 1;\n\nconst x: number = ;\n"}),
    )
    .await;
    let output = failed_run(&result, "INVALID_ARGUMENT");
    let stderr = output["stderr"].as_str().unwrap();
    assert!(
        stderr.starts_with("SyntaxError: Expression expected (line 3, column 19)\n"),
        "{stderr}"
    );
    assert!(stderr.contains("input.ts:3:19"), "{stderr}");
    assert!(stderr.contains("const x: number = ;"), "{stderr}");
    assert_ne!(output["exitCode"], 0);
}

#[tokio::test]
async fn a_thrown_error_gives_message_stack_and_the_original_line() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let result = execute(
        &host,
        json!({"code": "const a: number = 1;\n\nthrow new Error(\"kaboom \" + a);\n"}),
    )
    .await;
    let output = failed_run(&result, "EXECUTION_ERROR");
    let stderr = output["stderr"].as_str().unwrap();
    assert!(stderr.contains("Error: kaboom 1"), "{stderr}");
    // Types were replaced by whitespace: line 3, column 7 as in the original.
    assert!(stderr.contains(":3:7"), "{stderr}");
    assert_ne!(output["exitCode"], 0);
}

#[tokio::test]
async fn es_modules_and_top_level_await_work() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let output = ok(&execute(
        &host,
        json!({"code": "import { setTimeout as sleep } from 'node:timers/promises';\nconst v: string = await sleep(5, 'awake');\nconsole.log(v);"}),
    )
    .await);
    assert_eq!(output["stdout"], "awake\n");
}

/// Whether process `pid` is gone (or a zombie waiting for its reaper).
fn process_gone(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn a_timeout_kills_the_group_keeps_output_and_returns_in_time() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    // A child that inherits (and so holds) the pipes must not delay the
    // result, and must not outlive the call.
    let code = "import { spawn } from 'node:child_process';\n\
                const child = spawn('sleep', ['30'], { stdio: 'inherit' });\n\
                console.log(`before ${child.pid}`);\n\
                while (true) {}";
    let started = Instant::now();
    let result = execute(
        &host,
        json!({"code": code, "language": "javascript", "timeout": 1000}),
    )
    .await;
    let elapsed = started.elapsed();
    let output = failed_run(&result, "TIMEOUT");
    assert_eq!(output["exitCode"], 124);
    let stdout = output["stdout"].as_str().unwrap();
    let pid: u64 = stdout
        .strip_prefix("before ")
        .and_then(|rest| rest.trim_end().parse().ok())
        .unwrap_or_else(|| panic!("stdout: {stdout:?}"));
    assert!(output["executionTime"].as_u64().unwrap() < 2000, "{output}");
    assert!(elapsed < Duration::from_millis(2000), "{elapsed:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !process_gone(pid) {
        assert!(
            Instant::now() < deadline,
            "the grandchild {pid} outlived the call"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn output_is_capped_at_one_mebibyte_with_a_marker() {
    let nb = Notebooks::new();
    // Results whole: the pack's cap is the point, not the host's handle.
    let host = TestHost::start(&(nb.config("") + WHOLE_RESULTS)).await;
    let code =
        "const line = 'x'.repeat(100);\nfor (let i = 0; i < 1000000; i++) console.log(line);";
    let output = ok(&execute(
        &host,
        json!({"code": code, "language": "javascript", "timeout": 55000}),
    )
    .await);
    let stdout = output["stdout"].as_str().unwrap();
    assert!(stdout.len() <= (1 << 20) + 50, "{}", stdout.len());
    assert!(stdout.len() > 1 << 19, "{}", stdout.len());
    assert!(
        stdout.ends_with("\n[Output truncated]"),
        "{}",
        &stdout[stdout.len() - 40..]
    );
}

#[tokio::test]
async fn env_adds_variables_and_the_host_environment_stays_out() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let output = ok(&execute(
        &host,
        json!({"code": "console.log(process.env.GREETING); console.log(Object.keys(process.env).sort().join(','))",
               "language": "javascript", "env": {"GREETING": "hi"}}),
    )
    .await);
    let stdout = output["stdout"].as_str().unwrap();
    let mut lines = stdout.lines();
    assert_eq!(lines.next(), Some("hi"));
    let names: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert!(names.contains(&"PATH"), "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| ["GREETING", "PATH", "HOME", "LANG", "TMPDIR"].contains(n)),
        "{names:?}"
    );
}

#[tokio::test]
async fn cwd_is_the_working_directory_inside_the_roots_and_read_only() {
    let nb = Notebooks::new();
    let roots = TempDir::new().unwrap();
    let dir = roots.path().join("project");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("data.txt"), "from cwd").unwrap();
    let host = nb
        .host_with(&format!(", cwd_roots = [{}]", toml_path(roots.path())))
        .await;
    let cwd = dir.display().to_string();
    let output = ok(&execute(
        &host,
        json!({"code": "import { readFileSync } from 'node:fs';\nconsole.log(readFileSync('data.txt', 'utf8'));",
               "cwd": cwd}),
    )
    .await);
    assert_eq!(output["stdout"], "from cwd\n");
    // Read-only without `cwd_writable`; its own TMPDIR stays writable.
    let write = "import { writeFileSync } from 'node:fs';\n\
                 writeFileSync(process.env.TMPDIR + '/t.txt', 'ok');\n\
                 writeFileSync('out.txt', 'x');";
    let result = execute(&host, json!({"code": write, "cwd": cwd})).await;
    let output = failed_run(&result, "EXECUTION_ERROR");
    assert!(
        output["stderr"].as_str().unwrap().contains("EACCES"),
        "{output}"
    );
    assert!(!dir.join("out.txt").exists());

    let result = execute(&host, json!({"code": "1", "cwd": "relative/dir"})).await;
    failed(
        &result,
        "INVALID_ARGUMENT",
        &[
            "`cwd` \"relative/dir\"",
            "absolute path to an existing directory",
        ],
    );
    // Outside the roots: refused, naming them and the way out.
    let outside = TempDir::new().unwrap();
    let result = execute(
        &host,
        json!({"code": "1", "cwd": outside.path().display().to_string()}),
    )
    .await;
    failed(
        &result,
        "ACCESS_DENIED",
        &[
            "outside the allowed folders",
            &roots.path().display().to_string(),
            "cwd_roots",
        ],
    );
    // `..` does not leave a root.
    let escape = format!("{cwd}/../../");
    failed(
        &execute(&host, json!({"code": "1", "cwd": escape})).await,
        "ACCESS_DENIED",
        &["outside the allowed folders"],
    );
}

#[tokio::test]
async fn cwd_writable_lets_code_write_in_its_cwd() {
    let nb = Notebooks::new();
    let roots = TempDir::new().unwrap();
    let host = nb
        .host_with(&format!(
            ", cwd_roots = [{}], cwd_writable = true",
            toml_path(roots.path())
        ))
        .await;
    let code = "import { writeFileSync } from 'node:fs';\nwriteFileSync('out.txt', 'written');";
    ok(&execute(
        &host,
        json!({"code": code, "cwd": roots.path().display().to_string()}),
    )
    .await);
    assert_eq!(
        std::fs::read_to_string(roots.path().join("out.txt")).unwrap(),
        "written"
    );
}

#[tokio::test]
async fn without_cwd_roots_every_cwd_is_refused() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let dir = TempDir::new().unwrap();
    let result = execute(
        &host,
        json!({"code": "1", "cwd": dir.path().display().to_string()}),
    )
    .await;
    failed(
        &result,
        "ACCESS_DENIED",
        &["none are configured", "leave `cwd` out"],
    );
}

#[tokio::test]
async fn a_missing_node_is_an_error_naming_what_to_install() {
    let nb = Notebooks::new();
    let config = format!(
        "[packs.exec_ts]\nconfig = {{ node = \"node-not-installed-here\", notebooks_dir = {} }}\n",
        toml_path(nb.root.path())
    );
    let host = TestHost::start(&config).await;
    let result = execute(&host, json!({"code": "console.log(1)"})).await;
    let output = failed_run(&result, "NOT_FOUND");
    let stderr = output["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("`node-not-installed-here` was not found on PATH"),
        "{stderr}"
    );
    assert!(stderr.contains("install Node.js"), "{stderr}");
    assert_eq!(output["exitCode"], 127);
    // The host keeps serving the rest of the pack.
    ok(&host.call("exec_ts.session_list", json!({})).await);
}

// --------------------------------------------------------------- sessions

#[tokio::test]
async fn a_session_cell_runs_and_is_listed() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let session = create_session(&host).await;
    let created = ok(&host
        .call(
            "exec_ts.cell_create",
            json!({"sessionId": session, "source": "console.log(\"test output\")"}),
        )
        .await);
    assert_eq!(created["filename"], "cell-1.ts");
    let cell = created["cellId"].as_str().unwrap();
    let output = ok(&run_cell(&host, &session, cell).await);
    assert_eq!(output["stdout"], "test output\n");
    assert_eq!(output["exitCode"], 0);

    let dir = nb.root.path().join(&session);
    assert!(dir.join("package.json").is_file());
    assert!(dir.join("tsconfig.json").is_file());
    assert!(dir.join("src/cell-1.ts").is_file());
    let list = ok(&host
        .call("exec_ts.cell_list", json!({"sessionId": session}))
        .await);
    assert_eq!(
        list["cells"],
        json!([{"cellId": cell, "type": "code", "filename": "cell-1.ts",
                "language": "typescript", "source": "console.log(\"test output\")"}])
    );
    let sessions = ok(&host.call("exec_ts.session_list", json!({})).await);
    assert_eq!(sessions["sessions"][0]["sessionId"], session.as_str());
    assert_eq!(sessions["sessions"][0]["cells"], 1);
}

#[tokio::test]
async fn a_throwing_cell_is_an_error_with_its_stack() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let session = create_session(&host).await;
    let cell = create_cell(
        &host,
        &session,
        "boom.ts",
        "const n: number = 2;\nthrow new Error(`cell boom ${n}`);\n",
    )
    .await;
    let output = failed_run(&run_cell(&host, &session, &cell).await, "EXECUTION_ERROR");
    let stderr = output["stderr"].as_str().unwrap();
    assert!(stderr.contains("Error: cell boom 2"), "{stderr}");
    assert!(stderr.contains("boom.ts:2:7"), "{stderr}");
    assert_ne!(output["exitCode"], 0);
}

#[tokio::test]
async fn a_cell_syntax_error_names_its_file_and_line() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let session = create_session(&host).await;
    let cell = create_cell(
        &host,
        &session,
        "broken.ts",
        "const a = 1;\nconst b: number = ;\n",
    )
    .await;
    let output = failed_run(&run_cell(&host, &session, &cell).await, "INVALID_ARGUMENT");
    let stderr = output["stderr"].as_str().unwrap();
    assert!(
        stderr.starts_with("SyntaxError: Expression expected (line 2, column 19)\n"),
        "{stderr}"
    );
    assert!(stderr.contains("broken.ts:2:19"), "{stderr}");
    assert_eq!(output["exitCode"], 1);
}

#[tokio::test]
async fn a_missing_session_is_session_not_found_with_the_run_shape() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    for id in ["nope", "../x", "/etc", "..", "a/../../b"] {
        let result = run_cell(&host, id, "c1").await;
        let output = failed_run(&result, "SESSION_NOT_FOUND");
        let stderr = output["stderr"].as_str().unwrap();
        assert!(stderr.contains("SESSION_NOT_FOUND"), "{stderr}");
        assert!(stderr.contains(&format!("`{id}`")), "{stderr}");
        assert_eq!(output["exitCode"], 1);
        assert_eq!(output["executionTime"], 0);
    }
    // Functions without a run shape answer with the plain error.
    let result = host
        .call(
            "exec_ts.cell_create",
            json!({"sessionId": "../escape", "source": "1"}),
        )
        .await;
    failed(
        &result,
        "SESSION_NOT_FOUND",
        &["`../escape`", "you have no sessions"],
    );
    assert!(!nb.root.path().join("../escape").exists());
}

#[tokio::test]
async fn a_missing_cell_is_cell_not_found_listing_the_cells() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let session = create_session(&host).await;
    let cell = create_cell(&host, &session, "a.ts", "1").await;
    let output = failed_run(
        &run_cell(&host, &session, "c-missing").await,
        "CELL_NOT_FOUND",
    );
    let stderr = output["stderr"].as_str().unwrap();
    assert!(stderr.contains("CELL_NOT_FOUND"), "{stderr}");
    assert!(stderr.contains("`c-missing`"), "{stderr}");
    assert!(stderr.contains(&format!("{cell} (a.ts)")), "{stderr}");
    assert_eq!(output["exitCode"], 1);
    assert_eq!(output["executionTime"], 0);
}

#[tokio::test]
async fn a_looping_cell_times_out() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let session = create_session(&host).await;
    let cell = create_cell(
        &host,
        &session,
        "loop.js",
        "console.log('start');\nwhile(true){}\n",
    )
    .await;
    let started = Instant::now();
    let result = host
        .call(
            "exec_ts.cell_execute",
            json!({"sessionId": session, "cellId": cell, "timeout": 1000}),
        )
        .await;
    let output = failed_run(&result, "TIMEOUT");
    assert_eq!(output["exitCode"], 124);
    assert_eq!(output["stdout"], "start\n");
    assert!(output["executionTime"].as_u64().unwrap() < 2000, "{output}");
    assert!(started.elapsed() < Duration::from_millis(2000));
}

#[tokio::test]
async fn a_cell_imports_another_cells_export() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let session = create_session(&host).await;
    create_cell(
        &host,
        &session,
        "answer.ts",
        "export const answer: number = 42;\n",
    )
    .await;
    let ts = create_cell(
        &host,
        &session,
        "use.ts",
        "import { answer } from './answer.ts';\nconsole.log(answer + 1);\n",
    )
    .await;
    assert_eq!(ok(&run_cell(&host, &session, &ts).await)["stdout"], "43\n");
    // JavaScript cells import TypeScript ones the TypeScript way (`.js`) or bare.
    let js = create_cell(
        &host,
        &session,
        "use.js",
        "import { answer } from './answer.js';\nimport { answer as again } from './answer';\nconsole.log(answer, again);\n",
    )
    .await;
    assert_eq!(
        ok(&run_cell(&host, &session, &js).await)["stdout"],
        "42 42\n"
    );
}

#[tokio::test]
async fn language_comes_from_metadata_then_extension_then_the_session() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let created = ok(&host
        .call(
            "exec_ts.session_create",
            json!({"title": "js", "language": "javascript"}),
        )
        .await);
    let session = created["sessionId"].as_str().unwrap();
    for args in [
        json!({"sessionId": session, "source": "1", "filename": "a.mts"}),
        json!({"sessionId": session, "source": "1", "filename": "b.ts", "language": "javascript"}),
        json!({"sessionId": session, "source": "1"}),
    ] {
        ok(&host.call("exec_ts.cell_create", args).await);
    }
    let list = ok(&host
        .call("exec_ts.cell_list", json!({"sessionId": session}))
        .await);
    let got: Vec<(Value, Value)> = list["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["filename"].clone(), c["language"].clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (json!("a.mts"), json!("typescript")),
            (json!("b.ts"), json!("javascript")),
            (json!("cell-1.js"), json!("javascript")),
        ]
    );
    let result = host
        .call(
            "exec_ts.cell_create",
            json!({"sessionId": session, "source": "1", "filename": "../x.ts"}),
        )
        .await;
    failed(&result, "INVALID_ARGUMENT", &["`../x.ts`", "ending in .ts"]);
}

#[tokio::test]
async fn update_delete_and_session_delete() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let session = create_session(&host).await;
    let cell = create_cell(&host, &session, "a.ts", "console.log('one')").await;
    ok(&host
        .call(
            "exec_ts.cell_update",
            json!({"sessionId": session, "cellId": cell, "source": "console.log('two')"}),
        )
        .await);
    assert_eq!(
        ok(&run_cell(&host, &session, &cell).await)["stdout"],
        "two\n"
    );
    ok(&host
        .call(
            "exec_ts.cell_delete",
            json!({"sessionId": session, "cellId": cell}),
        )
        .await);
    failed_run(&run_cell(&host, &session, &cell).await, "CELL_NOT_FOUND");
    ok(&host
        .call("exec_ts.session_delete", json!({"sessionId": session}))
        .await);
    assert!(!nb.root.path().join(&session).exists());
    let sessions = ok(&host.call("exec_ts.session_list", json!({})).await);
    assert_eq!(sessions["sessions"], json!([]));
}

#[tokio::test]
async fn export_then_import_keeps_the_cells() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let created = ok(&host
        .call("exec_ts.session_create", json!({"title": "Round trip"}))
        .await);
    let session = created["sessionId"].as_str().unwrap();
    create_cell(
        &host,
        session,
        "answer.ts",
        "export const answer: number = 42;\n",
    )
    .await;
    create_cell(
        &host,
        session,
        "use.ts",
        "import { answer } from './answer.ts';\nconsole.log(`answer ${answer}`);\n",
    )
    .await;
    let exported = ok(&host
        .call("exec_ts.session_export", json!({"sessionId": session}))
        .await);
    let markdown = exported["markdown"].as_str().unwrap();
    assert!(
        markdown.starts_with("<!-- srcbook:{\"language\":\"typescript\"} -->\n\n# Round trip\n"),
        "{markdown}"
    );
    assert!(markdown.contains("###### package.json\n"), "{markdown}");
    assert!(
        markdown.contains("###### use.ts\n\n```typescript\n"),
        "{markdown}"
    );
    assert_eq!(
        std::fs::read_to_string(exported["path"].as_str().unwrap()).unwrap(),
        markdown
    );

    let imported = ok(&host
        .call("exec_ts.session_import", json!({"markdown": markdown}))
        .await);
    let new_session = imported["sessionId"].as_str().unwrap();
    assert_ne!(new_session, session);
    assert_eq!(imported["title"], "Round trip");
    let sources = |list: Value| -> Vec<(Value, Value)> {
        list["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["filename"].clone(), c["source"].clone()))
            .collect()
    };
    let before = ok(&host
        .call("exec_ts.cell_list", json!({"sessionId": session}))
        .await);
    let after = ok(&host
        .call("exec_ts.cell_list", json!({"sessionId": new_session}))
        .await);
    assert_eq!(sources(after), sources(before));
    let use_cell = imported["cells"][1]["cellId"].as_str().unwrap();
    assert_eq!(
        ok(&run_cell(&host, new_session, use_cell).await)["stdout"],
        "answer 42\n"
    );

    let result = host
        .call(
            "exec_ts.session_import",
            json!({"markdown": "# T\n\n###### a.ts\n\nno block\n"}),
        )
        .await;
    failed(
        &result,
        "INVALID_ARGUMENT",
        &["line 3", "fenced code block"],
    );
}

#[tokio::test]
async fn a_cell_survives_a_host_restart() {
    let nb = Notebooks::new();
    let (session, cell) = {
        let host = nb.host().await;
        let session = create_session(&host).await;
        let cell = create_cell(
            &host,
            &session,
            "kept.ts",
            "console.log('still here' as string)",
        )
        .await;
        host.client.cancel().await.unwrap();
        (session, cell)
    };
    let host = nb.host().await;
    let output = ok(&run_cell(&host, &session, &cell).await);
    assert_eq!(output["stdout"], "still here\n");
}

#[tokio::test]
async fn npm_install_adds_a_local_package_cells_can_import() {
    let nb = Notebooks::new();
    let package = TempDir::new().unwrap();
    let host = nb
        .host_with(&format!(", cwd_roots = [{}]", toml_path(package.path())))
        .await;
    std::fs::write(
        package.path().join("package.json"),
        r#"{"name": "local-greet", "version": "1.0.0", "type": "module", "main": "index.js"}"#,
    )
    .unwrap();
    std::fs::write(
        package.path().join("index.js"),
        "export const greet = (name) => `hi ${name}`;\n",
    )
    .unwrap();
    let session = create_session(&host).await;
    let installed = host
        .call(
            "exec_ts.npm_install",
            json!({"sessionId": session, "packages": [package.path().display().to_string()]}),
        )
        .await;
    let output = ok(&installed);
    assert_eq!(output["exitCode"], 0);
    let cell = create_cell(
        &host,
        &session,
        "greet.ts",
        "import { greet } from 'local-greet';\nconsole.log(greet('ts' as string));\n",
    )
    .await;
    assert_eq!(
        ok(&run_cell(&host, &session, &cell).await)["stdout"],
        "hi ts\n"
    );

    let result = host
        .call(
            "exec_ts.npm_install",
            json!({"sessionId": session, "packages": ["--global"]}),
        )
        .await;
    failed(
        &result,
        "INVALID_ARGUMENT",
        &["\"--global\" is not a package"],
    );
    // A local package outside `cwd_roots` is not read.
    let result = host
        .call(
            "exec_ts.npm_install",
            json!({"sessionId": session, "packages": ["/etc"]}),
        )
        .await;
    let output = failed_run(&result, "ACCESS_DENIED");
    let stderr = output["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("local package /etc is outside the allowed folders"),
        "{stderr}"
    );
    let output = failed_run(
        &host
            .call("exec_ts.npm_install", json!({"sessionId": "gone"}))
            .await,
        "SESSION_NOT_FOUND",
    );
    assert_eq!(output["exitCode"], 1);
}

// ------------------------------------------------------------ confinement

/// Run `attempts` (a JavaScript object literal of name → function that
/// throws when refused) and return each name's outcome: `allowed` or the
/// error code.
async fn outcomes(host: &TestHost, setup: &str, attempts: &str) -> Value {
    let code = format!(
        "import fs from 'node:fs';\nimport net from 'node:net';\n{setup}\n\
         const attempts = {attempts};\nconst out = {{}};\n\
         for (const [name, f] of Object.entries(attempts)) {{\n\
           try {{ await f(); out[name] = 'allowed'; }} catch (e) {{ out[name] = e.code ?? String(e); }}\n\
         }}\nconsole.log(JSON.stringify(out));"
    );
    let output = ok(&execute(host, json!({"code": code, "language": "javascript"})).await);
    serde_json::from_str(output["stdout"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn code_reads_no_secrets_and_writes_only_its_own_folder() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let outside = TempDir::new().unwrap();
    let home = std::env::var("HOME").unwrap();
    let setup = format!(
        "const outside = {:?}; const home = {:?};",
        outside.path().display().to_string(),
        home
    );
    let attempts = "{
        shadow: () => fs.readFileSync('/etc/shadow'),
        home: () => fs.readdirSync(home),
        notebooks: () => fs.readdirSync(process.cwd() + '/..'),
        hostEnviron: () => fs.readFileSync(`/proc/${process.ppid}/environ`),
        writeOutside: () => fs.writeFileSync(outside + '/planted', 'x'),
        writeTmp: () => fs.writeFileSync('/tmp/packhost-planted', 'x'),
        symlinkOut: () => { fs.symlinkSync(home, 'h'); fs.readdirSync('h'); },
        hardlinkOut: () => fs.linkSync('/etc/passwd', 'passwd'),
        own: () => fs.writeFileSync(process.env.TMPDIR + '/mine', 'x'),
    }";
    let got = outcomes(&host, &setup, attempts).await;
    assert_eq!(got["own"], "allowed", "{got}");
    for name in [
        "shadow",
        "home",
        "notebooks",
        "hostEnviron",
        "writeOutside",
        "writeTmp",
        "symlinkOut",
        "hardlinkOut",
    ] {
        assert_ne!(got[name], "allowed", "{name}: {got}");
    }
    assert!(!outside.path().join("planted").exists());
    assert!(!Path::new("/tmp/packhost-planted").exists());
}

#[tokio::test]
async fn code_cannot_kill_the_host_which_keeps_serving() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let got = outcomes(
        &host,
        "",
        "{ kill: () => process.kill(process.ppid, 'SIGKILL') }",
    )
    .await;
    assert_eq!(got["kill"], "EPERM", "{got}");
    let output = ok(&execute(&host, json!({"code": "console.log('still serving')"})).await);
    assert_eq!(output["stdout"], "still serving\n");
}

#[tokio::test]
async fn code_has_no_network_unless_configured() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!(
        "{{ connect: () => new Promise((ok, fail) => {{\n\
           const s = net.connect({port}, '127.0.0.1', () => {{ s.destroy(); ok(); }});\n\
           s.on('error', fail);\n\
         }}) }}"
    );
    let nb = Notebooks::new();
    let host = nb.host().await;
    let got = outcomes(&host, "", &connect).await;
    assert_ne!(got["connect"], "allowed", "{got}");
    let open = nb.host_with(", network = true").await;
    let got = outcomes(&open, "", &connect).await;
    assert_eq!(got["connect"], "allowed", "network = true: {got}");
}

#[tokio::test]
async fn a_cell_cannot_read_another_sessions_directory() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let secret = create_session(&host).await;
    create_cell(
        &host,
        &secret,
        "secret.ts",
        "export const key = 'hunter2';\n",
    )
    .await;
    let session = create_session(&host).await;
    let code = format!(
        "import fs from 'node:fs';\nconst out = {{}};\n\
         for (const [name, f] of Object.entries({{\n\
           read: () => fs.readFileSync('../{secret}/src/secret.ts', 'utf8'),\n\
           list: () => fs.readdirSync('..'),\n\
           write: () => fs.writeFileSync('../{secret}/src/secret.ts', 'stolen'),\n\
           own: () => fs.writeFileSync('mine.txt', 'x'),\n\
         }})) {{ try {{ f(); out[name] = 'allowed'; }} catch (e) {{ out[name] = e.code; }} }}\n\
         console.log(JSON.stringify(out));\n"
    );
    let cell = create_cell(&host, &session, "steal.js", &code).await;
    let output = ok(&run_cell(&host, &session, &cell).await);
    let got: Value = serde_json::from_str(output["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(got["own"], "allowed", "{got}");
    for name in ["read", "list", "write"] {
        assert_ne!(got[name], "allowed", "{name}: {got}");
    }
    let cells = ok(&host
        .call("exec_ts.cell_list", json!({"sessionId": secret}))
        .await);
    assert_eq!(
        cells["cells"][0]["source"],
        "export const key = 'hunter2';\n"
    );
}

#[tokio::test]
async fn a_memory_bomb_is_limit_exceeded_and_the_host_keeps_serving() {
    let nb = Notebooks::new();
    let host = nb.host_with(", limits = { memory_mb = 256 }").await;
    let result = execute(
        &host,
        json!({"code": "const a = []; while (true) a.push(new Array(1e6).fill(1));",
               "language": "javascript", "timeout": 60000}),
    )
    .await;
    let output = failed_run(&result, "LIMIT_EXCEEDED");
    let message = text(&result);
    assert!(message.contains("`limits.memory_mb`"), "{message}");
    assert!(
        output["stderr"].as_str().unwrap().contains("memory bound"),
        "{output}"
    );
    let output = ok(&execute(&host, json!({"code": "console.log(1 + 1)"})).await);
    assert_eq!(output["stdout"], "2\n");
}

#[tokio::test]
async fn the_host_follows_no_link_a_cell_plants_in_its_session() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let secret = create_session(&host).await;
    create_cell(
        &host,
        &secret,
        "secret.ts",
        "export const key = 'hunter2';\n",
    )
    .await;
    let victim = TempDir::new().unwrap();
    let victim_file = victim.path().join("victim.txt");
    std::fs::write(&victim_file, "intact").unwrap();
    let session = create_session(&host).await;
    // The cell replaces its own file, the export's and the build folder by
    // links to another session and to a file of the host.
    let code = format!(
        "import fs from 'node:fs';\n\
         fs.rmSync('src/plant.js');\n\
         fs.symlinkSync('../../{secret}/src/secret.ts', 'src/plant.js');\n\
         fs.symlinkSync({victim:?}, '{session}.src.md');\n\
         fs.rmSync('.packhost', {{ recursive: true, force: true }});\n\
         fs.symlinkSync('../{secret}', '.packhost');\n",
        victim = victim_file.display().to_string()
    );
    let cell = create_cell(&host, &session, "plant.js", &code).await;
    ok(&run_cell(&host, &session, &cell).await);

    let listed = host
        .call("exec_ts.cell_list", json!({"sessionId": session}))
        .await;
    assert!(!text(&listed).contains("hunter2"), "{}", text(&listed));
    failed(&listed, "INTERNAL", &["src/plant.js", "symbolic link"]);
    let updated = host
        .call(
            "exec_ts.cell_update",
            json!({"sessionId": session, "cellId": cell, "source": "overwritten"}),
        )
        .await;
    failed(&updated, "INTERNAL", &["symbolic link"]);
    let rerun = run_cell(&host, &session, &cell).await;
    assert!(is_error(&rerun), "{}", text(&rerun));
    assert!(!text(&rerun).contains("hunter2"), "{}", text(&rerun));
    assert!(!nb.root.path().join(&secret).join("loader.mjs").exists());
    // Deleting the cell removes the link, not what it points to.
    ok(&host
        .call(
            "exec_ts.cell_delete",
            json!({"sessionId": session, "cellId": cell}),
        )
        .await);
    let exported = host
        .call("exec_ts.session_export", json!({"sessionId": session}))
        .await;
    failed(&exported, "INTERNAL", &["symbolic link"]);
    assert_eq!(std::fs::read_to_string(&victim_file).unwrap(), "intact");
    let cells = ok(&host
        .call("exec_ts.cell_list", json!({"sessionId": secret}))
        .await);
    assert_eq!(
        cells["cells"][0]["source"],
        "export const key = 'hunter2';\n"
    );
}

/// With `network` a list of hosts, code reaches those hosts, through the
/// egress proxy its environment names, and nothing else: not loopback, not
/// a private or metadata address, not a host off the list, not directly.
#[tokio::test]
async fn code_reaches_only_the_hosts_its_network_lists() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let nb = Notebooks::new();
    let host = nb.host_with(", network = [\"registry.npmjs.org\"]").await;
    // A CONNECT through the proxy, then (when it opens) TLS with the
    // system's certificates and a GET of a package's metadata; or a plain
    // connection.
    let code = format!(
        "import fs from 'node:fs';\n\
         import net from 'node:net';\n\
         import tls from 'node:tls';\n\
         const proxy = new URL(process.env.HTTPS_PROXY);\n\
         const tunnel = (target) => new Promise((done) => {{\n\
           const s = net.connect(Number(proxy.port), proxy.hostname, () => s.write(`CONNECT ${{target}} HTTP/1.1\\r\\nHost: ${{target}}\\r\\n\\r\\n`));\n\
           s.once('data', (d) => done([d.toString().split('\\r\\n')[0], s]));\n\
           s.on('error', (e) => done([e.code, s]));\n\
         }});\n\
         const direct = (host, port) => new Promise((done) => {{\n\
           const s = net.connect(port, host, () => {{ s.destroy(); done('connected'); }});\n\
           s.on('error', (e) => done(e.code));\n\
         }});\n\
         const out = {{}};\n\
         for (const target of ['127.0.0.1:{port}', '10.255.255.1:80', '169.254.169.254:80', 'example.com:443']) {{\n\
           const [line, s] = await tunnel(target); s.destroy(); out['proxy ' + target] = line;\n\
         }}\n\
         out['direct loopback'] = await direct('127.0.0.1', {port});\n\
         const [line, socket] = await tunnel('registry.npmjs.org:443');\n\
         out['proxy registry'] = line;\n\
         out['registry'] = await new Promise((done) => {{\n\
           const t = tls.connect({{ socket, servername: 'registry.npmjs.org', ca: fs.readFileSync('/etc/ssl/certs/ca-certificates.crt') }}, () =>\n\
             t.write('GET /is-number HTTP/1.1\\r\\nHost: registry.npmjs.org\\r\\nConnection: close\\r\\n\\r\\n'));\n\
           t.once('data', (d) => {{ done(d.toString().split('\\r\\n')[0]); t.destroy(); }});\n\
           t.on('error', (e) => done(e.code));\n\
         }});\n\
         JSON.stringify(out)"
    );
    let output = ok(&execute(
        &host,
        json!({"code": code, "language": "javascript", "timeout": 60000}),
    )
    .await);
    let got: Value = serde_json::from_str(output["result"].as_str().unwrap_or("{}"))
        .unwrap_or_else(|_| panic!("{output}"));
    for target in [
        "127.0.0.1",
        "10.255.255.1",
        "169.254.169.254",
        "example.com",
    ] {
        let key = got
            .as_object()
            .unwrap()
            .keys()
            .find(|k| k.contains(target))
            .unwrap_or_else(|| panic!("{target}: {got}"));
        assert!(got[key].as_str().unwrap().contains("403"), "{key}: {got}");
    }
    assert_eq!(got["direct loopback"], "EACCES", "{got}");
    assert!(
        got["proxy registry"].as_str().unwrap().contains("200"),
        "{got}"
    );
    assert!(
        got["registry"].as_str().unwrap().starts_with("HTTP/1.1 "),
        "{got}"
    );
    assert!(
        listener.accept().is_err(),
        "something reached the loopback listener"
    );
}
