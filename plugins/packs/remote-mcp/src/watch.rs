//! Resources followed for callers: a caller's subscription is one
//! downstream `resources/subscribe` on its own connection (its lane), and
//! a server's update on that connection goes to the subscriptions of that
//! lane and URI only. The last one to leave unsubscribes downstream.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use tokio::sync::mpsc;

/// (connection key, URI).
type Followed = (String, String);

/// Each followed resource's watches: (id, where its changes go).
type Watches = HashMap<Followed, Vec<(u64, mpsc::UnboundedSender<()>)>>;

#[derive(Default)]
pub(crate) struct Watchers {
    by_resource: Mutex<Watches>,
}

/// One subscription's place; leaves when dropped, and runs `last` when
/// it was the last of its lane and URI.
pub(crate) struct Watch {
    watchers: Arc<Watchers>,
    followed: Followed,
    id: u64,
    pub(crate) changes: mpsc::UnboundedReceiver<()>,
    last: Option<Box<dyn FnOnce() + Send>>,
}

impl Watchers {
    fn held(&self) -> std::sync::MutexGuard<'_, Watches> {
        self.by_resource.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Follow `uri` on connection `key`; `last` runs when the last watch of
    /// both leaves.
    pub(crate) fn watch(
        self: &Arc<Self>,
        key: &str,
        uri: &str,
        last: Box<dyn FnOnce() + Send>,
    ) -> Watch {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let (sender, changes) = mpsc::unbounded_channel();
        let followed = (key.to_owned(), uri.to_owned());
        self.held()
            .entry(followed.clone())
            .or_default()
            .push((id, sender));
        Watch {
            watchers: Arc::clone(self),
            followed,
            id,
            changes,
            last: Some(last),
        }
    }

    /// The server on connection `key` says `uri` changed.
    pub(crate) fn updated(&self, key: &str, uri: &str) {
        let followed = (key.to_owned(), uri.to_owned());
        if let Some(watches) = self.held().get(&followed) {
            for (_, sender) in watches {
                let _ = sender.send(());
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut held = self.watchers.held();
        let Some(watches) = held.get_mut(&self.followed) else {
            return;
        };
        watches.retain(|(id, _)| *id != self.id);
        if watches.is_empty() {
            held.remove(&self.followed);
            drop(held);
            if let Some(last) = self.last.take() {
                last();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_reaches_the_watches_of_its_lane_and_uri_and_the_last_unsubscribes() {
        let watchers = Arc::new(Watchers::default());
        let left = Arc::new(AtomicU64::new(0));
        let count = |left: &Arc<AtomicU64>| -> Box<dyn FnOnce() + Send> {
            let left = Arc::clone(left);
            Box::new(move || {
                left.fetch_add(1, Ordering::SeqCst);
            })
        };
        let mut ann = watchers.watch("i1@acme/ann", "demo://a", count(&left));
        let mut ann_again = watchers.watch("i1@acme/ann", "demo://a", count(&left));
        let mut bob = watchers.watch("i1@acme/bob", "demo://a", count(&left));
        watchers.updated("i1@acme/ann", "demo://a");
        assert!(ann.changes.try_recv().is_ok());
        assert!(ann_again.changes.try_recv().is_ok());
        assert!(bob.changes.try_recv().is_err(), "another lane's update");
        drop(ann);
        assert_eq!(left.load(Ordering::SeqCst), 0);
        drop(ann_again);
        assert_eq!(left.load(Ordering::SeqCst), 1);
        drop(bob);
        assert_eq!(left.load(Ordering::SeqCst), 2);
    }
}
