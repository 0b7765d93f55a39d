//! The caller's catalog, parsed once per distinct text. The host hands it
//! to the pack as JSON on every call (tens of kilobytes with the input
//! schemas), and nearly every caller of one host sees the same text: parsing
//! it and writing code's bindings from it per call cost a code call more
//! than a millisecond. The few most recent are kept; a text is matched
//! whole, so a caller never gets a catalog cut for another.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, OnceLock},
};

use pack_api::Catalog;

use crate::bridge;

/// How many distinct catalogs are kept (one per allow-list and
/// organisation in use, the most recent first).
const KEPT: usize = 8;

/// A catalog, and what code binds from it, written when first asked for.
#[derive(Default)]
pub struct SharedCatalog {
    /// What [`Context::catalog`](crate::Context::catalog) copies.
    pub catalog: Catalog,
    bindings: OnceLock<String>,
}

impl SharedCatalog {
    /// [`bridge::bindings`] as JSON text.
    pub fn bindings(&self) -> &str {
        self.bindings
            .get_or_init(|| bridge::bindings(&self.catalog).to_string())
    }
}

static RECENT: Mutex<VecDeque<(String, Arc<SharedCatalog>)>> = Mutex::new(VecDeque::new());

/// The catalog `text` says, parsed now or earlier (a text that does not
/// parse is an empty catalog, as from a host too old to send one).
pub(crate) fn shared(text: &str) -> Arc<SharedCatalog> {
    if let Some(found) = take(&mut lock(), text) {
        return found;
    }
    // Parsed outside the lock; a call that parsed the same text meanwhile
    // keeps its own.
    let parsed = Arc::new(SharedCatalog {
        catalog: serde_json::from_str(text).unwrap_or_default(),
        bindings: OnceLock::new(),
    });
    let mut recent = lock();
    if let Some(found) = take(&mut recent, text) {
        return found;
    }
    recent.push_front((text.to_owned(), Arc::clone(&parsed)));
    recent.truncate(KEPT);
    parsed
}

/// The kept catalog of `text`, moved to the front.
fn take(
    recent: &mut VecDeque<(String, Arc<SharedCatalog>)>,
    text: &str,
) -> Option<Arc<SharedCatalog>> {
    let at = recent.iter().position(|(kept, _)| kept == text)?;
    let entry = recent.remove(at)?;
    let found = Arc::clone(&entry.1);
    recent.push_front(entry);
    Some(found)
}

fn lock() -> std::sync::MutexGuard<'static, VecDeque<(String, Arc<SharedCatalog>)>> {
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
        assert_eq!(other.catalog.projects["beta"], "/srv/beta");
        assert!(other.bindings().contains("/srv/beta"));
        assert!(!other.bindings().contains("alpha"));
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
