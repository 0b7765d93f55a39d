//! Issue #36, "a newcomer's first hour": each error a newcomer met says on
//! its first line what was wrong and what to do; snippets are visible to a
//! model; a project never hides a `proj` function of its name.

use packhost_tests::{
    TestHost, failed, first_line, hello_section, ok, packhost_cli, packhost_command, structured,
    text,
};
use serde_json::json;
use tempfile::TempDir;

use crate::http::token;
use packhost_tests::http::HttpHost;

/// The code packs, proj over one project, the hello fixture, an alias.
fn config(notebooks: &TempDir, extra: &str) -> String {
    format!(
        "[packs.exec_py]\n[packs.exec_ts]\nconfig = {{ notebooks_dir = {:?} }}\n[packs.proj]\n{}\
         [aliases]\nprojects = \"proj.list\"\n[projects]\nhere = \".\"\n{extra}",
        notebooks.path().display().to_string(),
        hello_section(""),
    )
}

/// The stderr of a refused `packhost check`, which exits 2.
fn refused_check(config: &str) -> String {
    let output = packhost_cli(config, &["check"]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    stderr
}

// The seed's "Function priority": a project named like a `proj` function
// leaves the function callable; other projects stay paths.
#[tokio::test]
async fn functions_win_over_projects_named_like_them() {
    let host = TestHost::start(
        "[packs.exec_py]\n[packs.proj]\n[projects]\npath = \".\"\nlist = \".\"\nhere = \".\"\n",
    )
    .await;
    let code =
        "[len(proj.list()['projects']), proj.path('here', sub='src'), type(proj.here).__name__]";
    let out = ok(&host.call("exec_py.run", json!({ "code": code })).await);
    let here = host.dir.path().display().to_string();
    assert_eq!(
        out["result"],
        json!([3, {"project": "here", "path": format!("{here}/src")}, "ProjectPath"]),
        "{out}"
    );
}

#[tokio::test]
async fn a_name_error_names_the_closest_few_once_within_bounds() {
    let notebooks = TempDir::new().unwrap();
    let host = TestHost::start(&config(&notebooks, "")).await;
    let result = host.run("proj_lst()").await;
    let first = first_line(&result);
    assert!(
        first.starts_with(
            "EXECUTION_ERROR: NameError: name 'proj_lst' is not defined; did you mean `proj.list`"
        ),
        "{first}"
    );
    assert!(
        first.contains("`packhost.packs()` lists every function"),
        "{first}"
    );
    let message = structured(&result)["error_message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.len() <= 300,
        "{} characters: {message}",
        message.len()
    );
    assert!(!message.contains("exec_ts.cell_execute"), "{message}");
    let whole = text(&result);
    assert!(whole.len() <= 1_500, "{} characters: {whole}", whole.len());
}

#[tokio::test]
async fn a_typescript_error_is_what_was_thrown_without_the_wrapper() {
    let notebooks = TempDir::new().unwrap();
    let host = TestHost::start(&config(&notebooks, "")).await;
    let result = host
        .run("```ts\nconst a = 1;\nawait proj.lst({})\n```")
        .await;
    let first = first_line(&result);
    assert!(
        first.starts_with(
            "EXECUTION_ERROR: TypeError: pack `proj` has no function `lst`; functions: list"
        ) && first.ends_with(" (line 2)"),
        "{first}"
    );
    let whole = text(&result);
    assert!(whole.contains("help: the code threw it"), "{whole}");
    assert!(!whole.contains("packhost.answer"), "{whole}");
    // The stack and the line shown are the code's as sent.
    let stderr = structured(&result)["stderr"].as_str().unwrap().to_owned();
    assert!(stderr.contains("[eval1]:2:12\n"), "{stderr}");
    assert!(stderr.ends_with("\n  2 | await proj.lst({})\n"), "{stderr}");
    let thrown = host.run("```ts\nthrow new Error('boom')\n```").await;
    assert_eq!(first_line(&thrown), "EXECUTION_ERROR: Error: boom (line 1)");
    assert!(
        structured(&thrown)["stderr"]
            .as_str()
            .unwrap()
            .starts_with("Error: boom\n    at "),
        "{}",
        text(&thrown)
    );
}

#[tokio::test]
async fn a_typescript_syntax_error_is_an_invalid_argument_with_line_and_column() {
    let notebooks = TempDir::new().unwrap();
    let host = TestHost::start(&config(&notebooks, "")).await;
    let ts = host
        .run("```ts\nconst a = 1;\nconst x: number = ;\n```")
        .await;
    assert_eq!(
        first_line(&ts),
        "INVALID_ARGUMENT: SyntaxError: Expression expected (line 2, column 19)"
    );
    failed(
        &ts,
        "INVALID_ARGUMENT",
        &["help: fix the code at that line and column; nothing ran"],
    );
    let js = host.run("```js\nconst a = 1;\nconst b = (;\n```").await;
    let first = first_line(&js);
    assert!(
        first.starts_with("INVALID_ARGUMENT: SyntaxError: ")
            && first.ends_with("(line 2, column 12)"),
        "{}",
        text(&js)
    );
}

#[test]
fn check_renders_every_snippet_and_names_an_undefined_variable() {
    let config = "[packs.proj]\n\n[snippets.head]\nbody = \"proj.read('here', 'a', limit={{ n }})\"\n\
                  params = { lines = { default = 10 } }\n";
    let stderr = refused_check(config);
    let first = stderr.lines().next().unwrap();
    assert!(
        first.starts_with("error: ") && first.ends_with(
            "/packs.toml:3: `snippets.head`: its body uses `n`, which is none of its parameters \
             (its parameters: lines); add `n` to its `params` or use a parameter"
        ),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_snippet_that_fails_at_call_time_names_its_config_line() {
    // Only a value past 5 reaches the mistake: `check` passes it.
    let snippet = "[snippets.head]\nbody = \"proj.list({% if lines > 5 %}limit={{ n }}{% endif %})\"\n\
                   params = { lines = { default = 1 } }\n";
    let notebooks = TempDir::new().unwrap();
    let host = TestHost::start(&config(&notebooks, snippet)).await;
    ok(&host.run("$head").await);
    let first = first_line(&host.run("$head lines=9").await);
    let file = host.dir.path().join("packs.toml");
    let line = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .position(|l| l == "[snippets.head]")
        .unwrap()
        + 1;
    assert_eq!(
        first,
        format!(
            "INTERNAL: snippet `head` is misconfigured: its body uses `n`, which is none of its \
             parameters (its parameters: lines); add `n` to its `params` or use a parameter; fix \
             `[snippets.head]` at {}:{line}",
            file.display()
        )
    );
}

#[test]
fn config_type_errors_are_in_plain_words_with_a_valid_example() {
    let stderr = refused_check("[server]\ntimeout_ms = \"60s\"\n");
    let first = stderr.lines().next().unwrap();
    assert!(
        first.ends_with(
            "/packs.toml: line 2: `server.timeout_ms` must be a whole number without quotes or \
             units, e.g. `timeout_ms = 60000`, not the string \"60s\""
        ),
        "{stderr}"
    );
    let stderr = refused_check(
        "[snippets.find]\nbody = \"proj.grep('here', {{ pattern | tojson }})\"\n\
         [snippets.find.params]\npattern = \"regular expression\"\n",
    );
    let first = stderr.lines().next().unwrap();
    assert!(
        first.ends_with(
            "/packs.toml: line 4: `snippets.find.params.pattern` must be a table, e.g. `pattern = \
             { description = \"what it is\", default = \"value\" }`, not the string \"regular \
             expression\""
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("invalid type"), "{stderr}");
    // A pack's own config, in the same words, naming the key.
    let output = packhost_cli(
        "[packs.exec_py]\nconfig = { limits = { memory_mb = \"1G\" } }\n",
        &["check"],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "config of pack `exec_py`: `limits.memory_mb` must be a whole number without quotes \
             or units, e.g. `memory_mb = 60000`, not the string \"1G\""
        ),
        "{stdout}"
    );
}

#[tokio::test]
async fn a_token_without_the_code_pack_is_told_apart_from_a_missing_one() {
    let (token, entry) = token("ada", "acme", &["run", "proj.*"]);
    let host = HttpHost::start(&format!("[packs.exec_py]\n[packs.proj]\n{entry}\n"), &[]).await;
    let client = host.client(Some(&token)).await.unwrap();
    let result = crate::http::call(&client, "run", json!({"command": "x = 1\nx"})).await;
    assert_eq!(
        first_line(&result),
        "UNKNOWN_PACK: this command is not a single call `pack.function(...)`, so it would run \
         as code in pack `exec_py`, which this caller's token does not allow"
    );
    failed(
        &result,
        "UNKNOWN_PACK",
        &[
            "help: send one call with literal arguments, e.g. `proj.list()`; or add `exec_py.*` to \
           this token's `tools` in its [[auth.tokens]] entry",
        ],
    );
    let none = TestHost::start("[packs.proj]\n").await;
    let first = first_line(&none.run("x = 1\nx").await);
    assert!(
        first.ends_with("in pack `exec_py`, which is not loaded"),
        "{first}"
    );
}

#[test]
fn check_and_call_without_a_config_say_where_they_looked() {
    let dir = TempDir::new().unwrap();
    let looked = format!(
        "no config file: none was given and there is no packs.toml in {}; pass one with \
         `--config FILE` (or PACKHOST_CONFIG=FILE)",
        dir.path().canonicalize().unwrap().display()
    );
    let output = packhost_command(dir.path()).arg("check").output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.lines().next().unwrap(),
        format!("config: {looked}; until then only built-in defaults, with no packs")
    );
    let output = packhost_command(dir.path())
        .args(["call", "weather.forecast()"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with("UNKNOWN_PACK: unknown pack `weather`; loaded packs: packhost\n"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("help: {looked}")), "{stdout}");
}

#[tokio::test]
async fn snippets_are_in_the_short_run_description_and_in_packs() {
    let notebooks = TempDir::new().unwrap();
    let snippet = "[snippets.find]\ndescription = \"Search a project for a regex\"\n\
                   body = \"proj.grep({{ project | tojson }}, {{ pattern | tojson }})\"\n\
                   params = { project = { default = \"here\" }, pattern = {} }\n";
    let host = TestHost::start(&config(&notebooks, snippet)).await;
    let tools = host.client.list_all_tools().await.unwrap();
    let run = tools.into_iter().find(|t| t.name == "run").unwrap();
    let description = run.description.unwrap().to_string();
    assert!(
        !description.contains("Functions:"),
        "not the short form: {description}"
    );
    assert!(
        description.contains(
            "\nSnippets: $find pattern project=\"here\" (Search a project for a regex)\n"
        ),
        "{description}"
    );
    let packs = ok(&host.call("packhost.packs", json!({})).await);
    assert_eq!(
        packs["snippets"]["find"],
        json!({"usage": "$find pattern project=\"here\"", "description": "Search a project for a regex"})
    );
}

#[tokio::test]
async fn cosmetics_function_lists_and_enum_signatures() {
    let host = TestHost::start(&hello_section("")).await;
    let result = host.call("hello.nosuch", json!({})).await;
    let first = first_line(&result);
    assert!(
        first.starts_with("UNKNOWN_FUNCTION: pack `hello` has no function `nosuch` (has: "),
        "{first}"
    );
    let notebooks = TempDir::new().unwrap();
    let host = TestHost::start(&config(&notebooks, "")).await;
    let described = ok(&host
        .call("packhost.describe", json!({"name": "exec_ts.execute"}))
        .await);
    let signature = described.to_string();
    assert!(
        signature.contains(r#"language?: \"typescript\" | \"javascript\""#),
        "{signature}"
    );
}
