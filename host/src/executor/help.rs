//! The `run` tool as a model first reads it: what it accepts and what exists.

use pack_api::{Annotations, TaskSupport};
use serde_json::json;

use std::sync::Arc;

use packhost_command::Snippet;

use super::{
    Executor, RUN_TOOL, ToolInfo,
    registry::{Function, Registry, Visible},
};
use crate::{identity::Identity, render::count};

impl Executor {
    /// The `run` tool, as a caller without an allow-list sees it.
    pub(super) fn run_tool(&self, registry: Arc<Registry>) -> ToolInfo {
        let everyone = Identity::default();
        ToolInfo {
            name: RUN_TOOL.to_owned(),
            description: self.run_description(&Visible::new(
                registry,
                &self.front.aliases,
                &everyone,
            )),
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
            title: Some("Run a command".to_owned()),
            // Whatever a command reaches, as the worst function it can call:
            // a block of Python or TypeScript runs any code, and a call may
            // name any function, `exec_ts.session_delete` too. So not
            // read-only, destructive, not idempotent, open world.
            annotations: Annotations {
                read_only: Some(false),
                destructive: Some(true),
                idempotent: Some(false),
                open_world: Some(true),
            },
            // A command answers when it is done, as it always did.
            task_support: TaskSupport::Forbidden,
        }
    }

    /// The `run` description for a caller whose token names what it may
    /// call: nothing else is mentioned.
    pub fn run_description_for(&self, identity: &Identity) -> String {
        self.run_description(&self.visible(identity))
    }

    /// What `run` accepts and what the caller can reach, compactly: every
    /// signature while they fit the budget, else each pack in one line and
    /// how to find the rest, so the description stays the same size
    /// however many tools there are.
    fn run_description(&self, visible: &Visible) -> String {
        let mut text = String::from(
            "Run a command the way you would write it: a call `pack.function(arg, key=value)` \
             with Python literals, an alias call, a snippet `$name key=value`, or a block of \
             Python (handed to the code pack, as is a call of any other name: `abs(-3)`). \
             Markdown fences and a `>>>` prompt are stripped. A fence tagged `ts`, `typescript`, \
             `js` or `javascript` runs in node instead. In code every function below is callable \
             and the last expression is the result: Python `pack.function(\"a\", key=1)`, \
             TypeScript `await pack.function({a: \"a\", key: 1})`.\n",
        );
        let packs: Vec<(&str, &str, Vec<&Function>)> = visible
            .packs()
            .map(|pack| {
                let callable: Vec<&Function> = visible.functions(pack).collect();
                let description = pack.loaded.manifest.description.as_str();
                (pack.loaded.name.as_str(), description, callable)
            })
            .filter(|(_, _, functions)| !functions.is_empty())
            .collect();
        let aliases: Vec<(&str, &str)> = visible.aliases().collect();
        let snippets: Vec<(&str, &Snippet)> = self
            .front
            .snippets
            .iter()
            .filter(|(_, snippet)| visible.snippet(snippet))
            .map(|(name, snippet)| (name.as_str(), snippet))
            .collect();
        let full = full_listing(&packs, &aliases, &snippets);
        if text.len() + full.len() <= RUN_DESCRIPTION_BUDGET {
            text.push_str(&full);
            return text;
        }
        let functions: usize = packs.iter().map(|(_, _, f)| f.len()).sum();
        text.push_str(&format!(
            "\n{} in {}. Find one with `packhost.search(query=\"what you want to do\")`, \
             show it with `packhost.describe(name=\"pack.function\")`, list them all with `packhost.packs()` \
             (from `run`, Python or TypeScript alike).\nPacks:\n",
            count(functions, "function"),
            count(packs.len(), "pack")
        ));
        // Aliases and snippets are names a model cannot guess: they stay,
        // each in at most a quarter of the budget so that the packs keep
        // the rest.
        let names = alias_line(&aliases, RUN_DESCRIPTION_BUDGET / 4)
            + &snippet_line(&snippets, RUN_DESCRIPTION_BUDGET / 4);
        for (shown, (name, description, functions)) in packs.iter().enumerate() {
            let line = format!(
                "- {name}: {description} ({})\n",
                count(functions.len(), "function")
            );
            if text.len() + line.len() + 60 + names.len() > RUN_DESCRIPTION_BUDGET {
                text.push_str(&format!(
                    "- … {} more: `packhost.packs()`\n",
                    packs.len() - shown
                ));
                break;
            }
            text.push_str(&line);
        }
        text.push_str(&names);
        text
    }
}

/// Past this many characters the `run` description summarises instead of
/// listing every signature: about 450 tokens, so that `run` and the
/// discovery functions stay within 1,500 tokens at any catalog size.
const RUN_DESCRIPTION_BUDGET: usize = 1_800;

/// Every signature, alias and snippet.
fn full_listing(
    packs: &[(&str, &str, Vec<&Function>)],
    aliases: &[(&str, &str)],
    snippets: &[(&str, &Snippet)],
) -> String {
    let mut text = String::from("\nFunctions:\n");
    for f in packs.iter().flat_map(|(_, _, functions)| functions) {
        text.push_str(&format!("- {}\n", f.signature));
    }
    text.push_str(&alias_line(aliases, usize::MAX));
    if !snippets.is_empty() {
        text.push_str("\nSnippets:\n");
        for (name, snippet) in snippets {
            text.push_str(&format!(
                "- {}: {}\n",
                snippet.usage(name),
                snippet.description
            ));
        }
    }
    text
}

/// `\nAliases: pl=proj.list, tree=proj.ls\n` in at most `room` bytes (given
/// room for the note): those that do not fit are counted and
/// `packhost.packs()` named; empty without aliases.
fn alias_line(aliases: &[(&str, &str)], room: usize) -> String {
    let entries = aliases
        .iter()
        .map(|(alias, target)| format!("{alias}={target}"));
    short_line("Aliases", entries.collect(), room)
}

/// `\nSnippets: $find pattern glob="*" (Search a project), …\n` in at most
/// `room` bytes, as [`alias_line`].
fn snippet_line(snippets: &[(&str, &Snippet)], room: usize) -> String {
    let entries = snippets
        .iter()
        .map(|(name, snippet)| match snippet.description.as_str() {
            "" => snippet.usage(name),
            description => format!("{} ({description})", snippet.usage(name)),
        });
    short_line("Snippets", entries.collect(), room)
}

/// `\n{label}: a, b\n` with as many `entries` as fit in `room` bytes, the
/// rest counted, with where to find them.
fn short_line(label: &str, entries: Vec<String>, room: usize) -> String {
    if entries.is_empty() {
        return String::new();
    }
    let line = |shown: usize| {
        let mut listed = entries[..shown].to_vec();
        let left = entries.len() - shown;
        if left > 0 {
            listed.push(format!("…and {left} more; `packhost.packs()` lists them"));
        }
        format!("\n{label}: {}\n", listed.join(", "))
    };
    let all = line(entries.len());
    if all.len() <= room {
        return all;
    }
    let fit = (1..entries.len())
        .take_while(|&shown| line(shown).len() <= room)
        .last()
        .unwrap_or(0);
    line(fit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_are_listed_compactly_and_cut_to_their_room() {
        let aliases = [("pl", "proj.list"), ("tree", "proj.ls"), ("r", "proj.read")];
        let all = "\nAliases: pl=proj.list, tree=proj.ls, r=proj.read\n";
        assert_eq!(alias_line(&aliases, usize::MAX), all);
        assert_eq!(alias_line(&aliases, all.len()), all);
        assert_eq!(alias_line(&[], usize::MAX), "");
        let names: Vec<String> = (0..40).map(|i| format!("alias{i}")).collect();
        let many: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "proj.list")).collect();
        let cut = alias_line(&many, 200);
        assert!(cut.len() <= 200, "{} bytes: {cut}", cut.len());
        let shown = cut.matches("=proj.list").count();
        assert!(shown > 3, "{cut}");
        assert!(
            cut.ends_with(&format!(
                ", …and {} more; `packhost.packs()` lists them\n",
                40 - shown
            )),
            "{cut}"
        );
    }
}
