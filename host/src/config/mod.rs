//! `packs.toml`: built-in defaults < the file < `PACKHOST_*` environment.
//!
//! The file is parsed by `toml` first, so a bad value or an unknown key is
//! reported with the file, line and column; figment then layers the
//! environment on top (`env`); paths are resolved (`paths`), then the
//! raw sections are checked and parsed into types (`rules`, `packs`:
//! a pack's source is a library or a server, never a bag of both;
//! `approval`: the calls that ask the user first).

mod approval;
mod audit;
mod env;
mod oauth;
mod packs;
mod paths;
mod rules;
mod search;
mod server;
mod state;
#[cfg(test)]
mod tests;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use pack_api::projects::Project;
use packhost_command::Snippet;
use serde::{Deserialize, Serialize};

use self::{approval::RawApproval, packs::RawPack, paths::resolve};
pub use self::{
    approval::{Approval, CallPattern, MAX_REMEMBER, Remember, Rule},
    audit::AuditConfig,
    oauth::OAuthConfig,
    packs::{Library, PackConfig, PackSource},
    search::SearchConfig,
    server::{AuthConfig, Expose, HttpConfig, ServerConfig, TokenConfig},
    state::StateConfig,
};
pub use crate::error::{ConfigCode, ConfigError, ConfigProblem};
use crate::identity::Identity;
use pack_api::wording::{invalid_type, wrong_type};

/// The whole configuration, with relative paths already resolved and every
/// pack and approval rule parsed; [`RawConfig`] is the same sections as
/// written, what figment layers before the rules are checked.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config<P = PackConfig, A = Approval> {
    /// Server-wide settings.
    #[serde(default)]
    pub server: ServerConfig,
    /// Who is calling when the transport does not say (stdio).
    #[serde(default)]
    pub identity: Identity,
    /// Packs to load, by call name.
    #[serde(default)]
    pub packs: BTreeMap<String, P>,
    /// `alias = "pack.function"`.
    #[serde(default)]
    pub aliases: BTreeMap<String, String>,
    /// Jinja templates that expand to a command.
    #[serde(default)]
    pub snippets: BTreeMap<String, Snippet>,
    /// `name = "path"`, or `name = { path = "path", orgs = ["acme"] }` to
    /// show it to those organisations only (`pack_api::projects`); relative
    /// paths are relative to the config file.
    #[serde(default)]
    pub projects: BTreeMap<String, Project>,
    /// The streamable HTTP transport (`packhost serve --http`).
    #[serde(default)]
    pub http: HttpConfig,
    /// Who may call over HTTP.
    #[serde(default)]
    pub auth: AuthConfig,
    /// Results too large to send whole: kept, previewed, read on by handle.
    #[serde(default)]
    pub results: crate::results::ResultsConfig,
    /// How `packhost.search` ranks.
    #[serde(default)]
    pub search: SearchConfig,
    /// `[approval.<rule>]`: the calls that ask the user first.
    #[serde(default)]
    pub approval: A,
    /// `[audit]`: the audit trail; absent, nothing is recorded.
    #[serde(default)]
    pub audit: Option<AuditConfig>,
    /// `[state]`: where state shared by several instances lives.
    #[serde(default)]
    pub state: StateConfig,
}

/// The sections as written, before they are checked and parsed.
type RawConfig = Config<RawPack, RawApproval>;

impl<P, A: Default> Default for Config<P, A> {
    fn default() -> Self {
        Self {
            server: ServerConfig::default(),
            identity: Identity::default(),
            packs: BTreeMap::new(),
            aliases: BTreeMap::new(),
            snippets: BTreeMap::new(),
            projects: BTreeMap::new(),
            http: HttpConfig::default(),
            auth: AuthConfig::default(),
            results: crate::results::ResultsConfig::default(),
            search: SearchConfig::default(),
            approval: A::default(),
            audit: None,
            state: StateConfig::default(),
        }
    }
}

/// Where the config comes from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The resolved configuration.
    pub config: Config,
    /// The file it was read from, if any.
    pub file: Option<PathBuf>,
    /// The line of each alias the file sets (and the environment leaves).
    alias_lines: BTreeMap<String, usize>,
}

impl Loaded {
    /// Where alias `name` is set: `file:line`, or the environment.
    pub fn alias_place(&self, name: &str) -> String {
        match (&self.file, self.alias_lines.get(name)) {
            (Some(file), Some(line)) => format!("{}:{line}", file.display()),
            _ => "PACKHOST_* environment".to_owned(),
        }
    }
}

/// Where [`load`] looked when it was given no file and found none, and how
/// to give one.
pub fn none_found() -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    format!(
        "no config file: none was given and there is no packs.toml in {}; pass one with \
         `--config FILE` (or PACKHOST_CONFIG=FILE)",
        cwd.display()
    )
}

/// Read `file` (when given it must exist), else `./packs.toml` when present,
/// else only defaults; then apply `PACKHOST_*` variables.
pub fn load(file: Option<&Path>) -> Result<Loaded, ConfigError> {
    let file = match file {
        Some(path) if !path.is_file() => {
            let problem = if path.exists() {
                "is not a file"
            } else {
                "does not exist"
            };
            return Err(ConfigError::one(
                ConfigProblem::new(
                    ConfigCode::File,
                    format!("config file `{}` {problem}", path.display()),
                )
                .with_fix("pass a TOML file to --config"),
            ));
        }
        Some(path) => Some(path.to_path_buf()),
        None => Some(PathBuf::from("packs.toml")).filter(|p| p.is_file()),
    };
    // Not canonicalised: relative paths follow a symlinked config's own folder.
    let cwd = std::env::current_dir().unwrap_or_default();
    let file = file.map(|p| resolve(&cwd, &p));
    let mut file_aliases = BTreeMap::new();
    let mut snippet_lines = BTreeMap::new();
    let mut from_file = None;
    if let Some(path) = &file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::one(ConfigProblem::new(
                ConfigCode::File,
                format!("cannot read `{}`: {e}", path.display()),
            ))
        })?;
        // Parsed by `toml` alone: it reports the line and column that figment
        // loses, and figment's own TOML parser is a version behind; the path
        // of a value that does not fit is kept too.
        let parsed = toml::de::Deserializer::parse(&text)
            .map_err(|e| (e, None))
            .and_then(|document| {
                serde_path_to_error::deserialize::<_, RawConfig>(document).map_err(|e| {
                    let key = e.path().to_string();
                    (e.into_inner(), Some(key))
                })
            })
            .map_err(|(e, key)| {
                ConfigError::one(parse_problem(&text, &e, key.as_deref())).in_file(Some(path))
            })?;
        from_file = Some(parsed);
        file_aliases = aliases_in(&text);
        snippet_lines = snippets_in(&text);
    }
    let mut raw = env::overlay(from_file, file.as_deref())?;
    let base = file
        .as_deref()
        .and_then(Path::parent)
        .map_or(cwd, Path::to_path_buf);
    let in_file = |e: ConfigError| e.in_file(file.as_deref());
    raw.resolve_paths(&base).map_err(in_file)?;
    let mut config = raw.validate().map_err(in_file)?;
    check_audit_database(&config).map_err(in_file)?;
    check_snippets(&mut config, file.as_deref(), &snippet_lines)?;
    let alias_lines = file_aliases
        .into_iter()
        .filter(|(name, (value, _))| config.aliases.get(name) == Some(value))
        .map(|(name, (_, line))| (name, line))
        .collect();
    Ok(Loaded {
        config,
        file,
        alias_lines,
    })
}

/// The audit trail never shares the integrations' SQLite file: the host
/// would write it with its copy of SQLite and `remote_mcp` with its own,
/// which do not see each other's locks (see `audit::database`).
fn check_audit_database(config: &Config) -> Result<(), ConfigError> {
    let integrations = crate::integrations::database_of(config);
    if config.audit.is_none()
        || integrations.starts_with("postgres")
        || crate::audit::database(config) != integrations
    {
        return Ok(());
    }
    Err(ConfigError::one(
        ConfigProblem::new(
            ConfigCode::Value,
            format!(
                "`audit.database` is the integrations' SQLite file `{integrations}`, which \
                 `remote_mcp` writes with its own copy of SQLite: two copies in one process do \
                 not see each other's locks or writes"
            ),
        )
        .with_fix("leave `audit.database` out: the trail goes to `audit.db` beside it"),
    ))
}

/// What `toml` refused in `text`, on one line with where it is, then
/// `toml`'s excerpt: a value of the wrong type (at `key`) in plain words,
/// anything else as `toml` says it.
fn parse_problem(text: &str, e: &toml::de::Error, key: Option<&str>) -> ConfigProblem {
    let said = e.to_string();
    let Some(span) = e.span() else {
        return ConfigProblem::new(ConfigCode::Syntax, said.trim_end());
    };
    let before = &text[..span.start];
    let line = before.matches('\n').count() + 1;
    let what = match (invalid_type(e.message()), key) {
        (Some((got, expected)), Some(key)) => {
            format!("line {line}: {}", wrong_type(key, got, expected))
        }
        _ => {
            let line_start = before.rfind('\n').map_or(0, |nl| nl + 1);
            let column = before[line_start..].chars().count() + 1;
            format!("line {line}, column {column}: {}", e.message().trim_end())
        }
    };
    let excerpt: Vec<&str> = said.lines().filter(|l| l.contains('|')).collect();
    ConfigProblem::new(
        ConfigCode::Syntax,
        format!("{what}\n{}", excerpt.join("\n")),
    )
}

/// Give each snippet its place, and refuse those whose body cannot render
/// with their defaults: a caller would be blamed for the config's mistake.
fn check_snippets(
    config: &mut Config,
    file: Option<&Path>,
    lines: &BTreeMap<String, usize>,
) -> Result<(), ConfigError> {
    let mut problems = Vec::new();
    for (name, snippet) in &mut config.snippets {
        let place = match (file, lines.get(name)) {
            (Some(file), Some(line)) => format!("{}:{line}", file.display()),
            _ => "the PACKHOST_* environment".to_owned(),
        };
        if let Some(why) = snippet.problem() {
            problems.push(ConfigProblem::new(
                ConfigCode::Value,
                format!("{place}: `snippets.{name}`: {why}"),
            ));
        }
        snippet.place = Some(place);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ConfigError::new(problems))
    }
}

/// The line where each snippet of `text` starts: its `[snippets.<name>]`
/// header, or its key in a `[snippets]` section.
fn snippets_in(text: &str) -> BTreeMap<String, usize> {
    let mut lines = BTreeMap::new();
    let mut section = "";
    for (at, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            section = header.split(']').next().unwrap_or_default().trim();
            if let Some(name) = section.strip_prefix("snippets.") {
                let name = name.split('.').next().unwrap_or_default();
                lines.entry(name.to_owned()).or_insert(at + 1);
            }
        } else if section == "snippets"
            && let Some((name, _)) = line.split_once('=')
        {
            lines.entry(name.trim().to_owned()).or_insert(at + 1);
        }
    }
    lines
}

/// Each alias `text` sets, with its value and line: the config keeps no
/// places, and a target is only checked once the packs are loaded.
fn aliases_in(text: &str) -> BTreeMap<String, (String, usize)> {
    #[derive(Deserialize)]
    struct Aliases {
        #[serde(default)]
        aliases: BTreeMap<String, toml::Spanned<String>>,
    }
    let Ok(file) = toml::from_str::<Aliases>(text) else {
        return BTreeMap::new();
    };
    file.aliases
        .into_iter()
        .map(|(name, value)| {
            let line = text[..value.span().start].matches('\n').count() + 1;
            (name, (value.into_inner(), line))
        })
        .collect()
}
