//! Raw → validated: the rules serde cannot express (names are identifiers,
//! aliases point at `pack.function`, limits are at least 1, a pack section
//! says one thing that serves it, approval rules match calls), all checked
//! before anything is refused, so that one run names every problem.

use std::collections::BTreeMap;

use super::{Config, RawConfig, approval};
use crate::{
    error::{ConfigCode, ConfigError, ConfigProblem},
    tool_name::{HOST_PACK, ToolName, is_identifier},
};

impl RawConfig {
    /// The config with every pack parsed, or every problem, one a line.
    pub(super) fn validate(self) -> Result<Config, ConfigError> {
        let mut problems = Vec::new();
        let name_problem = |what: String| ConfigProblem::new(ConfigCode::Name, what);
        for name in self.packs.keys() {
            if !is_identifier(name) {
                problems.push(name_problem(format!(
                    "`packs.{name}`: a pack name must be an identifier (letters, digits, `_`), \
                     it is how calls name it: `{}.function()`",
                    name.replace('-', "_")
                )));
            }
            if name == HOST_PACK {
                problems.push(
                    name_problem(format!(
                        "`packs.{name}`: `{name}` is the host's own pack (search, describe)"
                    ))
                    .with_fix("give this one another name"),
                );
            }
        }
        for (alias, target) in &self.aliases {
            if !is_identifier(alias) {
                problems.push(name_problem(format!(
                    "`aliases.{alias}`: an alias must be an identifier"
                )));
            }
            if !ToolName::parse(target).is_some_and(|name| name.is_callable()) {
                problems.push(ConfigProblem::new(
                    ConfigCode::Alias,
                    format!("`aliases.{alias}` = \"{target}\": the target must be `pack.function`"),
                ));
            }
        }
        for name in self.snippets.keys() {
            if !is_identifier(name) {
                problems.push(name_problem(format!(
                    "`snippets.{name}`: a snippet name must be an identifier"
                )));
            }
        }
        if self.server.timeout_ms == 0 {
            problems.push(ConfigProblem::new(
                ConfigCode::Value,
                "`server.timeout_ms` must be at least 1 (milliseconds)",
            ));
        }
        let mut packs = BTreeMap::new();
        for (name, pack) in self.packs {
            match pack.parse(&name) {
                Ok(pack) => {
                    packs.insert(name, pack);
                }
                Err(found) => problems.extend(found),
            }
        }
        for (i, token) in self.auth.tokens.iter().enumerate() {
            let hex =
                token.sha256.len() == 64 && token.sha256.bytes().all(|b| b.is_ascii_hexdigit());
            if !hex {
                problems.push(
                    ConfigProblem::new(
                        ConfigCode::Value,
                        format!(
                            "`auth.tokens[{i}].sha256` must be 64 hex digits (the SHA-256 of the \
                             token)"
                        ),
                    )
                    .with_fix("`packhost token new --user U --org O` prints a ready line"),
                );
            }
        }
        if let Some(oauth) = &self.auth.oauth {
            problems.extend(oauth.problems());
        }
        if let Some(audit) = &self.audit {
            problems.extend(audit.problems());
        }
        problems.extend(self.state.problems());
        problems.extend(self.http.problems());
        for (key, value, example) in [
            ("code_pack", &self.server.code_pack, "exec_py"),
            ("typescript_pack", &self.server.typescript_pack, "exec_ts"),
        ] {
            if !is_identifier(value) {
                problems.push(name_problem(format!(
                    "`server.{key}` = \"{value}\": must name a pack (an identifier, e.g. `{example}`)"
                )));
            }
        }
        let approval = approval::parse(self.approval).unwrap_or_else(|found| {
            problems.extend(found);
            approval::Approval::default()
        });
        if !problems.is_empty() {
            return Err(ConfigError::new(problems));
        }
        Ok(Config {
            server: self.server,
            identity: self.identity,
            packs,
            aliases: self.aliases,
            snippets: self.snippets,
            projects: self.projects,
            http: self.http,
            auth: self.auth,
            results: self.results,
            search: self.search,
            approval,
            audit: self.audit,
            state: self.state,
        })
    }
}
