//! Static bearer tokens (`[[auth.tokens]]`) → who is calling. Tokens are
//! stored as SHA-256 digests and compared in constant time.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::{
    config::AuthConfig,
    identity::{Identity, ToolFilter},
};

/// The configured tokens.
pub struct Tokens(Vec<([u8; 32], Identity)>);

impl Tokens {
    /// From `[auth]`; digests were checked when the config was loaded.
    pub fn new(config: &AuthConfig) -> Self {
        Self(
            config
                .tokens
                .iter()
                .filter_map(|token| {
                    let digest = decode_hex(&token.sha256)?;
                    let identity = Identity {
                        user: token.user.clone(),
                        org: token.org.clone(),
                        allowed: token
                            .tools
                            .clone()
                            .map(|tools| Arc::new(ToolFilter::new(tools))),
                        admin: token.admin,
                    };
                    Some((digest, identity))
                })
                .collect(),
        )
    }

    /// Whether no token is configured (then HTTP runs without auth).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Who `token` is, and the digest it is known by, comparing against
    /// every digest in constant time.
    pub fn identify(&self, token: &str) -> Option<(&[u8; 32], &Identity)> {
        let digest = sha256(token);
        let mut found = None;
        for (stored, identity) in &self.0 {
            if bool::from(stored.ct_eq(&digest)) {
                found = Some((stored, identity));
            }
        }
        found
    }
}

/// SHA-256 of `token`.
pub fn sha256(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_hex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// A new random token (`ph_` + 64 hex digits) from the OS.
pub fn new_token() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(format!("ph_{}", hex(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TokenConfig;

    #[test]
    fn a_token_is_found_by_its_digest_only() {
        let token = new_token().unwrap();
        assert!(token.starts_with("ph_") && token.len() == 67);
        let config = AuthConfig {
            tokens: vec![TokenConfig {
                user: "ada".into(),
                org: "acme".into(),
                sha256: hex(&sha256(&token)),
                tools: Some(vec!["proj.*".into()]),
                admin: false,
            }],
            oauth: None,
        };
        let tokens = Tokens::new(&config);
        let (digest, who) = tokens.identify(&token).expect("known token");
        assert_eq!(*digest, sha256(&token));
        assert_eq!((who.user.as_str(), who.org.as_str()), ("ada", "acme"));
        assert!(who.allowed.as_ref().unwrap().allows("proj.list"));
        assert!(!who.allowed.as_ref().unwrap().allows("exec_py.run"));
        assert!(tokens.identify("ph_wrong").is_none());
        assert!(
            tokens.identify(&hex(&sha256(&token))).is_none(),
            "the digest is not the token"
        );
    }
}
