//! Remembered approvals in this process.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use super::{PER_ORG, PER_USER, RememberedApprovals};
use crate::{Owner, StoreError};

/// Approvals the process keeps at most, all organisations' together: the
/// bound of its memory, which no one organisation reaches alone.
const IN_ALL: usize = 16 * PER_ORG;

/// One user's approvals: tool → until when.
type Tools = HashMap<String, Instant>;

/// Approvals, by organisation, then user.
#[derive(Default)]
pub struct InMemory(Mutex<HashMap<String, HashMap<String, Tools>>>);

/// Drops what has ended, then the soonest to end while more than `max`
/// remain, from each of `groups`' maps of tool → until.
fn trim<'a>(
    groups: impl Iterator<Item = &'a mut HashMap<String, Instant>>,
    max: usize,
    now: Instant,
) {
    let mut groups: Vec<_> = groups.collect();
    for tools in &mut groups {
        tools.retain(|_, until| *until > now);
    }
    loop {
        let held: usize = groups.iter().map(|tools| tools.len()).sum();
        if held <= max {
            return;
        }
        let soonest = groups
            .iter()
            .enumerate()
            .flat_map(|(i, tools)| {
                tools
                    .iter()
                    .map(move |(tool, until)| (*until, i, tool.clone()))
            })
            .min();
        let Some((_, i, tool)) = soonest else { return };
        groups[i].remove(&tool);
    }
}

#[async_trait::async_trait]
impl RememberedApprovals for InMemory {
    async fn approved(&self, owner: &Owner, tool: &str) -> Result<bool, StoreError> {
        let orgs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let until = orgs
            .get(&owner.org)
            .and_then(|users| users.get(&owner.user))
            .and_then(|tools| tools.get(tool));
        Ok(until.is_some_and(|until| *until > Instant::now()))
    }

    async fn remember(
        &self,
        owner: &Owner,
        tool: &str,
        duration: Duration,
    ) -> Result<(), StoreError> {
        let now = Instant::now();
        let mut orgs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let users = orgs.entry(owner.org.clone()).or_default();
        let tools = users.entry(owner.user.clone()).or_default();
        tools.insert(tool.to_owned(), now + duration);
        trim(std::iter::once(tools), PER_USER, now);
        trim(users.values_mut(), PER_ORG, now);
        users.retain(|_, tools| !tools.is_empty());
        let everyone = orgs.values_mut().flat_map(|users| users.values_mut());
        trim(everyone, IN_ALL, now);
        orgs.retain(|_, users| {
            users.retain(|_, tools| !tools.is_empty());
            !users.is_empty()
        });
        Ok(())
    }
}
