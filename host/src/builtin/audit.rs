//! `packhost.audit`: an organisation's admin reads its audit trail. Only
//! admins reach it (`Identity::may_call`, which makes it an unknown name to
//! anyone else), and the organisation is always the caller's own: no
//! argument can name another.

use std::time::SystemTime;

use audit_store::{Filter, FilterText, Naming, Scope};
use pack_api::codes;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Request;
use crate::failure::Failure;

// No doc comments on the type: they would become the schema's description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AuditArgs {
    /// Only this user's events.
    user: Option<String>,
    /// Only this tool's (`pack.function`), or a pack's (`pack.*`).
    tool: Option<String>,
    /// Only this kind: call, approval, sign_in_refused, credential.
    kind: Option<String>,
    /// From this time: RFC 3339, or a span back from now (`30m`, `1h`, `7d`).
    since: Option<String>,
    /// Before this time, as `since`.
    until: Option<String>,
    /// The most recent this many (1 to 10000, default 100), oldest first.
    #[schemars(range(min = 1, max = 10000))]
    limit: Option<u64>,
}

/// The caller's organisation's events that `args` asks for.
pub(super) fn read(request: &Request, args: AuditArgs) -> Result<Value, Failure> {
    if !request.audit.is_on() {
        return Err(
            Failure::new(codes::DISABLED, "the audit trail is off on this server")
                .with_help("the host's admin turns it on with an `[audit]` section in packs.toml"),
        );
    }
    let org = request.owner.org.clone();
    let text = FilterText {
        user: args.user.as_deref(),
        tool: args.tool.as_deref(),
        kind: args.kind.as_deref(),
        since: args.since.as_deref(),
        until: args.until.as_deref(),
        limit: args.limit,
    };
    let filter = Filter::from_text(
        Scope::Org(org.clone()),
        &text,
        SystemTime::now(),
        Naming::Arguments,
    )
    .map_err(Failure::invalid_argument)?;
    // Called on a blocking thread (see `Builtin::call`).
    let events = tokio::runtime::Handle::current()
        .block_on(request.audit.query(&filter))
        .map_err(|why| Failure::new(codes::UPSTREAM_ERROR, why))?;
    Ok(json!({ "org": org, "count": events.len(), "events": events }))
}
