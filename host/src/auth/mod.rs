//! Who calls over HTTP: a bearer token is one of the static tokens of
//! `[[auth.tokens]]` ([`tokens`]) or an access token of the authorization
//! server of `[auth.oauth]` ([`oauth`]). Either gives the same [`Identity`]
//! (user, organisation, allow-list); a refusal says only that the token is
//! missing or not valid, and why goes to the log, never the token.

pub mod oauth;
mod tokens;

pub use self::tokens::{Tokens, hex, new_token, sha256};
use crate::{config::AuthConfig, identity::Identity};

/// A caller a bearer token vouched for.
#[derive(Clone)]
pub struct Authenticated {
    /// Who they are and what they may call.
    pub identity: Identity,
    /// What their HTTP sessions are bound to: a static token's digest, or
    /// the OAuth user's, so a session outlives the refresh of its token.
    pub principal: [u8; 32],
    /// The scopes an access token was granted; `None` for a static token.
    pub scopes: Option<Vec<String>>,
}

/// Why a request is not authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// It has no bearer token.
    Missing,
    /// Its bearer token is not valid (unknown, expired, forged, ...).
    Invalid,
}

/// A refused sign-in: what HTTP answers ([`Refusal`]), and what the audit
/// trail keeps. Never holds the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// Missing or not valid.
    pub refusal: Refusal,
    /// How the token was checked: `none` (no token), `static`, `oauth`.
    pub method: &'static str,
    /// A short code: `missing`, `unknown_token`, `expired`,
    /// `bad_signature`, ...
    pub reason: &'static str,
    /// The reason in words.
    pub why: String,
    /// (org, user) when the token's claims can be trusted (the issuer
    /// signed it, only a claim check failed); else the organisation is
    /// unknown and the refusal is host-level.
    pub signed_for: Option<(String, Option<String>)>,
}

impl Refused {
    fn new(refusal: Refusal, method: &'static str, reason: &'static str, why: String) -> Self {
        Self {
            refusal,
            method,
            reason,
            why,
            signed_for: None,
        }
    }
}

/// The ways of signing in the config names.
pub struct Authenticator {
    tokens: Tokens,
    oauth: Option<oauth::Verifier>,
}

impl Authenticator {
    /// From `[auth]`, checked when the config was loaded; the OAuth keys
    /// are fetched when first needed and then on a schedule.
    pub fn new(config: &AuthConfig) -> Self {
        Self {
            tokens: Tokens::new(config),
            oauth: config.oauth.as_ref().map(oauth::Verifier::new),
        }
    }

    /// Whether callers need no token (nothing is configured).
    pub fn is_open(&self) -> bool {
        self.tokens.is_empty() && self.oauth.is_none()
    }

    /// How callers sign in, for the log: "none", "bearer tokens", "OAuth,
    /// issuer …", or both.
    pub fn describe(&self) -> String {
        match (&self.oauth, self.tokens.is_empty()) {
            (Some(oauth), true) => format!("OAuth, issuer {}", oauth.issuer()),
            (Some(oauth), false) => format!("OAuth, issuer {}, and bearer tokens", oauth.issuer()),
            (None, false) => "bearer tokens".to_owned(),
            (None, true) => "none".to_owned(),
        }
    }

    /// The resource server, when `[auth.oauth]` is configured.
    pub fn oauth(&self) -> Option<&oauth::Verifier> {
        self.oauth.as_ref()
    }

    /// Who sends `authorization` (an `Authorization` header's value).
    pub async fn authenticate(
        &self,
        authorization: Option<&str>,
    ) -> Result<Authenticated, Refused> {
        // The scheme's name is case-insensitive (RFC 9110 §11.1).
        let token = authorization
            .and_then(|value| value.split_at_checked(7))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer "))
            .map(|(_, token)| token.trim())
            .ok_or_else(|| {
                let why = "no `Authorization: Bearer` token".to_owned();
                Refused::new(Refusal::Missing, "none", "missing", why)
            })?;
        if let Some((digest, identity)) = self.tokens.identify(token) {
            return Ok(Authenticated {
                identity: identity.clone(),
                principal: *digest,
                scopes: None,
            });
        }
        let Some(oauth) = &self.oauth else {
            tracing::info!("refused a bearer token: it is no configured token");
            let why = "it is no configured token (`[[auth.tokens]]`)".to_owned();
            return Err(Refused::new(
                Refusal::Invalid,
                "static",
                "unknown_token",
                why,
            ));
        };
        match oauth.verify(token).await {
            Ok(verified) => Ok(verified),
            Err(rejection) => {
                tracing::info!("refused an access token: {rejection}");
                let mut refused = Refused::new(
                    Refusal::Invalid,
                    "oauth",
                    rejection.reason,
                    rejection.to_string(),
                );
                refused.signed_for = rejection.signed_for;
                Err(refused)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TokenConfig;

    #[tokio::test]
    async fn a_bearer_token_is_read_from_any_case_of_the_scheme_and_nothing_else() {
        let token = new_token().unwrap();
        let auth = Authenticator::new(&AuthConfig {
            tokens: vec![TokenConfig {
                user: "ada".into(),
                org: "acme".into(),
                sha256: hex(&sha256(&token)),
                tools: None,
                admin: false,
            }],
            oauth: None,
        });
        for header in [format!("Bearer {token}"), format!("bearer  {token} ")] {
            let caller = auth.authenticate(Some(&header)).await.ok().unwrap();
            assert_eq!(caller.identity.user, "ada");
            assert_eq!(caller.principal, sha256(&token));
        }
        let refusal = |header: Option<&str>| {
            let auth = &auth;
            let header = header.map(str::to_owned);
            async move {
                let refused = auth.authenticate(header.as_deref()).await.err();
                refused.map(|refused| refused.refusal)
            }
        };
        assert_eq!(refusal(None).await, Some(Refusal::Missing));
        assert_eq!(
            refusal(Some(&format!("Basic {token}"))).await,
            Some(Refusal::Missing)
        );
        assert_eq!(
            refusal(Some("Bearer ph_wrong")).await,
            Some(Refusal::Invalid)
        );
    }
}
