//! The `requestState`s of multi round-trip requests (2026-07-28): sealed by
//! this host (signed with its key, bound to the caller and the request,
//! expiring), and each opened once. A state sent again after it was used
//! is refused, so one answer makes one call, whatever is replayed. Which
//! states were used is kept behind [`SpentStates`]: in PostgreSQL with
//! `[state] database`, so a state one instance opened is refused by every
//! other sharing its key.

use std::{sync::Arc, time::Duration};

use rmcp::{
    ErrorData,
    model::{RequestStateCodec, SealOptions},
};
use serde::{Serialize, de::DeserializeOwned};
use sha2::{Digest, Sha256};
use state_store::SpentStates;

/// The variable holding the key states are signed with (32 bytes or
/// more), shared by instances that resume each other's requests.
pub const STATE_KEY_VARIABLE: &str = "PACKHOST_STATE_KEY";

pub(super) struct States {
    codec: RequestStateCodec,
    spent: Arc<dyn SpentStates>,
    /// How long a state is valid.
    ttl: Duration,
}

impl States {
    /// States valid for `ttl`, signed with the key in [`STATE_KEY_VARIABLE`],
    /// else one made for this process (states then resume only here); the
    /// used ones recorded in `spent`.
    pub(super) fn new(ttl: Duration, spent: Arc<dyn SpentStates>) -> Result<Self, String> {
        let key = match std::env::var(STATE_KEY_VARIABLE) {
            Ok(key) => key.into_bytes(),
            Err(_) => {
                let mut key = vec![0; 32];
                getrandom::fill(&mut key).map_err(|e| format!("no random key: {e}"))?;
                key
            }
        };
        Self::with_key(key, ttl, spent)
    }

    pub(super) fn with_key(
        key: Vec<u8>,
        ttl: Duration,
        spent: Arc<dyn SpentStates>,
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
    pub(super) async fn open<T: DeserializeOwned>(
        &self,
        sealed: &str,
        binding: &str,
    ) -> Result<T, ErrorData> {
        let state = self.verify(sealed, binding)?;
        let digest = Sha256::digest(sealed.as_bytes()).into();
        self.spent.spend(digest, self.ttl).await.map_err(refused)?;
        Ok(state)
    }

    /// What `sealed` says, as [`Self::open`] checks it, without using it:
    /// where to send a retry that another instance is to open.
    pub(super) fn verify<T: DeserializeOwned>(
        &self,
        sealed: &str,
        binding: &str,
    ) -> Result<T, ErrorData> {
        let opened = self.codec.open_json_with(sealed, binding.as_bytes());
        opened.map_err(|e| refused(e.to_string()))
    }
}

fn refused(why: String) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "requestState refused ({why}): it was changed, has expired, was used already, or \
             belongs to another request or caller; send the request again without it"
        ),
        None,
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use state_store::SpentHere;

    use super::*;

    fn states() -> States {
        let spent = Arc::new(SpentHere::default());
        States::with_key(vec![7; 32], Duration::from_secs(60), spent).unwrap()
    }

    #[tokio::test]
    async fn a_state_opens_once_for_its_own_request_only() {
        let states = states();
        let sealed = states.seal(&json!({"id": "a"}), "ada\ntools/call");
        let other = states.open::<Value>(&sealed, "bob\ntools/call").await;
        assert!(other.is_err(), "another caller's binding");
        let opened: Value = states.open(&sealed, "ada\ntools/call").await.unwrap();
        assert_eq!(opened["id"], "a");
        let again = states.open::<Value>(&sealed, "ada\ntools/call").await;
        let again = again.unwrap_err();
        assert!(again.message.contains("used already"), "{again:?}");
    }
}
