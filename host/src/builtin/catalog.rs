//! What a caller can call, from its own catalog: the packs, a search, one
//! function or pack described with calls to copy.

use catalog_search::{Hit, Searcher};
use pack_api::{Catalog, CatalogTool, codes};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{failure::Failure, render::did_you_mean};

// No doc comments on the argument types: they would become the schema's
// description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("properties" = {}))]
pub(super) struct PacksArgs {}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SearchArgs {
    /// What you want to do, in words.
    pub(super) query: String,
    /// Most results.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 50))]
    pub(super) limit: usize,
}

fn default_limit() -> usize {
    5
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DescribeArgs {
    /// `pack.function`, an alias, or a pack name.
    pub(super) name: String,
}

/// Packs named when a search is weak.
const CLOSEST_PACKS: usize = 3;

/// The caller's best functions for `query` (an index of its own catalog:
/// nothing else can be found). When nothing matches well, the answer says
/// so and names the closest packs, to browse rather than guess. The search
/// that first ranks by meaning after one-off work (the model's load, new
/// tools embedded) says what that work cost; one by words alone while it
/// runs says why.
pub(super) fn search(searcher: &Searcher, catalog: &Catalog, query: &str, limit: usize) -> Value {
    let index = searcher.index(&catalog.tools);
    // Ranked whole once: a weak answer's closest packs come from past `limit`.
    let ranking = index.search(query, catalog.tools.len());
    let results: Vec<Value> = ranking
        .hits
        .iter()
        .take(limit)
        .map(|hit| {
            let tool = &catalog.tools[hit.index];
            json!({
                "name": tool.listed(),
                "signature": tool.signature,
                "description": tool.description,
                "score": hit.score,
            })
        })
        .collect();
    let mut answer = json!({
        "query": query,
        "by_meaning": index.has_meanings(),
        "weak": ranking.weak,
        "results": results,
    });
    if index.has_meanings() {
        if let Some(warm_up) = searcher.take_warm_up() {
            answer["warm_up"] = json!({
                "model_load_ms": warm_up.model_load.map(|took| took.as_millis()),
                "embedded_tools": warm_up.embedded,
                "embedding_ms": warm_up.embedding.as_millis(),
            });
        }
    } else if searcher.has_meanings() {
        answer["note"] = json!(
            "ranked by words alone this time: the search model is loading, or embedding this \
             catalog's new tools (or failed to: see the host's log); later searches rank by \
             meaning too"
        );
    }
    if ranking.weak {
        let closest = closest_packs(&ranking.hits, catalog);
        let names: Vec<String> = closest
            .iter()
            .map(|(name, _)| format!("`{name}`"))
            .collect();
        answer["hint"] = json!(format!(
            "nothing matches `{query}` well; the closest packs are {}: browse one with \
             `packhost.describe(\"<pack>\")`, or all with `packhost.packs()`, rather than \
             guess from these results",
            names.join(", ")
        ));
        answer["closest_packs"] = closest
            .into_iter()
            .map(|(name, description)| json!({"name": name, "description": description}))
            .collect();
    }
    answer
}

/// The packs of the best tools, best first; the first packs by name when
/// no tool matches at all (BM25 alone).
fn closest_packs<'a>(hits: &[Hit], catalog: &'a Catalog) -> Vec<(&'a String, &'a String)> {
    let mut names: Vec<&String> = Vec::new();
    for hit in hits {
        let pack = &catalog.tools[hit.index].pack;
        if !names.contains(&pack) {
            names.push(pack);
        }
        if names.len() == CLOSEST_PACKS {
            break;
        }
    }
    if names.is_empty() {
        names = catalog.packs.keys().take(CLOSEST_PACKS).collect();
    }
    names
        .into_iter()
        .filter_map(|name| catalog.packs.get_key_value(name))
        .collect()
}

pub(super) fn packs(catalog: &Catalog) -> Value {
    let packs: Vec<Value> = catalog
        .packs
        .iter()
        .map(|(name, description)| {
            let functions: Vec<&str> = catalog
                .tools
                .iter()
                .filter(|t| &t.pack == name)
                .map(|t| t.function.as_str())
                .collect();
            json!({"name": name, "description": description, "functions": functions})
        })
        .collect();
    json!({"packs": packs, "aliases": catalog.aliases, "snippets": catalog.snippets})
}

pub(super) fn describe(
    searcher: &Searcher,
    catalog: &Catalog,
    name: &str,
) -> Result<Value, Failure> {
    let target = catalog.aliases.get(name).map_or(name, String::as_str);
    let tool = catalog
        .tools
        .iter()
        .find(|t| t.name() == target || t.listed() == target);
    if let Some(tool) = tool {
        let (example, example_typescript) = examples(tool);
        let mut described = json!({
            "kind": "function",
            "name": target,
            "description": tool.description,
            "signature": tool.signature,
            "input_schema": tool.input_schema,
            "output_schema": tool.output_schema,
            "example": example,
            "example_typescript": example_typescript,
        });
        if let Some(title) = &tool.title {
            described["title"] = json!(title);
        }
        if !tool.examples.is_empty() {
            described["examples"] = json!(tool.examples);
        }
        return Ok(described);
    }
    if let Some(description) = catalog.packs.get(name) {
        let functions: Vec<Value> = catalog
            .tools
            .iter()
            .filter(|t| t.pack == name)
            .map(|t| json!({"signature": t.signature, "description": t.description}))
            .collect();
        let mut described = json!({
            "kind": "pack",
            "name": name,
            "description": description,
            "functions": functions,
        });
        let prompts: Vec<Value> = catalog
            .prompts
            .iter()
            .filter(|p| p.pack == name)
            .map(|p| {
                json!({
                    "name": p.listed(),
                    "description": p.spec.description.as_deref().unwrap_or_default(),
                    "arguments": p.spec.arguments,
                })
            })
            .collect();
        if !prompts.is_empty() {
            described["prompts"] = json!(prompts);
        }
        return Ok(described);
    }
    let known = catalog
        .tools
        .iter()
        .map(CatalogTool::name)
        .chain(catalog.aliases.keys().cloned())
        .chain(catalog.packs.keys().cloned());
    let known: Vec<String> = known.collect();
    let mut suggestion = did_you_mean(name, known.iter().map(String::as_str));
    if suggestion.is_empty() {
        suggestion = nearest_function(searcher, catalog, name);
    }
    Err(Failure::new(
        codes::NOT_FOUND,
        format!(
            "nothing you can call is named `{name}`; {suggestion}packs: {}",
            catalog.packs.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
    )
    .with_help("search with `packhost.search(query)`, or list with `packhost.packs()`"))
}

/// "did you mean" for a name too far from every name to be a typo
/// (`github.open_pull_request`): the function of its pack its words find
/// best. Only in a pack the caller sees: of any other name the answer is
/// the same as of one that exists nowhere.
fn nearest_function(searcher: &Searcher, catalog: &Catalog, name: &str) -> String {
    let Some((pack, _)) = name.split_once('.') else {
        return String::new();
    };
    if !catalog.packs.contains_key(pack) {
        return String::new();
    }
    // In words: the model reads `who_is_on_call` as an id, not a task.
    let words = name.replace(['.', '_', '-'], " ");
    let ranking = searcher
        .index(&catalog.tools)
        .search(&words, catalog.tools.len());
    if ranking.weak {
        return String::new();
    }
    ranking
        .hits
        .iter()
        .map(|hit| &catalog.tools[hit.index])
        .find(|tool| tool.pack == pack)
        .map(|tool| format!("did you mean `{}`? ", tool.listed()))
        .unwrap_or_default()
}

/// A call of `tool` as `run` takes it and as TypeScript writes it, each
/// required argument filled with a placeholder of its type (or its schema's
/// own example or default).
fn examples(tool: &CatalogTool) -> (String, String) {
    let schema = &tool.input_schema;
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let filled: Vec<(&str, Value)> = required
        .iter()
        .map(|name| (*name, placeholder(name, &schema["properties"][name])))
        .collect();
    let name = tool.name();
    let python: Vec<String> = filled
        .iter()
        .map(|(key, value)| format!("{key}={}", python_literal(value)))
        .collect();
    let typescript: Vec<String> = filled
        .iter()
        .map(|(key, value)| format!("{key}: {value}"))
        .collect();
    let typescript = if typescript.is_empty() {
        format!("await {name}()")
    } else {
        format!("await {name}({{ {} }})", typescript.join(", "))
    };
    (format!("{name}({})", python.join(", ")), typescript)
}

fn placeholder(name: &str, schema: &Value) -> Value {
    if let Some(example) = schema["examples"].as_array().and_then(|e| e.first()) {
        return example.clone();
    }
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    let kind = match &schema["type"] {
        Value::Array(types) => types
            .iter()
            .find(|t| *t != "null")
            .cloned()
            .unwrap_or_default(),
        other => other.clone(),
    };
    match kind.as_str() {
        Some("integer" | "number") => json!(0),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => json!(format!("<{name}>")),
    }
}

fn python_literal(value: &Value) -> String {
    match value {
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Null => "None".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        let tool = CatalogTool {
            pack: "proj".into(),
            function: "read".into(),
            signature: "proj.read(name: string, path: string, offset?: integer = 0)".into(),
            description: "Read a file.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "path": {"type": "string", "examples": ["README.md"]},
                    "offset": {"type": "integer", "default": 0},
                },
                "required": ["name", "path"],
            }),
            output_schema: json!({"type": "object"}),
            ..CatalogTool::default()
        };
        Catalog {
            tools: vec![tool],
            packs: [("proj".to_owned(), "Project files".to_owned())].into(),
            aliases: [("r".to_owned(), "proj.read".to_owned())].into(),
            ..Catalog::default()
        }
    }

    #[test]
    fn a_function_is_described_with_calls_to_copy() {
        let described = describe(&Searcher::new(None), &catalog(), "r").unwrap();
        assert_eq!(described["name"], "proj.read");
        assert_eq!(
            described["example"],
            "proj.read(name=\"<name>\", path=\"README.md\")"
        );
        assert_eq!(
            described["example_typescript"],
            "await proj.read({ name: \"<name>\", path: \"README.md\" })"
        );
        let pack = describe(&Searcher::new(None), &catalog(), "proj").unwrap();
        assert_eq!(pack["kind"], "pack");
        assert_eq!(pack["functions"][0]["description"], "Read a file.");
        assert!(pack.get("prompts").is_none(), "{pack}");
        let mut with_prompt = catalog();
        with_prompt.prompts = vec![pack_api::CatalogPrompt {
            pack: "proj".into(),
            spec: pack_api::PromptSpec {
                name: "tour".into(),
                ..Default::default()
            },
            bare: false,
        }];
        let pack = describe(&Searcher::new(None), &with_prompt, "proj").unwrap();
        assert_eq!(pack["prompts"][0]["name"], "proj.tour", "{pack}");
    }

    #[test]
    fn an_unknown_name_says_the_closest() {
        let error = describe(&Searcher::new(None), &catalog(), "proj.raed").unwrap_err();
        assert_eq!(error.code(), codes::NOT_FOUND);
        assert!(
            error.to_string().contains("did you mean `proj.read`?"),
            "{error}"
        );
    }
}
