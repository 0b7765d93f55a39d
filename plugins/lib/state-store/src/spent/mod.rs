//! The request states already used (MCP 2026-07-28's `requestState`):
//! each opens one retry, once, so one answer makes one call. Kept by the
//! SHA-256 of the sealed state until the state would have expired anyway.

mod postgres;

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

pub use self::postgres::Postgres;

/// The record of states already used.
#[async_trait::async_trait]
pub trait SpentStates: Send + Sync {
    /// Records the state of `digest` as used, remembered for `keep` (at
    /// least as long as it is valid): `Err` with the reason when it was
    /// used before, or cannot be recorded.
    async fn spend(&self, digest: [u8; 32], keep: Duration) -> Result<(), String>;
}

/// Why a state is refused when it was used before.
const USED: &str = "it was used already: a state answers its request once";

/// States used, in this process.
#[derive(Default)]
pub struct SpentHere(Mutex<HashMap<[u8; 32], Instant>>);

/// States remembered as used at once; past it (after the expired are
/// dropped) further states are refused rather than forgotten early.
const SPENT_MAX: usize = 65_536;

#[async_trait::async_trait]
impl SpentStates for SpentHere {
    async fn spend(&self, digest: [u8; 32], keep: Duration) -> Result<(), String> {
        let mut spent = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if spent.get(&digest).is_some_and(|until| *until > now) {
            return Err(USED.to_owned());
        }
        if spent.len() >= SPENT_MAX {
            spent.retain(|_, until| *until > now);
            if spent.len() >= SPENT_MAX {
                return Err("this host holds too many answered requests right now".to_owned());
            }
        }
        spent.insert(digest, now + keep);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    async fn a_state_is_spent_once(state: Arc<crate::State>) {
        let spent = state.spent_states();
        spent.spend([1; 32], MINUTE).await.unwrap();
        let again = spent.spend([1; 32], MINUTE).await.unwrap_err();
        assert!(again.contains("used already"), "{again}");
        spent.spend([2; 32], MINUTE).await.unwrap();
        // Once it would have expired, its record may go.
        spent
            .spend([3; 32], Duration::from_millis(1))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        spent.spend([3; 32], MINUTE).await.unwrap();
    }

    on_both!(a_state_is_spent_once);

    #[tokio::test]
    async fn in_postgres_a_state_spent_by_one_instance_is_refused_by_another() {
        integrations_store::testing::on_postgres(|url| async move {
            let one = crate::State::open(Some(url.clone()));
            one.spent_states().spend([2; 32], MINUTE).await.unwrap();
            // Another instance on the database: what one spent, it refuses.
            let other = crate::State::open(Some(url));
            let again = other.spent_states().spend([2; 32], MINUTE).await;
            assert!(again.unwrap_err().contains("used already"));
        })
        .await;
    }

    #[tokio::test]
    async fn a_full_record_refuses_rather_than_forgets() {
        let spent = SpentHere::default();
        for n in 0..SPENT_MAX {
            let mut digest = [0; 32];
            digest[..8].copy_from_slice(&(n as u64).to_le_bytes());
            spent.spend(digest, MINUTE).await.unwrap();
        }
        let refused = spent.spend([9; 32], MINUTE).await.unwrap_err();
        assert!(refused.contains("too many"), "{refused}");
        let mut first = [0; 32];
        first[..8].copy_from_slice(&0u64.to_le_bytes());
        assert!(spent.spend(first, MINUTE).await.is_err());
    }
}
