//! What one event says. Every kind has the same columns (who, what,
//! outcome, how long, which request) and a `detail` object of its own;
//! nothing in an event is a secret: the host masks argument text with the
//! approvals' rule before it gets here, and credential events name the
//! integration, never the token.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::time;

/// One audit event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// When, RFC 3339 UTC with microseconds.
    pub at: String,
    /// The organisation it belongs to; `None`: host-level (a sign-in
    /// refused before any organisation was known), for the host's CLI only.
    pub org: Option<String>,
    /// The user, when known.
    pub user: Option<String>,
    /// What happened.
    pub kind: Kind,
    /// The tool (`pack.function`), or the integration of a credential event.
    pub tool: Option<String>,
    /// `ok` or the error code of a call; `accept`/`decline`/`unavailable`
    /// of an approval; why a sign-in was refused (`missing`, `invalid`,
    /// `expired`, ...); `granted`/`used`/`refreshed`/`revoked`.
    pub outcome: String,
    /// How long a call took, in milliseconds.
    pub duration_ms: Option<f64>,
    /// The request it came with.
    pub request_id: Option<String>,
    /// Kind-specific facts (an object): a call's depth and the call that
    /// made it, an approval's rule, a refusal's reason in words.
    pub detail: Value,
}

/// The kinds of events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A tool call finished (from a client, `run`, or code).
    Call,
    /// An approval was asked and answered.
    Approval,
    /// A bearer token was refused.
    SignInRefused,
    /// An upstream credential was granted, used, refreshed or revoked.
    Credential,
}

/// What happened to an upstream credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CredentialAction {
    /// The user authorized the upstream; a token was stored.
    Granted,
    /// A stored token was sent upstream for a call.
    Used,
    /// A token was refreshed.
    Refreshed,
    /// A token was revoked (by the user, an admin, or the upstream).
    Revoked,
}

impl Kind {
    /// Every kind, as the filters name them.
    pub const ALL: [Kind; 4] = [
        Kind::Call,
        Kind::Approval,
        Kind::SignInRefused,
        Kind::Credential,
    ];

    /// Its name in events and filters.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Call => "call",
            Kind::Approval => "approval",
            Kind::SignInRefused => "sign_in_refused",
            Kind::Credential => "credential",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Result<Kind, String> {
        Kind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Kind::ALL.iter().map(|kind| kind.as_str()).collect();
                format!("`{name}` is no event kind; use one of {}", names.join(", "))
            })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CredentialAction {
    /// Its name, the event's outcome.
    pub fn as_str(self) -> &'static str {
        match self {
            CredentialAction::Granted => "granted",
            CredentialAction::Used => "used",
            CredentialAction::Refreshed => "refreshed",
            CredentialAction::Revoked => "revoked",
        }
    }
}

/// Who an event is about: organisation and user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Who {
    /// The organisation.
    pub org: String,
    /// The user.
    pub user: String,
}

impl Event {
    fn new(kind: Kind, outcome: impl Into<String>) -> Self {
        Self {
            at: time::now(),
            org: None,
            user: None,
            kind,
            tool: None,
            outcome: outcome.into(),
            duration_ms: None,
            request_id: None,
            detail: json!({}),
        }
    }

    fn by(mut self, who: &Who) -> Self {
        self.org = Some(who.org.clone());
        self.user = Some(who.user.clone());
        self
    }

    /// `who` called `tool` in request `request_id`; it ended with
    /// `outcome` (`ok` or an error code) after `duration_ms`, or was refused
    /// before any function started (`None`: an unknown name, a command that
    /// does not parse). `depth` 0 is a client's call; more is a call made
    /// from code, whose `parent` function made it.
    pub fn call(
        who: &Who,
        tool: &str,
        outcome: &str,
        duration_ms: Option<f64>,
        request_id: &str,
        depth: u32,
        parent: Option<&str>,
    ) -> Self {
        let mut event = Event::new(Kind::Call, outcome).by(who);
        event.tool = Some(tool.to_owned());
        event.duration_ms = duration_ms;
        event.request_id = Some(request_id.to_owned());
        event.detail = json!({ "depth": depth });
        if let Some(parent) = parent {
            event.detail["parent"] = json!(parent);
        }
        event
    }

    /// `who` was asked under `[approval.<rule>]` whether `tool` may be
    /// called with `arguments` (already masked) and answered `answer`
    /// (`accept`, `decline`, `unavailable`); `remembered`: the user asked
    /// not to be asked again.
    pub fn approval(
        who: &Who,
        tool: &str,
        rule: &str,
        answer: &str,
        remembered: bool,
        request_id: &str,
        arguments: Value,
    ) -> Self {
        let mut event = Event::new(Kind::Approval, answer).by(who);
        event.tool = Some(tool.to_owned());
        event.request_id = Some(request_id.to_owned());
        event.detail = json!({ "rule": rule, "remember": remembered, "arguments": arguments });
        event
    }

    /// A bearer token was refused: `reason` is a short code (`missing`,
    /// `invalid`, `expired`, ...), `why` the words (never the token),
    /// `method` `static` or `oauth`. `org`: the organisation when the
    /// refused token names one that can be trusted, else `None`
    /// (host-level).
    pub fn sign_in_refused(
        org: Option<&str>,
        user: Option<&str>,
        method: &str,
        reason: &str,
        why: &str,
    ) -> Self {
        let mut event = Event::new(Kind::SignInRefused, reason);
        event.org = org.map(str::to_owned);
        event.user = user.map(str::to_owned);
        event.detail = json!({ "method": method, "why": why });
        event
    }

    /// `who`'s credential for `integration` was `action`ed; `request_id`:
    /// the call it happened in, when there is one. Never the token.
    pub fn credential(
        who: &Who,
        integration: &str,
        action: CredentialAction,
        request_id: Option<&str>,
    ) -> Self {
        let mut event = Event::new(Kind::Credential, action.as_str()).by(who);
        event.tool = Some(integration.to_owned());
        event.request_id = request_id.map(str::to_owned);
        event
    }
}
