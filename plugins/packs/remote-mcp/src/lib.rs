//! `remote_mcp`: tools on the MCP servers an organisation registered
//! ("integrations"), called through packhost, and their prompts, resources
//! and templates, listed to the organisation's callers only (`offers`).
//!
//! - The organisation is the caller's, from the call context (a bearer
//!   token's org over HTTP, `[identity]` on stdio), never an argument.
//! - Errors of the call itself have codes: `UNAUTHORIZED` (no organisation),
//!   `NOT_FOUND`, `ACCESS_DENIED` (another organisation's integration: ids are
//!   random, so saying so reveals nothing useful and tells an admin which
//!   token is wrong), `DISABLED`, and `UPSTREAM_ERROR` when the server could
//!   not be reached, crashed, answered garbage or not in time.
//! - A tool that ran and failed, a tool the server does not have, or any
//!   JSON-RPC error the server answers is the server's answer, not ours:
//!   `{isError: true, content: null, errorMessage}` (code `EXECUTION_ERROR`).
//!
//! Integrations live in the database of `config.database` (SQLite path or
//! `postgres://` URL); `packhost integrations add|list|enable|disable|remove`
//! manages them. Connections are pooled per integration (see
//! `mcp-downstream`): a caller's calls, reads and renders go on a
//! connection of its own (a lane), where the server's questions, logs and
//! progress reach that caller (`relay`) and its per-session state never
//! mixes callers; listings go on the integration's.
//!
//! A stdio integration's server runs in the sandbox under this pack's
//! policy (`sandbox`, `read`, `write`, `limits` in its config) and its own
//! rules on top (`packhost integrations add --read/--write/--limits/
//! --sandbox`): the host's admin sets both, never the organisation that
//! uses the integration. Its absolute-path arguments are readable (a server
//! reads the script it runs), as a server pack's; its program is looked up
//! on the host's `PATH`.

use std::{
    collections::HashSet,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use integrations_store::{Auth, Integration, Store, Transport};
use mcp_downstream::{
    Confinement, DownstreamError, Endpoint, Event, JsonObject, Level, Limits, Mode, Pool,
    PoolSettings,
};
use pack_sdk::{
    Content, Context, Empty, Function, Host, LogLevel, PackDef, PackError, Value, codes,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use crate::{relay::CallerRelay, sign_in::SignInSettings, uris::Uris, watch::Watchers};

mod offers;
mod relay;
mod sign_in;
mod uris;
mod watch;

/// `[packs.remote_mcp] config`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// SQLite file or `postgres://` URL; default
    /// `~/.local/share/packhost/integrations.db`. `packhost integrations`
    /// reads this same setting.
    // The key is `integrations_store::DATABASE_KEY`, which that command
    // reads; `the_database_key_is_the_one_the_cli_reads` holds them together.
    #[serde(default)]
    pub database: Option<String>,
    /// Refuse integrations whose URL is (or resolves to) a private or
    /// loopback address.
    #[serde(default)]
    pub forbid_private_addresses: bool,
    /// Starting a server and the MCP handshake, in milliseconds.
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// Time limit of one downstream call when the integration sets none.
    #[serde(default = "default_call_timeout_ms")]
    pub call_timeout_ms: u64,
    /// A connection unused this long is closed.
    #[serde(default = "default_idle_secs")]
    pub idle_secs: u64,
    /// Connections open at once.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Stdio integrations: `"on"` confines each server (the network, the
    /// system runtime, its program's folder, a scratch folder of its own,
    /// and `read` / `write`), or refuses to start it where the machine
    /// cannot; `"off"` runs every organisation's servers with the host
    /// user's rights.
    #[serde(default)]
    pub sandbox: Mode,
    /// Also readable by every stdio integration's server (a leading `~` is
    /// the home directory).
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub read: Vec<PathBuf>,
    /// Also writable by every stdio integration's server, whichever
    /// organisation added it: a folder here is shared between
    /// organisations.
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub write: Vec<PathBuf>,
    /// The bounds of each stdio integration's server.
    #[serde(default)]
    pub limits: Limits,
    /// The URL clients reach this packhost at (`https://packhost.example.com`):
    /// users who sign in to an integration that acts per user come back to
    /// its `/oauth/callback`. Without it such integrations cannot be used.
    #[serde(default)]
    pub public_url: Option<String>,
}

fn default_connect_timeout_ms() -> u64 {
    20_000
}

fn default_call_timeout_ms() -> u64 {
    30_000
}

fn default_idle_secs() -> u64 {
    600
}

fn default_max_connections() -> usize {
    64
}

/// The pack's state: opened on first use, so a database that is down does
/// not keep the host from starting.
pub struct State {
    database: String,
    store: OnceCell<Arc<dyn Store>>,
    pool: OnceCell<Arc<Pool>>,
    settings: PoolSettings,
    call_timeout: Duration,
    /// Of every stdio integration.
    confinement: Confinement,
    /// The integrations whose `--sandbox off` has been logged.
    warned_unconfined: Mutex<HashSet<String>>,
    host: Host,
    /// Which integration of an organisation serves a URI.
    uris: Uris,
    /// The resources callers follow.
    watchers: Arc<Watchers>,
    /// Per-user integrations: where sign-ins come back, the sealing key.
    sign_in: SignInSettings,
    /// Users' tokens to them, once first needed.
    credentials: OnceCell<Arc<upstream_oauth::Credentials>>,
}

impl State {
    fn new(config: Config, host: Host) -> Result<Self, PackError> {
        let warning = pack_sandbox::check_settings(
            config.sandbox,
            &config.limits,
            "stdio integrations (commands the organisations chose) run",
        )
        .map_err(PackError::invalid_argument)?;
        if let Some(warning) = warning {
            host.log(LogLevel::Warn, &warning);
        }
        let sign_in = SignInSettings::new(config.public_url.as_deref())?;
        let log_host = host.clone();
        let watchers = Arc::new(Watchers::default());
        let updated = Arc::clone(&watchers);
        let settings = PoolSettings {
            connect_timeout: Duration::from_millis(config.connect_timeout_ms),
            idle_ttl: Duration::from_secs(config.idle_secs),
            max_connections: config.max_connections,
            forbid_private_addresses: config.forbid_private_addresses,
            log: Arc::new(move |level, message| {
                let level = match level {
                    Level::Debug => LogLevel::Debug,
                    Level::Info => LogLevel::Info,
                    Level::Warn => LogLevel::Warn,
                };
                log_host.log(level, message);
            }),
            events: Arc::new(move |key, event| {
                if let Event::ResourceUpdated(uri) = event {
                    updated.updated(key, &uri);
                }
            }),
        };
        Ok(Self {
            database: integrations_store::database_or_default(config.database),
            store: OnceCell::new(),
            pool: OnceCell::new(),
            settings,
            call_timeout: Duration::from_millis(config.call_timeout_ms),
            confinement: Confinement {
                mode: config.sandbox,
                read: config.read,
                write: config.write,
                limits: config.limits,
                trusted: false,
            },
            warned_unconfined: Mutex::default(),
            host,
            uris: Uris::default(),
            watchers,
            sign_in,
            credentials: OnceCell::new(),
        })
    }

    async fn store(&self) -> Result<&Arc<dyn Store>, PackError> {
        // Opened on a task of its own: sqlx's connect future is Send only
        // for concrete lifetimes, which the pack's handlers cannot name.
        let database = self.database.clone();
        self.store
            .get_or_try_init(|| async move {
                tokio::spawn(async move { integrations_store::open(&database).await })
                    .await
                    .map_err(|e| integrations_store::StoreError::Database(e.to_string()))?
            })
            .await
            .map_err(database_error)
    }

    async fn pool(&self) -> &Arc<Pool> {
        self.pool
            .get_or_init(|| async { Pool::new(self.settings.clone()) })
            .await
    }

    /// The caller's integration `id`, usable now; else the call's error.
    async fn integration(&self, org: &str, id: &str) -> Result<Integration, PackError> {
        let integration = self
            .store()
            .await?
            .get(id)
            .await
            .map_err(database_error)?
            .ok_or_else(|| {
                PackError::not_found(format!("no integration has the id `{id}`"))
                    .with_help(LIST_HELP)
            })?;
        if integration.organization_id != org {
            return Err(PackError::access_denied(format!(
                "integration `{id}` belongs to another organisation than yours (`{org}`)"
            ))
            .with_help(LIST_HELP));
        }
        if !integration.enabled {
            return Err(PackError::new(
                codes::DISABLED,
                format!("integration `{}` (`{id}`) is disabled", integration.name),
            )
            .with_help(format!(
                "an admin enables it with `packhost integrations enable --org {org} {id}`"
            )));
        }
        Ok(integration)
    }
}

impl State {
    /// [`endpoint`], warning once per integration whose own rule turns off
    /// the sandbox the pack has on. An integration that acts per user has
    /// no endpoint shared by its callers: [`State::endpoint_for`].
    fn endpoint(&self, integration: &Integration) -> Result<Endpoint, PackError> {
        if sign_in::per_user(integration) {
            return Err(PackError::invalid_argument(format!(
                "integration `{}` acts as each user: it is reached by each caller with their own \
                 sign-in, never for everyone",
                integration.name
            )));
        }
        if let Transport::Stdio { sandbox, .. } = &integration.transport
            && sandbox.mode == Mode::Off
            && self.confinement.mode != Mode::Off
            && self
                .warned_unconfined
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(integration.id.clone())
        {
            self.host.log(
                LogLevel::Warn,
                &format!(
                    "integration `{}` (`{}`) of `{}`: sandbox = \"off\": its server runs \
                     unconfined, with every right of the host's user",
                    integration.name, integration.id, integration.organization_id
                ),
            );
        }
        endpoint(integration, &self.confinement)
    }

    /// How the caller of `ctx` reaches `integration`: with their own token
    /// when it acts per user (asking them to sign in when they have none).
    async fn endpoint_for(
        &self,
        ctx: &Context,
        integration: &Integration,
    ) -> Result<Endpoint, PackError> {
        if !sign_in::per_user(integration) {
            return self.endpoint(integration);
        }
        let token = sign_in::bearer(self, ctx, integration).await?;
        let mut endpoint = endpoint(integration, &self.confinement)?;
        if let Endpoint::Http { headers, .. } = &mut endpoint {
            headers.insert("Authorization".to_owned(), format!("Bearer {token}"));
        }
        Ok(endpoint)
    }
}

/// The connection `integration` is listed on for the caller of `ctx`: the
/// integration's own, or the caller's when it acts per user.
fn listing_lane(integration: &Integration, ctx: &Context) -> String {
    if sign_in::per_user(integration) {
        return offers::caller_lane(integration, ctx);
    }
    integration.id.clone()
}

fn database_error(e: integrations_store::StoreError) -> PackError {
    PackError::internal(format!("integrations database: {e}"))
}

const LIST_HELP: &str = "`remote_mcp.list_integrations()` lists your organisation's integrations";

/// The caller's organisation, or `UNAUTHORIZED`.
fn organisation(ctx: &Context) -> Result<String, PackError> {
    let org = ctx.org();
    if org.is_empty() {
        return Err(PackError::new(
            codes::UNAUTHORIZED,
            "remote_mcp needs the caller's organisation, and this call has none",
        )
        .with_help(
            "over HTTP, use a bearer token whose `[[auth.tokens]]` entry has an `org`; on stdio, \
             set `org` in `[identity]`",
        ));
    }
    Ok(org)
}

/// How to reach `integration`: a stdio server confined by its pack's rules
/// and its own (`packhost integrations add --read/--write/--limits/--sandbox`).
fn endpoint(integration: &Integration, pack: &Confinement) -> Result<Endpoint, PackError> {
    Ok(match &integration.transport {
        Transport::Stdio {
            command,
            args,
            env,
            sandbox,
        } => Endpoint::Stdio {
            command: command.clone(),
            args: args.clone(),
            env: env.clone(),
            confinement: Confinement {
                mode: if sandbox.mode == Mode::Off {
                    Mode::Off
                } else {
                    pack.mode
                },
                read: [&pack.read[..], &sandbox.read[..]].concat(),
                write: [&pack.write[..], &sandbox.write[..]].concat(),
                limits: pack.limits.overlaid(&sandbox.limits).map_err(|e| {
                    PackError::internal(format!(
                        "integration `{}` has sandbox limits this pack refuses: {e}",
                        integration.name
                    ))
                    .with_help("an admin removes it and adds it again with valid `--limits`")
                })?,
                trusted: false,
            },
        },
        Transport::Http { url, headers } => {
            let mut headers = headers.clone();
            match &integration.auth {
                Some(Auth::Bearer { token }) => {
                    headers.insert("Authorization".to_owned(), format!("Bearer {token}"));
                }
                Some(Auth::Header { name, value }) => {
                    headers.insert(name.clone(), value.clone());
                }
                // The caller's own token, added by `State::endpoint_for`.
                Some(Auth::PerUser { .. }) | None => {}
            }
            Endpoint::Http {
                url: url.clone(),
                headers,
            }
        }
    })
}

/// Arguments of `remote_mcp.execute_tool`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecuteArgs {
    /// The integration's id (`remote_mcp.list_integrations()` lists them).
    pub integration_id: String,
    /// The tool's name on that server (`remote_mcp.list_tools(id)`).
    pub tool_name: String,
    /// The tool's arguments.
    #[serde(default)]
    pub parameters: Option<JsonObject>,
}

/// What the downstream tool gave.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecutionResult {
    /// Whether the tool failed.
    pub is_error: bool,
    /// The tool's MCP content blocks; null when it failed.
    pub content: Option<Vec<Value>>,
    /// The tool's structured result, when it gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

/// The server's own failure: a result with `isError`, not a failed call.
fn tool_failed(message: String) -> PackError {
    let result = ToolExecutionResult {
        is_error: true,
        content: None,
        structured_content: None,
        error_message: Some(message.clone()),
    };
    PackError::new(codes::EXECUTION_ERROR, message).with_result(&result)
}

fn upstream(reason: String) -> PackError {
    PackError::new(codes::UPSTREAM_ERROR, reason)
}

async fn execute_tool(
    state: Arc<State>,
    args: ExecuteArgs,
    ctx: Context,
) -> Result<Content<ToolExecutionResult>, PackError> {
    let org = organisation(&ctx)?;
    let started = Instant::now();
    let outcome = execute(&state, &ctx, &org, &args).await;
    let code = outcome.as_ref().err().map_or("ok", PackError::code);
    // Never the parameters: they may hold what the caller would not log.
    state.host.log(
        LogLevel::Info,
        &format!(
            "execute_tool integration={} org={org} tool={} duration_ms={:.1} outcome={code}",
            args.integration_id,
            args.tool_name,
            started.elapsed().as_secs_f64() * 1000.0
        ),
    );
    outcome.map(shown)
}

/// The downstream tool's blocks, shown as this call's own: its text to
/// read, its images, audio and links as blocks (base64 never in the text).
/// Code gets the whole result as a value.
fn shown(result: ToolExecutionResult) -> Content<ToolExecutionResult> {
    let blocks = result.content.clone().unwrap_or_default();
    let (texts, others): (Vec<Value>, Vec<Value>) = blocks
        .into_iter()
        .partition(|block| block["type"] == "text");
    let text: Vec<&str> = texts.iter().filter_map(|t| t["text"].as_str()).collect();
    let content = match text.is_empty() {
        // Nothing to read: the value's JSON is the text.
        true => Content::new(result),
        false => Content::new(result).text(text.join("\n")),
    };
    others.into_iter().fold(content, Content::block)
}

/// Call the tool on the caller's own connection, the server's questions
/// relayed to the caller; what the result links is the organisation's to
/// read.
async fn execute(
    state: &State,
    ctx: &Context,
    org: &str,
    args: &ExecuteArgs,
) -> Result<ToolExecutionResult, PackError> {
    let integration = state.integration(org, &args.integration_id).await?;
    let result = state
        .pool()
        .await
        .call_tool(
            &offers::caller_lane(&integration, ctx),
            &state.endpoint_for(ctx, &integration).await?,
            &args.tool_name,
            args.parameters.clone().unwrap_or_default(),
            offers::time_limit(state, &integration),
            Some(Arc::new(CallerRelay(ctx.clone()))),
        )
        .await
        .map_err(|failure| match failure {
            DownstreamError::Rejected(message) => tool_failed(message),
            DownstreamError::Upstream(reason) => upstream(reason),
        })?;
    if result.is_error == Some(true) {
        let mut message = mcp_downstream::text_of(&result);
        if message.is_empty() {
            message = format!("tool `{}` failed and said nothing", args.tool_name);
        }
        return Err(tool_failed(message));
    }
    let content: Vec<Value> = result
        .content
        .iter()
        .map(|block| serde_json::to_value(block).unwrap_or(Value::Null))
        .collect();
    state
        .uris
        .keep(org, &integration.id, uris::linked(&content));
    Ok(ToolExecutionResult {
        is_error: false,
        content: Some(content),
        structured_content: result.structured_content,
        error_message: None,
    })
}

/// Arguments of `remote_mcp.list_tools`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ListToolsArgs {
    /// The integration's id.
    pub integration_id: String,
}

/// A downstream tool.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteTool {
    /// Its name, for `execute_tool`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its parameters.
    pub input_schema: Value,
}

/// The tools of one integration.
#[derive(Serialize, JsonSchema)]
pub struct ToolList {
    /// By the server's order.
    pub tools: Vec<RemoteTool>,
}

async fn list_tools(
    state: Arc<State>,
    args: ListToolsArgs,
    ctx: Context,
) -> Result<ToolList, PackError> {
    let org = organisation(&ctx)?;
    let integration = state.integration(&org, &args.integration_id).await?;
    let tools = state
        .pool()
        .await
        .list_tools(
            &listing_lane(&integration, &ctx),
            &state.endpoint_for(&ctx, &integration).await?,
            state.call_timeout,
        )
        .await
        .map_err(|failure| match failure {
            DownstreamError::Rejected(message) => {
                upstream(format!("the server refused tools/list: {message}"))
            }
            DownstreamError::Upstream(reason) => upstream(reason),
        })?;
    Ok(ToolList {
        tools: tools
            .into_iter()
            .map(|tool| RemoteTool {
                name: tool.name.into_owned(),
                description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
                input_schema: Value::Object((*tool.input_schema).clone()),
            })
            .collect(),
    })
}

/// Arguments of `remote_mcp.sign_out`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SignOutArgs {
    /// The integration's id.
    pub integration_id: String,
}

/// What signing out did.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignedOut {
    /// Whether you had a sign-in there, now forgotten.
    pub signed_out: bool,
}

async fn sign_out(
    state: Arc<State>,
    args: SignOutArgs,
    ctx: Context,
) -> Result<SignedOut, PackError> {
    let org = organisation(&ctx)?;
    let integration = state.integration(&org, &args.integration_id).await?;
    if !sign_in::per_user(&integration) {
        return Err(PackError::invalid_argument(format!(
            "integration `{}` does not act per user: nobody signs in to it",
            integration.name
        )));
    }
    let signed_out = sign_in::sign_out(&state, &ctx, &integration).await?;
    Ok(SignedOut { signed_out })
}

/// The caller's organisation's integrations.
#[derive(Serialize, JsonSchema)]
pub struct IntegrationList {
    /// By name; credentials, environment values and header values are never
    /// shown.
    pub integrations: Vec<Value>,
}

async fn list_integrations(
    state: Arc<State>,
    _: Empty,
    ctx: Context,
) -> Result<IntegrationList, PackError> {
    let org = organisation(&ctx)?;
    let integrations = state
        .store()
        .await?
        .list(&org)
        .await
        .map_err(database_error)?;
    Ok(IntegrationList {
        integrations: integrations.iter().map(Integration::summary).collect(),
    })
}

fn remote_mcp() -> PackDef<State> {
    PackDef::new(
        integrations_store::PACK,
        "Tools on the MCP servers your organisation registered (integrations).",
        State::new,
    )
    // A remote tool may do anything: as unsafe as it gets. Listing its
    // tools asks the remote server, so it reaches out too.
    .function_with(
        Function::new(
            "execute_tool",
            "Call a tool of one of your organisation's integrations. A tool that fails comes back \
             as {isError: true, content: null, errorMessage}.",
            execute_tool,
        )
        .title("Call an integration's tool")
        .destructive()
        .open_world(),
    )
    .function_with(
        Function::new(
            "list_tools",
            "The tools of one of your organisation's integrations, with their parameters.",
            list_tools,
        )
        .title("List an integration's tools")
        .read_only()
        .open_world(),
    )
    .function_with(
        Function::new(
            "list_integrations",
            "Your organisation's integrations: id, name, transport, enabled.",
            list_integrations,
        )
        .title("List integrations")
        .read_only()
        .closed_world(),
    )
    .function_with(
        Function::new(
            "sign_out",
            "Forget your own sign-in to an integration that acts as each user; your next call \
             there asks you to sign in again.",
            sign_out,
        )
        .title("Sign out of an integration")
        .destructive()
        .idempotent()
        .closed_world(),
    )
    .serve_offers(offers::serve)
    .on_shutdown(|state: Arc<State>| async move {
        if let Some(pool) = state.pool.get() {
            pool.close_all();
        }
    })
}

pack_sdk::export_pack!(remote_mcp);

#[cfg(test)]
mod result_schemas {
    use pack_sdk::testing::{check_failure, check_manifest, check_result};

    use super::*;

    #[test]
    fn results_and_failures_fit_the_schemas() {
        check_manifest(remote_mcp).unwrap();
        check_result(&ToolExecutionResult {
            is_error: false,
            content: Some(vec![serde_json::json!({"type": "text", "text": "x"})]),
            structured_content: None,
            error_message: None,
        })
        .unwrap();
        check_failure::<ToolExecutionResult>(&tool_failed("no".into())).unwrap();
    }

    /// `packhost integrations` finds the database where the pack does.
    #[test]
    fn the_database_key_is_the_one_the_cli_reads() {
        let table = serde_json::json!({ integrations_store::DATABASE_KEY: "/srv/integrations.db" });
        let config: Config = serde_json::from_value(table.clone()).unwrap();
        assert_eq!(
            integrations_store::database_or_default(config.database),
            integrations_store::database_in(Some(&table)),
        );
        assert_eq!(
            integrations_store::database_in(Some(&table)),
            "/srv/integrations.db"
        );
    }
}
