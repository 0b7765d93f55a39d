//! Approval before sensitive calls (`[approval]` in packs.toml). The
//! executor asks [`Approvals::check`] before every call it makes, whichever
//! way the call came (a client's `tools/call`, `run`, code mode in Python
//! or TypeScript), so no path skips it. A call an `[approval.<rule>]`
//! matches asks the caller's client one `elicitation/create` question
//! (what, with which arguments, secrets hidden: [`secrets`]) and is made
//! only when the user accepts. Declined or cancelled: `DECLINED`. No
//! client, or one that cannot elicit: `APPROVAL_UNAVAILABLE`, naming the
//! rule; never silently allowed. What the user asks to have remembered is
//! kept per caller ([`memory`]).

use std::time::{Duration, Instant};

use pack_api::{FunctionSpec, codes};
use serde_json::Value;

use self::{
    memory::{Memory, Owner},
    question::Decision,
};
use crate::{
    audit::{Audit, Event, Who},
    config::{Approval, MAX_REMEMBER, Remember, Rule},
    error::CallError,
    executor::{Caller, SessionId},
    failure::Failure,
};

mod memory;
mod question;
pub mod secrets;
#[cfg(test)]
mod tests;

/// The policy and the approvals remembered under it; every question asked
/// and its answer go to the audit trail.
pub struct Approvals {
    policy: Approval,
    memory: Memory,
    audit: Audit,
}

/// What an approval may be remembered for: the offer the user sees, and
/// what is kept when they take it.
struct Keep {
    offer: String,
    session: Option<SessionId>,
    duration: Duration,
}

impl Approvals {
    /// Ask as `policy` says, recording to `audit`; approvals for any
    /// session remembered in `remembered`.
    pub fn new(
        policy: Approval,
        audit: Audit,
        remembered: std::sync::Arc<dyn state_store::RememberedApprovals>,
    ) -> Self {
        Self {
            policy,
            memory: Memory::new(remembered),
            audit,
        }
    }

    /// Whether the call of `tool` (`function`, with validated `args`) may
    /// be made for `caller`: `Ok` when no rule matches it, when the caller
    /// approved it before and asked to have that remembered, or when the
    /// user accepts now.
    pub async fn check(
        &self,
        tool: &str,
        function: &FunctionSpec,
        args: &Value,
        caller: &Caller,
    ) -> Result<(), Failure> {
        let destructive = function.annotations.destructive == Some(true);
        let Some(rule) = self.policy.rule_for(tool, destructive) else {
            return Ok(());
        };
        let owner: Owner = (caller.identity.org.clone(), caller.identity.user.clone());
        if self
            .memory
            .approved(&owner, tool, caller.session, Instant::now())
            .await
        {
            return Ok(());
        }
        let unavailable = |why: String| CallError::ApprovalUnavailable {
            tool: tool.to_owned(),
            rule: rule.name.clone(),
            why,
        };
        let Some(ask) = &caller.ask else {
            return Err(unavailable("this call has no MCP client to ask".to_owned()).into());
        };
        let keep = keep(rule, tool, caller.session);
        let shown = secrets::masked(args);
        let key = question::key(tool, &shown);
        let questions = question::question(
            &key,
            tool,
            &rule.name,
            &shown,
            keep.as_ref().map(|keep| keep.offer.as_str()),
        );
        tracing::info!(tool, rule = %rule.name, "asking the user to approve the call");
        let answers = tokio::select! {
            answers = ask.ask_anew(questions) => answers,
            () = caller.cancel.cancelled() => return Err(CallError::Cancelled.into()),
        };
        let answers = match answers {
            Ok(answers) => answers,
            Err(failure) if failure.code() == codes::INPUT_UNAVAILABLE => {
                let why = format!("its client cannot be asked ({})", failure.text());
                return Err(unavailable(why).into());
            }
            Err(failure) => return Err(failure),
        };
        let recorded = |answer: &str, remember: bool| {
            self.audit.record(|| {
                let who = Who {
                    org: caller.identity.org.clone(),
                    user: caller.identity.user.clone(),
                };
                let request = &caller.request_id;
                let arguments = question::arguments_text(&shown).into();
                Event::approval(&who, tool, &rule.name, answer, remember, request, arguments)
            });
        };
        let decision = question::decision(&answers, &key).map_err(|why| {
            recorded("unavailable", false);
            unavailable(why)
        })?;
        tracing::info!(tool, rule = %rule.name, ?decision, "the user answered");
        match decision {
            Decision::Accept { remember } => recorded("accept", remember),
            Decision::Decline => recorded("decline", false),
        }
        match decision {
            Decision::Accept { remember } => {
                if let (true, Some(keep)) = (remember, keep) {
                    let now = Instant::now();
                    self.memory
                        .remember(&owner, tool, keep.session, now, keep.duration)
                        .await;
                }
                Ok(())
            }
            Decision::Decline => Err(CallError::Declined {
                tool: tool.to_owned(),
                rule: rule.name.clone(),
            }
            .into()),
        }
    }

    /// Each rule by name, with those of `functions` (full name, whether
    /// destructive) it asks about: a function is asked about by the first
    /// rule that matches it, as a call is.
    pub fn coverage(
        &self,
        functions: impl Iterator<Item = (String, bool)>,
    ) -> Vec<(String, Vec<String>)> {
        let mut covered: Vec<(String, Vec<String>)> = self
            .policy
            .rules
            .iter()
            .map(|rule| (rule.name.clone(), Vec::new()))
            .collect();
        for (name, destructive) in functions {
            if let Some(rule) = self.policy.rule_for(&name, destructive)
                && let Some((_, names)) = covered.iter_mut().find(|(n, _)| *n == rule.name)
            {
                names.push(name);
            }
        }
        for (_, names) in &mut covered {
            names.sort();
        }
        covered
    }
}

/// What `rule` lets the user have remembered about `tool`, asked in
/// `session`; `None`: nothing (`remember = "no"`, or "session" on a wire
/// without sessions).
fn keep(rule: &Rule, tool: &str, session: Option<SessionId>) -> Option<Keep> {
    match rule.remember {
        Remember::No => None,
        Remember::Session => session.map(|session| Keep {
            offer: format!("Don't ask again about `{tool}` in this session"),
            session: Some(session),
            duration: MAX_REMEMBER,
        }),
        Remember::For(duration) => Some(Keep {
            offer: format!("Don't ask again about `{tool}` for {}", spoken(duration)),
            session: None,
            duration,
        }),
    }
}

/// `duration` in words: "90 seconds", "30 minutes", "1 hour".
fn spoken(duration: Duration) -> String {
    let secs = duration.as_secs();
    let (count, unit) = match secs {
        _ if secs.is_multiple_of(3600) => (secs / 3600, "hour"),
        _ if secs.is_multiple_of(60) => (secs / 60, "minute"),
        _ => (secs, "second"),
    };
    let plural = if count == 1 { "" } else { "s" };
    format!("{count} {unit}{plural}")
}
