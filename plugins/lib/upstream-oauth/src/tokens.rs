//! A user's tokens to one integration: kept sealed, handed out while good,
//! refreshed shortly before they expire, forgotten when the server will not
//! refresh them.

use std::sync::Arc;

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use integrations_store::{CredentialKey, unix_now};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Credentials, OAuthError, http};

/// What [`Credentials::bearer`] found.
#[derive(PartialEq, Eq)]
pub enum Bearer {
    /// The stored token, good for a while yet.
    Stored(String),
    /// A token just refreshed (and stored).
    Refreshed(String),
    /// None: the user never signed in, or signed out.
    None,
    /// None any more: it expired and the server would not refresh it, so
    /// it was forgotten.
    Dropped,
}

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Bearer::Stored(_) => "Stored(<hidden>)",
            Bearer::Refreshed(_) => "Refreshed(<hidden>)",
            Bearer::None => "None",
            Bearer::Dropped => "Dropped",
        })
    }
}

/// A token this close to its expiry is refreshed first (a call may take a
/// while to reach the server), or a quarter of its lifetime when that is
/// shorter.
const REFRESH_AHEAD_SECS: i64 = 60;

/// What a sign-in got, with what refreshing it needs.
#[derive(Serialize, Deserialize)]
pub(crate) struct Grant {
    access_token: String,
    refresh_token: Option<String>,
    /// Seconds since the Unix epoch.
    issued_at: i64,
    /// Same; `None` when the server did not say.
    expires_at: Option<i64>,
    token_endpoint: String,
    client_id: String,
    client_secret: Option<String>,
    resource: String,
}

/// What a credential's sealed text is bound to.
fn binding<'a>(who: &CredentialKey<'a>) -> [&'a str; 4] {
    [
        "credential",
        who.organization_id,
        who.user_id,
        who.integration_id,
    ]
}

impl Grant {
    /// Asks `token_endpoint` for tokens with `form`; `previous` is the
    /// refresh token a refresh answer may leave out (then it stays good).
    pub(crate) async fn exchange(
        client: &reqwest::Client,
        token_endpoint: &str,
        form: &[(&str, &str)],
        (client_id, client_secret): (String, Option<String>),
        previous: Option<String>,
    ) -> Result<Grant, http::Refused> {
        // A client with a secret authenticates by Basic, not in the form.
        let form: Vec<(&str, &str)> = form
            .iter()
            .filter(|(name, _)| client_secret.is_none() || *name != "client_id")
            .copied()
            .collect();
        let basic = client_secret
            .as_deref()
            .map(|secret| (client_id.as_str(), secret));
        let answer = http::post_form(client, token_endpoint, &form, basic).await?;
        let text = |name: &str| answer.get(name).and_then(Value::as_str).map(str::to_owned);
        let Some(access_token) = text("access_token") else {
            return Err(http::Refused {
                error: None,
                said: "its answer has no access_token".to_owned(),
            });
        };
        let resource = form
            .iter()
            .find(|(name, _)| *name == "resource")
            .map_or(String::new(), |(_, value)| (*value).to_owned());
        let issued_at = unix_now();
        Ok(Grant {
            access_token,
            refresh_token: text("refresh_token").or(previous),
            issued_at,
            expires_at: answer
                .get("expires_in")
                .and_then(Value::as_i64)
                .map(|secs| issued_at + secs),
            token_endpoint: token_endpoint.to_owned(),
            client_id,
            client_secret,
            resource,
        })
    }

    /// The `sub` of the access token, when it is a JWT.
    pub(crate) fn subject(&self) -> Option<String> {
        let payload = self.access_token.split('.').nth(1)?;
        let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
        claims.get("sub")?.as_str().map(str::to_owned)
    }

    fn fresh(&self) -> bool {
        self.expires_at.is_none_or(|at| {
            let ahead = REFRESH_AHEAD_SECS.min((at - self.issued_at) / 4);
            at - ahead > unix_now()
        })
    }
}

impl Credentials {
    /// Seals and stores `grant` as `who`'s.
    pub(crate) async fn keep(
        &self,
        who: CredentialKey<'_>,
        grant: &Grant,
    ) -> Result<(), OAuthError> {
        let plain = serde_json::to_vec(grant).expect("strings and numbers serialize");
        let sealed = self.key.seal(&binding(&who), &plain);
        Ok(self.store.put_credential(who, &sealed).await?)
    }

    /// `who`'s stored grant; a row that does not open (sealed for another
    /// row, with another key, or altered) counts as none.
    async fn grant(&self, who: CredentialKey<'_>) -> Result<Option<Grant>, OAuthError> {
        let Some(sealed) = self.store.credential(who).await? else {
            return Ok(None);
        };
        Ok(self
            .key
            .open(&binding(&who), &sealed)
            .and_then(|plain| serde_json::from_slice(&plain).ok()))
    }

    /// `who`'s access token, refreshed first when it is about to expire,
    /// or why they have to sign in.
    pub async fn bearer(&self, who: CredentialKey<'_>) -> Result<Bearer, OAuthError> {
        match self.grant(who).await? {
            Some(grant) if grant.fresh() => return Ok(Bearer::Stored(grant.access_token)),
            None => return Ok(Bearer::None),
            Some(_) => {}
        }
        let lock = {
            let mut refreshing = self.refreshing.lock().unwrap_or_else(|e| e.into_inner());
            refreshing.retain(|_, lock| Arc::strong_count(lock) > 1);
            let owner = (
                who.organization_id.to_owned(),
                who.user_id.to_owned(),
                who.integration_id.to_owned(),
            );
            Arc::clone(refreshing.entry(owner).or_default())
        };
        let _refreshing = lock.lock().await;
        // Another call may have refreshed it while this one waited.
        let Some(grant) = self.grant(who).await? else {
            return Ok(Bearer::None);
        };
        if grant.fresh() {
            return Ok(Bearer::Stored(grant.access_token));
        }
        let Some(refresh_token) = grant.refresh_token.clone() else {
            self.forget(who).await?;
            return Ok(Bearer::Dropped);
        };
        let refreshed = Grant::exchange(
            &self.http,
            &grant.token_endpoint,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", &refresh_token),
                ("client_id", &grant.client_id),
                ("resource", &grant.resource),
            ],
            (grant.client_id.clone(), grant.client_secret.clone()),
            Some(refresh_token.clone()),
        )
        .await;
        match refreshed {
            Ok(refreshed) => {
                self.keep(who, &refreshed).await?;
                Ok(Bearer::Refreshed(refreshed.access_token))
            }
            // The server will not refresh it (revoked, expired): sign in again.
            Err(refused) if refused.error.is_some() => {
                self.forget(who).await?;
                Ok(Bearer::Dropped)
            }
            Err(refused) => Err(OAuthError::Upstream(format!(
                "cannot refresh the sign-in at {}: {}",
                grant.token_endpoint, refused.said
            ))),
        }
    }

    /// Forgets `who`'s tokens (signing out); whether there were any.
    pub async fn forget(&self, who: CredentialKey<'_>) -> Result<bool, OAuthError> {
        let removed = self
            .store
            .remove_credentials(who.organization_id, who.integration_id, Some(who.user_id))
            .await?;
        Ok(removed > 0)
    }
}
