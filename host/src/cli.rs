//! The subcommands: `serve`, `call`, `packs`, `check`, `token`,
//! `integrations`, `new`. The top of the crate: no other module imports this one.

use std::{path::PathBuf, process::ExitCode, sync::Arc};

use clap::{Parser, Subcommand};
use rmcp::ServiceExt as _;

use crate::{
    builtin,
    catalog_cache::CatalogCache,
    config::{self, Loaded},
    executor::{Caller, Executor},
    exit::Error,
    loader::{self, LoadError},
    mcp::PackhostServer,
    render::{count, value_text},
    search, servers, shutdown,
};

/// An MCP tool server whose tools come from pack libraries.
#[derive(Debug, Parser)]
#[command(name = "packhost", version, about, propagate_version = true)]
pub struct Cli {
    /// The config file (default: ./packs.toml when it exists).
    #[arg(
        long,
        short,
        global = true,
        env = "PACKHOST_CONFIG",
        value_name = "FILE"
    )]
    pub config: Option<PathBuf>,
    /// Log line format (logs always go to stderr).
    #[arg(long, global = true, value_enum, default_value_t)]
    pub log_format: crate::logging::LogFormat,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// Parsed once per process: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP on stdin/stdout (logs go to stderr), or over streamable
    /// HTTP with --http.
    Serve {
        /// Serve streamable HTTP at http://ADDR/mcp instead of stdio, e.g.
        /// 127.0.0.1:8765.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Allow a non-loopback address without [[auth.tokens]].
        #[arg(long, requires = "http")]
        insecure: bool,
    },
    /// Run one `run` command and print its result; exit 1 when it fails.
    Call {
        /// The command, e.g. 'proj.list()' or '$snippet k=v'.
        command: String,
    },
    /// List the loaded packs, their functions and signatures.
    Packs,
    /// Make a bearer token for HTTP and print its `[[auth.tokens]]` entry.
    ///
    /// Static tokens suit scripts and CI. For people, `[auth.oauth]` lets
    /// clients sign in at the team's identity provider instead (see the
    /// book's "HTTP: a team's server").
    Token {
        /// What to do with tokens.
        #[command(subcommand)]
        action: TokenAction,
    },
    /// Check the config and load every pack (and fetch the OAuth issuer's
    /// keys, open the audit trail's database); exit 1 when a pack fails to
    /// load, the issuer cannot be used or the audit database opened, 2 when
    /// the config itself is wrong.
    Check,
    /// Manage the MCP servers organisations registered for `remote_mcp`.
    Integrations(crate::integrations::IntegrationsCommand),
    /// Read the audit trail (`[audit]`): calls, approvals, refused sign-ins
    /// and credential events, one JSON object a line, oldest first.
    Audit(crate::audit::cli::AuditCommand),
    /// Start something new: `packhost new pack NAME` writes a pack crate.
    New {
        /// What to create.
        #[command(subcommand)]
        what: crate::new_pack::NewCommand,
    },
}

/// `packhost token ...`.
#[derive(Debug, Subcommand)]
pub enum TokenAction {
    /// A new random token for a user of an organisation.
    New {
        /// The user calls with this token run as.
        #[arg(long)]
        user: String,
        /// Their organisation.
        #[arg(long)]
        org: String,
        /// Only these tools (`pack.function`, `pack.*`, `run`); repeatable.
        #[arg(long = "tool", value_name = "TOOL")]
        tools: Vec<String>,
    },
}

/// Run the parsed command line.
pub async fn run(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Token { action } => return new_token(&action),
        Command::New { what } => return what.run(),
        _ => {}
    }
    let loaded = config::load(cli.config.as_deref())?;
    if let Some(file) = &loaded.file {
        tracing::debug!(file = %file.display(), "config");
    }
    match cli.command {
        Command::Integrations(command) => return command.run(&loaded.config).await,
        Command::Audit(command) => return command.run(&loaded.config).await,
        _ => {}
    }
    let searcher = search::searcher(&loaded.config.search)?;
    // Only a server answers before its packs are loaded; `check`, `packs`
    // and `call` load them all first.
    let cache = matches!(cli.command, Command::Serve { .. })
        .then(CatalogCache::open)
        .flatten();
    let loader::Loaded {
        mut packs,
        errors,
        deferred,
    } = loader::load_all(&loaded.config, cache);
    for error in &errors {
        tracing::error!(code = error.code(), "{error}");
    }
    let (server_packs, servers) = servers::connect_all(&loaded.config).await;
    packs.extend(server_packs);
    let executor = Executor::new(packs, &loaded.config, searcher);
    let names = executor.check_aliases(&loaded);
    if let Err(e) = names.and_then(|()| executor.check_bare_names(&loaded.config)) {
        shutdown::shutdown_packs(&executor).await;
        return Err(e.into());
    }
    servers.watch(&executor);
    executor.metrics().set_load_failures(errors.len());
    deferred.finish(&executor, errors.len());
    let code = match cli.command {
        Command::Serve {
            http: Some(addr),
            insecure,
        } => {
            crate::http::serve(&executor, &loaded.config, addr, insecure).await?;
            ExitCode::SUCCESS
        }
        Command::Serve { http: None, .. } => serve(&executor, &loaded).await?,
        Command::Token { .. }
        | Command::New { .. }
        | Command::Integrations(_)
        | Command::Audit(_) => {
            unreachable!("handled before loading the packs")
        }
        Command::Call { command } => call(&executor, &loaded, &command).await,
        Command::Packs => {
            print_packs(&executor);
            ExitCode::SUCCESS
        }
        Command::Check => check(&executor, &loaded, &errors).await,
    };
    shutdown::shutdown_packs(&executor).await;
    executor.audit().flush().await;
    Ok(code)
}

async fn serve(executor: &Arc<Executor>, loaded: &Loaded) -> Result<ExitCode, Error> {
    let server = PackhostServer::new(Arc::clone(executor), loaded.config.identity.clone(), None)?;
    let service = server.serve(rmcp::transport::stdio_pipes()).await?;
    let stop = service.cancellation_token();
    tokio::spawn(async move {
        shutdown::stop_signal().await;
        stop.cancel();
    });
    let reason = service.waiting().await?;
    tracing::debug!(?reason, "server stopped");
    Ok(ExitCode::SUCCESS)
}

async fn call(executor: &Arc<Executor>, loaded: &Loaded, command: &str) -> ExitCode {
    let caller = Caller::new(loaded.config.identity.clone(), "cli");
    match executor.run(command, &caller).await {
        Ok(value) => {
            println!("{}", value_text(&value));
            ExitCode::SUCCESS
        }
        Err(failure) => {
            // A pack's own folder has no packs.toml: say where the host looked.
            let failure = match &loaded.file {
                None if failure.code() == pack_api::codes::UNKNOWN_PACK => {
                    failure.with_help(config::none_found())
                }
                _ => failure,
            };
            println!("{}", failure.text());
            ExitCode::FAILURE
        }
    }
}

fn new_token(action: &TokenAction) -> Result<ExitCode, Error> {
    let TokenAction::New { user, org, tools } = action;
    let token = crate::auth::new_token()?;
    let digest = crate::auth::hex(&crate::auth::sha256(&token));
    println!("token (give it to the client; it is not stored): {token}");
    println!("add to packs.toml:\n");
    println!("[[auth.tokens]]");
    println!("user = {}", toml_string(user));
    println!("org = {}", toml_string(org));
    println!("sha256 = \"{digest}\"");
    if !tools.is_empty() {
        let tools: Vec<String> = tools.iter().map(|t| toml_string(t)).collect();
        println!("tools = [{}]", tools.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

fn print_packs(executor: &Executor) {
    let mut configured = false;
    for (pack, signatures) in executor.packs() {
        configured |= pack.name != builtin::PACK;
        println!(
            "{} {} — {}\n  {}",
            pack.name, pack.manifest.version, pack.manifest.description, pack.origin
        );
        for signature in signatures {
            println!("    {signature}");
        }
    }
    if !configured {
        println!("no packs loaded but the host's own (add [packs.<name>] sections to packs.toml)");
    }
}

async fn check(executor: &Executor, loaded: &Loaded, errors: &[LoadError]) -> ExitCode {
    match &loaded.file {
        Some(file) => println!("config: {} (ok)", file.display()),
        None => println!(
            "config: {}; until then only built-in defaults, with no packs",
            config::none_found()
        ),
    }
    for (pack, signatures) in executor.packs() {
        println!(
            "ok    {} ({}) {}",
            pack.name,
            count(signatures.len(), "function"),
            pack.origin
        );
    }
    for error in errors {
        println!("error {error}");
    }
    for (rule, functions) in executor.approval_coverage() {
        if functions.is_empty() {
            println!(
                "warn  [approval.{rule}] asks about no function loaded now: check its `calls` \
                 patterns (`pack.function`, by the pack's name even when `prefix = false`)"
            );
        } else {
            println!(
                "ok    [approval.{rule}] asks before {} function(s): {}",
                functions.len(),
                functions.join(", ")
            );
        }
    }
    let issuer_ok = match &loaded.config.auth.oauth {
        Some(oauth) => check_issuer(oauth).await,
        None => true,
    };
    let audit_ok = check_audit(&loaded.config).await;
    let helper = std::env::current_exe().unwrap_or_else(|_| "/proc/self/exe".into());
    println!("sandbox:\n{}", pack_sandbox::Report::probe(&helper));
    if !errors.is_empty() {
        println!("{} pack(s) failed to load", errors.len());
    }
    if errors.is_empty() && issuer_ok && audit_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Whether the audit trail, when on, can be opened (and migrated) where
/// `[audit]` says; says which.
async fn check_audit(config: &config::Config) -> bool {
    let Some(audit) = config.audit.as_ref().filter(|audit| audit.enabled) else {
        return true;
    };
    let database = crate::audit::database(config);
    let shown = integrations_store::redact(&database);
    match audit_store::open(&database).await {
        Ok(_) => {
            println!(
                "ok    [audit] records to {shown}, keeping {} days and at most {} events per \
                 organisation",
                audit.keep_days, audit.keep_per_org
            );
            true
        }
        Err(e) => {
            println!("error [audit] {e}");
            false
        }
    }
}

/// Whether `[auth.oauth]`'s issuer publishes metadata naming itself and a
/// JWKS with keys packhost can check tokens with; says which.
async fn check_issuer(oauth: &config::OAuthConfig) -> bool {
    match crate::auth::oauth::Verifier::new(oauth).probe().await {
        Ok(keys) => {
            println!(
                "ok    [auth.oauth] issuer {}: {} to check tokens for {}",
                oauth.issuer,
                count(keys, "signing key"),
                oauth.accepted_audiences().join(", ")
            );
            true
        }
        Err(why) => {
            println!("error [auth.oauth] {why}");
            false
        }
    }
}
