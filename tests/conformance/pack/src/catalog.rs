//! The suite's prompts and resources that are more than text: a prompt
//! embedding a resource, a prompt with an image, text and binary resources,
//! a template (whose ids complete), and a resource to subscribe to. (Its
//! plain text prompts are `[snippets]` of tests/conformance/packs.toml.)

use std::{collections::BTreeMap, sync::Arc};

use pack_sdk::{
    Block, Completing, Context, Empty, PackDef, PackError, Prompt, PromptMessage, PromptResult,
    ReadRequest, Resource, ResourceContents, Template, json,
};

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

pub(crate) fn add(pack: PackDef<()>) -> PackDef<()> {
    pack.prompt(
        Prompt::new(
            "test_prompt_with_embedded_resource",
            "A prompt that embeds a resource",
        )
        .argument("resourceUri", "URI of the resource to embed", true),
        embedded_resource,
    )
    .prompt(
        Prompt::new("test_prompt_with_image", "A prompt with an image"),
        image,
    )
    .resource(
        Resource::new("test://static-text", "static-text")
            .description("A static text resource")
            .mime_type("text/plain"),
        |_, read: ReadRequest, _| async move {
            let text = "This is the content of the static text resource.";
            Ok(vec![ResourceContents::text(&read.uri, "text/plain", text)])
        },
    )
    .resource(
        Resource::new("test://static-binary", "static-binary")
            .description("A static binary resource (a PNG)")
            .mime_type("image/png"),
        |_, read: ReadRequest, _| async move {
            Ok(vec![ResourceContents::blob(&read.uri, "image/png", PNG)])
        },
    )
    .resource(
        Resource::new("test://watched-resource", "watched-resource")
            .description("A resource clients subscribe to")
            .mime_type("text/plain"),
        |_, read: ReadRequest, _| async move {
            let text = "This resource is watched for updates.";
            Ok(vec![ResourceContents::text(&read.uri, "text/plain", text)])
        },
    )
    .resource_template(
        Template::new("test://template/{id}/data", "template-data")
            .description("Data for an id")
            .mime_type("application/json"),
        |_, read: ReadRequest, _| async move {
            let id = read.variables.get("id").cloned().unwrap_or_default();
            let data =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            let text = data.to_string();
            Ok(vec![ResourceContents::text(
                &read.uri,
                "application/json",
                text,
            )])
        },
    )
    .complete_template(
        "test://template/{id}/data",
        |_, completing: Completing, _| async move {
            let ids = ["1", "2", "123"].into_iter().map(str::to_owned);
            Ok(ids.filter(|id| id.starts_with(&completing.value)).collect())
        },
    )
}

async fn embedded_resource(
    _: Arc<()>,
    args: BTreeMap<String, String>,
    _: Context,
) -> Result<PromptResult, PackError> {
    let uri = &args["resourceUri"];
    let text = "Embedded resource content for testing.";
    Ok(PromptResult::new(vec![
        PromptMessage::user(Block::resource_text(uri, "text/plain", text)),
        PromptMessage::user(Block::text("Please process the embedded resource above.")),
    ]))
}

async fn image(_: Arc<()>, _: Empty, _: Context) -> Result<PromptResult, PackError> {
    Ok(PromptResult::new(vec![
        PromptMessage::user(Block::image("image/png", PNG)),
        PromptMessage::user(Block::text("Please analyze the image above.")),
    ]))
}
