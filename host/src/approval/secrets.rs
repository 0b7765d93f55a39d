//! The one rule for what an approval question must not show: a value is
//! hidden when its key names a secret (`token`, `password`, `api_key`,
//! `Authorization`, `X-Api-Key`, `GITHUB_TOKEN`, ...), or when it sits in an
//! `env` or `headers` map, whose values the integrations store keeps as
//! credentials. Keys stay visible, so the user still sees what is sent.

use serde_json::{Map, Value};

/// Shown in place of a hidden value.
pub const HIDDEN: &str = "<hidden>";

/// Words of a key that make its value a secret.
const SECRET_WORDS: &[&str] = &[
    "token",
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "key",
    "apikey",
    "authorization",
    "auth",
    "bearer",
    "credential",
    "credentials",
    "cookie",
];

/// Maps every value of which is a credential (as the integrations store
/// keeps a stdio server's `env` and an HTTP server's `headers`).
const CREDENTIAL_MAPS: &[&str] = &["env", "headers"];

/// `value` with every secret in it replaced by [`HIDDEN`].
pub fn masked(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| {
                    let shown = match value {
                        _ if is_secret_key(key) => Value::from(HIDDEN),
                        Value::Object(credentials)
                            if CREDENTIAL_MAPS.contains(&key.to_ascii_lowercase().as_str()) =>
                        {
                            let hidden: Map<String, Value> = credentials
                                .keys()
                                .map(|name| (name.clone(), Value::from(HIDDEN)))
                                .collect();
                            Value::Object(hidden)
                        }
                        _ => masked(value),
                    };
                    (key.clone(), shown)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(masked).collect()),
        other => other.clone(),
    }
}

/// Whether `key` names a secret: one of its words (split at `_`, `-`, `.`,
/// spaces and lower-to-upper case changes) is a [`SECRET_WORDS`] word.
pub fn is_secret_key(key: &str) -> bool {
    words(key).any(|word| SECRET_WORDS.contains(&word.as_str()))
}

/// `key`'s words, lowercase: `X-Api-Key` -> x, api, key; `accessToken` ->
/// access, token.
fn words(key: &str) -> impl Iterator<Item = String> + '_ {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            words.push(std::mem::take(&mut word));
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            words.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    words.push(word);
    words.into_iter().filter(|word| !word.is_empty())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_that_name_secrets_in_any_spelling() {
        for key in [
            "token",
            "api_key",
            "apiKey",
            "API_KEY",
            "X-Api-Key",
            "Authorization",
            "GITHUB_TOKEN",
            "accessToken",
            "client_secret",
            "db.password",
            "Cookie",
            "x-auth-token",
            "privateKey",
        ] {
            assert!(is_secret_key(key), "{key} should be hidden");
        }
        for key in [
            "keyword",
            "monkey",
            "author",
            "session_id",
            "max_tokens",
            "path",
            "integration",
            "code",
        ] {
            assert!(!is_secret_key(key), "{key} should be shown");
        }
    }

    #[test]
    fn secrets_are_hidden_wherever_they_sit_and_the_rest_is_kept() {
        let args = json!({
            "integration": "github",
            "tool": "create_issue",
            "arguments": {
                "title": "hello",
                "auth": {"user": "me", "pass": "x"},
                "items": [{"apiKey": "sk-1"}, {"name": "n"}],
                "env": {"LOG_LEVEL": "debug", "OTHER": "v"},
                "headers": {"X-Tenant": "t-1"},
                "token": null,
            },
        });
        assert_eq!(
            masked(&args),
            json!({
                "integration": "github",
                "tool": "create_issue",
                "arguments": {
                    "title": "hello",
                    "auth": HIDDEN,
                    "items": [{"apiKey": HIDDEN}, {"name": "n"}],
                    "env": {"LOG_LEVEL": HIDDEN, "OTHER": HIDDEN},
                    "headers": {"X-Tenant": HIDDEN},
                    "token": HIDDEN,
                },
            })
        );
        // Not a map: an `env` string is an ordinary value.
        assert_eq!(masked(&json!({"env": "prod"})), json!({"env": "prod"}));
    }
}
