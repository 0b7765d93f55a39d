//! Which integration of an organisation serves a URI: learnt from what the
//! pack gave that organisation (its integrations' listed resources and
//! templates, the links and embedded resources of their results). A URI
//! that no integration of the caller's organisation gave is unknown to it,
//! however it was guessed: each organisation has a table of its own.

use std::{
    collections::{HashMap, VecDeque},
    sync::Mutex,
};

use pack_sdk::{Value, uri_template};

/// URIs kept per organisation; past it the oldest is forgotten.
const PER_ORG: usize = 4096;
/// Organisations kept; past it the table starts over (a URI forgotten is
/// learnt again from the integrations' listings).
const ORGS: usize = 1024;

#[derive(Default)]
pub(crate) struct Uris {
    by_org: Mutex<HashMap<String, Known>>,
}

/// One organisation's.
#[derive(Default)]
struct Known {
    /// URI → integration id.
    uris: HashMap<String, String>,
    /// The same URIs, oldest first.
    order: VecDeque<String>,
    /// Integration id → its templates.
    templates: HashMap<String, Vec<String>>,
}

impl Uris {
    fn with<R>(&self, org: &str, f: impl FnOnce(&mut Known) -> R) -> R {
        let mut by_org = self.by_org.lock().unwrap_or_else(|e| e.into_inner());
        if by_org.len() >= ORGS && !by_org.contains_key(org) {
            by_org.clear();
        }
        f(by_org.entry(org.to_owned()).or_default())
    }

    /// `integration` of `org` gave these URIs.
    pub(crate) fn keep(&self, org: &str, integration: &str, uris: Vec<String>) {
        if uris.is_empty() {
            return;
        }
        self.with(org, |known| {
            for uri in uris {
                if known
                    .uris
                    .insert(uri.clone(), integration.to_owned())
                    .is_some()
                {
                    known.order.retain(|kept| *kept != uri);
                } else if known.order.len() == PER_ORG
                    && let Some(oldest) = known.order.pop_front()
                {
                    known.uris.remove(&oldest);
                }
                known.order.push_back(uri);
            }
        });
    }

    /// `integration` of `org` has these templates now.
    pub(crate) fn set_templates(&self, org: &str, integration: &str, templates: Vec<String>) {
        self.with(org, |known| {
            known.templates.insert(integration.to_owned(), templates);
        });
    }

    /// The integration of `org` that gave `uri`, or whose template it fits.
    pub(crate) fn integration_of(&self, org: &str, uri: &str) -> Option<String> {
        self.with(org, |known| {
            known.uris.get(uri).cloned().or_else(|| {
                let mut templates = known.templates.iter();
                let fits = templates.find(|(_, templates)| {
                    templates
                        .iter()
                        .any(|t| uri_template::matches(t, uri).is_some())
                });
                fits.map(|(integration, _)| integration.clone())
            })
        })
    }

    /// The integration of `org` that has template `template`.
    pub(crate) fn integration_of_template(&self, org: &str, template: &str) -> Option<String> {
        self.with(org, |known| {
            let mut templates = known.templates.iter();
            let has = templates.find(|(_, templates)| templates.iter().any(|t| t == template));
            has.map(|(integration, _)| integration.clone())
        })
    }
}

/// The URIs MCP content `blocks` (as JSON) link or embed.
pub(crate) fn linked(blocks: &[Value]) -> Vec<String> {
    let uris = mcp_downstream::linked_uris(blocks);
    uris.map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use pack_sdk::json;

    use super::*;

    #[test]
    fn an_organisation_finds_its_own_integrations_uris_only() {
        let uris = Uris::default();
        let blocks = [
            json!({"type": "resource_link", "uri": "demo://a", "name": "a"}),
            json!({"type": "resource", "resource": {"uri": "demo://b", "text": "b"}}),
            json!({"type": "text", "text": "demo://c"}),
        ];
        uris.keep("acme", "i1", linked(&blocks));
        uris.set_templates("acme", "i1", vec!["demo://items/{id}".to_owned()]);
        assert_eq!(
            uris.integration_of("acme", "demo://a").as_deref(),
            Some("i1")
        );
        assert_eq!(
            uris.integration_of("acme", "demo://b").as_deref(),
            Some("i1")
        );
        assert_eq!(uris.integration_of("acme", "demo://c"), None);
        assert_eq!(
            uris.integration_of("acme", "demo://items/7").as_deref(),
            Some("i1")
        );
        assert_eq!(
            uris.integration_of_template("acme", "demo://items/{id}")
                .as_deref(),
            Some("i1")
        );
        for uri in ["demo://a", "demo://items/7"] {
            assert_eq!(uris.integration_of("globex", uri), None, "{uri}");
        }
    }

    #[test]
    fn the_oldest_uri_goes_first() {
        let uris = Uris::default();
        let many: Vec<String> = (0..=PER_ORG).map(|n| format!("demo://{n}")).collect();
        uris.keep("acme", "i1", many);
        assert_eq!(uris.integration_of("acme", "demo://0"), None);
        let last = format!("demo://{PER_ORG}");
        assert_eq!(uris.integration_of("acme", &last).as_deref(), Some("i1"));
    }
}
