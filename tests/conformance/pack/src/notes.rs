//! Offers that differ by caller (not a suite scenario; the e2e tests'
//! fixture): each caller other than the host's `[identity]` (which the
//! suite runs as, so its listings stay as the suite expects) has notes of
//! its own, a resource `notes://<org>/<user>` with pages
//! `notes://<org>/<user>/{page}`, and a prompt `my_notes` quoting them.
//! `notes_write` changes the caller's notes, and its subscribers hear it.

use std::{
    collections::HashMap,
    sync::{Arc, LazyLock, Mutex},
};

use pack_sdk::{Content, Context, PackDef, PackError, Value, json};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// Each caller's notes, by their URI; a subscription watches one.
static NOTES: LazyLock<Mutex<HashMap<String, watch::Sender<String>>>> =
    LazyLock::new(Mutex::default);

fn notes(uri: &str) -> watch::Sender<String> {
    let mut notes = NOTES.lock().unwrap();
    let entry = notes.entry(uri.to_owned());
    entry
        .or_insert_with(|| watch::Sender::new("no notes yet".to_owned()))
        .clone()
}

/// The caller's notes' URI; `None` for the host's `[identity]`, which has none.
fn own_uri(ctx: &Context) -> Option<String> {
    let owner = ctx.owner();
    (ctx.host_identity() != Some(owner.clone()))
        .then(|| format!("notes://{}/{}", owner.org, owner.user))
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Write {
    /// The caller's notes from now on.
    text: String,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Written {
    /// The URI of the notes written.
    uri: String,
    /// How many subscriptions follow them now.
    followers: usize,
}

async fn write(_: Arc<()>, args: Write, ctx: Context) -> Result<Content<Written>, PackError> {
    let uri = own_uri(&ctx)
        .ok_or_else(|| PackError::invalid_argument("the host's own identity keeps no notes"))?;
    let notes = notes(&uri);
    notes.send_replace(args.text);
    let followers = notes.receiver_count();
    Ok(Content::new(Written { uri, followers }).text("written"))
}

fn not_found(method: &str, params: &Value) -> PackError {
    PackError::not_found(format!("no {method} of {params} for this caller"))
}

async fn serve(
    _: Arc<()>,
    method: String,
    params: Value,
    ctx: Context,
) -> Result<Value, PackError> {
    let Some(uri) = own_uri(&ctx) else {
        return match method.as_str() {
            "prompts/list" => Ok(json!({"prompts": []})),
            "resources/list" => Ok(json!({"resources": []})),
            "resources/templates/list" => Ok(json!({"resourceTemplates": []})),
            _ => Err(not_found(&method, &params)),
        };
    };
    let pages = format!("{uri}/{{page}}");
    let asked = params["uri"].as_str().unwrap_or_default();
    match method.as_str() {
        "prompts/list" => Ok(json!({"prompts": [{
            "name": "my_notes",
            "description": format!("Quotes the notes of {}", ctx.user()),
            "arguments": [{"name": "topic", "description": "What the notes are about", "required": true}],
        }]})),
        "resources/list" => Ok(json!({"resources": [
            {"uri": uri, "name": "my notes", "mimeType": "text/plain"},
        ]})),
        "resources/templates/list" => Ok(json!({"resourceTemplates": [
            {"uriTemplate": pages, "name": "a page of my notes", "mimeType": "text/plain"},
        ]})),
        "prompts/get" if params["name"] == "my_notes" => {
            let topic = params["arguments"]["topic"].as_str().unwrap_or("anything");
            let text = format!("My notes on {topic}: {}", *notes(&uri).borrow());
            Ok(json!({"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}))
        }
        "resources/read" if asked == uri => {
            let text = notes(&uri).borrow().clone();
            Ok(json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}))
        }
        "resources/read"
            if asked
                .strip_prefix(&format!("{uri}/"))
                .is_some_and(|page| !page.contains('/')) =>
        {
            Ok(
                json!({"contents": [{"uri": asked, "mimeType": "text/plain", "text": format!("a page of {uri}")}]}),
            )
        }
        "completion/complete" if params["ref"]["uri"] == pages.as_str() => {
            let typed = params["argument"]["value"].as_str().unwrap_or_default();
            let values: Vec<&str> = ["1", "2", "10"]
                .into_iter()
                .filter(|p| p.starts_with(typed))
                .collect();
            Ok(json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}))
        }
        "resources/subscribe" if asked == uri => {
            let mut changes = notes(&uri).subscribe();
            ctx.subscribed().await?;
            while changes.changed().await.is_ok() {
                ctx.resource_updated(&uri).await?;
            }
            Ok(json!({}))
        }
        _ => Err(not_found(&method, &params)),
    }
}

pub(crate) fn add(pack: PackDef<()>) -> PackDef<()> {
    pack.function(
        "notes_write",
        "Write your notes: their subscribers hear it",
        write,
    )
    .serve_offers(serve)
}
