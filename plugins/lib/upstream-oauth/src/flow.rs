//! A sign-in: started for one user when their call finds no token, finished
//! when the authorization server sends their browser back with a code.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use integrations_store::{Authorization, CredentialKey};
use ring::digest::{SHA256, digest};
use serde::{Deserialize, Serialize};

use crate::{Credentials, OAuthError, SIGN_IN_LIFETIME, discover, seal::random, tokens::Grant};

/// The integration a user signs in to, as the admin added it.
#[derive(Debug, Clone, Copy)]
pub struct Upstream<'a> {
    /// Its MCP endpoint.
    pub url: &'a str,
    /// packhost's client there, if the admin gave one.
    pub client_id: Option<&'a str>,
    /// That client's secret.
    pub client_secret: Option<&'a str>,
    /// The scopes to ask for, if not those the server lists.
    pub scope: Option<&'a str>,
    /// The account signed in with must be the user's own: the `sub` of the
    /// token the server's authorization server gives must be their user id.
    pub same_user: bool,
}

/// A sign-in started: where to send the user.
#[derive(Debug, Clone)]
pub struct SignIn {
    /// The authorization server's page, with this sign-in's `state`: show
    /// it to the user it was made for only.
    pub url: String,
    /// An id for the question that sends the user there (MCP's
    /// `elicitationId`), which says nothing of the state.
    pub id: String,
}

/// A sign-in finished: whose token is now stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The organisation.
    pub organization_id: String,
    /// The user.
    pub user_id: String,
    /// The integration.
    pub integration_id: String,
}

/// What finishing a sign-in needs, sealed in the store meanwhile.
#[derive(Serialize, Deserialize)]
struct Pending {
    verifier: String,
    redirect: String,
    token_endpoint: String,
    client_id: String,
    client_secret: Option<String>,
    resource: String,
    /// With [`Upstream::same_user`]: the user the token must be for.
    #[serde(default)]
    user: Option<String>,
}

/// What a sign-in's sealed record is bound to.
fn binding<'a>(digest: &'a str, who: &CredentialKey<'a>) -> [&'a str; 5] {
    [
        "sign-in",
        digest,
        who.organization_id,
        who.user_id,
        who.integration_id,
    ]
}

fn state_digest(state: &str) -> String {
    digest(&SHA256, state.as_bytes())
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Credentials {
    /// Starts a sign-in of `who` to `upstream`, whose browser comes back to
    /// `redirect` (packhost's public URL and [`crate::CALLBACK_PATH`]).
    pub async fn begin(
        &self,
        who: CredentialKey<'_>,
        upstream: Upstream<'_>,
        redirect: &str,
    ) -> Result<SignIn, OAuthError> {
        let server = discover::discover(&self.http, upstream.url).await?;
        let (client_id, client_secret) = match upstream.client_id {
            Some(id) => (id.to_owned(), upstream.client_secret.map(str::to_owned)),
            None => {
                let endpoint = server.registration_endpoint.as_deref().ok_or_else(|| {
                    OAuthError::Upstream(format!(
                        "the authorization server of {} lets no client register itself; an admin \
                         gives packhost's client id there (`--oauth-client-id`)",
                        upstream.url
                    ))
                })?;
                let registered = discover::register(&self.http, endpoint, redirect).await?;
                (registered.client_id, registered.client_secret)
            }
        };
        let verifier = URL_SAFE_NO_PAD.encode(random::<32>());
        let challenge = URL_SAFE_NO_PAD.encode(digest(&SHA256, verifier.as_bytes()));
        let state = URL_SAFE_NO_PAD.encode(random::<32>());
        let digest = state_digest(&state);
        let scope = upstream.scope.map(str::to_owned).or(server.scopes);
        let mut url = url::Url::parse(&server.authorization_endpoint).map_err(|e| {
            OAuthError::Upstream(format!(
                "the authorization endpoint `{}` is not a URL: {e}",
                server.authorization_endpoint
            ))
        })?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client_id)
                .append_pair("redirect_uri", redirect)
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &server.resource);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
            }
        }
        let pending = Pending {
            verifier,
            redirect: redirect.to_owned(),
            token_endpoint: server.token_endpoint,
            client_id,
            client_secret,
            resource: server.resource,
            user: upstream.same_user.then(|| who.user_id.to_owned()),
        };
        let plain = serde_json::to_vec(&pending).expect("strings serialize");
        let lifetime = SIGN_IN_LIFETIME.as_secs() as i64;
        self.store
            .begin_authorization(&Authorization {
                sealed: self.key.seal(&binding(&digest, &who), &plain),
                state_digest: digest.clone(),
                organization_id: who.organization_id.to_owned(),
                user_id: who.user_id.to_owned(),
                integration_id: who.integration_id.to_owned(),
                expires_at: integrations_store::unix_now() + lifetime,
            })
            .await?;
        Ok(SignIn {
            url: url.into(),
            id: format!("sign-in-{}", &digest[..16]),
        })
    }

    /// Finishes the sign-in whose `state` came back with `code`: the code
    /// is exchanged and the user's tokens stored. A state that names no
    /// sign-in under way (unknown, used, expired) is
    /// [`OAuthError::UnknownSignIn`].
    pub async fn finish(&self, state: &str, code: &str) -> Result<Finished, OAuthError> {
        let digest = state_digest(state);
        let taken = self
            .store
            .take_authorization(&digest)
            .await?
            .ok_or(OAuthError::UnknownSignIn)?;
        let who = CredentialKey {
            organization_id: &taken.organization_id,
            user_id: &taken.user_id,
            integration_id: &taken.integration_id,
        };
        let pending: Pending = self
            .key
            .open(&binding(&digest, &who), &taken.sealed)
            .and_then(|plain| serde_json::from_slice(&plain).ok())
            .ok_or(OAuthError::UnknownSignIn)?;
        let grant = Grant::exchange(
            &self.http,
            &pending.token_endpoint,
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", &pending.redirect),
                ("code_verifier", &pending.verifier),
                ("client_id", &pending.client_id),
                ("resource", &pending.resource),
            ],
            (pending.client_id.clone(), pending.client_secret.clone()),
            None,
        )
        .await
        .map_err(|refused| {
            OAuthError::Upstream(format!(
                "the authorization server did not give a token for the code: {}",
                refused.said
            ))
        })?;
        // The token came straight from the token endpoint, for this code
        // and verifier: its claims are read as it says them.
        if let Some(user) = &pending.user
            && grant.subject().as_ref() != Some(user)
        {
            return Err(OAuthError::WrongUser);
        }
        self.keep(who, &grant).await?;
        Ok(Finished {
            organization_id: taken.organization_id.clone(),
            user_id: taken.user_id.clone(),
            integration_id: taken.integration_id.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_is_kept_as_its_sha256() {
        assert_eq!(
            state_digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
