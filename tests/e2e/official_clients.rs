//! The official MCP SDK clients against the real host: the Python `mcp`
//! package (in the test venv) and the TypeScript `@modelcontextprotocol/sdk`
//! (installed by `./dev test`), each over stdio and streamable HTTP. Unlike
//! rmcp's client, both check every structured result against the tool's
//! `outputSchema` from `tools/list` (Python on successes, TypeScript on error
//! results too) and raise when it does not match: a model behind either
//! client would see an exception instead of the result.
//!
//! The clients are small scripts in `tests/official-clients/` that perform a
//! list of calls and print one JSON line per call; the checks are here.

use std::{path::PathBuf, process::Stdio, time::Duration};

use packhost_tests::{
    downstream::{everything_stdio, integrations},
    http::HttpHost,
    packhost_bin, typescript_package, venv_python,
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// The TypeScript SDK's package directory, exported by `./dev test`.
fn ts_sdk() -> String {
    std::env::var("PACKHOST_TEST_MCP_SDK").unwrap_or_else(|_| {
        panic!(
            "PACKHOST_TEST_MCP_SDK is not set: run the tests with `./dev test`, which installs \
             @modelcontextprotocol/sdk"
        )
    })
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("official-clients")
        .join(name)
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Sdk {
    Python,
    TypeScript,
}

/// What a call must come back as.
enum Expect {
    /// A success whose line has, at each JSON pointer, a value containing
    /// the text (a string's own text, else its JSON).
    Ok(&'static [(&'static str, &'static str)]),
    /// An `isError` result whose text starts with `CODE: `.
    Error(&'static str),
}

pub(crate) struct Call {
    id: &'static str,
    tool: &'static str,
    arguments: Value,
    expect: Expect,
}

pub(crate) fn ok(
    id: &'static str,
    tool: &'static str,
    arguments: Value,
    checks: &'static [(&'static str, &'static str)],
) -> Call {
    Call {
        id,
        tool,
        arguments,
        expect: Expect::Ok(checks),
    }
}

fn err(id: &'static str, tool: &'static str, arguments: Value, code: &'static str) -> Call {
    Call {
        id,
        tool,
        arguments,
        expect: Expect::Error(code),
    }
}

/// Above this (base64) an image is dropped with a note: the noise image of
/// `jupyter_notes` is ~50 KB, the small ones a few hundred bytes.
const MAX_IMAGE_BYTES: usize = 20_000;

/// A call of every pack, successes and failures; `{{id.field}}` takes a
/// field of an earlier result.
fn calls(integration: &str) -> Vec<Call> {
    let session = json!("{{jupyter_session.session_id}}");
    let notebook = json!("{{ts_session.sessionId}}");
    vec![
        ok(
            "proj_list",
            "proj.list",
            json!({}),
            &[("/structuredContent/projects/0/name", "demo")],
        ),
        ok(
            "proj_read",
            "proj.read",
            json!({"name": "demo", "path": "hello.txt"}),
            &[("/structuredContent/content", "hello from demo")],
        ),
        err(
            "proj_read_missing",
            "proj.read",
            json!({"name": "demo", "path": "nope.txt"}),
            "NOT_FOUND",
        ),
        ok(
            "exec_py",
            "exec_py.run",
            json!({"code": "print('hi')\n6 * 7"}),
            &[
                ("/structuredContent/result", "42"),
                ("/structuredContent/stdout", "hi"),
            ],
        ),
        ok(
            "exec_py_no_value",
            "exec_py.run",
            json!({"code": "x = 1"}),
            &[("/structuredContent/has_value", "false")],
        ),
        err(
            "exec_py_raises",
            "exec_py.run",
            json!({"code": "raise ValueError('boom')"}),
            "EXECUTION_ERROR",
        ),
        err(
            "exec_py_syntax",
            "exec_py.run",
            json!({"code": "def ("}),
            "INVALID_ARGUMENT",
        ),
        ok(
            "exec_ts",
            "exec_ts.execute",
            json!({"code": "const x: number = 6; console.log(x * 7)"}),
            &[("/structuredContent/stdout", "42")],
        ),
        ok(
            "exec_ts_code_mode",
            "exec_ts.execute",
            json!({"code": "const l = await proj.list();\n({ names: l.projects.map((p) => p.name) })",
                   "typecheck": true}),
            &[("/structuredContent/result/names/0", "demo")],
        ),
        ok(
            "run_ts",
            "run",
            json!({"command": "```ts\nconst r = await proj.read({ name: 'demo', path: 'hello.txt' });\nr.content\n```"}),
            &[("/structuredContent/result", "hello from demo")],
        ),
        ok(
            "exec_ts_declarations",
            "exec_ts.declarations",
            json!({"pack": "proj"}),
            &[(
                "/structuredContent/declarations",
                "// The packhost tools this code can call",
            )],
        ),
        ok(
            "exec_py_declarations",
            "exec_py.declarations",
            json!({"pack": "proj"}),
            &[(
                "/structuredContent/declarations",
                "# The packhost tools this code can call",
            )],
        ),
        err(
            "exec_ts_throws",
            "exec_ts.execute",
            json!({"code": "throw new Error('boom')"}),
            "EXECUTION_ERROR",
        ),
        ok(
            "ts_session",
            "exec_ts.session_create",
            json!({"title": "clients"}),
            &[],
        ),
        ok(
            "ts_cell",
            "exec_ts.cell_create",
            json!({"sessionId": notebook, "filename": "a.ts", "source": "export const n: number = 42;\nconsole.log(`cell ${n}`);"}),
            &[("/structuredContent/filename", "a.ts")],
        ),
        ok(
            "ts_cell_run",
            "exec_ts.cell_execute",
            json!({"sessionId": notebook, "cellId": "{{ts_cell.cellId}}"}),
            &[("/structuredContent/stdout", "cell 42")],
        ),
        ok(
            "ts_cells",
            "exec_ts.cell_list",
            json!({"sessionId": notebook}),
            &[("/structuredContent/cells/0/filename", "a.ts")],
        ),
        err(
            "ts_cell_missing",
            "exec_ts.cell_execute",
            json!({"sessionId": notebook, "cellId": "nope"}),
            "CELL_NOT_FOUND",
        ),
        err(
            "ts_session_missing",
            "exec_ts.cell_list",
            json!({"sessionId": "nope"}),
            "SESSION_NOT_FOUND",
        ),
        ok(
            "jupyter_session",
            "jupyter.session_create",
            json!({}),
            &[("/structuredContent/backend", "local")],
        ),
        ok(
            "jupyter_value",
            "jupyter.execute_code",
            json!({"session_id": session, "code": "x = 6\nx * 7"}),
            &[("/structuredContent/result", "42")],
        ),
        ok(
            "jupyter_no_value",
            "jupyter.execute_code",
            json!({"session_id": session, "code": "y = 1"}),
            &[("/structuredContent/success", "true")],
        ),
        ok(
            "jupyter_stderr",
            "jupyter.execute_code",
            json!({"session_id": session, "code": "import sys, warnings\nwarnings.warn('careful')\nprint('to stderr', file=sys.stderr)\nprint(x)"}),
            &[
                ("/structuredContent/stderr", "careful"),
                ("/structuredContent/stderr", "to stderr"),
                ("/structuredContent/stdout", "6"),
            ],
        ),
        ok(
            "jupyter_image",
            "jupyter.execute_code",
            json!({"session_id": session, "code": "from PIL import Image\nImage.new('RGB', (40, 30), 'red')"}),
            &[
                ("/structuredContent/images/0/mime", "image/png"),
                ("/contentTypes", "\"image\""),
            ],
        ),
        ok(
            "jupyter_notes",
            "jupyter.execute_code",
            json!({"session_id": session, "code": "from PIL import Image\nfrom IPython.display import display\ndisplay(Image.new('RGB', (8, 8), 'blue'))\nImage.effect_noise((200, 200), 100)"}),
            &[
                ("/structuredContent/notes/0", "max_image_bytes"),
                ("/structuredContent/images/0/width", "8"),
                ("/contentTypes", "\"image\""),
            ],
        ),
        ok(
            "jupyter_display",
            "jupyter.execute_code",
            json!({"session_id": session, "code": "from IPython.display import display, JSON\ndisplay('shown')\n{'a': [1, 2]}"}),
            &[("/structuredContent/outputs/0/text", "shown")],
        ),
        err(
            "jupyter_raises",
            "jupyter.execute_code",
            json!({"session_id": session, "code": "print('before')\n1/0"}),
            "EXECUTION_ERROR",
        ),
        err(
            "jupyter_raises_with_image",
            "jupyter.execute_code",
            json!({"session_id": session, "code": "from PIL import Image\nfrom IPython.display import display\ndisplay(Image.new('RGB', (4, 4), 'green'))\nraise KeyError('k')"}),
            "EXECUTION_ERROR",
        ),
        err(
            "jupyter_timeout",
            "jupyter.execute_code",
            json!({"session_id": session, "code": "import time\ntime.sleep(30)", "timeout": 1}),
            "TIMEOUT",
        ),
        err(
            "jupyter_no_session",
            "jupyter.execute_code",
            json!({"session_id": "nope", "code": "1"}),
            "SESSION_NOT_FOUND",
        ),
        err(
            "jupyter_bad_timeout",
            "jupyter.execute_code",
            json!({"session_id": session, "code": "1", "timeout": 301}),
            "INVALID_ARGUMENT",
        ),
        ok(
            "jupyter_sessions",
            "jupyter.session_list",
            json!({}),
            &[("/structuredContent/backend", "local")],
        ),
        ok(
            "remote_tools",
            "remote_mcp.list_tools",
            json!({"integrationId": integration}),
            &[("/structuredContent/tools", "\"echo\"")],
        ),
        ok(
            "remote_echo",
            "remote_mcp.execute_tool",
            json!({"integrationId": integration, "toolName": "echo", "parameters": {"message": "hi"}}),
            &[("/structuredContent/content/0/text", "Echo: hi")],
        ),
        err(
            "remote_unknown",
            "remote_mcp.execute_tool",
            json!({"integrationId": "nope", "toolName": "echo", "parameters": {}}),
            "NOT_FOUND",
        ),
        ok(
            "everything_echo",
            "everything.echo",
            json!({"message": "direct"}),
            &[("/structuredContent/text", "Echo: direct")],
        ),
        ok(
            "everything_sum",
            "everything.get_sum",
            json!({"a": 2, "b": 40}),
            &[("/structuredContent/text", "42")],
        ),
        ok(
            "everything_structured",
            "everything.get_structured_content",
            json!({"location": "Chicago"}),
            &[("/structuredContent/temperature", "36")],
        ),
        err(
            "everything_bad_enum",
            "everything.get_structured_content",
            json!({"location": "Paris"}),
            "INVALID_ARGUMENT",
        ),
        err(
            "everything_bad_argument",
            "everything.get_sum",
            json!({"a": "x", "b": 1}),
            "INVALID_ARGUMENT",
        ),
        ok(
            "run_call",
            "run",
            json!({"command": "proj.list()"}),
            &[("/structuredContent/projects/0/name", "demo")],
        ),
        ok(
            "run_python",
            "run",
            json!({"command": "```python\nnames = [p['name'] for p in proj.list()['projects']]\nnames\n```"}),
            &[("/structuredContent/result/0", "demo")],
        ),
        ok(
            "run_server_pack",
            "run",
            json!({"command": "everything.echo(message='via run')"}),
            &[("/structuredContent/text", "via run")],
        ),
        err(
            "run_raises",
            "run",
            json!({"command": "```python\n1/0\n```"}),
            "EXECUTION_ERROR",
        ),
        err(
            "run_unknown_function",
            "run",
            json!({"command": "proj.nope()"}),
            "UNKNOWN_FUNCTION",
        ),
        err(
            "run_bad_argument",
            "run",
            json!({"command": "proj.read('demo', path=5)"}),
            "INVALID_ARGUMENT",
        ),
        err("unknown_tool", "proj.nope", json!({}), "UNKNOWN_FUNCTION"),
        err("unknown_pack", "nopack.list", json!({}), "UNKNOWN_PACK"),
        err(
            "bad_argument",
            "proj.read",
            json!({"name": "demo", "path": 5}),
            "INVALID_ARGUMENT",
        ),
        err(
            "missing_argument",
            "exec_py.run",
            json!({}),
            "INVALID_ARGUMENT",
        ),
    ]
}

/// A directory with a project, the config serving every shipped pack and
/// server-everything (as a server pack and as `acme`'s integration), and
/// the integration's id. `extra` is appended to the config.
fn setup(extra: &str) -> (TempDir, String, String) {
    let dir = TempDir::new().expect("temp dir");
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("hello.txt"), "hello from demo\n").unwrap();
    let notebooks = dir.path().join("notebooks");
    let database = dir.path().join("integrations.db");
    let config = format!(
        "[identity]\nuser = \"ada\"\norg = \"acme\"\n\n\
         [projects]\ndemo = {project:?}\n\n\
         [packs.proj]\n[packs.exec_py]\n\
         [packs.exec_ts]\nconfig = {{ notebooks_dir = {notebooks:?}, typescript = {typescript:?} }}\n\
         [packs.jupyter]\ntimeout_ms = 600000\nconfig = {{ python = {python:?}, max_image_bytes = {MAX_IMAGE_BYTES} }}\n\
         [packs.remote_mcp]\nconfig = {{ database = {database:?}, read = {read:?} }}\n\
         [packs.everything]\nkind = \"mcp\"\ncommand = {everything:?}\n\
         {extra}\n",
        python = venv_python(),
        everything = everything_stdio(),
        read = crate::remote_mcp::servers_read(),
        typescript = typescript_package(),
    );
    std::fs::write(dir.path().join("packs.toml"), &config).unwrap();
    let mut args = vec!["add", "--org", "acme", "--name", "everything", "--"];
    let command = everything_stdio();
    args.extend(command.iter().map(String::as_str));
    let integration = integrations(dir.path(), &args, &[]);
    (dir, config, integration)
}

/// Run `sdk`'s client on `transport` with `calls` (files in `dir`); its
/// output lines. `host_log` tells what the host logged.
pub(crate) async fn drive(
    sdk: Sdk,
    dir: &TempDir,
    transport: Value,
    calls: &[Call],
    host_log: impl Fn() -> String,
) -> Vec<Value> {
    let spec = json!({
        "transport": transport,
        "calls": calls.iter().map(|c| json!({"id": c.id, "tool": c.tool, "arguments": c.arguments})).collect::<Vec<_>>(),
    });
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let mut command = match sdk {
        Sdk::Python => {
            let mut command = tokio::process::Command::new(venv_python());
            command.arg(script("client.py"));
            command
        }
        Sdk::TypeScript => {
            let mut command = tokio::process::Command::new("node");
            command
                .arg(script("client.mjs"))
                .env("PACKHOST_TEST_MCP_SDK", ts_sdk());
            command
        }
    };
    command
        .arg(&spec_path)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(600), command.output())
        .await
        .unwrap_or_else(|_| panic!("the {sdk:?} client did not finish within 10 minutes"))
        .expect("run the client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the {sdk:?} client failed ({}):\n{}\nstdout:\n{stdout}\nhost stderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        host_log(),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !stderr.trim().is_empty() {
        eprintln!("the {sdk:?} client's stderr:\n{stderr}");
    }
    // Ajv (the TypeScript client's validator) warns about every schema
    // keyword it does not know, on every tools/list: a desktop agent's log.
    assert!(
        !stderr.contains("unknown format"),
        "the {sdk:?} client warned about the tools' schemas:\n{stderr}"
    );
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

/// The end of a host's log.
fn tail(log: &str) -> String {
    let start = log.len().saturating_sub(4000);
    let start = (start..log.len())
        .find(|&i| log.is_char_boundary(i))
        .unwrap_or(0);
    log[start..].to_owned()
}

/// Every problem of every line, one per entry.
fn judge(sdk: Sdk, lines: &[Value], calls: &[Call]) -> Vec<String> {
    let mut problems = Vec::new();
    let tools: Vec<&str> = lines[0]["tools"]
        .as_array()
        .expect("the first line lists the tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for tool in [
        "run",
        "proj.list",
        "exec_py.run",
        "exec_ts.execute",
        "jupyter.execute_code",
        "remote_mcp.execute_tool",
        "everything.echo",
    ] {
        if !tools.contains(&tool) {
            problems.push(format!("tools/list lacks {tool}: {tools:?}"));
        }
    }
    assert_eq!(
        lines.len(),
        calls.len() + 1,
        "one line per call: {lines:#?}"
    );
    for (line, call) in lines[1..].iter().zip(calls) {
        let what = format!("{sdk:?} {} ({})", call.id, call.tool);
        if let Some(exception) = line["exception"].as_str() {
            problems.push(format!("{what}: the client raised: {exception}"));
            continue;
        }
        if let Some(skipped) = line["skipped"].as_str() {
            problems.push(format!("{what}: not called, {skipped}"));
            continue;
        }
        let text = line["text"].as_str().unwrap_or_default();
        match &call.expect {
            Expect::Ok(checks) => {
                if line["isError"] != false {
                    problems.push(format!("{what}: expected success, got error: {text}"));
                    continue;
                }
                for (pointer, part) in *checks {
                    let found = match line.pointer(pointer) {
                        Some(Value::String(s)) => s.clone(),
                        Some(value) => value.to_string(),
                        None => {
                            problems.push(format!("{what}: no {pointer} in {line}"));
                            continue;
                        }
                    };
                    if !found.contains(part) {
                        problems.push(format!("{what}: {pointer} lacks {part:?}: {found}"));
                    }
                }
            }
            Expect::Error(code) => {
                if line["isError"] != true {
                    problems.push(format!("{what}: expected {code}, got success: {line}"));
                } else if !text.starts_with(&format!("{code}: ")) {
                    problems.push(format!("{what}: expected {code}, got: {text}"));
                }
            }
        }
    }
    problems
}

fn stdio_transport(dir: &TempDir) -> Value {
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

async fn over_stdio(sdk: Sdk) {
    let (dir, _, integration) = setup("");
    let calls = calls(&integration);
    let log = || tail(&std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default());
    let lines = drive(sdk, &dir, stdio_transport(&dir), &calls, log).await;
    let problems = judge(sdk, &lines, &calls);
    assert!(
        problems.is_empty(),
        "{} problems with the {sdk:?} client over stdio:\n{}\nhost stderr:\n{}",
        problems.len(),
        problems.join("\n"),
        log()
    );
}

async fn over_http(sdk: Sdk) {
    let (token, entry) = crate::http::token("ada", "acme", &[]);
    let (dir, config, integration) = setup(&entry);
    let host = HttpHost::start(&config, &[]).await;
    let calls = calls(&integration);
    let transport = json!({"http": {"url": host.url(), "token": token}});
    let log = || tail(&host.stderr());
    let lines = drive(sdk, &dir, transport, &calls, log).await;
    let problems = judge(sdk, &lines, &calls);
    assert!(
        problems.is_empty(),
        "{} problems with the {sdk:?} client over HTTP:\n{}\nhost stderr:\n{}",
        problems.len(),
        problems.join("\n"),
        log()
    );
}

#[tokio::test]
async fn python_sdk_over_stdio() {
    over_stdio(Sdk::Python).await;
}

#[tokio::test]
async fn python_sdk_over_http() {
    over_http(Sdk::Python).await;
}

#[tokio::test]
async fn typescript_sdk_over_stdio() {
    over_stdio(Sdk::TypeScript).await;
}

#[tokio::test]
async fn typescript_sdk_over_http() {
    over_http(Sdk::TypeScript).await;
}
