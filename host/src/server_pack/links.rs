//! The resources a server's results linked or embedded, per caller: each
//! stays readable by the caller who received it (and by no one else
//! through this table), also after the server restarted.

use std::{
    collections::{HashMap, VecDeque},
    sync::Mutex,
};

use serde_json::Value;

use crate::identity::Identity;

/// Links kept per caller; past it the oldest is forgotten.
const PER_CALLER: usize = 256;
/// Callers kept; past it the table starts over.
const CALLERS: usize = 4096;

/// (organisation, user).
type Owner = (String, String);

#[derive(Default)]
pub(super) struct Links {
    by_owner: Mutex<HashMap<Owner, VecDeque<String>>>,
}

impl Links {
    /// Keep the URIs that content `blocks` (MCP content blocks as JSON)
    /// link or embed, for `caller`.
    pub(super) fn keep<'b>(&self, caller: &Identity, blocks: impl IntoIterator<Item = &'b Value>) {
        let uris: Vec<&str> = mcp_downstream::linked_uris(blocks).collect();
        let owner = owner(caller);
        if uris.is_empty() {
            return;
        }
        let mut by_owner = self.by_owner.lock().unwrap_or_else(|e| e.into_inner());
        if by_owner.len() >= CALLERS && !by_owner.contains_key(&owner) {
            by_owner.clear();
        }
        let kept = by_owner.entry(owner).or_default();
        for uri in uris {
            kept.retain(|k| k != uri);
            if kept.len() == PER_CALLER {
                kept.pop_front();
            }
            kept.push_back(uri.to_owned());
        }
    }

    /// Whether `caller` received a link to `uri`.
    pub(super) fn has(&self, caller: &Identity, uri: &str) -> bool {
        let by_owner = self.by_owner.lock().unwrap_or_else(|e| e.into_inner());
        let kept = by_owner.get(&owner(caller));
        kept.is_some_and(|kept| kept.iter().any(|k| k == uri))
    }
}

fn owner(caller: &Identity) -> Owner {
    (caller.org.clone(), caller.user.clone())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Links;
    use crate::identity::Identity;

    fn identity(org: &str, user: &str) -> Identity {
        Identity {
            org: org.to_owned(),
            user: user.to_owned(),
            ..Identity::default()
        }
    }

    #[test]
    fn a_link_is_kept_for_the_caller_who_received_it_only() {
        let links = Links::default();
        let acme = identity("acme", "ann");
        let globex = identity("globex", "ann");
        links.keep(
            &acme,
            &[
                json!({"type": "resource_link", "uri": "demo://a", "name": "a"}),
                json!({"type": "resource", "resource": {"uri": "demo://b", "text": "b"}}),
                json!({"type": "text", "text": "demo://c"}),
            ],
        );
        assert!(links.has(&acme, "demo://a"));
        assert!(links.has(&acme, "demo://b"));
        assert!(!links.has(&acme, "demo://c"));
        assert!(!links.has(&globex, "demo://a"));
    }
}
