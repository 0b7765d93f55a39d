//! The `run` tool as a model first reads it: what it accepts and what exists.

use serde_json::json;

use super::{Executor, RUN_TOOL, ToolInfo, registry::Registry};
use crate::render::list;

impl Executor {
    /// The `run` tool.
    pub(super) fn run_tool(&self, registry: &Registry) -> ToolInfo {
        ToolInfo {
            name: RUN_TOOL.to_owned(),
            description: self.run_description(registry),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "description": "A call such as `proj.path(\"api\", sub=\"src\")`, an alias call, `$snippet k=v`, a block of Python (fenced or not), or a fenced ```ts block."
                    }
                },
                "required": ["command"],
                "additionalProperties": false
            }),
            output_schema: None,
        }
    }

    /// What `run` accepts and what it can reach, compactly: the list a model
    /// reads to know what exists.
    fn run_description(&self, registry: &Registry) -> String {
        let mut text = String::from(
            "Run a command the way you would write it: a call `pack.function(arg, key=value)` \
             with Python literals, an alias call, a snippet `$name key=value`, or a block of \
             Python (handed to the code pack, as is a call of any other name: `abs(-3)`). \
             Markdown fences and a `>>>` prompt are stripped. A fence tagged `ts`, `typescript`, \
             `js` or `javascript` runs in node instead. In code every function below is callable \
             and the last expression is the result: Python `proj.read(\"p\", \"a.md\")`, TypeScript \
             `await proj.read({name: \"p\", path: \"a.md\"})`.\n",
        );
        text.push_str("\nFunctions:\n");
        for pack in registry.packs.values() {
            for f in &pack.functions {
                text.push_str(&format!("- {}\n", f.signature));
            }
        }
        if !self.front.aliases.is_empty() {
            let aliases = self.front.aliases.iter().map(|(a, t)| format!("{a} = {t}"));
            text.push_str(&format!("\nAliases: {}\n", list(aliases)));
        }
        if !self.front.snippets.is_empty() {
            text.push_str("\nSnippets:\n");
            for (name, snippet) in &self.front.snippets {
                let params: Vec<String> = snippet
                    .params
                    .iter()
                    .map(|(p, def)| match &def.default {
                        Some(d) => format!("{p}={d}"),
                        None => p.clone(),
                    })
                    .collect();
                text.push_str(&format!(
                    "- ${name} {}: {}\n",
                    params.join(" "),
                    snippet.description
                ));
            }
        }
        text
    }
}
