//! Prompts and resources from code (code mode): the code's pack calls the
//! host under `pack_api::protocol`'s reserved names, and the host answers
//! for the code's caller exactly as it answers that caller's MCP client
//! (the same visibility, the same owner of kept results).

use std::{collections::BTreeMap, sync::Arc};

use pack_api::{codes, protocol};
use serde_json::{Map, Value, json};

use super::{Caller, Executor};
use crate::{error::CallError, failure::Failure, render::did_you_mean};

/// A name code calls the host by that is no tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Offer {
    /// Render a prompt: `{"name", "arguments"?}`.
    Prompt,
    /// Read a resource: `{"uri"}`.
    Read,
    /// List resources and templates: `{}`.
    List,
}

impl Offer {
    /// The offer reserved name `name` asks for, if it is one.
    pub(super) fn named(name: &str) -> Option<Self> {
        match name {
            protocol::PROMPTS_GET => Some(Self::Prompt),
            protocol::RESOURCES_READ => Some(Self::Read),
            protocol::RESOURCES_LIST => Some(Self::List),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Prompt => protocol::PROMPTS_GET,
            Self::Read => protocol::RESOURCES_READ,
            Self::List => protocol::RESOURCES_LIST,
        }
    }

    /// What its arguments are, for an error.
    fn takes(self) -> &'static str {
        match self {
            Self::Prompt => "{name: string, arguments?: {[argument]: string}}",
            Self::Read => "{uri: string}",
            Self::List => "{}",
        }
    }
}

impl Executor {
    /// Answer `offer` with `args` (a JSON object) for `caller`.
    pub(super) async fn code_offer(
        self: &Arc<Self>,
        offer: Offer,
        args: Value,
        caller: &Caller,
    ) -> Result<Value, Failure> {
        let Value::Object(mut args) = args else {
            return Err(wrong_arguments(offer, "they are not an object"));
        };
        match offer {
            Offer::Prompt => {
                let name = text(offer, &mut args, "name")?;
                let arguments = match args.remove("arguments") {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(arguments)) => as_strings(arguments),
                    Some(_) => return Err(wrong_arguments(offer, "`arguments` is not an object")),
                };
                no_more(offer, &args)?;
                let rendered = self.render_prompt(&name, Value::Object(arguments), caller);
                rendered
                    .await
                    .unwrap_or_else(|| Err(self.no_prompt(&name, caller)))
            }
            Offer::Read => {
                let uri = text(offer, &mut args, "uri")?;
                no_more(offer, &args)?;
                let read = self.read_resource(&uri, caller).await;
                read.unwrap_or_else(|| Err(no_resource(&uri)))
            }
            Offer::List => {
                no_more(offer, &args)?;
                let (resources, templates) = self.all_resources(caller).await;
                Ok(json!({"resources": resources, "resourceTemplates": templates}))
            }
        }
    }

    /// NOT_FOUND for prompt `name`, naming the prompts `caller` may render.
    fn no_prompt(&self, name: &str, caller: &Caller) -> Failure {
        let prompts = self.pack_prompts(&caller.identity);
        let names: Vec<&str> = prompts.iter().map(|(name, _)| name.as_str()).collect();
        let listed = if names.is_empty() {
            "there are none".to_owned()
        } else {
            format!(
                "{}prompts: {}",
                did_you_mean(name, names.iter().copied()),
                names.join(", ")
            )
        };
        Failure::new(
            codes::NOT_FOUND,
            format!("no prompt `{name}` you may render; {listed}"),
        )
        .with_help("`packhost.prompts()` lists them with their arguments")
    }
}

/// Positional arguments, which no offer takes.
pub(super) fn no_positional(offer: Offer, positional: &[Value]) -> Result<(), Failure> {
    if positional.is_empty() {
        return Ok(());
    }
    Err(wrong_arguments(
        offer,
        "arguments by position are not taken",
    ))
}

/// String argument `key`, taken out of `args`.
fn text(offer: Offer, args: &mut Map<String, Value>, key: &str) -> Result<String, Failure> {
    match args.remove(key) {
        Some(Value::String(text)) => Ok(text),
        Some(_) => Err(wrong_arguments(offer, &format!("`{key}` is not a string"))),
        None => Err(wrong_arguments(offer, &format!("`{key}` is missing"))),
    }
}

/// Nothing is left in `args` that `offer` does not take.
fn no_more(offer: Offer, args: &Map<String, Value>) -> Result<(), Failure> {
    match args.keys().next() {
        Some(extra) => Err(wrong_arguments(
            offer,
            &format!("`{extra}` is not one of them"),
        )),
        None => Ok(()),
    }
}

fn wrong_arguments(offer: Offer, what: &str) -> Failure {
    Failure::from(CallError::BadArguments {
        tool: offer.name().to_owned(),
        problems: vec![what.to_owned()],
        signature: format!("arguments {}", offer.takes()),
    })
}

fn no_resource(uri: &str) -> Failure {
    Failure::new(
        codes::NOT_FOUND,
        format!(
            "no resource {uri}: code reads kept results (`{}<handle>`) of its caller's own, \
             until they expire, and the resources of the packs its caller may call",
            crate::results::URI_PREFIX
        ),
    )
    .with_help("`packhost.resources()` lists them")
}

/// Prompt arguments are strings in MCP; code may pass any value, taken as
/// its JSON text (as `prompts/get` takes a snippet's).
fn as_strings(arguments: Map<String, Value>) -> Map<String, Value> {
    prompt_arguments(arguments)
        .into_iter()
        .map(|(name, text)| (name, Value::String(text)))
        .collect()
}

/// MCP prompt arguments as text: a string as it is, anything else as its
/// JSON.
pub fn prompt_arguments(arguments: Map<String, Value>) -> BTreeMap<String, String> {
    arguments
        .into_iter()
        .map(|(name, value)| match value {
            Value::String(text) => (name, text),
            other => (name, other.to_string()),
        })
        .collect()
}
