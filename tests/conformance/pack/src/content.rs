//! Content of every kind (text, image, audio, embedded resources), progress,
//! logging, errors, and a tool whose input schema uses JSON Schema 2020-12's
//! wider vocabulary: the suite's `tools-call-*` and `json-schema-2020-12`
//! scenarios, with the names, arguments and content they check.

use std::{sync::Arc, time::Duration};

use pack_sdk::{Content, Context, Empty, Function, LogLevel, PackDef, PackError, Value, json};
use serde::Serialize;

/// A 1x1 red PNG.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// One millisecond of 8 kHz mono silence as WAV.
const WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// The pause between the steps of the progress and logging tools: the suite
/// checks that a client sees notifications spread over a call.
const STEP: Duration = Duration::from_millis(50);

/// Every tool's structured result: what its content says, in words.
#[derive(Serialize, schemars::JsonSchema)]
struct Said {
    /// What the tool did.
    text: String,
}

fn said(text: &str) -> Content<Said> {
    Content::new(Said {
        text: text.to_owned(),
    })
    .text(text)
}

/// The blocks alone, as the scenarios show them: no text block before.
fn only_blocks(what: &str) -> Content<Said> {
    said(what).text("")
}

async fn simple_text(_: Arc<()>, _: Empty, _: Context) -> Result<Content<Said>, PackError> {
    Ok(said("This is a simple text response for testing."))
}

async fn image(_: Arc<()>, _: Empty, _: Context) -> Result<Content<Said>, PackError> {
    Ok(only_blocks("an image").image("image/png", PNG))
}

async fn audio(_: Arc<()>, _: Empty, _: Context) -> Result<Content<Said>, PackError> {
    Ok(only_blocks("an audio clip").audio("audio/wav", WAV))
}

async fn embedded(_: Arc<()>, _: Empty, _: Context) -> Result<Content<Said>, PackError> {
    Ok(only_blocks("an embedded resource").resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    ))
}

async fn mixed(_: Arc<()>, _: Empty, _: Context) -> Result<Content<Said>, PackError> {
    Ok(said("Multiple content types test:")
        .image("image/png", PNG)
        .resource_text(
            "test://mixed-content-resource",
            "application/json",
            json!({"test": "data", "value": 123}).to_string(),
        ))
}

async fn progress(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Said>, PackError> {
    for (n, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if n > 0 {
            tokio::time::sleep(STEP).await;
        }
        ctx.progress(done, Some(100.0), "");
    }
    Ok(said("Progress reported: 0, 50 and 100 of 100."))
}

async fn logging(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Said>, PackError> {
    let lines = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ];
    for (n, line) in lines.into_iter().enumerate() {
        if n > 0 {
            tokio::time::sleep(STEP).await;
        }
        ctx.log(LogLevel::Info, line);
    }
    Ok(said("Logged three lines at info level."))
}

/// The stateless scenario's probe: a request that asks for no log level
/// must get none of these.
async fn logging_probe(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Said>, PackError> {
    for level in [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Warn,
        LogLevel::Error,
    ] {
        ctx.log(level, &format!("a line at {level:?} level"));
    }
    Ok(said("Logged one line at each level."))
}

async fn error(_: Arc<()>, _: Empty, _: Context) -> Result<Said, PackError> {
    Err(PackError::internal(
        "This tool intentionally returns an error for testing",
    ))
}

async fn contact(_: Arc<()>, _: Value, _: Context) -> Result<Content<Said>, PackError> {
    Ok(said("ok"))
}

/// The suite checks that `$schema`, `$defs` (with an `$anchor`),
/// `allOf`/`anyOf`, `if`/`then`/`else` and `additionalProperties` reach
/// the client as written, which a schema derived from a Rust type cannot
/// say.
fn contact_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

pub(crate) fn add(pack: PackDef<()>) -> PackDef<()> {
    pack.function("test_simple_text", "Returns one text block", simple_text)
        .function("test_image_content", "Returns a PNG image block", image)
        .function("test_audio_content", "Returns a WAV audio block", audio)
        .function(
            "test_embedded_resource",
            "Returns an embedded text resource",
            embedded,
        )
        .function(
            "test_multiple_content_types",
            "Returns a text, an image and an embedded resource",
            mixed,
        )
        .function(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100, 50 ms apart",
            progress,
        )
        .function(
            "test_tool_with_logging",
            "Logs three lines at info level, 50 ms apart",
            logging,
        )
        .function(
            "test_logging_tool",
            "Logs one line at each level (debug, info, warning, error)",
            logging_probe,
        )
        .function("test_error_handling", "Always fails", error)
        .function_with(
            Function::new(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features",
                contact,
            )
            .input_schema(contact_schema()),
        )
}

#[cfg(test)]
mod tests {
    use pack_sdk::{owned::Owner, testing::PackTest};

    use super::*;

    #[test]
    fn the_fixture_is_what_mcp_clients_accept() {
        pack_sdk::testing::check_manifest(crate::conformance).unwrap();
    }

    #[tokio::test]
    async fn tools_give_the_blocks_the_suite_checks() {
        let pack = PackTest::build(crate::conformance).start().unwrap();
        let caller = Owner::new("acme", "ada");
        let mixed = pack
            .call_content(&caller, "test_multiple_content_types", json!({}))
            .await
            .unwrap();
        let kinds: Vec<&str> = mixed
            .blocks
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["image", "resource"]);
        assert_eq!(mixed.text.as_deref(), Some("Multiple content types test:"));
        let audio = pack
            .call_content(&caller, "test_audio_content", json!({}))
            .await
            .unwrap();
        assert_eq!(audio.text.as_deref(), Some(""), "no text block before it");
        assert_eq!(audio.blocks[0]["mimeType"], "audio/wav");
        let error = pack
            .call(&caller, "test_error_handling", json!({}))
            .await
            .unwrap_err();
        assert_eq!(
            error.message(),
            "This tool intentionally returns an error for testing"
        );
    }
}
