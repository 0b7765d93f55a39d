//! Code mode in TypeScript through the real host: every pack a global
//! namespace inside `exec_ts` (`execute` and `cell_execute`), aliases,
//! server packs, nested calls into exec_py, `PackError`, unknown names,
//! concurrent calls, the caller's allow-list, cancellation, and the value
//! of the last expression.

use std::time::Duration;

use packhost_tests::{
    TestHost, WHOLE_RESULTS, call, downstream::everything_stdio, error_code, failed, hello_section,
    is_error, ok, structured, text, typescript_package, wait_group_gone,
};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::http::token;

/// exec_ts, exec_py, proj over a project, an alias and the hello fixture.
fn config(notebooks: &TempDir, extra: &str) -> String {
    format!(
        "[packs.exec_ts]\nconfig = {{ notebooks_dir = {:?}{extra} }}\n[packs.exec_py]\n[packs.proj]\n{}\
         [aliases]\nprojects = \"proj.list\"\n[projects]\nhere = \".\"\n",
        notebooks.path().display().to_string(),
        hello_section(""),
    )
}

async fn host(notebooks: &TempDir) -> TestHost {
    TestHost::start(&config(notebooks, "")).await
}

async fn ts(host: &TestHost, code: &str) -> Value {
    ok(&host.call("exec_ts.execute", json!({ "code": code })).await)
}

#[tokio::test]
async fn packs_are_namespaces_and_the_last_expression_is_the_result() {
    let notebooks = TempDir::new().unwrap();
    let host = host(&notebooks).await;
    let out = ts(
        &host,
        "const listed: { projects: { name: string }[] } = await proj.list();\n\
         const viaAlias = await projects();\n\
         const greeting = await hello.greet({ name: 'ts' });\n\
         const nested = await exec_py.run({ code: '6 * 7' });\n\
         console.log('printed');\n\
         ({ names: listed.projects.map((p) => p.name), alias: viaAlias.projects.length, greeting, nested: nested.result })",
    )
    .await;
    assert_eq!(out["stdout"], "printed\n", "{out}");
    assert_eq!(out["result"]["names"], json!(["here"]), "{out}");
    assert_eq!(out["result"]["alias"], 1, "{out}");
    assert_eq!(out["result"]["greeting"]["text"], "hello, ts", "{out}");
    assert_eq!(out["result"]["nested"], 42, "{out}");
    // A promise as the last value is awaited; what is not JSON is shown.
    assert_eq!(
        ts(&host, "proj.list()").await["result"]["projects"][0]["name"],
        "here"
    );
    let shown = ts(&host, "new Map([[1, 'a']])").await;
    assert_eq!(shown["resultRepr"], "Map(1) { 1 => 'a' }", "{shown}");
    assert!(shown.get("result").is_none(), "{shown}");
    assert!(ts(&host, "const x = 1;").await.get("result").is_none());
    // null is a value, from execute and from a `run` block alike.
    for out in [
        ts(&host, "const x = 1;\nnull").await,
        ok(&host.run("```ts\nconst x = 1;\nnull\n```").await),
    ] {
        assert_eq!(out.get("result"), Some(&Value::Null), "{out}");
    }
}

#[tokio::test]
async fn a_failed_call_throws_a_pack_error_the_code_can_catch() {
    let notebooks = TempDir::new().unwrap();
    let host = host(&notebooks).await;
    let out = ts(
        &host,
        "let caught = 'no error';\n\
         try { await proj.read({ name: 'here', path: '../../etc/passwd' }); }\n\
         catch (e) { caught = { isPackError: e instanceof PackError, code: e.code, message: e.message }; }\n\
         caught",
    )
    .await;
    assert_eq!(out["result"]["isPackError"], true, "{out}");
    assert_eq!(out["result"]["code"], "ACCESS_DENIED", "{out}");
    // Bad arguments read as they do from `run`: the host binds and checks them.
    let bad = ts(
        &host,
        "let caught;\ntry { await hello.greet({ nme: 'x' }) } catch (e) { caught = `${e.code}: ${e.message}\\nhelp: ${e.help}` }\ncaught",
    )
    .await;
    let from_run = text(&host.run("hello.greet(nme='x')").await);
    assert_eq!(bad["result"], from_run, "{bad}");
    // Uncaught, it fails the code with the line that made the call.
    let uncaught = host
        .call(
            "exec_ts.execute",
            json!({"code": "const a = 1;\nawait hello.greet({});\n"}),
        )
        .await;
    let output = structured(&uncaught);
    let stderr = output["stderr"].as_str().unwrap();
    assert!(stderr.contains("PackError: "), "{stderr}");
    assert!(stderr.contains(":2:"), "the call's line: {stderr}");
}

/// The uncaught error of `code`: its stderr.
async fn stderr_of(host: &TestHost, code: &str) -> String {
    let failed = host.call("exec_ts.execute", json!({ "code": code })).await;
    assert!(is_error(&failed), "{}", text(&failed));
    structured(&failed)["stderr"].as_str().unwrap().to_owned()
}

/// Nothing of the prelude (its `data:` URL) or of node's internals.
#[track_caller]
fn only_the_codes_frames(stack: &str) {
    for foreign in ["data:", "node:internal", "packhost:prelude"] {
        assert!(!stack.contains(foreign), "{foreign} in:\n{stack}");
    }
}

#[tokio::test]
async fn errors_show_the_codes_own_frames_only() {
    let notebooks = TempDir::new().unwrap();
    let host = host(&notebooks).await;
    // An uncaught PackError: the line that made the call, shown and in the stack.
    let stderr = stderr_of(
        &host,
        "const a = 1;\nawait proj.read({ name: 'nope', path: 'x' });\n",
    )
    .await;
    only_the_codes_frames(&stderr);
    assert!(stderr.contains("PackError: "), "{stderr}");
    assert!(
        stderr.contains("await proj.read({ name: 'nope', path: 'x' })"),
        "{stderr}"
    );
    assert!(stderr.contains("[eval1]:2:"), "the call's line: {stderr}");
    assert!(stderr.len() < 1000, "{} bytes:\n{stderr}", stderr.len());
    // Through packhost.call, from a function of the code's, caught.
    let caught = ts(
        &host,
        "async function f() {\n  return await packhost.call('hello.greet', {});\n}\n\
         let stack;\ntry { await f(); } catch (e) { stack = e.stack; }\nstack",
    )
    .await;
    let stack = caught["result"].as_str().unwrap();
    only_the_codes_frames(stack);
    assert!(
        stack.starts_with("PackError: ")
            && stack.contains("at f (")
            && stack.contains("[eval1]:2:"),
        "{stack}"
    );
    // What the prelude throws (an unknown function) and the code's own errors.
    for (code, line) in [
        ("const a = 1;\nawait proj.lst();\n", "await proj.lst()"),
        (
            "function f() { [1].map(() => { throw new Error('boom'); }); }\nf();\n",
            "function f()",
        ),
    ] {
        let stderr = stderr_of(&host, code).await;
        only_the_codes_frames(&stderr);
        assert!(stderr.contains(line), "{stderr}");
    }
}

#[tokio::test]
async fn a_caught_unknown_pack_names_what_exists_too() {
    let notebooks = TempDir::new().unwrap();
    let host = host(&notebooks).await;
    let uncaught = stderr_of(&host, "await nosuchpack.list()").await;
    let out = ts(
        &host,
        "let caught;\n\
         try { await nosuchpack.list() } catch (e) { caught = { text: String(e), reference: e instanceof ReferenceError, stack: e.stack } }\n\
         ({ ...caught, typeOf: typeof nosuchpack, globals: typeof setTimeout + typeof toString + typeof proj })",
    )
    .await;
    let caught = out["result"]["text"].as_str().unwrap();
    assert!(
        caught.starts_with("ReferenceError: nosuchpack is not defined; packs: ")
            && caught.contains("aliases: projects"),
        "{out}"
    );
    assert!(uncaught.contains(caught), "{caught}\nnot in:\n{uncaught}");
    assert!(
        out["result"]["stack"].as_str().unwrap().starts_with(caught),
        "{out}"
    );
    assert_eq!(out["result"]["reference"], true, "{out}");
    assert_eq!(out["result"]["typeOf"], "undefined", "{out}");
    assert_eq!(out["result"]["globals"], "functionfunctionobject", "{out}");
}

#[tokio::test]
async fn unknown_packs_and_functions_name_what_exists() {
    let notebooks = TempDir::new().unwrap();
    let host = host(&notebooks).await;
    let unknown_pack = host
        .call("exec_ts.execute", json!({"code": "await prj.list()"}))
        .await;
    let stderr = structured(&unknown_pack)["stderr"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(stderr.contains("prj is not defined; packs: "), "{stderr}");
    assert!(
        stderr.contains("proj") && stderr.contains("aliases: projects"),
        "{stderr}"
    );
    let unknown_function = ts(
        &host,
        "let caught;\ntry { await proj.lst() } catch (e) { caught = e.message }\ncaught",
    )
    .await;
    let message = unknown_function["result"].as_str().unwrap();
    assert!(
        message.starts_with("pack `proj` has no function `lst`; functions: "),
        "{message}"
    );
    assert!(message.contains("list"), "{message}");
}

#[tokio::test]
async fn ten_calls_at_once_run_side_by_side() {
    let notebooks = TempDir::new().unwrap();
    let host = host(&notebooks).await;
    // Ten calls of 300 ms: one after the other they would take 3 s.
    let out = ts(
        &host,
        "const started = Date.now();\n\
         const all = await Promise.all(Array.from({ length: 10 }, (_, i) => hello.sleep({ ms: 300 }).then(() => i)));\n\
         ({ all, ms: Date.now() - started })",
    )
    .await;
    assert_eq!(
        out["result"]["all"],
        json!([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
        "{out}"
    );
    let ms = out["result"]["ms"].as_u64().unwrap();
    assert!(ms < 2500, "ten 300 ms calls took {ms} ms: not concurrent");
}

#[tokio::test]
async fn prints_around_calls_do_not_disturb_the_channel() {
    let notebooks = TempDir::new().unwrap();
    let host = host(&notebooks).await;
    let out = ts(
        &host,
        "let n = 0;\n\
         for (let i = 0; i < 20; i++) {\n\
           console.log('{\"type\": \"value\", \"id\": 1, \"ok\": 5}', i);\n\
           process.stderr.write('{\"id\": 2, \"tool\": \"proj.list\"}\\n');\n\
           n += (await proj.list()).projects.length;\n\
         }\n\
         n",
    )
    .await;
    assert_eq!(out["result"], 20, "{out}");
    assert_eq!(out["stdout"].as_str().unwrap().lines().count(), 20);
}

#[tokio::test]
async fn cells_call_packs_too() {
    let notebooks = TempDir::new().unwrap();
    let host = host(&notebooks).await;
    let session = ok(&host.call("exec_ts.session_create", json!({})).await)["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let cell = ok(&host
        .call(
            "exec_ts.cell_create",
            json!({"sessionId": session, "filename": "a.ts",
                   "source": "const r = await hello.greet({ name: 'cell' });\nconsole.log(r.text);\n\
                              try { nosuchpack } catch (e) { console.log(String(e)) }\n"}),
        )
        .await)["cellId"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = ok(&host
        .call(
            "exec_ts.cell_execute",
            json!({"sessionId": session, "cellId": cell}),
        )
        .await);
    // A caught unknown name says what exists in a cell too.
    assert!(
        out["stdout"]
            .as_str()
            .unwrap()
            .starts_with("hello, cell\nReferenceError: nosuchpack is not defined; packs: "),
        "{out}"
    );
}

#[tokio::test]
async fn a_server_pack_is_a_namespace_too() {
    let notebooks = TempDir::new().unwrap();
    let everything = format!(
        "[packs.everything]\nkind = \"mcp\"\ncommand = {:?}\n",
        everything_stdio()
    );
    let host = TestHost::start(&(config(&notebooks, "") + &everything)).await;
    let out = ts(
        &host,
        "(await everything.echo({ message: 'from ts' })).text",
    )
    .await;
    assert_eq!(out["result"], "Echo: from ts", "{out}");
}

#[tokio::test]
async fn a_token_without_proj_cannot_call_it_from_typescript() {
    let notebooks = TempDir::new().unwrap();
    let (token, entry) = token("eve", "acme", &["exec_ts.execute", "hello.*"]);
    let http = packhost_tests::http::HttpHost::start(
        &format!("{}\n{entry}\n", config(&notebooks, "")),
        &[],
    )
    .await;
    let client = http.client(Some(&token)).await.unwrap();
    let code = "const seen = typeof proj;\n\
                let direct; try { await packhost.call('proj.list', {}); direct = 'allowed'; } catch (e) { direct = e.code; }\n\
                ({ seen, direct, hello: (await hello.greet({ name: 'e' })).text })";
    let out = call(&client, "exec_ts.execute", json!({ "code": code }))
        .await
        .unwrap();
    assert!(!is_error(&out), "{}", text(&out));
    let out = structured(&out);
    assert_eq!(
        out["result"]["seen"], "undefined",
        "proj is not bound: {out}"
    );
    // As for a pack that does not exist.
    assert_eq!(out["result"]["direct"], "UNKNOWN_PACK", "{out}");
    assert_eq!(out["result"]["hello"], "hello, e", "{out}");
}

#[tokio::test]
async fn cancelling_mid_call_leaves_no_process() {
    let notebooks = TempDir::new().unwrap();
    let shared = TempDir::new().unwrap();
    let root = shared.path().display().to_string();
    // Over HTTP, whose /metrics says when the nested call is under way.
    let host = packhost_tests::http::HttpHost::start(
        &config(
            &notebooks,
            &format!(", cwd_roots = [{root:?}], cwd_writable = true"),
        ),
        &[],
    )
    .await;
    let client = host.client(None).await.unwrap();
    let marker = shared.path().join("pgid");
    let abandoned = shared.path().join("abandoned");
    // The group id of node is its pid (it leads its group).
    let code = format!(
        "import {{ writeFileSync }} from 'node:fs';\n\
         writeFileSync('pgid', String(process.pid));\n\
         await hello.sleep({{ ms: 60000, marker: {:?} }});",
        abandoned.display().to_string()
    );
    let params = rmcp::model::CallToolRequestParams::new("exec_ts.execute").with_arguments(
        json!({"code": code, "cwd": root})
            .as_object()
            .unwrap()
            .clone(),
    );
    let running = packhost_tests::schemas::call_tool(&client, params);
    // Both calls under way: the code's and the nested hello.sleep.
    let started = async {
        while !host
            .metrics(None)
            .await
            .contains("packhost_calls_running 2")
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        result = running => panic!("the code should still be waiting: {result:?}"),
        () = started => {}
        () = tokio::time::sleep(Duration::from_secs(20)) => panic!("the nested call never started"),
    }
    // Dropping the request made the client send notifications/cancelled.
    let group: u32 = std::fs::read_to_string(&marker).unwrap().parse().unwrap();
    if let Err(live) = wait_group_gone(group, Duration::from_secs(2)).await {
        panic!("node outlived its cancelled call: {live:?}");
    }
    // Its call into hello was abandoned with it.
    for _ in 0..250 {
        if abandoned.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        abandoned.exists(),
        "the nested hello.sleep was not abandoned"
    );
    // And the host still serves.
    let again = call(&client, "exec_ts.execute", json!({"code": "1 + 1"}))
        .await
        .unwrap();
    assert_eq!(structured(&again)["result"], 2);
}

#[tokio::test]
async fn a_run_block_tagged_typescript_goes_to_exec_ts() {
    let notebooks = TempDir::new().unwrap();
    let host = host(&notebooks).await;
    for tag in ["ts", "typescript", "js", "javascript"] {
        let out = ok(&host
            .run(&format!(
                "```{tag}\nconst l = await proj.list();\nl.projects.length + 1\n```"
            ))
            .await);
        assert_eq!(out["result"], 2, "{tag}: {out}");
    }
    // Untagged stays Python.
    assert_eq!(ok(&host.run("```\n1 + 1\n```").await)["result"], 2);
    let python = failed(
        &host.run("```\nconst x = 1\n```").await,
        "INVALID_ARGUMENT",
        &["SyntaxError"],
    );
    assert!(!python.is_empty());
    let ts_error = host.run("```ts\nthrow new Error('boom')\n```").await;
    assert_eq!(
        error_code(&ts_error),
        "EXECUTION_ERROR",
        "{}",
        text(&ts_error)
    );
}

/// The config with the TypeScript compiler, and a folder code may write.
fn checked_config(notebooks: &TempDir, writable: &TempDir) -> String {
    config(
        notebooks,
        &format!(
            ", typescript = {:?}, cwd_roots = [{:?}], cwd_writable = true",
            typescript_package().display().to_string(),
            writable.path().display().to_string(),
        ),
    )
}

#[tokio::test]
async fn every_packs_declarations_compile_under_strict() {
    let notebooks = TempDir::new().unwrap();
    let everything = format!(
        "[packs.everything]\nkind = \"mcp\"\ncommand = {:?}\n[packs.jupyter]\n[packs.remote_mcp]\n",
        everything_stdio()
    );
    // Whole: every pack's declarations are longer than the host sends at once.
    let host = TestHost::start(&(config(&notebooks, "") + &everything + WHOLE_RESULTS)).await;
    let declared = ok(&host.call("exec_ts.declarations", json!({})).await);
    let text = declared["declarations"].as_str().unwrap();
    for pack in [
        "proj",
        "exec_py",
        "exec_ts",
        "jupyter",
        "remote_mcp",
        "hello",
        "everything",
    ] {
        assert!(
            text.contains(&format!("declare const {pack}: {{")),
            "{pack} missing:\n{text}"
        );
    }
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("packs.d.ts"), text).unwrap();
    let tsc = typescript_package().join("../@typescript/typescript-linux-x64/lib/tsc");
    let checked = std::process::Command::new(tsc)
        .args([
            "--noEmit",
            "--strict",
            "--target",
            "es2022",
            "--lib",
            "es2022",
            "--types",
            "",
            "packs.d.ts",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "tsc --strict refused the declarations:\n{}",
        String::from_utf8_lossy(&checked.stdout)
    );
    // One pack only, and a wrong name says what exists.
    let proj = ok(&host
        .call("exec_ts.declarations", json!({"pack": "proj"}))
        .await);
    let proj = proj["declarations"].as_str().unwrap();
    assert!(
        proj.contains("declare const proj") && !proj.contains("declare const exec_py"),
        "{proj}"
    );
    failed(
        &host
            .call("exec_ts.declarations", json!({"pack": "prj"}))
            .await,
        "NOT_FOUND",
        &["did you mean `proj`?"],
    );
}

#[tokio::test]
async fn a_type_error_stops_the_code_before_it_runs() {
    let notebooks = TempDir::new().unwrap();
    let writable = TempDir::new().unwrap();
    let host = TestHost::start(&checked_config(&notebooks, &writable)).await;
    let cwd = writable.path().display().to_string();
    // The side effect comes first; the wrong call is on line 3.
    let code = "import { writeFileSync } from 'node:fs';\n\
                writeFileSync('ran', 'yes');\n\
                const r = await proj.read({ name: 'here', path: 3 });\n";
    let refused = host
        .call(
            "exec_ts.execute",
            json!({"code": code, "cwd": cwd, "typecheck": true}),
        )
        .await;
    let message = failed(
        &refused,
        "INVALID_ARGUMENT",
        &["did not run: line 3, column 43: error TS2322"],
    );
    assert!(
        message.contains("not assignable to type 'string'"),
        "{message}"
    );
    assert!(
        !writable.path().join("ran").exists(),
        "the code ran before its type check"
    );
    // Well typed, it runs; and the result's type is known to the checker.
    let fine = ok(&host
        .call(
            "exec_ts.execute",
            json!({"code": "const r = await proj.list();\nconst n: number = r.projects.length;\nconsole.log(n);\nn",
                   "typecheck": true}),
        )
        .await);
    assert_eq!(fine["result"], 1, "{fine}");
    let wrong_result = host
        .call(
            "exec_ts.execute",
            json!({"code": "const r = await proj.list();\nconst n: string = r.projects.length;\n",
                   "typecheck": true}),
        )
        .await;
    failed(
        &wrong_result,
        "INVALID_ARGUMENT",
        &["line 2, column 7: error TS2322"],
    );
    // JavaScript is not checked: asking for it says so.
    failed(
        &host
            .call(
                "exec_ts.execute",
                json!({"code": "1", "language": "javascript", "typecheck": true}),
            )
            .await,
        "INVALID_ARGUMENT",
        &["`typecheck` is for TypeScript"],
    );
}

#[tokio::test]
async fn without_a_compiler_a_type_check_says_what_to_install() {
    let notebooks = TempDir::new().unwrap();
    let host = host(&notebooks).await;
    failed(
        &host
            .call("exec_ts.execute", json!({"code": "1", "typecheck": true}))
            .await,
        "INVALID_ARGUMENT",
        &[
            "npm install typescript@7",
            "`typescript` in [packs.exec_ts] config",
        ],
    );
}

#[tokio::test]
async fn python_shows_signatures_and_stubs_too() {
    let notebooks = TempDir::new().unwrap();
    let host = host(&notebooks).await;
    let out = ok(&host
        .call(
            "exec_py.run",
            json!({"code": "help(proj.read)\nproj.read.__doc__"}),
        )
        .await);
    let doc = out["result"].as_str().unwrap();
    assert!(
        doc.starts_with("proj.read(name: string, path: string"),
        "{doc}"
    );
    assert!(doc.contains("Read a UTF-8 text file"), "{doc}");
    assert!(
        out["stdout"]
            .as_str()
            .unwrap()
            .contains("proj.read(name: string"),
        "{out}"
    );
    let stubs = ok(&host
        .call("exec_py.declarations", json!({"pack": "proj"}))
        .await);
    let stubs = stubs["declarations"].as_str().unwrap();
    assert!(
        stubs.contains("class proj:") && stubs.contains("def read(name: str, path: str"),
        "{stubs}"
    );
    // They are Python.
    let parsed = ok(&host
        .call(
            "exec_py.run",
            json!({"code": format!("import ast\nast.parse({stubs:?}) is not None")}),
        )
        .await);
    assert_eq!(parsed["result"], true, "{parsed}");
}

#[tokio::test]
async fn the_readmes_two_languages_give_the_same_answer() {
    let notebooks = TempDir::new().unwrap();
    let host = host(&notebooks).await;
    let python = ok(&host
        .run("```python\nfiles = proj.ls(\"here\")\n[e[\"name\"] for e in files[\"entries\"]\n if e[\"kind\"] == \"file\"]\n```")
        .await);
    let typescript = ok(&host
        .run("```ts\nconst files = await proj.ls({ name: \"here\" });\nfiles.entries\n  .filter((e) => e.kind === \"file\").map((e) => e.name)\n```")
        .await);
    // The host's folder: its packs.toml and log.
    assert!(
        python["result"]
            .as_array()
            .is_some_and(|names| names.contains(&json!("packs.toml"))),
        "{python}"
    );
    assert_eq!(python["result"], typescript["result"]);
}
