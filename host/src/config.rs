//! `packs.toml`: built-in defaults < the file < `PACKHOST_*` environment.
//!
//! The file is parsed by `toml` first, so a bad value or an unknown key is
//! reported with the file, line and column; figment then layers the
//! environment on top (`PACKHOST_SERVER__TIMEOUT_MS=5000`); a variable of a
//! pack the file does not declare is ignored with a warning.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    path::{Path, PathBuf},
};

use figment::{
    Figment,
    providers::{Env, Serialized},
};
use mcp_downstream::{Limits, Mode};
use pack_api::{paths::expand_home, projects::Project};
use packhost_command::Snippet;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    identity::Identity,
    tool_name::{ToolName, is_identifier},
};

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
}

/// `[http]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// `Host` header values accepted (DNS-rebinding guard); the bound address
    /// is always added.
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin`s accepted, e.g. `https://app.example.com:443`; a
    /// request with any other `Origin` is refused (requests without one pass).
    pub allowed_origins: Vec<String>,
    /// `false`: no sessions, every POST stands alone and a call is answered
    /// with plain JSON, so instances behind a load balancer need no sticky
    /// routing (the server cannot send anything outside a call's answer).
    pub sessions: bool,
    /// A session unused this long is closed.
    pub session_idle_secs: u64,
    /// Sessions open at once; a new one past this is refused (503).
    pub max_sessions: usize,
    /// Largest request body accepted (413 past it).
    pub max_request_bytes: usize,
    /// On SIGTERM, how long running calls may take to finish.
    pub shutdown_grace_secs: u64,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            allowed_hosts: ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec(),
            allowed_origins: Vec::new(),
            sessions: true,
            session_idle_secs: 1800,
            max_sessions: 256,
            max_request_bytes: 4 << 20,
            shutdown_grace_secs: 10,
        }
    }
}

/// `[auth]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// Bearer tokens, by their SHA-256 (`packhost token new` makes one).
    #[serde(default)]
    pub tokens: Vec<TokenConfig>,
}

/// `[[auth.tokens]]`: one bearer token and who it stands for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// The user every call with this token runs as.
    pub user: String,
    /// Their organisation.
    pub org: String,
    /// Hex SHA-256 of the token (the token itself is never stored).
    pub sha256: String,
    /// Tools this token may call (`pack.function`, `pack.*`, or `run`);
    /// absent: all.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
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
    /// The pack whose `execute` function runs code fenced as TypeScript or
    /// JavaScript (`code` and `language` arguments).
    pub typescript_pack: String,
    /// Where pack libraries named without a path are looked for, in order.
    pub pack_dirs: Vec<PathBuf>,
    /// What `tools/list` shows: `"all"` (every function) or `"run"` (`run`
    /// and the `packhost` pack's discovery functions: code as the whole
    /// interface). Every function stays callable either way.
    pub expose: Expose,
}

/// Which functions `tools/list` shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expose {
    /// Every function of the pack.
    #[default]
    All,
    /// None of them: they are reached through `run` and code.
    Run,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            timeout_ms: 60_000,
            code_pack: "exec_py".to_owned(),
            typescript_pack: "exec_ts".to_owned(),
            pack_dirs: default_pack_dirs(),
            expose: Expose::All,
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

/// `[packs.<name>]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PackConfig {
    /// What serves the pack: a library (default) or another MCP server.
    #[serde(default)]
    pub kind: PackKind,
    /// The library file; default: `lib<name>.so` in `server.pack_dirs`.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// `kind = "mcp"`: the server's program and arguments (stdio).
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// `kind = "mcp"`: the server's streamable HTTP endpoint.
    #[serde(default)]
    pub url: Option<String>,
    /// `kind = "mcp"`: added to a stdio server's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `kind = "mcp"`: sent with every HTTP request (credentials).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `kind = "mcp"` with `command`: `"off"` runs the server unconfined,
    /// with every right of the host's user (logged as a warning at start).
    #[serde(default)]
    pub sandbox: Mode,
    /// `kind = "mcp"` with `command`: also readable by the server.
    #[serde(default)]
    pub read: Vec<PathBuf>,
    /// `kind = "mcp"` with `command`: also writable by the server.
    #[serde(default)]
    pub write: Vec<PathBuf>,
    /// `kind = "mcp"` with `command`: the server's bounds.
    #[serde(default)]
    pub limits: Option<Limits>,
    /// Set to false to keep the section but not load the pack.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Whether `tools/list` shows this pack's functions; default
    /// `server.expose`.
    #[serde(default)]
    pub expose: Option<Expose>,
    /// Time limit of this pack's calls.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Handed to the pack's constructor as JSON.
    #[serde(default = "empty_table")]
    pub config: Value,
}

/// `[packs.<name>] kind`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PackKind {
    /// A pack library (`path`, or `lib<name>.so` in `server.pack_dirs`).
    #[default]
    Library,
    /// Another MCP server (`command` or `url`): its tools are the functions.
    Mcp,
}

fn yes() -> bool {
    true
}

fn empty_table() -> Value {
    Value::Object(Default::default())
}

impl PackConfig {
    /// The keys of one kind used with the other, or a server pack that does
    /// not say where its server is.
    fn kind_problems(&self, name: &str) -> Vec<String> {
        let mut problems = Vec::new();
        match self.kind {
            PackKind::Library => {
                let server_keys = [
                    ("command", self.command.is_some()),
                    ("url", self.url.is_some()),
                    ("env", !self.env.is_empty()),
                    ("headers", !self.headers.is_empty()),
                ];
                for (key, set) in server_keys {
                    if set {
                        problems.push(format!(
                            "`packs.{name}.{key}` is for MCP server packs; add `kind = \"mcp\"` \
                             to the section, or remove `{key}`"
                        ));
                    }
                }
                for key in self.sandbox_keys() {
                    problems.push(format!(
                        "`packs.{name}.{key}` is for stdio MCP server packs (`kind = \"mcp\"` \
                         with `command`); a library pack's own settings, such as exec_py's \
                         `sandbox` and `limits`, go in its `config`"
                    ));
                }
            }
            PackKind::Mcp => {
                if self.path.is_some() {
                    problems.push(format!(
                        "`packs.{name}.path` names a library, but the pack is `kind = \"mcp\"`; \
                         give `command` or `url` instead"
                    ));
                }
                match (&self.command, &self.url) {
                    (Some(command), None) if command.first().is_some_and(|c| !c.is_empty()) => {}
                    (Some(_), None) => problems.push(format!(
                        "`packs.{name}.command` is empty; give the program and its arguments, \
                         e.g. [\"npx\", \"-y\", \"@modelcontextprotocol/server-everything\"]"
                    )),
                    (None, Some(url)) => {
                        if let Err(e) = mcp_downstream::check_url(url) {
                            problems.push(format!("`packs.{name}.url`: {e}"));
                        }
                        for key in self.sandbox_keys() {
                            problems.push(format!(
                                "`packs.{name}.{key}` confines a stdio server (`command`), and \
                                 `packs.{name}` is an HTTP server (`url`); remove `{key}`"
                            ));
                        }
                    }
                    _ => problems.push(format!(
                        "`packs.{name}` is `kind = \"mcp\"`: give exactly one of `command` \
                         (a stdio server) or `url` (streamable HTTP)"
                    )),
                }
                if let Some(Err(e)) = self.limits.as_ref().map(Limits::validate) {
                    problems.push(format!("`packs.{name}`: {e}"));
                }
            }
        }
        problems
    }

    /// The sandbox keys that are set.
    fn sandbox_keys(&self) -> Vec<&'static str> {
        [
            ("sandbox", self.sandbox != Mode::default()),
            ("read", !self.read.is_empty()),
            ("write", !self.write.is_empty()),
            ("limits", self.limits.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, set)| set.then_some(key))
        .collect()
    }
}

/// A configuration problem, with where it is.
#[derive(Debug)]
pub struct ConfigError(String);

impl ConfigError {
    /// Problems found once the packs are loaded, one a line, each naming
    /// its place.
    pub fn new(problems: &[String]) -> Self {
        Self(problems.join("\n"))
    }
}

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
            return Err(ConfigError(format!(
                "config file `{}` {problem}; pass a TOML file to --config",
                path.display()
            )));
        }
        Some(path) => Some(path.to_path_buf()),
        None => Some(PathBuf::from("packs.toml")).filter(|p| p.is_file()),
    };
    // Not canonicalised: relative paths follow a symlinked config's own folder.
    let cwd = std::env::current_dir().unwrap_or_default();
    let file = file.map(|p| resolve(&cwd, &p));
    let mut figment = Figment::from(Serialized::defaults(Config::default()));
    let mut file_aliases = BTreeMap::new();
    let mut declared = BTreeSet::new();
    if let Some(path) = &file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read `{}`: {e}", path.display())))?;
        // Parsed by `toml` alone: it reports the line and column that figment
        // loses, and figment's own TOML parser is a version behind.
        let from_file = toml::from_str::<Config>(&text).map_err(|e| {
            ConfigError(format!("{}: {}", path.display(), e.to_string().trim_end()))
        })?;
        declared = from_file.packs.keys().cloned().collect();
        figment = figment.merge(Serialized::defaults(from_file));
        file_aliases = aliases_in(&text);
    }
    let sections = || {
        Env::prefixed("PACKHOST_")
            // Sections only: `PACKHOST_SERVER__TIMEOUT_MS`. Single-word
            // variables such as `PACKHOST_LOG` are the CLI's own.
            .filter(|key| key.as_str().contains("__"))
    };
    // A pack's variables configure it only where the file loads it: set for
    // one config (`./dev run` sets exec_ts's), they must not add the pack to
    // every other.
    for (key, _) in sections().lowercase(false).iter() {
        if let Some(pack) = undeclared_pack(key.as_str(), &declared) {
            let file = file.as_ref().map_or("none was found".to_owned(), |f| {
                format!("`{}`", f.display())
            });
            tracing::warn!(
                "`PACKHOST_{key}` is ignored: it configures pack `{pack}`, which the config \
                 file ({file}) does not load; add `[packs.{pack}]` to it to load the pack, \
                 and the variable applies"
            );
        }
    }
    let figment = figment.merge(
        sections()
            .filter(move |key| undeclared_pack(key.as_str(), &declared).is_none())
            .split("__"),
    );
    let mut config: Config = figment.extract().map_err(|e| {
        // Only the environment can fail here: the file was checked above.
        let errors: Vec<String> = e
            .into_iter()
            .map(|e| format!("PACKHOST_* environment: `{}`: {}", e.path.join("."), e.kind))
            .collect();
        ConfigError(errors.join("\n"))
    })?;
    let base = file
        .as_deref()
        .and_then(Path::parent)
        .map_or(cwd, Path::to_path_buf);
    let in_file = |e: ConfigError| match &file {
        Some(path) => ConfigError(format!("{}: {e}", path.display())),
        None => e,
    };
    config.resolve_paths(&base).map_err(in_file)?;
    config.check().map_err(in_file)?;
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

/// The pack a section variable (`PACKS__EXEC_TS__CONFIG__TYPESCRIPT`, its
/// prefix stripped) configures when the file does not declare it.
fn undeclared_pack(key: &str, declared: &BTreeSet<String>) -> Option<String> {
    let mut parts = key.split("__");
    let section = parts.next()?;
    // As figment names it: lowercased.
    let pack = parts.next()?.to_ascii_lowercase();
    (section.eq_ignore_ascii_case("packs") && !declared.contains(&pack)).then_some(pack)
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

/// `base/p` without `.` and `a/..` components, so that paths shown to users
/// and compared for confinement are the plain ones.
fn resolve(base: &Path, path: &Path) -> PathBuf {
    use std::path::Component;
    let mut clean = PathBuf::new();
    for component in base.join(path).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    clean
}

impl Config {
    /// `~` expanded (`pack_api::paths`), then relative paths joined to
    /// `base`, in every path the host reads itself. Paths inside a pack's
    /// `config` are the pack's to read (with the same `~` rule).
    fn resolve_paths(&mut self, base: &Path) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        let mut fix = |key: String, path: &mut PathBuf| match expand_home(path) {
            Ok(expanded) => *path = resolve(base, &expanded),
            Err(e) => problems.push(format!("`{key}`: {e}")),
        };
        for (name, project) in &mut self.projects {
            fix(format!("projects.{name}"), &mut project.path);
        }
        for (name, pack) in &mut self.packs {
            if let Some(path) = &mut pack.path {
                fix(format!("packs.{name}.path"), path);
            }
            for (key, paths) in [("read", &mut pack.read), ("write", &mut pack.write)] {
                for (i, path) in paths.iter_mut().enumerate() {
                    fix(format!("packs.{name}.{key}[{i}]"), path);
                }
            }
        }
        for (i, dir) in self.server.pack_dirs.iter_mut().enumerate() {
            fix(format!("server.pack_dirs[{i}]"), dir);
        }
        // A server pack's program: `~` only (a bare name is looked up on PATH).
        for (name, pack) in &mut self.packs {
            if let Some(program) = pack.command.as_mut().and_then(|c| c.first_mut()) {
                match expand_home(Path::new(program.as_str())) {
                    Ok(expanded) => *program = expanded.to_string_lossy().into_owned(),
                    Err(e) => problems.push(format!("`packs.{name}.command`: {e}")),
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError(problems.join("\n")))
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
            if name == crate::builtin::PACK {
                problems.push(format!(
                    "`packs.{name}`: `{name}` is the host's own pack (search, describe); \
                     give this one another name"
                ));
            }
        }
        for (alias, target) in &self.aliases {
            if !is_identifier(alias) {
                problems.push(format!("`aliases.{alias}`: an alias must be an identifier"));
            }
            if !ToolName::parse(target).is_some_and(|name| name.is_callable()) {
                problems.push(format!(
                    "`aliases.{alias}` = \"{target}\": the target must be `pack.function`"
                ));
            }
        }
        for name in self.snippets.keys() {
            if !is_identifier(name) {
                problems.push(format!(
                    "`snippets.{name}`: a snippet name must be an identifier"
                ));
            }
        }
        if self.server.timeout_ms == 0 {
            problems.push("`server.timeout_ms` must be at least 1 (milliseconds)".to_owned());
        }
        for (name, pack) in &self.packs {
            if pack.timeout_ms == Some(0) {
                problems.push(format!(
                    "`packs.{name}.timeout_ms` must be at least 1 (milliseconds)"
                ));
            }
            problems.extend(pack.kind_problems(name));
        }
        for (i, token) in self.auth.tokens.iter().enumerate() {
            let hex =
                token.sha256.len() == 64 && token.sha256.bytes().all(|b| b.is_ascii_hexdigit());
            if !hex {
                problems.push(format!(
                    "`auth.tokens[{i}].sha256` must be 64 hex digits (the SHA-256 of the token); \
                     `packhost token new --user U --org O` prints a ready line"
                ));
            }
        }
        for (key, value, example) in [
            ("code_pack", &self.server.code_pack, "exec_py"),
            ("typescript_pack", &self.server.typescript_pack, "exec_ts"),
        ] {
            if !is_identifier(value) {
                problems.push(format!(
                    "`server.{key}` = \"{value}\": must name a pack (an identifier, e.g. `{example}`)"
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError(problems.join("\n")))
        }
    }
}

#[cfg(test)]
mod tests {
    //! `load` on real files. No test sets `PACKHOST_*` variables: they are
    //! process-wide and would leak into the other tests running in parallel.

    use super::*;

    /// `text` written as `packs.toml` in a fresh directory.
    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("packs.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn load_text(text: &str) -> Result<Loaded, ConfigError> {
        let (_dir, path) = file(text);
        load(Some(&path))
    }

    /// The error for `text`, which must name the file first; returned without
    /// that prefix.
    #[track_caller]
    fn refused(text: &str, parts: &[&str]) -> String {
        let (_dir, path) = file(text);
        let message = load(Some(&path))
            .expect_err("the config should be refused")
            .to_string();
        let prefix = format!("{}: ", path.display());
        let Some(message) = message.strip_prefix(&prefix).map(str::to_owned) else {
            panic!("error does not start with {prefix:?}:\n{message}");
        };
        for part in parts {
            assert!(message.contains(part), "error lacks {part:?}:\n{message}");
        }
        message
    }

    #[test]
    fn a_value_of_the_wrong_type_names_file_line_column_and_key() {
        let (_dir, path) = file("[server]\ntimeout_ms = \"soon\"\n");
        let message = load(Some(&path)).unwrap_err().to_string();
        let shown = path.display().to_string();
        assert!(
            message.starts_with(&format!("{shown}: TOML parse error at line 2, column 14")),
            "{message}"
        );
        assert!(message.contains("timeout_ms = \"soon\""), "{message}");
        assert!(
            message.ends_with("invalid type: string \"soon\", expected u64"),
            "{message}"
        );
    }

    #[test]
    fn unknown_keys_and_sections_are_named_with_their_line() {
        refused(
            "[server]\ntimeout = 5\n",
            &[
                "at line 2, column 1",
                "unknown field `timeout`",
                "`timeout_ms`",
            ],
        );
        refused(
            "[identity]\nuser = \"a\"\n\n[bogus]\n",
            &["at line 4, column 2", "unknown field `bogus`", "`projects`"],
        );
        refused(
            "[packs.proj]\npth = \"x.so\"\n",
            &["at line 2", "unknown field `pth`", "`path`"],
        );
    }

    #[test]
    fn a_toml_syntax_error_names_the_line() {
        refused("[server\n", &["line 1"]);
        refused(
            "[aliases]\nx = \"a.b\"\nx = \"c.d\"\n",
            &["line 3", "duplicate key"],
        );
    }

    #[test]
    fn an_alias_must_be_an_identifier_pointing_at_pack_dot_function() {
        let message = refused("[aliases]\nws = \"nodot\"\n", &[]);
        assert_eq!(
            message,
            "`aliases.ws` = \"nodot\": the target must be `pack.function`"
        );
        refused("[aliases]\nws = \"a.b.c\"\n", &["`aliases.ws` = \"a.b.c\""]);
        refused("[aliases]\nws = \".list\"\n", &["`aliases.ws` = \".list\""]);
        refused(
            "[aliases]\n\"my-alias\" = \"proj.list\"\n",
            &["`aliases.my-alias`: an alias must be an identifier"],
        );
        let loaded = load_text("[aliases]\nws = \"proj.list\"\n").unwrap();
        assert_eq!(loaded.config.aliases["ws"], "proj.list");
    }

    #[test]
    fn an_alias_is_placed_at_its_line_in_either_table_form() {
        for text in [
            "[aliases]\n\nws = \"proj.list\"\n",
            "# aliases\n\naliases = { ws = \"proj.list\" }\n",
        ] {
            let (_dir, path) = file(text);
            let loaded = load(Some(&path)).unwrap();
            assert_eq!(loaded.alias_place("ws"), format!("{}:3", path.display()));
            assert_eq!(loaded.alias_place("other"), "PACKHOST_* environment");
        }
    }

    #[test]
    fn a_pack_name_must_be_an_identifier_and_the_fix_is_suggested() {
        let message = refused("[packs.exec-py]\n", &[]);
        assert_eq!(
            message,
            "`packs.exec-py`: a pack name must be an identifier (letters, digits, `_`), \
             it is how calls name it: `exec_py.function()`"
        );
        refused("[packs.\"1st\"]\n", &["`packs.1st`"]);
    }

    #[test]
    fn a_snippet_name_must_be_an_identifier() {
        refused(
            "[snippets.\"find-it\"]\nbody = \"proj.list()\"\n",
            &["`snippets.find-it`: a snippet name must be an identifier"],
        );
    }

    #[test]
    fn a_zero_server_timeout_is_refused() {
        let message = refused("[server]\ntimeout_ms = 0\n", &[]);
        assert_eq!(
            message,
            "`server.timeout_ms` must be at least 1 (milliseconds)"
        );
        refused(
            "[packs.p]\ntimeout_ms = 0\n",
            &["`packs.p.timeout_ms` must be at least 1"],
        );
    }

    #[test]
    fn the_code_pack_must_be_an_identifier() {
        refused(
            "[server]\ncode_pack = \"exec-py\"\n",
            &["`server.code_pack` = \"exec-py\"", "`exec_py`"],
        );
    }

    #[test]
    fn toml_1_1_syntax_is_accepted() {
        // figment's own TOML parser refuses these; the file must not reach it.
        let loaded = load_text(
            "[packs.p]\nconfig = {\n  greeting = \"yo\",\n}\n[identity]\nuser = \"\\e[1m\"\n",
        )
        .unwrap();
        assert_eq!(loaded.config.packs["p"].config["greeting"], "yo");
        assert_eq!(loaded.config.identity.user, "\u{1b}[1m");
    }

    #[test]
    fn all_rule_problems_are_reported_together() {
        let message = refused(
            "[server]\ntimeout_ms = 0\n[packs.a-b]\n[aliases]\nx = \"y\"\n",
            &[],
        );
        let lines: Vec<&str> = message.lines().collect();
        assert_eq!(lines.len(), 3, "{message}");
        assert!(lines[0].starts_with("`packs.a-b`"), "{message}");
        assert!(lines[1].starts_with("`aliases.x`"), "{message}");
        assert_eq!(
            lines[2],
            "`server.timeout_ms` must be at least 1 (milliseconds)"
        );
    }

    #[test]
    fn a_missing_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope.toml");
        let message = load(Some(&path)).unwrap_err().to_string();
        assert_eq!(
            message,
            format!(
                "config file `{}` does not exist; pass a TOML file to --config",
                path.display()
            )
        );
    }

    #[test]
    fn a_file_without_sections_gives_the_defaults() {
        for text in ["", "# only a comment\n"] {
            let (_dir, path) = file(text);
            let loaded = load(Some(&path)).unwrap();
            assert_eq!(loaded.file, Some(path.clone()));
            let config = loaded.config;
            assert_eq!(config.server.timeout_ms, 60_000);
            assert_eq!(config.server.code_pack, "exec_py");
            assert_eq!(config.server.pack_dirs, default_pack_dirs());
            assert_eq!(config.identity, Identity::default());
            assert!(config.packs.is_empty());
            assert!(config.aliases.is_empty());
            assert!(config.snippets.is_empty());
            assert!(config.projects.is_empty());
        }
    }

    #[test]
    fn an_empty_pack_section_is_enabled_with_an_empty_config() {
        let loaded =
            load_text("[packs.proj]\n\n[packs.off]\nenabled = false\ntimeout_ms = 5\n").unwrap();
        let proj = &loaded.config.packs["proj"];
        assert_eq!(proj.path, None);
        assert!(proj.enabled);
        assert_eq!(proj.timeout_ms, None);
        assert_eq!(proj.config, serde_json::json!({}));
        let off = &loaded.config.packs["off"];
        assert!(!off.enabled);
        assert_eq!(off.timeout_ms, Some(5));
    }

    #[test]
    fn the_file_overrides_defaults_key_by_key() {
        let loaded =
            load_text("[server]\ntimeout_ms = 1234\n[identity]\nuser = \"ada\"\n").unwrap();
        assert_eq!(loaded.config.server.timeout_ms, 1234);
        // Keys the file does not set keep their defaults.
        assert_eq!(loaded.config.server.code_pack, "exec_py");
        assert_eq!(loaded.config.server.pack_dirs, default_pack_dirs());
        assert_eq!(loaded.config.identity.user, "ada");
        assert_eq!(loaded.config.identity.org, "local");
    }

    #[test]
    fn relative_paths_are_resolved_against_the_files_directory() {
        let (dir, path) = file(
            "[server]\npack_dirs = [\"libs\", \"/opt/packs\"]\n\
             [packs.mine]\npath = \"build/libmine.so\"\n\
             [projects]\nrel = \"proj-root\"\nnested = \"a/b\"\nabs = \"/srv/abs\"\n\
             dot = \".\"\nup = \"../sibling/./p\"\n",
        );
        let loaded = load(Some(&path)).unwrap();
        let base = dir.path().canonicalize().unwrap();
        let projects = &loaded.config.projects;
        assert_eq!(projects["rel"].path, base.join("proj-root"));
        assert_eq!(projects["nested"].path, base.join("a/b"));
        assert_eq!(projects["abs"].path, PathBuf::from("/srv/abs"));
        // Shown to users and used as confinement roots: no `.` or `..` left.
        assert_eq!(projects["dot"].path, base);
        assert_eq!(
            projects["up"].path,
            base.parent().unwrap().join("sibling/p")
        );
        assert_eq!(
            loaded.config.packs["mine"].path,
            Some(base.join("build/libmine.so"))
        );
        assert_eq!(
            loaded.config.server.pack_dirs,
            [base.join("libs"), PathBuf::from("/opt/packs")]
        );
    }

    #[test]
    fn a_project_may_name_the_organisations_that_see_it() {
        let (dir, path) = file(
            "[projects]\nopen = \"a\"\n\
             closed = { path = \"b\", orgs = [\"acme\"] }\n",
        );
        let loaded = load(Some(&path)).unwrap();
        let base = dir.path().canonicalize().unwrap();
        let projects = &loaded.config.projects;
        assert_eq!(projects["open"], Project::everyone(base.join("a")));
        assert_eq!(projects["closed"].path, base.join("b"));
        assert_eq!(projects["closed"].orgs, Some(vec!["acme".to_owned()]));
        refused(
            "[projects]\nx = { path = \"b\", org = [\"acme\"] }\n",
            &["at line 2", "unknown field `org`", "`orgs`"],
        );
    }

    #[test]
    fn a_leading_tilde_is_the_home_directory_in_every_host_path() {
        let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set for the tests"));
        let loaded = load_text(
            "[server]\npack_dirs = [\"~/packs\", \"~\", \"a/~/b\"]\n\
             [packs.mine]\npath = \"~/build/libmine.so\"\n\
             [packs.srv]\nkind = \"mcp\"\ncommand = [\"~/bin/server\", \"~/arg\"]\n\
             [projects]\nonetool = \"~/projects/onetool\"\nup = \"~/a/../b\"\n",
        )
        .unwrap();
        let config = loaded.config;
        assert_eq!(
            config.projects["onetool"].path,
            home.join("projects/onetool")
        );
        assert_eq!(config.projects["up"].path, resolve(&home, Path::new("b")));
        assert_eq!(
            config.packs["mine"].path,
            Some(home.join("build/libmine.so"))
        );
        let base = loaded.file.unwrap().parent().unwrap().to_path_buf();
        assert_eq!(
            config.server.pack_dirs,
            [
                home.join("packs"),
                resolve(&home, Path::new(".")),
                base.join("a/~/b")
            ]
        );
        // The program only: arguments are the server's business.
        let command = config.packs["srv"].command.clone().unwrap();
        assert_eq!(
            command,
            [
                home.join("bin/server").display().to_string(),
                "~/arg".to_owned()
            ]
        );
    }

    #[test]
    fn a_stdio_server_packs_sandbox_settings_are_read_and_checked() {
        let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set for the tests"));
        let (dir, path) = file(
            "[packs.srv]\nkind = \"mcp\"\ncommand = [\"server\"]\nsandbox = \"off\"\n\
             read = [\"~/.config/srv\", \"data\"]\nwrite = [\"~/.npm\"]\n\
             limits = { memory_mb = 256 }\n",
        );
        let srv = load(Some(&path)).unwrap().config.packs["srv"].clone();
        assert_eq!(srv.sandbox, Mode::Off);
        let base = dir.path().canonicalize().unwrap();
        assert_eq!(srv.read, [home.join(".config/srv"), base.join("data")]);
        assert_eq!(srv.write, [home.join(".npm")]);
        assert_eq!(srv.limits.unwrap().memory_mb, 256);
        refused(
            "[packs.exec_py]\nsandbox = \"off\"\n",
            &[
                "`packs.exec_py.sandbox` is for stdio MCP server packs",
                "in its `config`",
            ],
        );
        refused(
            "[packs.h]\nkind = \"mcp\"\nurl = \"http://h/mcp\"\nread = [\"/x\"]\n",
            &["`packs.h.read` confines a stdio server", "remove `read`"],
        );
        refused(
            "[packs.s]\nkind = \"mcp\"\ncommand = [\"s\"]\nlimits = { processes = 0 }\n",
            &["`packs.s`: `limits.processes` is 0"],
        );
        refused(
            "[packs.s]\nkind = \"mcp\"\ncommand = [\"s\"]\nsandbox = \"maybe\"\n",
            &["line 4", "unknown variant `maybe`"],
        );
    }

    #[test]
    fn another_users_home_is_refused_with_the_key() {
        let message = refused(
            "[server]\npack_dirs = [\"/ok\", \"~bob\"]\n\
             [packs.p]\npath = \"~bob/libp.so\"\n\
             [packs.s]\nkind = \"mcp\"\ncommand = [\"~bob/server\"]\n\
             [projects]\nx = \"~bob/x\"\n",
            &[],
        );
        let refusal = |key: &str, path: &str| {
            format!(
                "`{key}`: `{path}`: `~user` is not expanded, only `~` and `~/` (to $HOME); \
                 write the full path, or `./{path}` for a name that starts with `~`"
            )
        };
        let lines: Vec<&str> = message.lines().collect();
        assert_eq!(
            lines,
            [
                refusal("projects.x", "~bob/x"),
                refusal("packs.p.path", "~bob/libp.so"),
                refusal("server.pack_dirs[1]", "~bob"),
                refusal("packs.s.command", "~bob/server"),
            ],
            "{message}"
        );
    }

    #[test]
    fn only_a_variable_of_an_undeclared_pack_is_set_aside() {
        let declared = BTreeSet::from(["exec_ts".to_owned()]);
        let undeclared = |key| undeclared_pack(key, &declared);
        assert_eq!(undeclared("PACKS__EXEC_TS__CONFIG__TYPESCRIPT"), None);
        assert_eq!(undeclared("packs__exec_ts__timeout_ms"), None);
        assert_eq!(
            undeclared("PACKS__JUPYTER__CONFIG__PYTHON").as_deref(),
            Some("jupyter")
        );
        assert_eq!(undeclared("PACKS__JUPYTER").as_deref(), Some("jupyter"));
        assert_eq!(undeclared("SERVER__TIMEOUT_MS"), None);
        assert_eq!(undeclared("ALIASES__PL"), None);
    }

    #[test]
    fn a_relative_file_argument_is_made_absolute() {
        // Relative to the working directory, which the tests do not change:
        // the crate directory, where `src/config.rs` is.
        let loaded = load(Some(Path::new("src/../src/config.rs")));
        // Not a valid config, but the error names the absolute, clean path.
        let message = loaded.unwrap_err().to_string();
        let absolute = Path::new("src/config.rs").canonicalize().unwrap();
        assert!(
            message.starts_with(&format!("{}: ", absolute.display())),
            "{message}"
        );
    }
}
