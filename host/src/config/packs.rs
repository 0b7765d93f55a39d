//! `[packs.<name>]`: the section as written ([`RawPack`], every key of every
//! kind, what figment layers) parsed into what serves the pack
//! ([`PackSource`]), so that code using a pack sees only the keys of its
//! kind.

use std::{collections::BTreeMap, path::PathBuf};

use mcp_downstream::{Confinement, Endpoint, Limits, Mode};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Expose;
use crate::error::{ConfigCode, ConfigProblem};

/// A pack to load, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct PackConfig {
    /// What serves it.
    pub source: PackSource,
    /// `false`: the section is kept but the pack is not loaded.
    pub enabled: bool,
    /// Whether `tools/list` shows this pack's functions; default
    /// `server.expose`.
    pub expose: Option<Expose>,
    /// Time limit of this pack's calls (at least 1).
    pub timeout_ms: Option<u64>,
    /// `false`: its functions and prompts go by their own names
    /// (`read`, not `pack.read`), as its server would offer them.
    pub prefix: bool,
}

/// What serves a pack.
#[derive(Debug, Clone, PartialEq)]
pub enum PackSource {
    /// A pack library (the default `kind`).
    Library(Library),
    /// Another MCP server (`kind = "mcp"`, with `command` or `url`): its
    /// tools are the pack's functions.
    Server(Endpoint),
}

/// A pack library and what its constructor is handed.
#[derive(Debug, Clone, PartialEq)]
pub struct Library {
    /// The library file; `None`: `lib<name>.so` in `server.pack_dirs`.
    pub path: Option<PathBuf>,
    /// The section's `config`, handed to the constructor as JSON (`{}` when
    /// absent).
    pub config: Value,
}

impl PackConfig {
    /// The library, when a library serves the pack.
    pub fn library(&self) -> Option<&Library> {
        match &self.source {
            PackSource::Library(library) => Some(library),
            PackSource::Server(_) => None,
        }
    }

    /// The server, when another MCP server serves the pack.
    pub fn server(&self) -> Option<&Endpoint> {
        match &self.source {
            PackSource::Server(endpoint) => Some(endpoint),
            PackSource::Library(_) => None,
        }
    }
}

/// `[packs.<name>]` as written: what the file and the environment set,
/// before the keys are checked against the pack's kind.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPack {
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
    /// Whether `tools/list` shows this pack's functions.
    #[serde(default)]
    pub expose: Option<Expose>,
    /// Time limit of this pack's calls.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// `false`: serve its functions and prompts under their own names.
    #[serde(default)]
    pub prefix: Option<bool>,
    /// A library pack's settings, handed to its constructor as JSON.
    #[serde(default)]
    pub config: Option<Value>,
    /// Read only to refuse it with the way that works: a server reached as
    /// each user is a per-user integration (`remote_mcp`), where the
    /// sign-ins, the sealed tokens and each caller's own listing are kept.
    #[serde(default)]
    pub auth: Option<Value>,
}

/// `[packs.<name>] kind`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(super) enum PackKind {
    /// A pack library (`path`, or `lib<name>.so` in `server.pack_dirs`).
    #[default]
    Library,
    /// Another MCP server (`command` or `url`): its tools are the functions.
    Mcp,
}

fn yes() -> bool {
    true
}

impl RawPack {
    /// The section parsed, or every problem with it, each naming its key.
    pub(super) fn parse(self, name: &str) -> Result<PackConfig, Vec<ConfigProblem>> {
        let mut problems = Vec::new();
        if self.timeout_ms == Some(0) {
            problems.push(ConfigProblem::new(
                ConfigCode::Value,
                format!("`packs.{name}.timeout_ms` must be at least 1 (milliseconds)"),
            ));
        }
        if self.auth.is_some() {
            problems.push(
                ConfigProblem::new(
                    ConfigCode::PackSource,
                    format!(
                        "`packs.{name}.auth`: a pack does not sign in as each user; a server \
                         pack reaches its server with one credential for every caller (`headers`)"
                    ),
                )
                .with_fix(
                    "to reach the server as each user, add it as a per-user integration: \
                     `packhost integrations add --org <org> --name <name> --url <url> --per-user`",
                ),
            );
        }
        let source = match self.kind {
            PackKind::Library => self.library(name, &mut problems),
            PackKind::Mcp => self.server(name, &mut problems),
        };
        match source {
            Some(source) if problems.is_empty() => Ok(PackConfig {
                source,
                enabled: self.enabled,
                expose: self.expose,
                timeout_ms: self.timeout_ms,
                prefix: self.prefix.unwrap_or(true),
            }),
            _ => Err(problems),
        }
    }

    fn library(&self, name: &str, problems: &mut Vec<ConfigProblem>) -> Option<PackSource> {
        let server_keys = [
            ("command", self.command.is_some()),
            ("url", self.url.is_some()),
            ("env", !self.env.is_empty()),
            ("headers", !self.headers.is_empty()),
        ];
        for (key, set) in server_keys {
            if set {
                problems.push(
                    ConfigProblem::new(
                        ConfigCode::PackSource,
                        format!("`packs.{name}.{key}` is for MCP server packs"),
                    )
                    .with_fix(format!(
                        "add `kind = \"mcp\"` to the section, or remove `{key}`"
                    )),
                );
            }
        }
        for key in self.sandbox_keys() {
            problems.push(
                ConfigProblem::new(
                    ConfigCode::PackSource,
                    format!(
                        "`packs.{name}.{key}` is for stdio MCP server packs (`kind = \"mcp\"` \
                         with `command`)"
                    ),
                )
                .with_fix(
                    "a library pack's own settings, such as exec_py's `sandbox` and `limits`, \
                     go in its `config`",
                ),
            );
        }
        Some(PackSource::Library(Library {
            path: self.path.clone(),
            config: self
                .config
                .clone()
                .unwrap_or_else(|| Value::Object(Default::default())),
        }))
    }

    fn server(&self, name: &str, problems: &mut Vec<ConfigProblem>) -> Option<PackSource> {
        let source_problem = |what: String| ConfigProblem::new(ConfigCode::PackSource, what);
        if self.path.is_some() {
            problems.push(
                source_problem(format!(
                    "`packs.{name}.path` names a library, but the pack is `kind = \"mcp\"`"
                ))
                .with_fix("give `command` or `url` instead"),
            );
        }
        if self.config.is_some() {
            problems.push(
                source_problem(format!(
                    "`packs.{name}.config` is handed to a library pack's constructor, and \
                     `packs.{name}` is `kind = \"mcp\"`"
                ))
                .with_fix("remove `config`: a server pack is set up by its `command` or `url`"),
            );
        }
        let source = match (&self.command, &self.url) {
            (Some(command), None) => match command.split_first() {
                Some((program, args)) if !program.is_empty() => {
                    Some(PackSource::Server(Endpoint::Stdio {
                        command: program.clone(),
                        args: args.to_vec(),
                        env: self.env.clone(),
                        // The section is the host admin's: its `PATH` and
                        // program are trusted.
                        confinement: Confinement {
                            mode: self.sandbox,
                            read: self.read.clone(),
                            write: self.write.clone(),
                            limits: self.limits.clone().unwrap_or_default(),
                            trusted: true,
                        },
                    }))
                }
                _ => {
                    problems.push(
                        source_problem(format!("`packs.{name}.command` is empty")).with_fix(
                            "give the program and its arguments, e.g. [\"npx\", \"-y\", \
                             \"@modelcontextprotocol/server-everything\"]",
                        ),
                    );
                    None
                }
            },
            (None, Some(url)) => {
                if let Err(e) = mcp_downstream::check_url(url) {
                    problems.push(ConfigProblem::new(
                        ConfigCode::Value,
                        format!("`packs.{name}.url`: {e}"),
                    ));
                }
                for key in self.sandbox_keys() {
                    problems.push(
                        source_problem(format!(
                            "`packs.{name}.{key}` confines a stdio server (`command`), and \
                             `packs.{name}` is an HTTP server (`url`)"
                        ))
                        .with_fix(format!("remove `{key}`")),
                    );
                }
                Some(PackSource::Server(Endpoint::Http {
                    url: url.clone(),
                    headers: self.headers.clone(),
                }))
            }
            _ => {
                problems.push(source_problem(format!(
                    "`packs.{name}` is `kind = \"mcp\"`: give exactly one of `command` \
                     (a stdio server) or `url` (streamable HTTP)"
                )));
                None
            }
        };
        if let Some(Err(e)) = self.limits.as_ref().map(Limits::validate) {
            problems.push(ConfigProblem::new(
                ConfigCode::Value,
                format!("`packs.{name}`: {e}"),
            ));
        }
        source
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
