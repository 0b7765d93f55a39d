//! `[aliases]` checked against the loaded packs: a target that does not
//! exist stops the start (`packhost check`, `serve`, ...) with the alias's
//! file and line, instead of failing at its first call. A server pack's
//! tools may arrive after the start (its server was down): an alias into it
//! is checked when they do, and a bad one is logged as a warning, since the
//! host is serving by then. An alias into a library pack that failed to load
//! is left alone: that failure is reported already.

use std::{
    collections::BTreeMap,
    sync::{Arc, Weak},
};

use tokio::sync::watch;

use super::{Executor, registry::PackEntry};
use crate::{
    config::{ConfigCode, ConfigError, ConfigProblem, Loaded, PackConfig},
    render::{did_you_mean, list},
    tool_name::ToolName,
};

/// An alias with where it is set, for messages.
struct Alias {
    name: String,
    target: String,
    place: String,
}

impl Alias {
    fn problem(&self, reason: &str) -> String {
        format!(
            "{}: `aliases.{}` = \"{}\": {reason}",
            self.place, self.name, self.target
        )
    }
}

enum Verdict {
    /// The target exists, or cannot be known (its pack failed to load).
    Fine,
    /// Its server pack's tools are not known yet.
    Later,
    /// What is wrong with the target.
    Missing(String),
}

impl Executor {
    /// Refuse every alias whose target does not exist; those into server
    /// packs whose tools are not known yet are checked when they arrive.
    pub fn check_aliases(self: &Arc<Self>, loaded: &Loaded) -> Result<(), ConfigError> {
        // Subscribed before the first look, so that no arrival is missed.
        let generations = self.generations();
        let registry = self.registry();
        let mut problems = Vec::new();
        let mut later = Vec::new();
        for (name, target) in &loaded.config.aliases {
            let alias = Alias {
                name: name.clone(),
                target: target.clone(),
                place: loaded.alias_place(name),
            };
            match verdict(&registry.packs, &loaded.config.packs, target) {
                Verdict::Fine => {}
                Verdict::Later => later.push(alias),
                Verdict::Missing(reason) => problems.push(ConfigProblem::new(
                    ConfigCode::Alias,
                    alias.problem(&reason),
                )),
            }
        }
        if !problems.is_empty() {
            return Err(ConfigError::new(problems));
        }
        for alias in &later {
            tracing::info!(
                "{}",
                alias.problem("checked once the server of its pack answers")
            );
        }
        if !later.is_empty() {
            tokio::spawn(check_later(
                Arc::downgrade(self),
                generations,
                loaded.config.packs.clone(),
                later,
            ));
        }
        Ok(())
    }
}

/// Check `waiting` each time the tools change, until all are checked or
/// the executor is gone.
async fn check_later(
    executor: Weak<Executor>,
    mut generations: watch::Receiver<u64>,
    configured: BTreeMap<String, PackConfig>,
    mut waiting: Vec<Alias>,
) {
    while !waiting.is_empty() && generations.changed().await.is_ok() {
        let Some(executor) = executor.upgrade() else {
            return;
        };
        let registry = executor.registry();
        waiting.retain(
            |alias| match verdict(&registry.packs, &configured, &alias.target) {
                Verdict::Fine => false,
                Verdict::Later => true,
                Verdict::Missing(reason) => {
                    tracing::warn!("{}; calls to it fail", alias.problem(&reason));
                    false
                }
            },
        );
    }
}

/// Whether `target` (`pack.function`, as the config check made sure) names
/// a function of the loaded packs.
fn verdict(
    packs: &BTreeMap<String, Arc<PackEntry>>,
    configured: &BTreeMap<String, PackConfig>,
    target: &str,
) -> Verdict {
    let name = ToolName::parse(target).unwrap_or_else(|| ToolName::new(target, ""));
    let (pack_name, function) = (name.pack.as_str(), name.function.as_str());
    let hint = || closest(packs, target);
    let section = configured.get(pack_name);
    let Some(pack) = packs.get(pack_name) else {
        return match section {
            Some(section) if section.enabled => Verdict::Fine,
            Some(_) => Verdict::Missing(format!(
                "pack `{pack_name}` is not enabled (`[packs.{pack_name}] enabled = false`); \
                 {}enable it or remove the alias",
                hint()
            )),
            None => Verdict::Missing(format!(
                "no pack `{pack_name}` is configured; {}packs: {}",
                hint(),
                list(packs.keys())
            )),
        };
    };
    let names = pack.functions.iter().map(|f| f.spec.name.as_str());
    if names.clone().any(|name| name == function) {
        return Verdict::Fine;
    }
    if pack.functions.is_empty() && section.is_some_and(|s| s.server().is_some()) {
        return Verdict::Later;
    }
    let hint = hint();
    let after = if hint.is_empty() { " " } else { "; " };
    Verdict::Missing(format!(
        "pack `{pack_name}` has no function `{function}`{after}{hint}(has: {})",
        list(names)
    ))
}

/// "did you mean" the loaded `pack.function` closest to `target`.
fn closest(packs: &BTreeMap<String, Arc<PackEntry>>, target: &str) -> String {
    let tools: Vec<String> = packs
        .values()
        .flat_map(|p| {
            p.functions
                .iter()
                .map(|f| ToolName::new(&p.loaded.name, &f.spec.name).to_string())
        })
        .collect();
    did_you_mean(target, tools.iter().map(String::as_str))
}
