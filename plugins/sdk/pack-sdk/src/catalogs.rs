//! The caller's catalog, parsed once per distinct text. The host hands it
//! to the pack as JSON on every call (tens of kilobytes with the input
//! schemas), and nearly every caller of one host sees the same text: parsing
//! it and writing code's bindings from it per call cost a code call more
//! than a millisecond. The few most recent are kept; a text is matched
//! whole, so a caller never gets a catalog cut for another. What most calls
//! need (code's bindings, the projects) is read from an [`Outline`]: the
//! whole catalog, whose parsed schemas take about eight times its text, is
//! parsed only for a pack that asks for it.

use std::{
    collections::{BTreeMap, VecDeque},
    sync::{Arc, Mutex, OnceLock},
};

use pack_api::{Catalog, CatalogPrompt, Owner};
use serde::Deserialize;

use crate::bridge;

/// How many distinct catalogs are kept (one per allow-list and
/// organisation in use, the most recent first).
const KEPT: usize = 8;

/// A catalog, and what code binds from it, each made when first asked for.
pub struct SharedCatalog {
    /// As the host sent it.
    text: String,
    outline: OnceLock<Outline>,
    catalog: OnceLock<Catalog>,
    bindings: OnceLock<String>,
}

/// A [`Catalog`] without its schemas and examples (a text that does not
/// parse is empty, as from a host too old to send a catalog).
#[derive(Debug, Default, Deserialize)]
pub struct Outline {
    /// Pack functions, in listing order.
    #[serde(default)]
    pub tools: Vec<ToolOutline>,
    /// The MCP prompts of the caller's packs.
    #[serde(default)]
    pub prompts: Vec<CatalogPrompt>,
    /// `alias -> pack.function`.
    #[serde(default)]
    pub aliases: BTreeMap<String, String>,
    /// The `[projects]` this caller may see: name -> absolute path.
    #[serde(default)]
    pub projects: BTreeMap<String, String>,
    /// The host's `[identity]`, when it says.
    #[serde(default)]
    pub identity: Option<Owner>,
}

/// A pack function as an [`Outline`] has it.
#[derive(Debug, Default, Deserialize)]
pub struct ToolOutline {
    /// Pack call name.
    pub pack: String,
    /// Function name.
    pub function: String,
    /// `pack.function(a: string, b?: integer = 3)`.
    pub signature: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
}

impl SharedCatalog {
    fn new(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            outline: OnceLock::new(),
            catalog: OnceLock::new(),
            bindings: OnceLock::new(),
        }
    }

    /// The whole catalog: what [`Context::catalog`](crate::Context::catalog)
    /// copies.
    pub fn catalog(&self) -> &Catalog {
        self.catalog
            .get_or_init(|| serde_json::from_str(&self.text).unwrap_or_default())
    }

    /// The catalog without its schemas.
    pub fn outline(&self) -> &Outline {
        self.outline
            .get_or_init(|| serde_json::from_str(&self.text).unwrap_or_default())
    }

    /// [`bridge::bindings`] as JSON text.
    pub fn bindings(&self) -> &str {
        self.bindings
            .get_or_init(|| bridge::bindings(self.outline()).to_string())
    }
}

static RECENT: Mutex<VecDeque<Arc<SharedCatalog>>> = Mutex::new(VecDeque::new());

/// The catalog `text` says, kept from earlier or new (parsed as its parts
/// are asked for; a text that does not parse is an empty catalog, as from a
/// host too old to send one).
pub(crate) fn shared(text: &str) -> Arc<SharedCatalog> {
    let mut recent = lock();
    if let Some(found) = take(&mut recent, text) {
        return found;
    }
    let shared = Arc::new(SharedCatalog::new(text));
    recent.push_front(Arc::clone(&shared));
    recent.truncate(KEPT);
    shared
}

/// The kept catalog of `text`, moved to the front.
fn take(recent: &mut VecDeque<Arc<SharedCatalog>>, text: &str) -> Option<Arc<SharedCatalog>> {
    let at = recent.iter().position(|kept| kept.text == text)?;
    let found = recent.remove(at)?;
    recent.push_front(Arc::clone(&found));
    Some(found)
}

fn lock() -> std::sync::MutexGuard<'static, VecDeque<Arc<SharedCatalog>>> {
    RECENT.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(project: &str) -> String {
        format!(r#"{{"tools":[],"aliases":{{}},"projects":{{"{project}":"/srv/{project}"}}}}"#)
    }

    #[test]
    fn one_text_is_parsed_once_and_another_is_its_own() {
        let first = shared(&text("alpha"));
        assert!(Arc::ptr_eq(&first, &shared(&text("alpha"))));
        let other = shared(&text("beta"));
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(other.catalog().projects["beta"], "/srv/beta");
        assert_eq!(other.outline().projects["beta"], "/srv/beta");
        assert!(other.bindings().contains("/srv/beta"));
        assert!(!other.bindings().contains("alpha"));
    }

    /// Code's bindings come from the outline: the schemas are not parsed
    /// for them.
    #[test]
    fn bindings_leave_the_schemas_unparsed() {
        let text = r#"{"tools":[{"pack":"p","function":"f","signature":"p.f(a: string)","description":"F.","input_schema":{"type":"object","properties":{"a":{"type":"string"}}}}],"aliases":{"g":"p.f"},"projects":{}}"#;
        let shared = shared(text);
        assert!(shared.bindings().contains("p.f(a: string)"));
        assert_eq!(shared.outline().aliases["g"], "p.f");
        assert!(
            shared.catalog.get().is_none(),
            "the whole catalog was parsed"
        );
        assert_eq!(shared.catalog().tools[0].input_schema["type"], "object");
    }

    #[test]
    fn only_the_most_recent_are_kept() {
        let oldest = shared(&text("oldest"));
        for n in 0..KEPT {
            shared(&text(&format!("newer{n}")));
        }
        assert!(!Arc::ptr_eq(&oldest, &shared(&text("oldest"))));
        assert!(lock().len() <= KEPT);
    }
}
