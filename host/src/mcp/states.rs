//! The `requestState`s of multi round-trip requests (2026-07-28): sealed by
//! this host (signed with its key, bound to the caller and the request,
//! expiring), and each opened once. A state sent again after it was used
//! is refused, so one answer makes one call, whatever is replayed. Which
//! states were used is kept behind [`Spent`], so instances sharing a key
//! can share that record too.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use rmcp::{
    ErrorData,
    model::{RequestStateCodec, SealOptions},
};
use serde::{Serialize, de::DeserializeOwned};
use sha2::{Digest, Sha256};

/// The variable holding the key states are signed with (32 bytes or
/// more), shared by instances that resume each other's requests.
pub const STATE_KEY_VARIABLE: &str = "PACKHOST_STATE_KEY";

/// The record of states already used.
pub(super) trait Spent: Send + Sync {
    /// Records the state of `digest` as used, remembered for `keep` (at
    /// least as long as it is valid): `Err` with the reason when it was
    /// used before, or cannot be recorded.
    fn spend(&self, digest: [u8; 32], keep: Duration) -> Result<(), String>;
}

/// States used, in this process.
#[derive(Default)]
pub(super) struct SpentHere(Mutex<HashMap<[u8; 32], Instant>>);

/// States remembered as used at once; past it (after the expired are
/// dropped) further states are refused rather than forgotten early.
const SPENT_MAX: usize = 65_536;

impl Spent for SpentHere {
    fn spend(&self, digest: [u8; 32], keep: Duration) -> Result<(), String> {
        let mut spent = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if spent.get(&digest).is_some_and(|until| *until > now) {
            return Err("it was used already: a state answers its request once".to_owned());
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

/// Seals and opens states.
pub(super) struct States {
    codec: RequestStateCodec,
    spent: Arc<dyn Spent>,
    /// How long a state is valid.
    ttl: Duration,
}

impl States {
    /// States valid for `ttl`, signed with the key in [`STATE_KEY_VARIABLE`],
    /// else one made for this process (states then resume only here).
    pub(super) fn new(ttl: Duration) -> Result<Self, String> {
        let key = match std::env::var(STATE_KEY_VARIABLE) {
            Ok(key) => key.into_bytes(),
            Err(_) => {
                let mut key = vec![0; 32];
                getrandom::fill(&mut key).map_err(|e| format!("no random key: {e}"))?;
                key
            }
        };
        Self::with_key(key, ttl, Arc::new(SpentHere::default()))
    }

    pub(super) fn with_key(
        key: Vec<u8>,
        ttl: Duration,
        spent: Arc<dyn Spent>,
    ) -> Result<Self, String> {
        let codec =
            RequestStateCodec::try_new(key).map_err(|e| format!("`{STATE_KEY_VARIABLE}`: {e}"))?;
        Ok(Self { codec, spent, ttl })
    }

    /// `state` sealed for the request `binding` names.
    pub(super) fn seal<T: Serialize>(&self, state: &T, binding: &str) -> String {
        let options = SealOptions::new()
            .associated_data(binding.as_bytes())
            .ttl(self.ttl);
        self.codec
            .seal_json_with(state, &options)
            .expect("a state of strings and JSON serialises")
    }

    /// What `sealed` says, if this host sealed it for the request `binding`
    /// names, it has not expired, and it was not used before (it is used
    /// now).
    pub(super) fn open<T: DeserializeOwned>(
        &self,
        sealed: &str,
        binding: &str,
    ) -> Result<T, ErrorData> {
        let refused = |why: String| {
            ErrorData::invalid_params(
                format!(
                    "requestState refused ({why}): it was changed, has expired, was used \
                     already, or belongs to another request or caller; send the request again \
                     without it"
                ),
                None,
            )
        };
        let state = self
            .codec
            .open_json_with(sealed, binding.as_bytes())
            .map_err(|e| refused(e.to_string()))?;
        let digest = Sha256::digest(sealed.as_bytes()).into();
        self.spent.spend(digest, self.ttl).map_err(refused)?;
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn states() -> States {
        let spent = Arc::new(SpentHere::default());
        States::with_key(vec![7; 32], Duration::from_secs(60), spent).unwrap()
    }

    #[test]
    fn a_state_opens_once_for_its_own_request_only() {
        let states = states();
        let sealed = states.seal(&json!({"id": "a"}), "ada\ntools/call");
        let other = states.open::<Value>(&sealed, "bob\ntools/call");
        assert!(other.is_err(), "another caller's binding");
        let opened: Value = states.open(&sealed, "ada\ntools/call").unwrap();
        assert_eq!(opened["id"], "a");
        let again = states
            .open::<Value>(&sealed, "ada\ntools/call")
            .unwrap_err();
        assert!(again.message.contains("used already"), "{again:?}");
    }

    #[test]
    fn a_full_record_refuses_rather_than_forgets() {
        let spent = SpentHere::default();
        for n in 0..SPENT_MAX {
            let mut digest = [0; 32];
            digest[..8].copy_from_slice(&(n as u64).to_le_bytes());
            spent.spend(digest, Duration::from_secs(60)).unwrap();
        }
        let refused = spent.spend([9; 32], Duration::from_secs(60)).unwrap_err();
        assert!(refused.contains("too many"), "{refused}");
        let mut first = [0; 32];
        first[..8].copy_from_slice(&0u64.to_le_bytes());
        assert!(spent.spend(first, Duration::from_secs(60)).is_err());
    }
}
