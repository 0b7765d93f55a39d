//! `[snippets]` as MCP prompts, through the real binary over HTTP: each
//! caller lists and gets the snippets it may use, rendered as the command
//! they stand for.

use rmcp::model::{GetPromptRequestParams, JsonObject, Role};
use serde_json::json;

use crate::http::token;
use packhost_tests::http::HttpHost;

const CONFIG: &str = r#"
[packs.proj]

[snippets.files]
description = "List a folder of a project"
body = "proj.ls(name='{{ name }}', sub='{{ sub }}')"
[snippets.files.params.name]
description = "the project"
[snippets.files.params.sub]
default = "."

[snippets.projects]
body = "proj.list()"
"#;

fn arguments(value: serde_json::Value) -> JsonObject {
    value.as_object().expect("an object").clone()
}

#[tokio::test]
async fn snippets_are_the_prompts_of_the_callers_that_may_use_them() {
    let (ada, ada_entry) = token("ada", "acme", &[]);
    // eve may call `proj.list` only: `files` calls what she may not.
    let (eve, eve_entry) = token("eve", "acme", &["proj.list"]);
    let host = HttpHost::start(&format!("{CONFIG}\n{ada_entry}\n{eve_entry}\n"), &[]).await;
    let ada = host.client(Some(&ada)).await.expect("connect");
    let eve = host.client(Some(&eve)).await.expect("connect");

    let listed = ada.list_all_prompts().await.expect("prompts/list");
    let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["files", "projects"]);
    let files = &listed[0];
    assert_eq!(
        files.description.as_deref(),
        Some("List a folder of a project")
    );
    let params: Vec<(&str, Option<&str>, Option<bool>)> = files
        .arguments
        .iter()
        .flatten()
        .map(|a| (a.name.as_str(), a.description.as_deref(), a.required))
        .collect();
    assert_eq!(
        params,
        [
            ("name", Some("the project"), Some(true)),
            ("sub", None, Some(false))
        ]
    );

    let got = ada
        .get_prompt(
            GetPromptRequestParams::new("files").with_arguments(arguments(json!({"name": "repo"}))),
        )
        .await
        .expect("prompts/get");
    assert_eq!(
        got.description.as_deref(),
        Some("List a folder of a project")
    );
    assert_eq!(got.messages.len(), 1);
    assert_eq!(got.messages[0].role, Role::User);
    let text = serde_json::to_value(&got.messages[0].content).unwrap();
    assert_eq!(text["text"], "proj.ls(name='repo', sub='.')");

    let missing = ada
        .get_prompt(GetPromptRequestParams::new("files"))
        .await
        .expect_err("a required argument is missing");
    assert!(
        missing
            .to_string()
            .contains("needs parameter `name` (the project)"),
        "{missing}"
    );

    // eve sees only what she may use, and `files` is unknown to her: not
    // refused in words that would tell what it calls.
    let listed = eve.list_all_prompts().await.expect("prompts/list");
    let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["projects"]);
    let refused = eve
        .get_prompt(GetPromptRequestParams::new("files"))
        .await
        .expect_err("not her prompt")
        .to_string();
    assert!(
        refused.contains("unknown prompt `files`; available: projects")
            && !refused.contains("proj.ls"),
        "{refused}"
    );
}
