//! Tokens at rest: AES-256-GCM with ring, under a key from the environment
//! (never from the config, never in the database), each sealed text bound
//! to the row it belongs to, so a row copied under another user or
//! integration does not open.

use std::sync::Arc;

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

use crate::OAuthError;

/// The environment variable that holds the key: 32 random bytes in base64
/// (`packhost integrations new-key` prints one).
pub const KEY_VAR: &str = "PACKHOST_CREDENTIALS_KEY";
/// Or the file that holds it (for secret mounts), read once at start.
pub const KEY_FILE_VAR: &str = "PACKHOST_CREDENTIALS_KEY_FILE";

/// The key that seals users' tokens. `Debug` shows nothing of it.
#[derive(Clone)]
pub struct Key(Arc<LessSafeKey>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(<hidden>)")
    }
}

impl Key {
    /// The key [`KEY_VAR`] or [`KEY_FILE_VAR`] gives; `Ok(None)` when
    /// neither is set.
    pub fn from_env() -> Result<Option<Key>, OAuthError> {
        let text = match (std::env::var(KEY_VAR), std::env::var_os(KEY_FILE_VAR)) {
            (Ok(text), _) => text,
            (Err(_), Some(file)) => std::fs::read_to_string(&file).map_err(|e| {
                OAuthError::Config(format!(
                    "cannot read the credentials key file {} ({KEY_FILE_VAR}): {e}",
                    std::path::Path::new(&file).display()
                ))
            })?,
            (Err(_), None) => return Ok(None),
        };
        Key::parse(text.trim()).map(Some)
    }

    /// A key from its base64 text (standard or URL-safe, padded or not).
    pub fn parse(text: &str) -> Result<Key, OAuthError> {
        let unpadded = text
            .trim_end_matches('=')
            .replace('+', "-")
            .replace('/', "_");
        let bytes = URL_SAFE_NO_PAD
            .decode(unpadded)
            .ok()
            .filter(|b| b.len() == 32);
        let bytes = bytes.ok_or_else(|| {
            OAuthError::Config(format!(
                "the credentials key ({KEY_VAR}) is not 32 bytes in base64; \
                 `packhost integrations new-key` prints one"
            ))
        })?;
        let key = UnboundKey::new(&AES_256_GCM, &bytes).expect("32 bytes is an AES-256 key");
        Ok(Key(Arc::new(LessSafeKey::new(key))))
    }

    /// A new random key, as [`Key::parse`] reads it.
    pub fn generate() -> String {
        URL_SAFE_NO_PAD.encode(random::<32>())
    }

    /// `plain` encrypted for the row `binding` names: base64 of a random
    /// nonce, the ciphertext and its tag.
    pub(crate) fn seal(&self, binding: &[&str], plain: &[u8]) -> String {
        let nonce = random::<NONCE_LEN>();
        let mut sealed = plain.to_vec();
        self.0
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(bound(binding)),
                &mut sealed,
            )
            .expect("a token is far below AES-GCM's length limit");
        URL_SAFE_NO_PAD.encode([&nonce[..], &sealed].concat())
    }

    /// What [`Key::seal`] sealed for the same `binding`; `None` when the
    /// text was sealed for another row, with another key, or altered.
    pub(crate) fn open(&self, binding: &[&str], sealed: &str) -> Option<Vec<u8>> {
        let bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let (nonce, rest) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut rest = rest.to_vec();
        let plain = self
            .0
            .open_in_place(nonce, Aad::from(bound(binding)), &mut rest)
            .ok()?;
        Some(plain.to_vec())
    }
}

/// The row's keys as associated data: lengths first, so no two lists of
/// parts run together into the same bytes.
fn bound(binding: &[&str]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for part in binding {
        bytes.extend_from_slice(&(part.len() as u64).to_be_bytes());
        bytes.extend_from_slice(part.as_bytes());
    }
    bytes
}

/// `N` bytes from the operating system's CSPRNG.
pub(crate) fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0; N];
    getrandom::fill(&mut bytes).expect("the operating system's random source works");
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_text_opens_for_its_own_row_only() {
        let key = Key::parse(&Key::generate()).unwrap();
        let sealed = key.seal(&["credential", "acme", "ada", "int_1"], b"token");
        assert!(!sealed.contains("token"));
        assert_eq!(
            key.open(&["credential", "acme", "ada", "int_1"], &sealed)
                .unwrap(),
            b"token"
        );
        for other in [
            ["credential", "acme", "bob", "int_1"],
            ["credential", "acme", "ada", "int_2"],
            ["credential", "acmea", "da", "int_1"],
        ] {
            assert_eq!(key.open(&other, &sealed), None, "{other:?}");
        }
        let another = Key::parse(&Key::generate()).unwrap();
        assert_eq!(
            another.open(&["credential", "acme", "ada", "int_1"], &sealed),
            None
        );
        let mut altered = sealed.into_bytes();
        let last = altered.len() - 3;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        assert_eq!(
            key.open(&["credential", "acme", "ada", "int_1"], &altered),
            None
        );
    }

    #[test]
    fn a_key_is_32_bytes_of_base64() {
        let text = Key::generate();
        assert!(Key::parse(&text).is_ok());
        let standard = base64::engine::general_purpose::STANDARD.encode(random::<32>());
        assert!(Key::parse(&standard).is_ok(), "padded standard base64");
        let short = URL_SAFE_NO_PAD.encode(random::<16>());
        let error = Key::parse(&short).unwrap_err().to_string();
        assert!(
            error.contains("32 bytes") && error.contains("new-key"),
            "{error}"
        );
        assert!(!error.contains(&short), "the text is never shown");
        assert_eq!(format!("{:?}", Key::parse(&text).unwrap()), "Key(<hidden>)");
    }
}
