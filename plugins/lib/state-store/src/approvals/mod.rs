//! Approvals a user asked to have remembered for any of their sessions:
//! each belongs to one caller (organisation and user), names one tool, and
//! expires. Bounded per user ([`PER_USER`]) and per organisation
//! ([`PER_ORG`]): past a bound, the approvals of that user or organisation
//! that end soonest go, never another's.

mod memory;
mod postgres;

use std::time::Duration;

pub use self::{memory::InMemory, postgres::Postgres};
use crate::{Owner, StoreError};

/// Remembered approvals one user keeps at most.
pub const PER_USER: usize = 64;

/// Remembered approvals one organisation keeps at most.
pub const PER_ORG: usize = 4096;

/// Where remembered approvals live.
#[async_trait::async_trait]
pub trait RememberedApprovals: Send + Sync {
    /// Whether `owner` approved calls of `tool` and that still holds.
    async fn approved(&self, owner: &Owner, tool: &str) -> Result<bool, StoreError>;

    /// Remember that `owner` approved calls of `tool`, for `duration` from
    /// now (again: from now).
    async fn remember(
        &self,
        owner: &Owner,
        tool: &str,
        duration: Duration,
    ) -> Result<(), StoreError>;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::State;

    const MINUTE: Duration = Duration::from_secs(60);

    fn owner(org: &str, user: &str) -> Owner {
        Owner::new(org, user)
    }

    async fn an_approval_holds_for_its_caller_and_tool_until_it_expires(state: Arc<State>) {
        let store = state.remembered_approvals();
        let ada = owner("acme", "ada");
        store.remember(&ada, "fx.drop", MINUTE).await.unwrap();
        assert!(store.approved(&ada, "fx.drop").await.unwrap());
        assert!(!store.approved(&ada, "fx.other").await.unwrap());
        // Same user name, another organisation: not theirs.
        for other in [owner("globex", "ada"), owner("acme", "bob")] {
            assert!(!store.approved(&other, "fx.drop").await.unwrap());
        }
        store
            .remember(&ada, "fx.soon", Duration::from_millis(1))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!store.approved(&ada, "fx.soon").await.unwrap());
    }

    async fn a_users_flood_pushes_out_only_their_own_approvals(state: Arc<State>) {
        let store = state.remembered_approvals();
        let (ada, bob) = (owner("acme", "ada"), owner("acme", "bob"));
        store.remember(&bob, "fx.drop", MINUTE).await.unwrap();
        for i in 0..PER_USER + 5 {
            // Each later one lasts longer, so the first ones end soonest.
            let lasts = MINUTE + Duration::from_secs(i as u64);
            store
                .remember(&ada, &format!("fx.f{i}"), lasts)
                .await
                .unwrap();
        }
        assert!(store.approved(&bob, "fx.drop").await.unwrap());
        assert!(!store.approved(&ada, "fx.f0").await.unwrap());
        let last = format!("fx.f{}", PER_USER + 4);
        assert!(store.approved(&ada, &last).await.unwrap());
    }

    on_both!(
        an_approval_holds_for_its_caller_and_tool_until_it_expires,
        a_users_flood_pushes_out_only_their_own_approvals,
    );
}
