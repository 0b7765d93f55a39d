//! `packhost integrations ...`: an admin's view of the integrations the
//! `remote_mcp` pack serves, in the same database the pack uses.

use std::{collections::BTreeMap, path::PathBuf, process::ExitCode};

use clap::{Args, Subcommand};
use integrations_store::{Auth, Integration, Mode, NewIntegration, Sandbox, Transport};

use crate::{
    audit::{Audit, CredentialAction, Event, Who},
    config::Config,
    exit::Error,
};

/// `packhost integrations ...`.
#[derive(Debug, Args)]
pub struct IntegrationsCommand {
    /// The database (SQLite file or `postgres://` URL); default: `database`
    /// in `[packs.remote_mcp] config`, else
    /// `~/.local/share/packhost/integrations.db`.
    #[arg(long, global = true, env = "PACKHOST_INTEGRATIONS_DATABASE")]
    database: Option<String>,
    /// What to do.
    #[command(subcommand)]
    action: Action,
}

/// The actions.
// Parsed once per process: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Action {
    /// Register an MCP server for an organisation; prints its id. A stdio
    /// server's command goes after `--`: `add --org acme --name fs -- npx -y server`.
    Add {
        /// The organisation.
        #[arg(long)]
        org: String,
        /// A name unique in the organisation (letters, digits, `_`, `.`, `-`).
        #[arg(long)]
        name: String,
        /// The streamable HTTP endpoint (instead of a command).
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// `NAME=VALUE` added to a stdio server's environment; repeatable.
        #[arg(long = "env", value_name = "NAME=VALUE", value_parser = pair)]
        env: Vec<(String, String)>,
        /// `NAME=VALUE` sent with every HTTP request; repeatable.
        #[arg(long = "header", value_name = "NAME=VALUE", value_parser = pair)]
        headers: Vec<(String, String)>,
        /// Send `Authorization: Bearer <token>`, the token read from this
        /// environment variable (so it stays out of shell history).
        #[arg(long, value_name = "VAR")]
        bearer_token_env: Option<String>,
        /// Send this header, its value read from `--auth-value-env`.
        #[arg(
            long,
            value_name = "NAME",
            requires = "auth_value_env",
            conflicts_with = "bearer_token_env"
        )]
        auth_header: Option<String>,
        /// The environment variable holding `--auth-header`'s value.
        #[arg(long, value_name = "VAR", requires = "auth_header")]
        auth_value_env: Option<String>,
        /// Each user signs in to the server with their own account (OAuth,
        /// in their browser, the first time they call it) and calls it as
        /// themselves.
        #[arg(
            long,
            requires = "url",
            conflicts_with_all = ["bearer_token_env", "auth_header"]
        )]
        per_user: bool,
        /// With `--per-user`: packhost's client id at the server's
        /// authorization server (default: packhost registers itself there).
        #[arg(long, value_name = "ID", requires = "per_user")]
        oauth_client_id: Option<String>,
        /// The environment variable holding that client's secret.
        #[arg(long, value_name = "VAR", requires = "oauth_client_id")]
        oauth_client_secret_env: Option<String>,
        /// With `--per-user`: the scopes to ask for (default: those the
        /// server's metadata lists).
        #[arg(long, value_name = "SCOPES", requires = "per_user")]
        oauth_scope: Option<String>,
        /// With `--per-user`, for a server that trusts the same identity
        /// provider as packhost: the account a user signs in with there
        /// must be their own (its `sub` their packhost user), so a sign-in
        /// link opened by someone else stores nothing.
        #[arg(long, requires = "per_user")]
        oauth_same_user: bool,
        /// Time limit of one call to this server.
        #[arg(long)]
        timeout_ms: Option<u64>,
        /// A stdio server may also read this absolute path (beyond the
        /// pack's `read`); repeatable.
        #[arg(long = "read", value_name = "PATH", conflicts_with = "url")]
        read: Vec<PathBuf>,
        /// A stdio server may also write this absolute path; repeatable.
        #[arg(long = "write", value_name = "PATH", conflicts_with = "url")]
        write: Vec<PathBuf>,
        /// Limits replacing the pack's for this server:
        /// `memory_mb=512,processes=64` (names as in the pack's `limits`).
        #[arg(long, value_name = "NAME=N,...", value_parser = limits, conflicts_with = "url")]
        limits: Option<BTreeMap<String, u64>>,
        /// `off` runs this server unconfined, with every right of the host's
        /// user (logged as a warning).
        #[arg(long, value_name = "on|off", value_parser = mode, conflicts_with = "url")]
        sandbox: Option<Mode>,
        /// A stdio server's program and arguments.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// The organisation's integrations (secrets are never shown).
    List {
        /// The organisation.
        #[arg(long)]
        org: String,
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Let calls reach an integration again.
    Enable {
        /// The organisation.
        #[arg(long)]
        org: String,
        /// The integration's id.
        id: String,
    },
    /// Refuse calls to an integration (they get `DISABLED`).
    Disable {
        /// The organisation.
        #[arg(long)]
        org: String,
        /// The integration's id.
        id: String,
    },
    /// Delete an integration.
    Remove {
        /// The organisation.
        #[arg(long)]
        org: String,
        /// The integration's id.
        id: String,
    },
    /// Forget users' sign-ins to an integration that acts per user: every
    /// user's, or `--user`'s. They are asked to sign in again.
    Revoke {
        /// The organisation.
        #[arg(long)]
        org: String,
        /// Only this user's.
        #[arg(long)]
        user: Option<String>,
        /// The integration's id.
        id: String,
    },
    /// Print a new key to seal users' tokens with, for the host's
    /// environment (`PACKHOST_CREDENTIALS_KEY`); never put it in the config.
    NewKey,
}

fn pair(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("`{text}` is not NAME=VALUE"))
}

fn limits(text: &str) -> Result<BTreeMap<String, u64>, String> {
    text.split(',')
        .map(|pair| {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("`{pair}` is not NAME=NUMBER (e.g. `memory_mb=512`)"))?;
            let value = value.trim().parse().map_err(|_| {
                format!("the limit `{name}` is `{value}`; give a whole number (e.g. `{name}=64`)")
            })?;
            Ok((name.trim().to_owned(), value))
        })
        .collect()
}

fn mode(text: &str) -> Result<Mode, String> {
    match text {
        "on" => Ok(Mode::On),
        "off" => Ok(Mode::Off),
        _ => Err(format!("`{text}` is no sandbox mode; give `on` or `off`")),
    }
}

/// [`Integration::summary`] and, for the admin only, a stdio server's own
/// sandbox rules when it has any.
fn admin_summary(integration: &Integration) -> serde_json::Value {
    let mut summary = integration.summary();
    if let Transport::Stdio { sandbox, .. } = &integration.transport
        && *sandbox != Sandbox::default()
    {
        summary["sandbox"] = serde_json::json!(sandbox);
    }
    summary
}

fn secret_from(var: &str) -> Result<String, Error> {
    std::env::var(var).map_err(|_| format!("environment variable `{var}` is not set").into())
}

/// The integrations' database `config` names: `database` in
/// `[packs.remote_mcp] config`, else the default.
pub fn database_of(config: &Config) -> String {
    let pack = config.packs.get(integrations_store::PACK);
    integrations_store::database_in(pack.and_then(|pack| pack.library()).map(|l| &l.config))
}

impl IntegrationsCommand {
    /// Run it against the database `config` names (or `--database`).
    pub async fn run(self, config: &Config) -> Result<ExitCode, Error> {
        let database = self.database.unwrap_or_else(|| database_of(config));
        if let Action::NewKey = self.action {
            println!("{}", upstream_oauth::Key::generate());
            return Ok(ExitCode::SUCCESS);
        }
        let store = integrations_store::open(&database).await?;
        match self.action {
            Action::Add {
                org,
                name,
                url,
                env,
                headers,
                bearer_token_env,
                auth_header,
                auth_value_env,
                per_user,
                oauth_client_id,
                oauth_client_secret_env,
                oauth_scope,
                oauth_same_user,
                timeout_ms,
                read,
                write,
                limits,
                sandbox,
                command,
            } => {
                let transport = match (url, command.split_first()) {
                    (Some(url), None) => Transport::Http {
                        url,
                        headers: headers.into_iter().collect(),
                    },
                    (None, Some((program, args))) => Transport::Stdio {
                        command: program.clone(),
                        args: args.to_vec(),
                        env: env.into_iter().collect::<BTreeMap<_, _>>(),
                        sandbox: Sandbox {
                            mode: sandbox.unwrap_or_default(),
                            read,
                            write,
                            limits: limits.unwrap_or_default(),
                        },
                    },
                    _ => {
                        return Err("give the server as `--url URL` or as a command after `--` \
                                    (e.g. `-- npx -y @modelcontextprotocol/server-everything`)"
                            .into());
                    }
                };
                let auth = match (bearer_token_env, auth_header, auth_value_env) {
                    _ if per_user => Some(Auth::PerUser {
                        client_id: oauth_client_id,
                        client_secret: oauth_client_secret_env
                            .as_deref()
                            .map(secret_from)
                            .transpose()?,
                        scope: oauth_scope,
                        same_user: oauth_same_user,
                    }),
                    (Some(var), _, _) => Some(Auth::Bearer {
                        token: secret_from(&var)?,
                    }),
                    (None, Some(name), Some(var)) => Some(Auth::Header {
                        name,
                        value: secret_from(&var)?,
                    }),
                    _ => None,
                };
                let added = store
                    .add(NewIntegration {
                        organization_id: org,
                        name,
                        transport,
                        auth,
                        timeout_ms,
                    })
                    .await?;
                if sandbox == Some(Mode::Off) {
                    eprintln!(
                        "warning: integration `{}` runs unconfined (`--sandbox off`), with every \
                         right of the host's user",
                        added.name
                    );
                }
                println!("{}", added.id);
            }
            Action::List { org, json } => {
                let all = store.list(&org).await?;
                if json {
                    for integration in &all {
                        println!("{}", admin_summary(integration));
                    }
                } else if all.is_empty() {
                    println!("organisation `{org}` has no integrations");
                } else {
                    for integration in &all {
                        let summary = integration.summary();
                        let target = summary
                            .get("url")
                            .or_else(|| summary.get("command"))
                            .and_then(|v| v.as_str())
                            .unwrap_or_default();
                        println!(
                            "{}  {:<20} {:<5} {:<8} {target}",
                            integration.id,
                            integration.name,
                            summary["transport"].as_str().unwrap_or_default(),
                            if integration.enabled {
                                "enabled"
                            } else {
                                "disabled"
                            },
                        );
                    }
                }
            }
            Action::Enable { org, id } => {
                store.set_enabled(&org, &id, true).await?;
                println!("enabled {id}");
            }
            Action::Disable { org, id } => {
                store.set_enabled(&org, &id, false).await?;
                println!("disabled {id}");
            }
            Action::Remove { org, id } => {
                store.remove(&org, &id).await?;
                println!("removed {id}");
            }
            Action::Revoke { org, user, id } => {
                let integration = store.get(&id).await?.filter(|i| i.organization_id == org);
                if integration.is_none() {
                    return Err(format!("organisation `{org}` has no integration `{id}`").into());
                }
                let removed = store.remove_credentials(&org, &id, user.as_deref()).await?;
                if removed > 0 {
                    // `*`: every user's, by the admin.
                    let who = Who {
                        org: org.clone(),
                        user: user.unwrap_or_else(|| "*".to_owned()),
                    };
                    let audit = Audit::start(config);
                    audit.record(|| Event::credential(&who, &id, CredentialAction::Revoked, None));
                    audit.flush().await;
                }
                println!("revoked {removed} sign-in(s) to {id}");
            }
            Action::NewKey => unreachable!("answered before the database is opened"),
        }
        Ok(ExitCode::SUCCESS)
    }
}
