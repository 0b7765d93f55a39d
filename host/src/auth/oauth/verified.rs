//! Access tokens already checked: a client sends the same token with every
//! request, and checking its signature again each time cost a third of the
//! throughput of a static token (`packhost-bench-http`). A verdict is kept,
//! by the token's SHA-256 (never the token), until the token expires, and
//! only while the key that checked it is one the issuer still publishes; a
//! refusal is never kept.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use jsonwebtoken::DecodingKey;

use crate::auth::Authenticated;

/// The most verdicts kept: past it, the expired go, then all.
const KEPT: usize = 4096;

struct Verdict {
    caller: Authenticated,
    /// The key that checked the token.
    key: Arc<DecodingKey>,
    /// Seconds since the epoch from which the token is refused (its `exp`
    /// and the leeway).
    refused_from: u64,
}

#[derive(Default)]
pub(super) struct Verified(Mutex<HashMap<[u8; 32], Verdict>>);

impl Verified {
    /// The caller the token of `digest` was found to be, if it still is at
    /// `now`: not expired, and its key one that `published` still holds.
    pub(super) fn get(
        &self,
        digest: &[u8; 32],
        now: u64,
        published: impl Fn(&Arc<DecodingKey>) -> bool,
    ) -> Option<Authenticated> {
        let mut kept = self.lock();
        let verdict = kept.get(digest)?;
        if now < verdict.refused_from && published(&verdict.key) {
            return Some(verdict.caller.clone());
        }
        kept.remove(digest);
        None
    }

    /// Keep that the token of `digest`, checked by `key`, is `caller` until
    /// `refused_from`.
    pub(super) fn keep(
        &self,
        digest: [u8; 32],
        caller: Authenticated,
        key: Arc<DecodingKey>,
        refused_from: u64,
        now: u64,
    ) {
        let mut kept = self.lock();
        if kept.len() >= KEPT {
            kept.retain(|_, verdict| now < verdict.refused_from);
            if kept.len() >= KEPT {
                kept.clear();
            }
        }
        let verdict = Verdict {
            caller,
            key,
            refused_from,
        };
        kept.insert(digest, verdict);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Verdict>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::Identity;

    fn caller(user: &str) -> Authenticated {
        Authenticated {
            identity: Identity {
                user: user.into(),
                org: "acme".into(),
                allowed: None,
                admin: false,
            },
            principal: [0; 32],
            scopes: Some(Vec::new()),
        }
    }

    fn key() -> Arc<DecodingKey> {
        let secret = DecodingKey::from_secret(b"only compared by identity here");
        Arc::new(secret.expect("a key from bytes"))
    }

    #[test]
    fn a_verdict_holds_until_its_token_expires_and_while_its_key_is_published() {
        let verified = Verified::default();
        let (signer, other) = (key(), key());
        verified.keep([1; 32], caller("ada"), Arc::clone(&signer), 100, 10);
        let published = |k: &Arc<DecodingKey>| Arc::ptr_eq(k, &signer);
        assert_eq!(
            verified.get(&[1; 32], 99, published).unwrap().identity.user,
            "ada"
        );
        assert!(
            verified.get(&[2; 32], 99, published).is_none(),
            "another token"
        );
        assert!(verified.get(&[1; 32], 100, published).is_none(), "expired");
        assert!(
            verified.get(&[1; 32], 50, published).is_none(),
            "gone once expired"
        );
        verified.keep([1; 32], caller("ada"), Arc::clone(&signer), 100, 10);
        let withdrawn = |k: &Arc<DecodingKey>| Arc::ptr_eq(k, &other);
        assert!(
            verified.get(&[1; 32], 50, withdrawn).is_none(),
            "key withdrawn"
        );
    }

    #[test]
    fn at_most_kept_verdicts_the_expired_going_first() {
        let verified = Verified::default();
        let signer = key();
        verified.keep([0; 32], caller("lasting"), Arc::clone(&signer), 1_000, 10);
        for n in 1..KEPT {
            let digest = [
                (n % 256) as u8,
                (n / 256) as u8,
                1,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
            ];
            verified.keep(digest, caller("brief"), Arc::clone(&signer), 20, 10);
        }
        verified.keep([9; 32], caller("new"), Arc::clone(&signer), 1_000, 30);
        let published = |_: &Arc<DecodingKey>| true;
        assert!(
            verified.get(&[0; 32], 30, published).is_some(),
            "the lasting one stays"
        );
        assert!(verified.get(&[9; 32], 30, published).is_some());
        assert_eq!(verified.lock().len(), 2, "the expired went");
    }
}
