//! Results too large to send, kept for their owner (organisation and user)
//! until they expire. Both stores keep the same [`Bounds`], so one owner's
//! flood pushes out only its own: past a user's bound their oldest go,
//! past an organisation's its oldest, and past the total the oldest of the
//! organisation that holds the most.

mod memory;
mod postgres;
#[cfg(test)]
mod tests;

use std::{sync::Arc, time::Duration};

pub use self::{memory::InMemory, postgres::Postgres};
use crate::{Owner, StoreError};

/// One kept result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// Who made it: nobody else reads it.
    pub owner: Owner,
    /// The tool that returned it.
    pub tool: String,
    /// Its text, as the client would have got it.
    pub text: Arc<str>,
}

/// A kept result as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its handle.
    pub handle: String,
    /// The tool that returned it.
    pub tool: String,
    /// Its length in characters.
    pub chars: u64,
}

/// How much is kept, at most: text bytes and results per user and per
/// organisation, and text bytes in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// All owners' text together.
    pub bytes: u64,
    /// One organisation's text.
    pub org_bytes: u64,
    /// One organisation's results.
    pub org_count: u64,
    /// One user's text.
    pub user_bytes: u64,
    /// One user's results.
    pub user_count: u64,
}

impl Bounds {
    /// Whether a text of `bytes` can be kept at all: a larger one would
    /// push out everything its owner has and still not fit.
    pub fn room_for(&self, bytes: u64) -> bool {
        bytes <= self.bytes.min(self.org_bytes).min(self.user_bytes)
            && self.org_count.min(self.user_count) > 0
    }
}

/// Where kept results live.
#[async_trait::async_trait]
pub trait ResultStore: Send + Sync {
    /// Keeps `kept` under `handle` for `ttl`, first making room as the
    /// [`Bounds`] say; `false` when it is too large to keep at all.
    async fn keep(&self, handle: &str, kept: &Kept, ttl: Duration) -> Result<bool, StoreError>;

    /// `handle`'s result if `owner` made it and it has not expired; `None`
    /// alike for unknown, expired and another owner's.
    async fn get(&self, owner: &Owner, handle: &str) -> Result<Option<Kept>, StoreError>;

    /// `owner`'s results, oldest first.
    async fn list(&self, owner: &Owner) -> Result<Vec<Listed>, StoreError>;
}
