//! What the test harness and the checks are tested with: a pack of notes
//! owned by their writers, and a pack of sums with examples and content.

use std::sync::Arc;

use pack_api::codes;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{PackTest, check_block, check_examples, check_manifest};
use crate::{
    Context, Empty, PackDef, PackError,
    owned::{Kind, Limits, Owner, Share, Table},
};

/// A pack of notes, each its creator's.
struct Notes(Table<String>);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Write {
    /// The text.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Read {
    /// A note id.
    id: String,
}

#[derive(Serialize, JsonSchema)]
struct Note {
    id: String,
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Misfit {
    count: u32,
}

async fn write(notes: Arc<Notes>, args: Write, ctx: Context) -> Result<Note, PackError> {
    let slot = notes.0.reserve(&ctx.owner())?;
    let id = format!("n{}", args.text.len());
    slot.insert(id.clone(), vec![], args.text.clone());
    Ok(Note {
        id,
        text: args.text,
    })
}

async fn read(notes: Arc<Notes>, args: Read, ctx: Context) -> Result<Note, PackError> {
    let note = notes.0.get(&ctx.owner(), &args.id)?;
    Ok(Note {
        id: args.id,
        text: note.value().clone(),
    })
}

async fn misfit(_: Arc<Notes>, _: Empty, _: Context) -> Result<Misfit, PackError> {
    Err(PackError::internal("x").with_result(&json!({"count": "many"})))
}

fn notes() -> PackDef<Notes> {
    PackDef::new("notes", "Notes", |_: Empty, _| {
        let limits = Limits {
            max: 4,
            per_owner: 2,
        };
        Ok(Notes(Table::new(
            Kind::sessions("write one"),
            Share::User,
            limits,
        )?))
    })
    .function("write", "Write a note", write)
    .function("read", "Read a note", read)
    .function("misfit", "A failure whose shape does not fit", misfit)
}

#[tokio::test]
async fn calls_run_as_the_caller_given() {
    let pack = PackTest::build(notes).start().unwrap();
    let (ada, eve) = (Owner::new("acme", "ada"), Owner::new("evil", "eve"));
    let note = pack
        .call(&ada, "write", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(note, json!({"id": "n2", "text": "hi"}));
    let read = json!({"id": "n2"});
    assert_eq!(
        pack.call(&ada, "read", read.clone()).await.unwrap()["text"],
        "hi"
    );
    let err = pack.call(&eve, "read", read).await.unwrap_err();
    assert_eq!(err.code(), codes::SESSION_NOT_FOUND);
    assert_eq!(err.help(), Some("write one"));
}

#[tokio::test]
async fn arguments_are_checked_as_the_host_checks_them() {
    let pack = PackTest::build(notes).start().unwrap();
    let ada = Owner::new("acme", "ada");
    let err = pack
        .call(&ada, "write", json!({"txt": 1}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), codes::INVALID_ARGUMENT);
    assert!(err.message().starts_with("`notes.write`: "), "{err}");
    let err = pack.call(&ada, "wirte", json!({})).await.unwrap_err();
    assert_eq!(err.code(), codes::UNKNOWN_FUNCTION);
    assert!(
        err.message().contains("(has: misfit, read, write)"),
        "{err}"
    );
}

#[tokio::test]
#[should_panic(expected = "does not fit the output schema")]
async fn a_failure_shape_that_does_not_fit_fails_the_test() {
    let pack = PackTest::build(notes).start().unwrap();
    let _ = pack.call(&Owner::new("a", "b"), "misfit", json!({})).await;
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Add {
    /// A number.
    a: i64,
    /// Another.
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
    terms: Vec<i64>,
}

async fn add(_: Arc<()>, args: Add, _: Context) -> Result<Sum, PackError> {
    Ok(Sum {
        sum: args.a + args.b,
        terms: vec![args.a, args.b],
    })
}

#[derive(Serialize, JsonSchema)]
struct Plot {
    caption: String,
}

async fn plot(_: Arc<()>, _: Empty, _: Context) -> Result<crate::Content<Plot>, PackError> {
    Ok(crate::Content::new(Plot {
        caption: "one pixel".into(),
    })
    .text("a plot (the image follows)")
    .image("image/png", "AA==")
    .link(crate::Link::new("file:///tmp/plot.png", "plot.png").mime_type("image/png"))
    .resource_text("file:///tmp/plot.csv", "text/csv", "month,sales\n1,3\n")
    .resource_blob("file:///tmp/plot.bin", "application/octet-stream", "AQI="))
}

fn math() -> PackDef<()> {
    PackDef::new("math", "Sums", |_: Empty, _| Ok(()))
        .function_with(
            crate::Function::new("add", "Add two numbers", add)
                .title("Add numbers")
                .read_only()
                .closed_world()
                .example(json!({"a": 2, "b": 40}), json!({"sum": 42}))
                .example(
                    json!({"a": -1, "b": 1}),
                    json!({"sum": 0, "terms": [-1, 1]}),
                )
                .timeout(std::time::Duration::from_millis(1500)),
        )
        .function_with(crate::Function::new("plot", "A plot", plot).title("Plot"))
        .function("plain", "No metadata", add)
}

/// A pack whose example is wrong: what a test of it must catch.
fn wrong_math() -> PackDef<()> {
    PackDef::new("math", "Sums", |_: Empty, _| Ok(())).function_with(
        crate::Function::new("add", "Add", add).example(json!({"a": 2, "b": 2}), json!({"sum": 5})),
    )
}

#[test]
fn a_function_says_its_metadata_in_the_manifest() {
    let manifest = math().manifest("1.0.0");
    let add = serde_json::to_value(&manifest.functions[0]).unwrap();
    assert_eq!(add["title"], "Add numbers");
    assert_eq!(
        add["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(
        add["examples"][0],
        json!({"args": {"a": 2, "b": 40}, "result": {"sum": 42}})
    );
    assert_eq!(add["timeout_ms"], 1500);
    assert!(add.get("content").is_none(), "{add}");
    let plot = serde_json::to_value(&manifest.functions[1]).unwrap();
    assert_eq!(
        (plot["content"].clone(), plot["title"].clone()),
        (json!(true), json!("Plot"))
    );
    // The output schema is the value's, not the envelope's.
    assert_eq!(plot["output_schema"]["required"], json!(["caption"]));
    // A plain function writes what it always did.
    let plain = serde_json::to_value(&manifest.functions[2]).unwrap();
    let keys: Vec<&String> = plain.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["name", "description", "input_schema", "output_schema"]
    );
    check_manifest(math).unwrap();
}

#[test]
fn annotations_say_all_four_hints_and_keep_idempotence_when_given() {
    let spec = |f: crate::Function<()>| f.into_parts("p").0.annotations;
    let delete = spec(
        crate::Function::new("d", "", add)
            .idempotent()
            .destructive()
            .open_world(),
    );
    assert_eq!(
        (
            delete.read_only,
            delete.destructive,
            delete.idempotent,
            delete.open_world
        ),
        (Some(false), Some(true), Some(true), Some(true))
    );
    let create = spec(crate::Function::new("c", "", add).additive().closed_world());
    assert_eq!(
        (
            create.read_only,
            create.destructive,
            create.idempotent,
            create.open_world
        ),
        (Some(false), Some(false), Some(false), Some(false))
    );
}

#[test]
fn an_input_schema_given_as_written_is_served_unchanged() {
    let spec = |f: crate::Function<()>| f.into_parts("p").0.input_schema;
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"a": {"$anchor": "aDef", "type": "string"}},
        "properties": {"a": {"$ref": "#/$defs/a"}},
        "if": {"required": ["a"]}, "then": {}, "else": {},
        "additionalProperties": false
    });
    let given = crate::Function::new("f", "", add).input_schema(schema.clone());
    assert_eq!(spec(given), schema);
    // A root without a type is an object's, as for schemas made from types.
    let untyped = crate::Function::new("f", "", add).input_schema(json!({"properties": {}}));
    assert_eq!(spec(untyped), json!({"type": "object", "properties": {}}));
    let not_object = std::panic::catch_unwind(|| {
        spec(crate::Function::new("f", "", add).input_schema(json!({"type": "array"})))
    });
    let message = *not_object.unwrap_err().downcast::<String>().unwrap();
    assert!(
        message.contains("`p.f`") && message.contains(r#"give a schema with `"type": "object"`"#),
        "{message}"
    );
}

#[tokio::test]
async fn content_comes_back_beside_the_value() {
    let pack = PackTest::build(math).start().unwrap();
    let ada = Owner::new("acme", "ada");
    // Code mode's view: the value alone.
    let value = pack.call(&ada, "plot", json!({})).await.unwrap();
    assert_eq!(value, json!({"caption": "one pixel"}));
    let content = pack.call_content(&ada, "plot", json!({})).await.unwrap();
    assert_eq!(content.text.as_deref(), Some("a plot (the image follows)"));
    assert_eq!(
        content.blocks,
        [
            json!({"type": "image", "mimeType": "image/png", "data": "AA=="}),
            json!({"type": "resource_link", "uri": "file:///tmp/plot.png", "name": "plot.png", "mimeType": "image/png"}),
            json!({"type": "resource", "resource": {"uri": "file:///tmp/plot.csv", "mimeType": "text/csv", "text": "month,sales\n1,3\n"}}),
            json!({"type": "resource", "resource": {"uri": "file:///tmp/plot.bin", "mimeType": "application/octet-stream", "blob": "AQI="}}),
        ]
    );
    // Each as the official clients take a content block.
    assert!(
        content
            .blocks
            .iter()
            .all(|block| check_block(block).is_ok())
    );
    assert!(check_block(&json!({"type": "image", "data": "AA=="})).is_err());
    assert!(check_block(&json!({"type": "video"})).is_err());
}

#[test]
fn examples_run_as_tests_of_the_pack() {
    check_examples(math).unwrap();
    let error = check_examples(wrong_math).unwrap_err();
    assert!(
        error.starts_with("`math.add` example 1 ({\"a\":2,\"b\":2}): expected a result holding"),
        "{error}"
    );
    assert!(
        error.contains("\"sum\": 5") && error.contains("\"sum\": 4"),
        "{error}"
    );
}

#[test]
fn an_example_whose_arguments_do_not_fit_is_refused() {
    fn bad() -> PackDef<()> {
        PackDef::new("math", "Sums", |_: Empty, _| Ok(())).function_with(
            crate::Function::new("add", "Add", add).example(json!({"a": "2"}), json!({})),
        )
    }
    let error = check_manifest(bad).unwrap_err();
    assert!(
        error.starts_with("`math.add` example 1: its arguments"),
        "{error}"
    );
}
