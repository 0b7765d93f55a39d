//! What a pack offers besides functions (prompts, resources, templates and
//! completions of their arguments) and how the host reaches them: under
//! the reserved names of `pack_api::protocol`, answered here.

use std::{collections::BTreeMap, future::Future, sync::Arc};

use pack_api::{
    PromptSpec, ResourceSpec, TemplateSpec, codes,
    protocol::{
        COMPLETE, PROMPTS_GET, PROMPTS_LIST, RESOURCES_LIST, RESOURCES_READ, RESOURCES_SUBSCRIBE,
        SIGN_IN_RETURNED, TEMPLATES_LIST,
    },
    uri_template,
};
use serde::{Deserialize, de::DeserializeOwned};
use serde_json::{Value, json};

use crate::{Context, PackError, function::Handler, per_caller::OffersHandler};

/// MCP's most completion values in one answer.
const MOST_COMPLETIONS: usize = 100;

/// What is being completed: an argument of a prompt or a variable of a
/// template, the value typed so far, and the arguments already given.
#[derive(Debug, Clone, Deserialize)]
pub struct Completing {
    /// The argument's (or variable's) name.
    pub argument: String,
    /// What the user has typed of it so far.
    pub value: String,
    /// The other arguments already given.
    #[serde(default)]
    pub context: BTreeMap<String, String>,
}

/// Whose arguments a completer completes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Prompt(String),
    Template(String),
}

pub(crate) struct Offers<S> {
    pub(crate) prompts: Vec<(PromptSpec, Handler<S>)>,
    pub(crate) resources: Vec<(ResourceSpec, Handler<S>)>,
    pub(crate) templates: Vec<(TemplateSpec, Handler<S>)>,
    completers: BTreeMap<Target, Handler<S>>,
    /// What answers for names and URIs the above do not serve, and lists
    /// per caller (`PackDef::serve_offers`).
    pub(crate) per_caller: Option<OffersHandler<S>>,
}

impl<S> Default for Offers<S> {
    fn default() -> Self {
        Self {
            prompts: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            completers: BTreeMap::new(),
            per_caller: None,
        }
    }
}

/// `f` as a handler of JSON: its input decoded (a failure names `what`), its
/// output made JSON by `out`.
pub(crate) fn handler<S, I, O, F, Fut>(what: String, f: F, out: fn(O) -> Value) -> Handler<S>
where
    S: Send + Sync + 'static,
    I: DeserializeOwned,
    O: 'static,
    F: Fn(Arc<S>, I, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, PackError>> + Send + 'static,
{
    let f = Arc::new(f);
    let what = Arc::<str>::from(what);
    Arc::new(move |state, input, ctx| {
        let (f, what) = (Arc::clone(&f), Arc::clone(&what));
        Box::pin(async move {
            let input = serde_json::from_value(input)
                .map_err(|e| PackError::invalid_argument(format!("{what}: {e}")))?;
            Ok(out(f(state, input, ctx).await?))
        })
    })
}

impl<S: Send + Sync + 'static> Offers<S> {
    pub(crate) fn complete_prompt(&mut self, prompt: &str, completer: Handler<S>) {
        self.completers
            .insert(Target::Prompt(prompt.to_owned()), completer);
    }

    pub(crate) fn complete_template(&mut self, uri_template: &str, completer: Handler<S>) {
        self.completers
            .insert(Target::Template(uri_template.to_owned()), completer);
    }

    /// The handlers of the reserved names, for pack `pack`: a pack that
    /// offers nothing answers them with what it lacks. What the static
    /// offers do not serve goes to the per-caller handler, when there is one.
    pub(crate) fn handlers(self, pack: &'static str) -> Vec<(String, Handler<S>)> {
        let offers = Arc::new(self);
        let serve = |method: &'static str,
                     answer: fn(&Offers<S>, &'static str, &Value) -> Routed<S>|
         -> Handler<S> {
            let offers = Arc::clone(&offers);
            Arc::new(move |state, args, ctx| match answer(&offers, pack, &args) {
                Ok((handler, input)) => handler(state, input, ctx),
                Err(error) => match &offers.per_caller {
                    Some(serve) if error.code() == codes::NOT_FOUND => {
                        serve(state, method.to_owned(), args, ctx)
                    }
                    _ => Box::pin(async move { Err(error) }),
                },
            })
        };
        let mut handlers = vec![
            (PROMPTS_GET.to_owned(), serve(PROMPTS_GET, Self::prompt)),
            (RESOURCES_READ.to_owned(), serve(RESOURCES_READ, Self::read)),
            (COMPLETE.to_owned(), serve(COMPLETE, Self::complete)),
        ];
        if let Some(serve) = &offers.per_caller {
            for method in [
                PROMPTS_LIST,
                RESOURCES_LIST,
                TEMPLATES_LIST,
                RESOURCES_SUBSCRIBE,
                SIGN_IN_RETURNED,
            ] {
                let serve = Arc::clone(serve);
                let handler: Handler<S> =
                    Arc::new(move |state, args, ctx| serve(state, method.to_owned(), args, ctx));
                handlers.push((method.to_owned(), handler));
            }
        }
        handlers
    }

    /// `{"name", "arguments"}` → the prompt's renderer and its arguments,
    /// once every required one is there.
    fn prompt(&self, pack: &str, args: &Value) -> Routed<S> {
        let name = args["name"].as_str().unwrap_or_default();
        let Some((spec, render)) = self.prompts.iter().find(|(spec, _)| spec.name == name) else {
            let names: Vec<&str> = self.prompts.iter().map(|(s, _)| s.name.as_str()).collect();
            return Err(PackError::new(
                codes::NOT_FOUND,
                format!(
                    "pack `{pack}` has no prompt `{name}` (has: {})",
                    list(&names)
                ),
            ));
        };
        let arguments = match &args["arguments"] {
            Value::Null => json!({}),
            given => given.clone(),
        };
        let missing: Vec<String> = spec
            .arguments
            .iter()
            .filter(|a| a.required && arguments.get(&a.name).is_none())
            .map(|a| match &a.description {
                Some(description) => format!("`{}` ({description})", a.name),
                None => format!("`{}`", a.name),
            })
            .collect();
        if !missing.is_empty() {
            return Err(PackError::invalid_argument(format!(
                "prompt `{name}` needs the argument {}",
                missing.join(", ")
            )));
        }
        Ok((Arc::clone(render), arguments))
    }

    /// `{"uri"}` → the reader of the resource at that URI, or of the first
    /// template it fits, and the read's [`ReadRequest`](crate::ReadRequest).
    fn read(&self, pack: &str, args: &Value) -> Routed<S> {
        let uri = args["uri"].as_str().unwrap_or_default().to_owned();
        if let Some((_, read)) = self.resources.iter().find(|(spec, _)| spec.uri == uri) {
            return Ok((Arc::clone(read), json!({ "uri": uri })));
        }
        for (spec, read) in &self.templates {
            if let Some(variables) = uri_template::matches(&spec.uri_template, &uri) {
                return Ok((
                    Arc::clone(read),
                    json!({"uri": uri, "variables": variables}),
                ));
            }
        }
        Err(PackError::new(
            codes::NOT_FOUND,
            format!("pack `{pack}` has no resource `{uri}`"),
        )
        .with_data(json!({ "uri": uri })))
    }

    /// MCP's `CompleteRequest` params → the completer of the prompt or
    /// template referred to, and what it completes. One without a completer
    /// completes nothing; one the static offers do not have is not found
    /// when a per-caller handler may have it.
    fn complete(&self, pack: &str, args: &Value) -> Routed<S> {
        let reference = &args["ref"];
        let target = match reference["type"].as_str() {
            Some("ref/prompt") => Target::Prompt(text(&reference["name"])),
            _ => Target::Template(text(&reference["uri"])),
        };
        let completing = json!({
            "argument": args["argument"]["name"],
            "value": args["argument"]["value"],
            "context": args["context"]["arguments"].as_object().cloned().unwrap_or_default(),
        });
        match self.completers.get(&target) {
            Some(completer) => Ok((Arc::clone(completer), completing)),
            None if self.per_caller.is_some() && !self.declares(&target) => {
                let what = match &target {
                    Target::Prompt(name) => format!("prompt `{name}`"),
                    Target::Template(uri) => format!("template `{uri}`"),
                };
                Err(PackError::new(
                    codes::NOT_FOUND,
                    format!("pack `{pack}` has no {what} to complete"),
                ))
            }
            None => Ok((no_completions(), completing)),
        }
    }

    /// Whether a static prompt or template is `target`.
    fn declares(&self, target: &Target) -> bool {
        match target {
            Target::Prompt(name) => self.prompts.iter().any(|(spec, _)| &spec.name == name),
            Target::Template(uri) => self
                .templates
                .iter()
                .any(|(spec, _)| &spec.uri_template == uri),
        }
    }
}

/// A handler and its input, or why there is none.
type Routed<S> = Result<(Handler<S>, Value), PackError>;

fn no_completions<S>() -> Handler<S> {
    Arc::new(|_, _, _| Box::pin(async { Ok(completion(Vec::new())) }))
}

/// MCP's `CompleteResult` of `values`: at most 100, saying how many more.
pub(crate) fn completion(mut values: Vec<String>) -> Value {
    let total = values.len();
    values.truncate(MOST_COMPLETIONS);
    json!({"completion": {"values": values, "total": total, "hasMore": total > MOST_COMPLETIONS}})
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handler that answers which one it is and what it was given.
    fn echo(which: &'static str) -> Handler<()> {
        Arc::new(move |_, input, _| Box::pin(async move { Ok(json!({which: input})) }))
    }

    fn refused(routed: Routed<()>) -> PackError {
        match routed {
            Err(error) => error,
            Ok((_, input)) => panic!("routed with {input}"),
        }
    }

    fn offers() -> Offers<()> {
        let mut offers = Offers::default();
        let prompt = PromptSpec {
            name: "review".into(),
            arguments: vec![pack_api::PromptArgumentSpec {
                name: "file".into(),
                description: Some("the file".into()),
                required: true,
            }],
            ..PromptSpec::default()
        };
        offers.prompts.push((prompt, echo("review")));
        let resource = ResourceSpec {
            uri: "notes://index".into(),
            ..ResourceSpec::default()
        };
        offers.resources.push((resource, echo("index")));
        let template = TemplateSpec {
            uri_template: "notes://{id}".into(),
            ..TemplateSpec::default()
        };
        offers.templates.push((template, echo("note")));
        offers.complete_template("notes://{id}", echo("ids"));
        offers
    }

    #[test]
    fn reserved_names_reach_the_handler_they_name() {
        let offers = offers();
        let (_, input) = offers
            .read("notes", &json!({"uri": "notes://index"}))
            .unwrap();
        assert_eq!(input, json!({"uri": "notes://index"}));
        let (_, input) = offers.read("notes", &json!({"uri": "notes://42"})).unwrap();
        assert_eq!(
            input,
            json!({"uri": "notes://42", "variables": {"id": "42"}})
        );
        let unknown = refused(offers.read("notes", &json!({"uri": "other://1"})));
        assert_eq!(unknown.code(), codes::NOT_FOUND);

        let args = json!({"name": "review", "arguments": {"file": "a.rs"}});
        let (_, input) = offers.prompt("notes", &args).unwrap();
        assert_eq!(input, json!({"file": "a.rs"}));
        let missing = refused(offers.prompt("notes", &json!({"name": "review"})));
        assert!(
            missing.to_string().contains("`file` (the file)"),
            "{missing}"
        );
        let unknown = refused(offers.prompt("notes", &json!({"name": "nope"})));
        assert!(unknown.to_string().contains("(has: review)"), "{unknown}");

        let request = json!({
            "ref": {"type": "ref/resource", "uri": "notes://{id}"},
            "argument": {"name": "id", "value": "4"},
        });
        let (_, input) = offers.complete("notes", &request).unwrap();
        assert_eq!(
            input,
            json!({"argument": "id", "value": "4", "context": {}})
        );
    }

    #[test]
    fn with_offers_per_caller_what_is_not_static_is_not_found_here() {
        let mut offers = offers();
        let complete = |name: &str| json!({"ref": {"type": "ref/prompt", "name": name}, "argument": {"name": "file", "value": ""}});
        // Without a per-caller handler, any prompt completes to nothing.
        assert!(offers.complete("notes", &complete("other")).is_ok());
        offers.per_caller = Some(Arc::new(|_, _, _, _| Box::pin(async { Ok(json!({})) })));
        let unknown = refused(offers.complete("notes", &complete("other")));
        assert_eq!(unknown.code(), codes::NOT_FOUND);
        // A static prompt without a completer still completes to nothing.
        assert!(offers.complete("notes", &complete("review")).is_ok());
        let handled: Vec<String> = offers
            .handlers("notes")
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        for name in [
            PROMPTS_LIST,
            RESOURCES_LIST,
            TEMPLATES_LIST,
            RESOURCES_SUBSCRIBE,
        ] {
            assert!(handled.iter().any(|n| n == name), "{name} in {handled:?}");
        }
    }

    #[test]
    fn completions_are_at_most_a_hundred_and_say_how_many_more() {
        let values: Vec<String> = (0..150).map(|n| n.to_string()).collect();
        let result = completion(values);
        assert_eq!(
            result["completion"]["values"].as_array().unwrap().len(),
            100
        );
        assert_eq!(result["completion"]["total"], 150);
        assert_eq!(result["completion"]["hasMore"], true);
    }
}
