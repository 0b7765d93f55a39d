//! Approvals the user asked to have remembered: each belongs to one caller
//! (organisation and user), names one function, holds for one session or
//! for any, and expires. Bounded: a caller keeps its latest
//! [`PER_CALLER`], the host its [`CALLERS`] most recent callers, so no one
//! can grow it without end.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::executor::SessionId;

/// Remembered approvals one caller keeps at most.
pub const PER_CALLER: usize = 64;

/// Callers with remembered approvals the host keeps at most.
pub const CALLERS: usize = 4096;

/// Who approved: (organisation, user). One organisation's approval never
/// answers for another, whatever their user names.
pub type Owner = (String, String);

/// One remembered approval.
#[derive(Debug)]
struct Remembered {
    tool: String,
    /// `None`: any session of the caller.
    session: Option<SessionId>,
    until: Instant,
}

/// The approvals remembered, by caller.
#[derive(Debug, Default)]
pub struct Memory {
    callers: Mutex<HashMap<Owner, Vec<Remembered>>>,
}

impl Memory {
    /// Whether `owner` approved calls of `tool`, for this `session` or any,
    /// and that approval still holds at `now`.
    pub fn approved(
        &self,
        owner: &Owner,
        tool: &str,
        session: Option<SessionId>,
        now: Instant,
    ) -> bool {
        let callers = self.callers.lock().unwrap_or_else(|e| e.into_inner());
        callers.get(owner).is_some_and(|remembered| {
            remembered.iter().any(|r| {
                r.tool == tool && r.until > now && r.session.is_none_or(|s| Some(s) == session)
            })
        })
    }

    /// Remember that `owner` approved calls of `tool` for `session` (or any,
    /// `None`) from `now` for `duration`.
    pub fn remember(
        &self,
        owner: &Owner,
        tool: &str,
        session: Option<SessionId>,
        now: Instant,
        duration: Duration,
    ) {
        let mut callers = self.callers.lock().unwrap_or_else(|e| e.into_inner());
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

    const MINUTE: Duration = Duration::from_secs(60);

    /// How many approvals are remembered, expired or not.
    fn count(memory: &Memory) -> usize {
        memory.callers.lock().unwrap().values().map(Vec::len).sum()
    }

    #[test]
    fn an_approval_holds_for_its_caller_and_tool_until_it_expires() {
        let memory = Memory::default();
        let now = Instant::now();
        let alice = owner("acme", "alice");
        memory.remember(&alice, "fx.drop", None, now, 30 * MINUTE);
        assert!(memory.approved(&alice, "fx.drop", None, now + 29 * MINUTE));
        assert!(!memory.approved(&alice, "fx.drop", None, now + 30 * MINUTE));
        assert!(!memory.approved(&alice, "fx.other", None, now));
        // Same user name, another organisation: not theirs.
        assert!(!memory.approved(&owner("globex", "alice"), "fx.drop", None, now));
        assert!(!memory.approved(&owner("acme", "bob"), "fx.drop", None, now));
    }

    #[test]
    fn a_session_approval_holds_in_that_session_only() {
        let memory = Memory::default();
        let now = Instant::now();
        let alice = owner("acme", "alice");
        let (one, two) = (SessionId::unique(), SessionId::unique());
        memory.remember(&alice, "fx.drop", Some(one), now, MINUTE);
        assert!(memory.approved(&alice, "fx.drop", Some(one), now));
        assert!(!memory.approved(&alice, "fx.drop", Some(two), now));
        assert!(!memory.approved(&alice, "fx.drop", None, now));
        // One for any session holds in every one.
        memory.remember(&alice, "fx.drop", None, now, MINUTE);
        assert!(memory.approved(&alice, "fx.drop", Some(two), now));
    }

    #[test]
    fn a_caller_keeps_its_latest_approvals_only() {
        let memory = Memory::default();
        let now = Instant::now();
        let alice = owner("acme", "alice");
        for i in 0..PER_CALLER + 10 {
            let tool = format!("fx.f{i}");
            let at = now + Duration::from_secs(i as u64);
            memory.remember(&alice, &tool, None, at, 60 * MINUTE);
        }
        assert_eq!(count(&memory), PER_CALLER);
        let later = now + Duration::from_secs(PER_CALLER as u64 + 9);
        assert!(memory.approved(&alice, &format!("fx.f{}", PER_CALLER + 9), None, later));
        assert!(!memory.approved(&alice, "fx.f0", None, now));
        // Approving again replaces, never duplicates.
        memory.remember(&alice, "fx.f70", None, later, 60 * MINUTE);
        memory.remember(&alice, "fx.f70", None, later, 60 * MINUTE);
        assert_eq!(count(&memory), PER_CALLER);
    }

    #[test]
    fn the_host_keeps_a_bounded_number_of_callers() {
        let memory = Memory::default();
        let now = Instant::now();
        for i in 0..CALLERS + 5 {
            let at = now + Duration::from_millis(i as u64);
            memory.remember(
                &owner("acme", &format!("u{i}")),
                "fx.drop",
                None,
                at,
                MINUTE,
            );
        }
        let callers = memory.callers.lock().unwrap().len();
        assert_eq!(callers, CALLERS);
        // The newest stayed, the soonest to end went.
        let newest = owner("acme", &format!("u{}", CALLERS + 4));
        assert!(memory.approved(&newest, "fx.drop", None, now));
        assert!(!memory.approved(&owner("acme", "u0"), "fx.drop", None, now));
    }
}
