//! Approvals the user asked to have remembered: each belongs to one caller
//! (organisation and user), names one function, and expires. One for this
//! session is kept here, beside the session (which lives in this
//! instance): a caller keeps its latest [`PER_CALLER`], the host its
//! [`CALLERS`] most recent callers. One for any session is kept in the
//! shared state (`state_store::RememberedApprovals`, bounded per user and
//! per organisation), so with `[state] database` every instance honours it.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use state_store::RememberedApprovals;

use crate::executor::SessionId;

/// Session approvals one caller keeps at most.
pub const PER_CALLER: usize = 64;

/// Callers with session approvals the host keeps at most.
pub const CALLERS: usize = 4096;

/// Who approved: (organisation, user). One organisation's approval never
/// answers for another, whatever their user names.
pub type Owner = (String, String);

/// One approval remembered for a session.
#[derive(Debug)]
struct Remembered {
    tool: String,
    session: SessionId,
    until: Instant,
}

/// The approvals remembered.
pub struct Memory {
    /// For one session, by caller.
    sessions: Mutex<HashMap<Owner, Vec<Remembered>>>,
    /// For any session.
    shared: Arc<dyn RememberedApprovals>,
}

fn as_owner((org, user): &Owner) -> state_store::Owner {
    state_store::Owner::new(org, user)
}

impl Memory {
    /// Approvals for any session kept in `shared`.
    pub fn new(shared: Arc<dyn RememberedApprovals>) -> Self {
        Self {
            sessions: Mutex::default(),
            shared,
        }
    }

    /// Whether `owner` approved calls of `tool`, for this `session` or any,
    /// and that approval still holds at `now`. A shared state that does
    /// not answer counts as no approval: the user is asked.
    pub async fn approved(
        &self,
        owner: &Owner,
        tool: &str,
        session: Option<SessionId>,
        now: Instant,
    ) -> bool {
        let here = {
            let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
            sessions.get(owner).is_some_and(|remembered| {
                remembered
                    .iter()
                    .any(|r| r.tool == tool && r.until > now && Some(r.session) == session)
            })
        };
        if here {
            return true;
        }
        self.shared
            .approved(&as_owner(owner), tool)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(tool, error = %e, "remembered approvals not read: asking");
                false
            })
    }

    /// Remember that `owner` approved calls of `tool` for `session` (or any,
    /// `None`) from `now` for `duration`. A shared state that does not
    /// answer forgets it (logged): the user is asked next time.
    pub async fn remember(
        &self,
        owner: &Owner,
        tool: &str,
        session: Option<SessionId>,
        now: Instant,
        duration: Duration,
    ) {
        let Some(session) = session else {
            let owner = as_owner(owner);
            if let Err(e) = self.shared.remember(&owner, tool, duration).await {
                tracing::warn!(tool, error = %e, "an approval was not remembered");
            }
            return;
        };
        let mut callers = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if !callers.contains_key(owner) && callers.len() >= CALLERS {
            callers.retain(|_, remembered| remembered.iter().any(|r| r.until > now));
            // Still full: the caller whose approvals end soonest goes.
            let ending = callers
                .iter()
                .min_by_key(|(_, remembered)| remembered.iter().map(|r| r.until).max())
                .map(|(owner, _)| owner.clone());
            if let (true, Some(ending)) = (callers.len() >= CALLERS, ending) {
                callers.remove(&ending);
            }
        }
        let remembered = callers.entry(owner.clone()).or_default();
        remembered.retain(|r| r.until > now && !(r.tool == tool && r.session == session));
        if remembered.len() >= PER_CALLER {
            let ending = (0..remembered.len()).min_by_key(|&i| remembered[i].until);
            if let Some(ending) = ending {
                remembered.swap_remove(ending);
            }
        }
        remembered.push(Remembered {
            tool: tool.to_owned(),
            session,
            until: now + duration,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(org: &str, user: &str) -> Owner {
        (org.to_owned(), user.to_owned())
    }

    fn memory() -> Memory {
        Memory::new(state_store::State::open(None).remembered_approvals())
    }

    const MINUTE: Duration = Duration::from_secs(60);

    /// How many session approvals are remembered, expired or not.
    fn count(memory: &Memory) -> usize {
        memory.sessions.lock().unwrap().values().map(Vec::len).sum()
    }

    #[tokio::test]
    async fn a_session_approval_holds_for_its_caller_tool_and_session_until_it_expires() {
        let memory = memory();
        let now = Instant::now();
        let alice = owner("acme", "alice");
        let (one, two) = (SessionId::unique(), SessionId::unique());
        memory
            .remember(&alice, "fx.drop", Some(one), now, 30 * MINUTE)
            .await;
        let later = now + 29 * MINUTE;
        assert!(memory.approved(&alice, "fx.drop", Some(one), later).await);
        assert!(
            !memory
                .approved(&alice, "fx.drop", Some(one), now + 30 * MINUTE)
                .await
        );
        assert!(!memory.approved(&alice, "fx.other", Some(one), now).await);
        assert!(!memory.approved(&alice, "fx.drop", Some(two), now).await);
        assert!(!memory.approved(&alice, "fx.drop", None, now).await);
        // Same user name, another organisation: not theirs.
        let globex = owner("globex", "alice");
        assert!(!memory.approved(&globex, "fx.drop", Some(one), now).await);
    }

    #[tokio::test]
    async fn an_approval_for_any_session_holds_in_every_one() {
        let memory = memory();
        let now = Instant::now();
        let alice = owner("acme", "alice");
        memory.remember(&alice, "fx.drop", None, now, MINUTE).await;
        let two = SessionId::unique();
        assert!(memory.approved(&alice, "fx.drop", Some(two), now).await);
        assert!(memory.approved(&alice, "fx.drop", None, now).await);
        assert!(
            !memory
                .approved(&owner("acme", "bob"), "fx.drop", None, now)
                .await
        );
    }

    #[tokio::test]
    async fn a_caller_keeps_its_latest_session_approvals_only() {
        let memory = memory();
        let now = Instant::now();
        let alice = owner("acme", "alice");
        let session = Some(SessionId::unique());
        for i in 0..PER_CALLER + 10 {
            let tool = format!("fx.f{i}");
            let at = now + Duration::from_secs(i as u64);
            memory
                .remember(&alice, &tool, session, at, 60 * MINUTE)
                .await;
        }
        assert_eq!(count(&memory), PER_CALLER);
        let later = now + Duration::from_secs(PER_CALLER as u64 + 9);
        let newest = format!("fx.f{}", PER_CALLER + 9);
        assert!(memory.approved(&alice, &newest, session, later).await);
        assert!(!memory.approved(&alice, "fx.f0", session, now).await);
        // Approving again replaces, never duplicates.
        memory
            .remember(&alice, "fx.f70", session, later, 60 * MINUTE)
            .await;
        memory
            .remember(&alice, "fx.f70", session, later, 60 * MINUTE)
            .await;
        assert_eq!(count(&memory), PER_CALLER);
    }

    #[tokio::test]
    async fn the_host_keeps_a_bounded_number_of_callers() {
        let memory = memory();
        let now = Instant::now();
        let session = Some(SessionId::unique());
        for i in 0..CALLERS + 5 {
            let at = now + Duration::from_millis(i as u64);
            let caller = owner("acme", &format!("u{i}"));
            memory
                .remember(&caller, "fx.drop", session, at, MINUTE)
                .await;
        }
        let callers = memory.sessions.lock().unwrap().len();
        assert_eq!(callers, CALLERS);
        // The newest stayed, the soonest to end went.
        let newest = owner("acme", &format!("u{}", CALLERS + 4));
        assert!(memory.approved(&newest, "fx.drop", session, now).await);
        let first = owner("acme", "u0");
        assert!(!memory.approved(&first, "fx.drop", session, now).await);
    }
}
