//! Tools of the tasks extension's scenarios (`tasks-*`): one that never
//! runs as a task (`greet`), and the rest that do, for clients that
//! negotiated tasks (`failing_job` only so).

use std::{sync::Arc, time::Duration};

use pack_sdk::{
    Content, Context, Function, PackDef, PackError, Question, TaskSupport, Value, json,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Asks the user's name by rounds, then goes on as a task that greets them.
async fn with_task(_: Arc<()>, _: Nothing, ctx: Context) -> Result<Content<Said>, PackError> {
    let question = elicit(
        "What is your name?",
        json!({"name": {"type": "string", "description": "Your name"}}),
    );
    let answers = ctx.ask([("user_name", question)]).await?;
    let name = accepted(&answers["user_name"]).and_then(|content| content["name"].as_str());
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok(said(format!("Hello, {}!", name.unwrap_or("stranger"))))
}

pub(crate) fn add(pack: PackDef<()>) -> PackDef<()> {
    pack.function("greet", "Greet someone by name (never a task)", greet)
        .function_with(
            Function::new(
                "test_tool_with_task",
                "Ask the user's name, then greet them as a task",
                with_task,
            )
            .tasks(TaskSupport::Required)
            .asks_first(),
        )
        .function_with(
            Function::new(
                "slow_compute",
                "Sleep `seconds`, then say so (a task)",
                slow_compute,
            )
            .tasks(TaskSupport::Optional),
        )
        .function_with(
            Function::new(
                "failing_job",
                "Fail as a tool after a second (only as a task)",
                failing_job,
            )
            .tasks(TaskSupport::Required),
        )
        .function_with(
            Function::new(
                "protocol_error_job",
                "Panic: an internal failure (a task)",
                protocol_error_job,
            )
            .tasks(TaskSupport::Optional),
        )
        .function_with(
            Function::new(
                "confirm_delete",
                "Ask the user to confirm deleting a file, then say what was done (a task)",
                confirm_delete,
            )
            .tasks(TaskSupport::Optional),
        )
        .function_with(
            Function::new(
                "multi_input",
                "Ask two questions at once, then say the answers (a task)",
                multi_input,
            )
            .tasks(TaskSupport::Optional),
        )
}

#[derive(Deserialize, JsonSchema)]
struct Name {
    /// Who to greet.
    name: String,
}

#[derive(Serialize, JsonSchema)]
struct Said {
    /// What the tool said.
    text: String,
}

fn said(text: String) -> Content<Said> {
    Content::new(Said { text: text.clone() }).text(text)
}

async fn greet(_: Arc<()>, args: Name, _: Context) -> Result<Content<Said>, PackError> {
    Ok(said(format!("Hello, {}!", args.name)))
}

#[derive(Deserialize, JsonSchema)]
struct Compute {
    /// How long to work.
    seconds: f64,
    /// A name for the run, said back.
    #[serde(default)]
    label: Option<String>,
}

async fn slow_compute(_: Arc<()>, args: Compute, _: Context) -> Result<Content<Said>, PackError> {
    let seconds = Duration::try_from_secs_f64(args.seconds).map_err(|e| {
        PackError::invalid_argument(format!(
            "`seconds` must be 0 or more, got {}: {e}",
            args.seconds
        ))
    })?;
    tokio::time::sleep(seconds).await;
    let label = args.label.unwrap_or_default();
    Ok(said(format!("computed {label} in {} s", args.seconds)))
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

async fn failing_job(_: Arc<()>, _: Nothing, _: Context) -> Result<Said, PackError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(PackError::new(
        pack_sdk::codes::EXECUTION_ERROR,
        "failing_job failed, as it always does",
    ))
}

async fn protocol_error_job(_: Arc<()>, _: Nothing, _: Context) -> Result<Said, PackError> {
    panic!("protocol_error_job panics, as it always does")
}

#[derive(Deserialize, JsonSchema)]
struct File {
    /// The file to delete.
    filename: String,
}

async fn confirm_delete(_: Arc<()>, args: File, ctx: Context) -> Result<Content<Said>, PackError> {
    let question = elicit(
        &format!("Delete {}?", args.filename),
        json!({"confirm": {"type": "boolean", "description": "Delete it"}}),
    );
    let answers = ctx.ask([("confirm", question)]).await?;
    let confirmed = accepted(&answers["confirm"])
        .and_then(|content| content["confirm"].as_bool())
        .unwrap_or(false);
    Ok(said(if confirmed {
        format!("Deleted {}", args.filename)
    } else {
        format!("Kept {}", args.filename)
    }))
}

async fn multi_input(_: Arc<()>, _: Nothing, ctx: Context) -> Result<Content<Said>, PackError> {
    let name = elicit(
        "What is your name?",
        json!({"name": {"type": "string", "description": "Your name"}}),
    );
    let confirm = elicit(
        "Go ahead?",
        json!({"confirm": {"type": "boolean", "description": "Go ahead"}}),
    );
    let answers = ctx.ask([("name", name), ("confirm", confirm)]).await?;
    let name = accepted(&answers["name"]).and_then(|content| content["name"].as_str());
    let confirm = accepted(&answers["confirm"]).and_then(|content| content["confirm"].as_bool());
    Ok(said(format!(
        "name: {}, confirmed: {}",
        name.unwrap_or("(none)"),
        confirm.unwrap_or(false)
    )))
}

/// A form elicitation whose form has `properties`.
fn elicit(message: &str, properties: Value) -> Question {
    Question::elicit(message, json!({"type": "object", "properties": properties}))
}

/// The content of an elicitation the user accepted.
fn accepted(answer: &Value) -> Option<&Value> {
    (answer["action"] == "accept").then(|| &answer["content"])
}
