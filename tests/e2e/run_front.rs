//! The `run` tool: every command form a model writes, and its errors.

use packhost_tests::{TestHost, WHOLE_RESULTS, failed, hello_section, ok};
use serde_json::json;

fn config() -> String {
    // `nothere` fails to load: an alias into it is left to fail when called.
    hello_section("")
        + r#"
[packs.nothere]
path = "/nonexistent/libnothere.so"

[aliases]
hi = "hello.greet"
gone = "nothere.fn"

[snippets.greet_twice]
description = "Greet with excitement"
body = "hello.greet(name={{ who | tojson }}, excitement={{ marks }})"
[snippets.greet_twice.params]
who = { description = "who to greet" }
marks = { default = 2, description = "how many marks" }
"#
}

async fn greeting(host: &TestHost, command: &str) -> String {
    let result = host.run(command).await;
    ok(&result)["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn every_wrapping_form_is_stripped() {
    let host = TestHost::start(&config()).await;
    for command in [
        "hello.greet(name=\"ann\")",
        "```python\nhello.greet(name=\"ann\")\n```",
        "```\nhello.greet(name=\"ann\")\n```",
        "``hello.greet(name=\"ann\")``",
        "`hello.greet(name=\"ann\")`",
        ">>> hello.greet(name=\"ann\")",
        "  \r\n```py\r\n>>> hello.greet(name=\"ann\")\r\n```\r\n",
    ] {
        assert_eq!(
            greeting(&host, command).await,
            "hello, ann",
            "command: {command:?}"
        );
    }
}

#[tokio::test]
async fn positional_and_keyword_arguments_bind_in_schema_order() {
    let host = TestHost::start(&config()).await;
    assert_eq!(
        greeting(&host, "hello.greet('bo', 3)").await,
        "hello, bo!!!"
    );
    assert_eq!(
        greeting(&host, "hello.greet('bo', excitement=1)").await,
        "hello, bo!"
    );
    let result = host.run("hello.greet('bo', 1, 2)").await;
    failed(
        &result,
        "INVALID_ARGUMENT",
        &["at most 2 positional", "hello.greet(name: string"],
    );
    let result = host.run("hello.greet('bo', name='again')").await;
    failed(&result, "INVALID_ARGUMENT", &["two values for `name`"]);
}

#[tokio::test]
async fn python_literals_arrive_as_json() {
    let host = TestHost::start(&config()).await;
    let command = r#"hello.echo(value={"s": 'it\'s', "t": """tri
ple""", "n": [1, -2, 3.5, 1e3], "b": (True, False, None), "d": {"deep": [[{"x": ()}]]}})"#;
    let result = host.run(command).await;
    assert_eq!(
        ok(&result)["value"],
        json!({
            "s": "it's",
            "t": "tri\nple",
            "n": [1, -2, 3.5, 1000.0],
            "b": [true, false, null],
            "d": {"deep": [[{"x": []}]]}
        })
    );
}

#[tokio::test]
async fn aliases_rewrite_the_target() {
    let host = TestHost::start(&config()).await;
    assert_eq!(greeting(&host, "hi(name='al')").await, "hello, al");
    let result = host.run("gone()").await;
    failed(&result, "UNKNOWN_PACK", &["unknown pack `nothere`"]);
    let result = host.run("nosuch(1)").await;
    failed(
        &result,
        "UNKNOWN_FUNCTION",
        &["unknown tool `nosuch`", "hi", "hello.*"],
    );
}

#[tokio::test]
async fn snippets_expand_in_both_forms() {
    let host = TestHost::start(&config()).await;
    assert_eq!(
        greeting(&host, "$greet_twice who=\"two words\"").await,
        "hello, two words!!"
    );
    assert_eq!(
        greeting(&host, "$greet_twice who=cy marks=0").await,
        "hello, cy"
    );
    assert_eq!(
        greeting(&host, "$greet_twice\nwho: dee\nmarks: 1").await,
        "hello, dee!"
    );
    let result = host.run("$nosnippet x=1").await;
    failed(&result, "NOT_FOUND", &["nosnippet", "greet_twice"]);
    let result = host.run("$greet_twice marks=1").await;
    failed(&result, "INVALID_ARGUMENT", &["`who`"]);
}

#[tokio::test]
async fn a_bang_prefix_is_refused_with_the_syntax() {
    let host = TestHost::start(&config()).await;
    let result = host.run("!onetool hello.greet(name='x')").await;
    failed(&result, "INVALID_ARGUMENT", &["`!`", "pack.function"]);
}

#[tokio::test]
async fn code_blocks_need_the_code_pack() {
    let host = TestHost::start(&config()).await;
    let result = host.run("```python\nx = 2\nx * 21\n```").await;
    failed(&result, "UNKNOWN_PACK", &["exec_py", "not loaded"]);
}

#[tokio::test]
async fn malformed_calls_get_a_clear_error() {
    // Results whole: the 1 MiB echo is the point, not its handle.
    let host = TestHost::start(&(config() + WHOLE_RESULTS)).await;
    let result = host.run("hello.greet(name=\"unterminated)").await;
    failed(&result, "INVALID_ARGUMENT", &["unterminated"]);
    let deep = format!(
        "hello.echo(value={}1{})",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let result = host.run(&deep).await;
    failed(&result, "INVALID_ARGUMENT", &["deep"]);
    let huge = format!("hello.echo(value='{}')", "x".repeat(1 << 20));
    let result = host.run(&huge).await;
    assert_eq!(ok(&result)["value"].as_str().map(str::len), Some(1 << 20));
}

#[tokio::test]
async fn run_takes_exactly_a_command() {
    let host = TestHost::start(&config()).await;
    let result = host.call("run", json!({"cmd": "x"})).await;
    failed(&result, "INVALID_ARGUMENT", &["`command`"]);
}
