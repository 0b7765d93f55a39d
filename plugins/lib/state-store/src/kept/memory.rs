//! Kept results in this process: what one instance alone needs.

use std::{
    collections::{HashMap, VecDeque},
    sync::Mutex,
    time::{Duration, Instant},
};

use super::{Bounds, Kept, Listed, ResultStore};
use crate::{Owner, StoreError};

/// Kept results in memory, gone with the process.
pub struct InMemory {
    bounds: Bounds,
    kept: Mutex<Shelf>,
}

#[derive(Default)]
struct Shelf {
    /// Oldest first, which is also expiry order (one lifetime for all).
    order: VecDeque<Entry>,
    by_handle: HashMap<String, Kept>,
}

struct Entry {
    handle: String,
    owner: Owner,
    bytes: u64,
    expires: Instant,
}

/// Bytes and results of the entries a test picks.
fn usage<'a>(entries: impl Iterator<Item = &'a Entry>) -> (u64, u64) {
    entries.fold((0, 0), |(bytes, count), e| (bytes + e.bytes, count + 1))
}

impl Shelf {
    /// Drops the oldest entry `which` picks; whether there was one.
    fn drop_oldest(&mut self, which: impl Fn(&Entry) -> bool) -> bool {
        let Some(at) = self.order.iter().position(which) else {
            return false;
        };
        let entry = self.order.remove(at).expect("found just now");
        self.by_handle.remove(&entry.handle);
        true
    }

    /// Drops the oldest entries `which` picks while they hold more than
    /// `bytes` or `count`.
    fn trim(&mut self, which: impl Fn(&Entry) -> bool + Copy, bytes: u64, count: u64) {
        loop {
            let (held, n) = usage(self.order.iter().filter(|e| which(e)));
            if (held <= bytes && n <= count) || !self.drop_oldest(which) {
                return;
            }
        }
    }

    fn expire(&mut self, now: Instant) {
        while self.order.front().is_some_and(|e| e.expires <= now) {
            self.drop_oldest(|_| true);
        }
    }

    /// The organisation holding the most bytes.
    fn largest_org(&self) -> Option<String> {
        let mut held: HashMap<&str, u64> = HashMap::new();
        for entry in &self.order {
            *held.entry(&entry.owner.org).or_default() += entry.bytes;
        }
        let largest = held.into_iter().max_by_key(|(_, bytes)| *bytes);
        largest.map(|(org, _)| org.to_owned())
    }
}

impl InMemory {
    /// An empty store keeping to `bounds`.
    pub fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            kept: Mutex::default(),
        }
    }

    fn shelf(&self) -> std::sync::MutexGuard<'_, Shelf> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait::async_trait]
impl ResultStore for InMemory {
    async fn keep(&self, handle: &str, kept: &Kept, ttl: Duration) -> Result<bool, StoreError> {
        let bytes = kept.text.len() as u64;
        if !self.bounds.room_for(bytes) {
            return Ok(false);
        }
        let now = Instant::now();
        let mut shelf = self.shelf();
        shelf.expire(now);
        shelf.order.push_back(Entry {
            handle: handle.to_owned(),
            owner: kept.owner.clone(),
            bytes,
            expires: now + ttl,
        });
        shelf.by_handle.insert(handle.to_owned(), kept.clone());
        let b = self.bounds;
        let owner = &kept.owner;
        shelf.trim(|e| &e.owner == owner, b.user_bytes, b.user_count);
        shelf.trim(|e| e.owner.org == owner.org, b.org_bytes, b.org_count);
        while usage(shelf.order.iter()).0 > b.bytes {
            let largest = shelf
                .largest_org()
                .expect("over the bound: something is kept");
            shelf.drop_oldest(|e| e.owner.org == largest);
        }
        Ok(true)
    }

    async fn get(&self, owner: &Owner, handle: &str) -> Result<Option<Kept>, StoreError> {
        let mut shelf = self.shelf();
        shelf.expire(Instant::now());
        let kept = shelf.by_handle.get(handle);
        Ok(kept.filter(|kept| &kept.owner == owner).cloned())
    }

    async fn list(&self, owner: &Owner) -> Result<Vec<Listed>, StoreError> {
        let mut shelf = self.shelf();
        shelf.expire(Instant::now());
        let shelf = &*shelf;
        Ok(shelf
            .order
            .iter()
            .filter(|e| &e.owner == owner)
            .filter_map(|e| {
                let kept = shelf.by_handle.get(&e.handle)?;
                Some(Listed {
                    handle: e.handle.clone(),
                    tool: kept.tool.clone(),
                    chars: kept.text.chars().count() as u64,
                })
            })
            .collect())
    }
}
