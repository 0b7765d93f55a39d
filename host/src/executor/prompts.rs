//! `[snippets]` as MCP prompts: a caller's prompts are the snippets it may
//! use (the rule `$name` follows), rendered with the prompt's arguments.

use std::collections::BTreeMap;

use packhost_command::Snippet;

use super::Executor;
use crate::identity::Identity;

impl Executor {
    /// The snippets `identity` may use, by name: its prompts.
    pub fn prompts(&self, identity: &Identity) -> Vec<(&str, &Snippet)> {
        let visible = self.visible(identity);
        self.front
            .snippets
            .iter()
            .filter(|(_, snippet)| visible.snippet(snippet))
            .map(|(name, snippet)| (name.as_str(), snippet))
            .collect()
    }

    /// Prompt `name` of `identity`'s with `arguments`: its description and
    /// its rendered text, or what was wrong (an unknown prompt lists the
    /// caller's own).
    pub fn prompt(
        &self,
        identity: &Identity,
        name: &str,
        arguments: &BTreeMap<String, String>,
    ) -> Result<(String, String), String> {
        // Only the one asked for is rendered to tell whether it is the
        // caller's; all of them only to list them when it is not.
        let visible = self.visible(identity);
        let snippet = self.front.snippets.get(name);
        let Some(snippet) = snippet.filter(|snippet| visible.snippet(snippet)) else {
            let prompts = self.prompts(identity);
            let packs = self.pack_prompts(identity);
            let snippets = prompts.iter().map(|(prompt, _)| *prompt);
            let names: Vec<&str> = snippets
                .chain(packs.iter().map(|(name, _)| name.as_str()))
                .collect();
            return Err(if names.is_empty() {
                format!(
                    "unknown prompt `{name}`: there are none (prompts are `[snippets]` and the \
                     prompts of packs)"
                )
            } else {
                format!("unknown prompt `{name}`; available: {}", names.join(", "))
            });
        };
        let text = snippet
            .render_prompt(name, arguments)
            .map_err(|e| e.to_string())?;
        Ok((snippet.description.clone(), text))
    }
}
