//! `packs.toml`: built-in defaults < the file < `PACKHOST_*` environment.
//!
//! The file is parsed by `toml` first, so a bad value or an unknown key is
//! reported with the file, line and column; figment then layers the
//! environment on top (`PACKHOST_SERVER__TIMEOUT_MS=5000`).

use std::{
    collections::BTreeMap,
    fmt,
    path::{Path, PathBuf},
};

use figment::{
    Figment,
    providers::{Env, Format, Serialized, Toml},
};
use packhost_command::Snippet;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The whole configuration, with relative paths already resolved.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Server-wide settings.
    #[serde(default)]
    pub server: ServerConfig,
    /// Who is calling when the transport does not say (stdio).
    #[serde(default)]
    pub identity: Identity,
    /// Packs to load, by call name.
    #[serde(default)]
    pub packs: BTreeMap<String, PackConfig>,
    /// `alias = "pack.function"`.
    #[serde(default)]
    pub aliases: BTreeMap<String, String>,
    /// Jinja templates that expand to a command.
    #[serde(default)]
    pub snippets: BTreeMap<String, Snippet>,
    /// `name = "path"`; relative paths are relative to the config file.
    #[serde(default)]
    pub projects: BTreeMap<String, PathBuf>,
}

/// `[server]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Time limit of one tool call unless the pack sets its own.
    pub timeout_ms: u64,
    /// The pack whose `run` function executes commands that are not a single
    /// call (a Python block).
    pub code_pack: String,
    /// Where pack libraries named without a path are looked for, in order.
    pub pack_dirs: Vec<PathBuf>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            timeout_ms: 60_000,
            code_pack: "exec_py".to_owned(),
            pack_dirs: default_pack_dirs(),
        }
    }
}

fn default_pack_dirs() -> Vec<PathBuf> {
    let beside_binary = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf));
    let in_home = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".packhost/packs"));
    beside_binary.into_iter().chain(in_home).collect()
}

/// `[identity]`: the caller on transports without authentication.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Identity {
    /// User id handed to packs.
    pub user: String,
    /// Organisation id handed to packs.
    pub org: String,
}

impl Default for Identity {
    fn default() -> Self {
        Self {
            user: "local".to_owned(),
            org: "local".to_owned(),
        }
    }
}

/// `[packs.<name>]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PackConfig {
    /// The library file; default: `lib<name>.so` in `server.pack_dirs`.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// Set to false to keep the section but not load the pack.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Time limit of this pack's calls.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Handed to the pack's constructor as JSON.
    #[serde(default = "empty_table")]
    pub config: Value,
}

fn yes() -> bool {
    true
}

fn empty_table() -> Value {
    Value::Object(Default::default())
}

/// A configuration problem, with where it is.
#[derive(Debug)]
pub struct ConfigError(String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Where the config comes from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The resolved configuration.
    pub config: Config,
    /// The file it was read from, if any.
    pub file: Option<PathBuf>,
}

/// Read `file` (when given it must exist), else `./packs.toml` when present,
/// else only defaults; then apply `PACKHOST_*` variables.
pub fn load(file: Option<&Path>) -> Result<Loaded, ConfigError> {
    let file = match file {
        Some(path) if !path.is_file() => {
            return Err(ConfigError(format!(
                "config file `{}` does not exist; pass an existing file to --config",
                path.display()
            )));
        }
        Some(path) => Some(path.to_path_buf()),
        None => Some(PathBuf::from("packs.toml")).filter(|p| p.is_file()),
    };
    let file = file
        .map(|p| std::path::absolute(&p).unwrap_or(p))
        .map(|p| p.canonicalize().unwrap_or(p));
    let mut figment = Figment::from(Serialized::defaults(Config::default()));
    if let Some(path) = &file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read `{}`: {e}", path.display())))?;
        // toml reports the line and column that figment loses.
        toml::from_str::<Config>(&text).map_err(|e| {
            ConfigError(format!("{}: {}", path.display(), e.to_string().trim_end()))
        })?;
        figment = figment.merge(Toml::string(&text));
    }
    let figment = figment.merge(
        Env::prefixed("PACKHOST_")
            // Sections only: `PACKHOST_SERVER__TIMEOUT_MS`. Single-word
            // variables such as `PACKHOST_LOG` are the CLI's own.
            .filter(|key| key.as_str().contains("__"))
            .split("__"),
    );
    let mut config: Config = figment.extract().map_err(|e| {
        let errors: Vec<String> = e
            .into_iter()
            .map(|e| {
                let key = e.path.join(".");
                let source = e
                    .metadata
                    .as_ref()
                    .map(|m| m.name.to_string())
                    .unwrap_or_else(|| "configuration".to_owned());
                format!("{source}: `{key}`: {}", e.kind)
            })
            .collect();
        ConfigError(errors.join("\n"))
    })?;
    let base = file
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
    config.resolve_paths(&base);
    config.check()?;
    Ok(Loaded { config, file })
}

impl Config {
    fn resolve_paths(&mut self, base: &Path) {
        for path in self.projects.values_mut() {
            *path = base.join(&*path);
        }
        for pack in self.packs.values_mut() {
            if let Some(path) = &mut pack.path {
                *path = base.join(&*path);
            }
        }
        for dir in &mut self.server.pack_dirs {
            *dir = base.join(&*dir);
        }
    }

    /// Rules serde cannot express: names must be identifiers, aliases must
    /// point at `pack.function`.
    fn check(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        for name in self.packs.keys() {
            if !is_identifier(name) {
                problems.push(format!(
                    "`packs.{name}`: a pack name must be an identifier (letters, digits, `_`), \
                     it is how calls name it: `{}.function()`",
                    name.replace('-', "_")
                ));
            }
        }
        for (alias, target) in &self.aliases {
            if !is_identifier(alias) {
                problems.push(format!("`aliases.{alias}`: an alias must be an identifier"));
            }
            if !target.split_once('.').is_some_and(|(p, f)| is_identifier(p) && is_identifier(f)) {
                problems.push(format!(
                    "`aliases.{alias}` = \"{target}\": the target must be `pack.function`"
                ));
            }
        }
        for name in self.snippets.keys() {
            if !is_identifier(name) {
                problems.push(format!("`snippets.{name}`: a snippet name must be an identifier"));
            }
        }
        if self.server.timeout_ms == 0 {
            problems.push("`server.timeout_ms` must be at least 1".to_owned());
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError(problems.join("\n")))
        }
    }
}

/// `[A-Za-z_][A-Za-z0-9_]*`: what a call expression can name.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
