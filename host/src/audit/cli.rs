//! `packhost audit`: the host admin's view of the audit trail, every
//! organisation's and the host-level events, as JSON lines.

use std::{process::ExitCode, time::SystemTime};

use audit_store::{Filter, FilterText, Naming, Scope};
use clap::Args;

use crate::{config::Config, exit::Error};

/// `packhost audit`.
#[derive(Debug, Args)]
pub struct AuditCommand {
    /// The database (SQLite file or `postgres://` URL); default: `[audit]
    /// database`, else beside the integrations' (as the host records).
    #[arg(long, env = "PACKHOST_AUDIT_DATABASE")]
    database: Option<String>,
    /// Only this organisation's events.
    #[arg(long, conflicts_with = "host")]
    org: Option<String>,
    /// Only the host-level events: sign-ins refused before an organisation
    /// was known.
    #[arg(long)]
    host: bool,
    /// Only this user's events.
    #[arg(long)]
    user: Option<String>,
    /// Only this tool's (`pack.function`), or a pack's (`pack.*`).
    #[arg(long)]
    tool: Option<String>,
    /// Only this kind: call, approval, sign_in_refused, credential.
    #[arg(long)]
    kind: Option<String>,
    /// From this time: RFC 3339 (`2026-11-29T14:00:00Z`) or a span back from
    /// now (`30m`, `1h`, `7d`).
    #[arg(long)]
    since: Option<String>,
    /// Before this time (as `--since`).
    #[arg(long)]
    until: Option<String>,
    /// The most recent this many (printed oldest first); default 100.
    #[arg(long)]
    limit: Option<u64>,
}

impl AuditCommand {
    /// Print the events asked for, one JSON object a line.
    pub async fn run(self, config: &Config) -> Result<ExitCode, Error> {
        let scope = match (self.org, self.host) {
            (Some(org), _) => Scope::Org(org),
            (None, true) => Scope::Host,
            (None, false) => Scope::All,
        };
        let text = FilterText {
            user: self.user.as_deref(),
            tool: self.tool.as_deref(),
            kind: self.kind.as_deref(),
            since: self.since.as_deref(),
            until: self.until.as_deref(),
            limit: self.limit,
        };
        let filter = Filter::from_text(scope, &text, SystemTime::now(), Naming::Flags)?;
        let database = self.database.unwrap_or_else(|| super::database(config));
        let log = audit_store::open(&database).await?;
        for event in log.query(&filter).await? {
            println!(
                "{}",
                serde_json::to_string(&event).expect("an event serializes")
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}
