//! Tools that ask the client (elicitation, sampling, roots) on either wire:
//! the same code is a request to the client on 2025-11-25 and an
//! `input_required` result on 2026-07-28. Keys and texts are the suite's.

use std::sync::Arc;

use pack_sdk::{
    Block, Content, Context, Empty, Function, PackDef, PackError, Prompt, PromptMessage,
    PromptResult, Question, Value, codes, json,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What every tool here returns: its text, also as the content's text.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Reply {
    text: String,
}

fn reply(text: String) -> Content<Reply> {
    Content::new(Reply { text: text.clone() }).text(text)
}

#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the LLM.
    prompt: String,
}

#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

fn string_field() -> Value {
    json!({"type": "string"})
}

fn form(fields: &[(&str, Value)]) -> Value {
    let properties: serde_json::Map<String, Value> = fields
        .iter()
        .map(|(name, schema)| ((*name).to_owned(), schema.clone()))
        .collect();
    let required: Vec<&str> = fields.iter().map(|(name, _)| *name).collect();
    json!({"type": "object", "properties": properties, "required": required})
}

/// The text a sampling answer holds.
fn sampled_text(answer: &Value) -> String {
    answer["content"]["text"]
        .as_str()
        .map_or_else(|| answer["content"].to_string(), str::to_owned)
}

fn elicited(answer: &Value) -> String {
    format!(
        "action={}, content={}",
        answer["action"].as_str().unwrap_or("?"),
        answer.get("content").unwrap_or(&Value::Null)
    )
}

async fn sampling(
    _: Arc<()>,
    args: SamplingArgs,
    ctx: Context,
) -> Result<Content<Reply>, PackError> {
    let answer = ctx
        .sample(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": args.prompt}}],
            "maxTokens": 100,
        }))
        .await?;
    Ok(reply(format!("LLM response: {}", sampled_text(&answer))))
}

async fn elicitation(
    _: Arc<()>,
    args: ElicitationArgs,
    ctx: Context,
) -> Result<Content<Reply>, PackError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    });
    let answer = ask_one(&ctx, "elicit", Question::elicit(&args.message, schema)).await?;
    Ok(reply(format!("User response: <{}>", elicited(&answer))))
}

async fn ask_one(ctx: &Context, key: &str, question: Question) -> Result<Value, PackError> {
    let mut answers = ctx.ask([(key, question)]).await?;
    answers
        .remove(key)
        .ok_or_else(|| PackError::internal(format!("no answer under `{key}`")))
}

/// A tool that shows the user one form and says what came back.
async fn show_form(
    ctx: Context,
    message: &str,
    schema: Value,
) -> Result<Content<Reply>, PackError> {
    let answer = ask_one(&ctx, "form", Question::elicit(message, schema)).await?;
    Ok(reply(format!(
        "Elicitation completed: {}",
        elicited(&answer)
    )))
}

async fn defaults(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Reply>, PackError> {
    let message = "Please review and update the form fields with defaults";
    show_form(ctx, message, defaults_form()).await
}

async fn enums(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Reply>, PackError> {
    show_form(
        ctx,
        "Please select options from the enum fields",
        enums_form(),
    )
    .await
}

async fn needs_sampling(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Reply>, PackError> {
    let answer = ask_one(&ctx, "sample", Question::sample_text("Say hello", 20)).await?;
    Ok(reply(format!("LLM response: {}", sampled_text(&answer))))
}

fn defaults_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string", "description": "User status",
                "enum": ["active", "inactive", "pending"], "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true},
        },
        "required": [],
    })
}

fn enums_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ]},
            "legacyEnum": {
                "type": "string", "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {
                "type": "string", "enum": ["option1", "option2", "option3"],
            }},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"},
            ]}},
        },
        "required": [],
    })
}

fn name_question(message: &str) -> Question {
    Question::elicit(message, form(&[("name", string_field())]))
}

fn confirm_question() -> Question {
    Question::elicit(
        "Please confirm",
        form(&[("ok", json!({"type": "boolean"}))]),
    )
}

async fn ir_elicitation(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Reply>, PackError> {
    let answer = ask_one(&ctx, "user_name", name_question("What is your name?")).await?;
    let name = answer["content"]["name"].as_str().unwrap_or("stranger");
    Ok(reply(format!("Hello, {name}!")))
}

async fn ir_sampling(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Reply>, PackError> {
    let question = Question::sample_text("What is the capital of France?", 100);
    let answer = ask_one(&ctx, "capital_question", question).await?;
    Ok(reply(format!("The model says: {}", sampled_text(&answer))))
}

fn roots_text(answer: &Value) -> String {
    let roots = answer["roots"].as_array().cloned().unwrap_or_default();
    let uris: Vec<&str> = roots.iter().filter_map(|r| r["uri"].as_str()).collect();
    format!("Client roots: {}", uris.join(", "))
}

async fn ir_roots(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Reply>, PackError> {
    let answer = ask_one(&ctx, "client_roots", Question::roots()).await?;
    Ok(reply(roots_text(&answer)))
}

/// Confirmation behind a state the host signed: the answer could only
/// arrive through a state that verified.
async fn ir_confirm(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Reply>, PackError> {
    let answer = ask_one(&ctx, "confirm", confirm_question()).await?;
    Ok(reply(format!(
        "state-ok: confirmed={}",
        answer["content"]["ok"]
    )))
}

async fn ir_multiple(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Reply>, PackError> {
    let answers = ctx
        .ask([
            ("user_name", name_question("What is your name?")),
            ("greeting", Question::sample_text("Generate a greeting", 50)),
            ("client_roots", Question::roots()),
        ])
        .await?;
    Ok(reply(format!(
        "name={}, greeting={}, {}",
        answers["user_name"]["content"]["name"],
        sampled_text(&answers["greeting"]),
        roots_text(&answers["client_roots"])
    )))
}

async fn ir_multi_round(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Reply>, PackError> {
    let name = ask_one(&ctx, "step1", name_question("Step 1: What is your name?")).await?;
    let color_form = form(&[("color", string_field())]);
    let question = Question::elicit("Step 2: What is your favorite color?", color_form);
    let color = ask_one(&ctx, "step2", question).await?;
    Ok(reply(format!(
        "{} likes {}",
        name["content"]["name"], color["content"]["color"]
    )))
}

/// Asks only what the client can answer: a question it did not declare the
/// capability for fails at once, and the next is tried.
async fn ir_capabilities(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Reply>, PackError> {
    let questions = [
        ("user_name", name_question("What is your name?")),
        (
            "capital_question",
            Question::sample_text("What is the capital of France?", 100),
        ),
        ("client_roots", Question::roots()),
    ];
    let mut got = Vec::new();
    for (key, question) in questions {
        match ask_one(&ctx, key, question).await {
            Ok(_) => got.push(key),
            Err(e) if e.code() == codes::INPUT_UNAVAILABLE => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(reply(format!("answered: {}", got.join(", "))))
}

/// A prompt that asks the user for its context before it renders.
async fn asking_prompt(_: Arc<()>, _: Empty, ctx: Context) -> Result<PromptResult, PackError> {
    let question = Question::elicit(
        "What context should the prompt use?",
        form(&[("context", string_field())]),
    );
    let answer = ask_one(&ctx, "user_context", question).await?;
    let context = answer["content"]["context"].as_str().unwrap_or("none");
    let text = format!("Use this context: {context}");
    Ok(PromptResult::new(vec![PromptMessage::user(Block::text(
        &text,
    ))]))
}

pub(crate) fn add(pack: PackDef<()>) -> PackDef<()> {
    pack.prompt(
        Prompt::new(
            "test_input_required_result_prompt",
            "Asks the user for the context to render with",
        ),
        asking_prompt,
    )
    .function(
        "test_sampling",
        "Asks the client's model the prompt",
        sampling,
    )
    .function("test_elicitation", "Asks the user the message", elicitation)
    .function(
        "test_elicitation_sep1034_defaults",
        "Asks the user a form whose fields have defaults",
        defaults,
    )
    .function(
        "test_elicitation_sep1330_enums",
        "Asks the user a form of every kind of enum",
        enums,
    )
    .function(
        "test_input_required_result_elicitation",
        "Asks the user's name",
        ir_elicitation,
    )
    .function(
        "test_input_required_result_sampling",
        "Asks the client's model the capital of France",
        ir_sampling,
    )
    .function(
        "test_input_required_result_list_roots",
        "Asks the client's roots",
        ir_roots,
    )
    .function(
        "test_input_required_result_request_state",
        "Asks for a confirmation",
        ir_confirm,
    )
    .function(
        "test_input_required_result_tampered_state",
        "Asks for a confirmation",
        ir_confirm,
    )
    .function(
        "test_input_required_result_multiple_inputs",
        "Asks the user, the model and the roots at once",
        ir_multiple,
    )
    .function(
        "test_input_required_result_multi_round",
        "Asks two questions, one after the other",
        ir_multi_round,
    )
    .function(
        "test_input_required_result_capabilities",
        "Asks only what the client declared it can answer",
        ir_capabilities,
    )
    .function_with(
        Function::new(
            "test_missing_capability",
            "Needs the client's sampling: refused for a client that did not declare it",
            needs_sampling,
        )
        .needs("sampling"),
    )
}
