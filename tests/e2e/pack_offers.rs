//! What packs offer besides functions, through the real binary: the
//! fixture pack's prompts rendered and its resources and template read (by
//! the pack, through the ABI), only for callers who may call the pack; and
//! `[packs.x] prefix = false`, names as the pack gives them.

use rmcp::{
    ServiceError,
    model::{GetPromptRequestParams, JsonObject, ReadResourceRequestParams, ResourceContents},
};
use serde_json::{Value, json};

use crate::http::token;
use packhost_tests::{TestHost, http::HttpHost, is_error, packhost_cli, structured};

const CONFIG: &str = "[packs.proj]\n\n[packs.conformance]\n";

fn arguments(value: Value) -> JsonObject {
    value.as_object().expect("an object").clone()
}

fn text_of(contents: &ResourceContents) -> &str {
    match contents {
        ResourceContents::TextResourceContents { text, .. } => text,
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn a_packs_prompt_renders_and_its_resources_read_for_callers_who_may_call_it() {
    let (ada, ada_entry) = token("ada", "acme", &[]);
    // eve may call `proj.list` only: the fixture pack is not hers.
    let (eve, eve_entry) = token("eve", "acme", &["proj.list"]);
    let host = HttpHost::start(&format!("{CONFIG}\n{ada_entry}\n{eve_entry}\n"), &[]).await;
    let ada = host.client(Some(&ada)).await.expect("connect");
    let eve = host.client(Some(&eve)).await.expect("connect");

    let prompts = ada.list_all_prompts().await.expect("prompts/list");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(
        names.contains(&"conformance.test_prompt_with_embedded_resource"),
        "{names:?}"
    );
    let got = ada
        .get_prompt(
            GetPromptRequestParams::new("conformance.test_prompt_with_embedded_resource")
                .with_arguments(arguments(json!({"resourceUri": "test://mine"}))),
        )
        .await
        .expect("prompts/get");
    let messages = serde_json::to_value(&got.messages).unwrap();
    assert_eq!(messages[0]["content"]["type"], "resource");
    assert_eq!(messages[0]["content"]["resource"]["uri"], "test://mine");
    assert_eq!(
        messages[1]["content"]["text"],
        "Please process the embedded resource above."
    );
    let missing = ada
        .get_prompt(GetPromptRequestParams::new(
            "conformance.test_prompt_with_embedded_resource",
        ))
        .await
        .expect_err("its argument is required")
        .to_string();
    assert!(missing.contains("`resourceUri`"), "{missing}");

    let resources = ada.list_all_resources().await.expect("resources/list");
    assert!(resources.iter().any(|r| r.uri == "test://static-text"));
    let templates = ada
        .list_all_resource_templates()
        .await
        .expect("resources/templates/list");
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "test://template/{id}/data")
    );
    let read = ada
        .read_resource(ReadResourceRequestParams::new("test://static-text"))
        .await
        .expect("resources/read");
    assert_eq!(
        text_of(&read.contents[0]),
        "This is the content of the static text resource."
    );
    let read = ada
        .read_resource(ReadResourceRequestParams::new("test://template/7/data"))
        .await
        .expect("a template's resource");
    let data: Value = serde_json::from_str(text_of(&read.contents[0])).unwrap();
    assert_eq!(data["id"], "7");

    // The pack completes its template's variable.
    let ids = ada
        .complete_resource_simple("test://template/{id}/data", "id", "12")
        .await
        .expect("completion/complete");
    assert_eq!(ids, ["123"]);

    // eve sees none of it, and reads it as a URI that does not exist.
    let prompts = eve.list_all_prompts().await.expect("prompts/list");
    assert!(prompts.iter().all(|p| !p.name.starts_with("conformance.")));
    let resources = eve.list_all_resources().await.expect("resources/list");
    assert!(resources.iter().all(|r| !r.uri.starts_with("test://")));
    for uri in ["test://static-text", "test://template/7/data"] {
        let refused = eve
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .expect_err("not hers");
        let ServiceError::McpError(error) = refused else {
            panic!("{refused}");
        };
        assert_eq!(error.code.0, -32602, "{error:?}");
        assert_eq!(error.data, Some(json!({ "uri": uri })));
    }
    eve.get_prompt(GetPromptRequestParams::new(
        "conformance.test_prompt_with_image",
    ))
    .await
    .expect_err("not her prompt");
}

#[tokio::test]
async fn a_pack_without_prefix_is_called_by_its_own_names() {
    let repo = tempfile::TempDir::new().unwrap();
    let projects = format!(
        "[projects]\nrepo = {:?}\n",
        repo.path().display().to_string()
    );
    let config = format!("[packs.proj]\nprefix = false\n\n{projects}");
    let host = TestHost::start(&config).await;
    let tools = host.client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.contains(&"list") && !names.contains(&"proj.list"),
        "{names:?}"
    );
    for result in [
        host.call("list", json!({})).await,
        host.run("list()").await,
        // The whole name still works (code mode's proxies name it so).
        host.call("proj.list", json!({})).await,
    ] {
        assert!(!is_error(&result), "{result:?}");
        assert_eq!(structured(&result)["projects"][0]["name"], "repo");
    }

    // Discovery shows it by its own name and describes it by either.
    let found = host
        .call("packhost.search", json!({"query": "list the projects"}))
        .await;
    let found = structured(&found);
    let names: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|hit| hit["name"].as_str())
        .collect();
    assert!(names.contains(&"list"), "{found}");
    for name in ["list", "proj.list"] {
        let described = host
            .call("packhost.describe", json!({ "name": name }))
            .await;
        assert!(!is_error(&described), "{described:?}");
    }

    // An allow-list may name the function by its own name.
    let (eve, eve_entry) = token("eve", "acme", &["list"]);
    let http = HttpHost::start(&format!("{config}\n{eve_entry}\n"), &[]).await;
    let eve = http.client(Some(&eve)).await.expect("connect");
    let tools = eve.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(
        names.contains(&"list") && !names.contains(&"read"),
        "{names:?}"
    );
}

#[test]
fn a_name_clash_of_a_pack_without_prefix_stops_the_start_naming_both() {
    for (config, names) in [
        (
            "[packs.proj]\nprefix = false\n\n[aliases]\nlist = \"proj.ls\"\n",
            ["function `proj.list`", "`aliases.list`"],
        ),
        (
            "[packs.conformance]\nprefix = false\n\n[snippets.test_prompt_with_image]\nbody = \"x\"\n",
            [
                "prompt `conformance.test_prompt_with_image`",
                "`snippets.test_prompt_with_image`",
            ],
        ),
    ] {
        let output = packhost_cli(config, &["check"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{stderr}");
        for name in names {
            assert!(stderr.contains(name), "{name} in {stderr}");
        }
    }
}
