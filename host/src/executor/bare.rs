//! `[packs.x] prefix = false`: a pack's functions and prompts go by their
//! own names, so packhost can stand in for one server transparently. Such
//! a name must name one thing only: one that is also `run`, an alias, a
//! snippet, or a function or prompt of another such pack stops the start,
//! naming both. (A server pack's tools are its server's, and can arrive
//! after the start: one whose name is taken is logged and keeps only
//! `pack.function`.)

use std::collections::BTreeMap;

use super::{Executor, RUN_TOOL};
use crate::{
    backend::Backend,
    config::{Config, ConfigCode, ConfigError, ConfigProblem},
    tool_name::ToolName,
};

impl Executor {
    /// Refuse every own name of a `prefix = false` pack that something
    /// else already has.
    pub fn check_bare_names(&self, config: &Config) -> Result<(), ConfigError> {
        let mut taken: BTreeMap<String, String> = BTreeMap::new();
        taken.insert(RUN_TOOL.to_owned(), "the tool `run`".to_owned());
        for name in config.aliases.keys() {
            taken.insert(name.clone(), format!("`aliases.{name}`"));
        }
        for name in config.snippets.keys() {
            taken.insert(name.clone(), format!("`snippets.{name}`"));
        }
        let registry = self.registry();
        let mut problems = Vec::new();
        let unprefixed = registry.packs.values().filter(|pack| {
            registry.unprefixed.contains(&pack.loaded.name)
                && !matches!(pack.loaded.backend, Backend::Server(_))
        });
        for pack in unprefixed {
            let pack_name = &pack.loaded.name;
            let functions = pack.functions.iter().map(|f| ("function", &f.spec.name));
            let prompts = pack.offers.prompts.iter();
            let names = functions.chain(prompts.map(|p| ("prompt", &p.name)));
            for (kind, name) in names {
                let own = format!("{kind} `{}`", ToolName::new(pack_name, name));
                match taken.get(name) {
                    Some(other) => problems.push(
                        ConfigProblem::new(
                            ConfigCode::Name,
                            format!(
                                "`packs.{pack_name}` has `prefix = false`, so its {own} would \
                                 be `{name}`, which is {other} already"
                            ),
                        )
                        .with_fix(
                            "rename one of the two, or let the pack keep its prefix (remove \
                             `prefix = false`)",
                        ),
                    ),
                    None => {
                        taken.insert(name.clone(), own);
                    }
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::new(problems))
        }
    }
}
