//! Results the official MCP clients accept: a failure of a tool with an
//! output schema keeps structured content only when it is the function's own
//! result shape and fits; the error itself is in `_meta["packhost/error"]`.
//! (Every call of the suite is checked this way by the test support; these
//! tests pin the rule itself.)

use packhost_tests::{
    TestHost, downstream::fixture_mcp_bin, error_of, failed, hello_section, is_error, ok,
    structured, text,
};
use serde_json::json;

#[tokio::test]
async fn failures_keep_structured_content_only_in_the_functions_shape() {
    let host = TestHost::start(&hello_section("")).await;

    // The host refuses the arguments: no structured content, the error in _meta.
    let refused = host.call("hello.greet", json!({"name": 5})).await;
    failed(&refused, "INVALID_ARGUMENT", &["`name`"]);
    assert_eq!(refused.structured_content, None);
    assert!(
        error_of(&refused)["message"]
            .as_str()
            .unwrap()
            .contains("`hello.greet`"),
        "{:?}",
        refused.meta
    );
    let panicked = host.call("hello.panic", json!({})).await;
    failed(&panicked, "INTERNAL", &["panicked"]);
    assert_eq!(panicked.structured_content, None);

    // A failure that keeps the function's result shape serves it.
    let kept = host.call("hello.fail", json!({})).await;
    failed(&kept, "UPSTREAM_ERROR", &["exit code 3"]);
    assert_eq!(
        structured(&kept),
        json!({"stdout": "partial output", "exit_code": 3})
    );

    // One whose result does not fit the schema (a pack bug): text only.
    let misfit = host.call("hello.misfit", json!({})).await;
    let message = failed(&misfit, "EXECUTION_ERROR", &["wrong on purpose"]);
    assert_eq!(misfit.structured_content, None, "{message}");
    assert!(
        host.stderr()
            .contains("does not fit the tool's output schema"),
        "{}",
        host.stderr()
    );

    // `run` has no output schema: the error is its structured content too.
    let unknown = host.run("hello.greets()").await;
    failed(&unknown, "UNKNOWN_FUNCTION", &["greet"]);
    assert_eq!(structured(&unknown)["error"], error_of(&unknown));
    assert_eq!(structured(&unknown)["error"]["code"], "UNKNOWN_FUNCTION");
}

#[tokio::test]
async fn results_of_a_server_pack_are_checked_against_its_output_schemas() {
    let fixture = vec![fixture_mcp_bin().display().to_string()];
    let host = TestHost::start(&format!(
        "[packs.fx]\nkind = \"mcp\"\ncommand = {fixture:?}\n"
    ))
    .await;
    let tools = host.client.list_all_tools().await.expect("tools/list");
    let schema = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).expect(name);
        json!(tool.output_schema)
    };
    // The server's own schema, and `{"type": "object"}` where it has none.
    assert_eq!(schema("fx.typed")["required"], json!(["n"]));
    assert_eq!(schema("fx.pid"), json!({"type": "object"}));

    let typed = |form: &str| host.call("fx.typed", json!({ "form": form }));
    assert_eq!(ok(&typed("structured").await), json!({"n": 7}));
    // A server from before structured content: its JSON text.
    assert_eq!(ok(&typed("text").await), json!({"n": 7}));
    // A server breaking its own contract: an error, with what it said.
    let plain = typed("plain").await;
    failed(
        &plain,
        "UPSTREAM_ERROR",
        &["no structured content", "seven"],
    );
    let wrong = typed("wrong").await;
    failed(
        &wrong,
        "UPSTREAM_ERROR",
        &["does not fit its own output schema"],
    );
    assert!(is_error(&wrong) && wrong.structured_content.is_none());
    assert!(text(&wrong).contains(r#""seven""#), "{}", text(&wrong));
}
