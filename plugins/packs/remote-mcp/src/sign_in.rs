//! Integrations that act per user (`auth = per_user`): each caller reaches
//! the server with their own token, and a caller who has none is sent to
//! sign in (a URL-mode elicitation, on either wire) and their call goes on
//! once the browser came back to packhost's callback.

use std::{sync::Arc, time::Duration};

use integrations_store::{Auth, CredentialKey, Integration};
use pack_sdk::{Context, PackError, codes};
use tokio::time::Instant;
use upstream_oauth::{CALLBACK_PATH, Credentials, Key, OAuthError, SIGN_IN_LIFETIME, Upstream};

use crate::{State, organisation};

/// How often a call waiting for its caller's sign-in looks for the token.
const POLL: Duration = Duration::from_millis(250);

/// What per-user sign-in needs from the pack's config and environment.
pub(crate) struct SignInSettings {
    /// Where users' browsers come back: the public URL and
    /// [`CALLBACK_PATH`]; `None` without `public_url`.
    pub(crate) callback: Option<String>,
    /// The key tokens are sealed with, or why there is none.
    pub(crate) key: Result<Key, String>,
}

impl SignInSettings {
    pub(crate) fn new(public_url: Option<&str>) -> Result<Self, PackError> {
        let callback = public_url
            .map(|base| {
                let url = url::Url::parse(base)
                    .ok()
                    .filter(|u| u.scheme().starts_with("http"));
                url.ok_or_else(|| {
                    PackError::invalid_argument(format!(
                        "`public_url` is `{base}`; give the URL clients reach this packhost at, \
                         such as `https://packhost.example.com`"
                    ))
                })?;
                Ok::<_, PackError>(format!("{}{CALLBACK_PATH}", base.trim_end_matches('/')))
            })
            .transpose()?;
        let key = match Key::from_env() {
            Ok(Some(key)) => Ok(key),
            Ok(None) => Err(format!(
                "packhost has no key to seal users' tokens with: set {} (`packhost integrations \
                 new-key` prints one) or {}",
                upstream_oauth::KEY_VAR,
                upstream_oauth::KEY_FILE_VAR
            )),
            Err(e) => Err(e.to_string()),
        };
        Ok(Self { callback, key })
    }
}

/// Whether `integration` signs each user in.
pub(crate) fn per_user(integration: &Integration) -> bool {
    matches!(integration.auth, Some(Auth::PerUser { .. }))
}

impl State {
    /// Users' credentials, once the store is open; a config error when
    /// packhost cannot keep them.
    async fn credentials(&self) -> Result<&Arc<Credentials>, PackError> {
        self.credentials
            .get_or_try_init(|| async {
                let key = self.sign_in.key.clone().map_err(|why| not_set_up(&why))?;
                let store = Arc::clone(self.store().await?);
                let http = self.pool().await.http().clone();
                Ok(Arc::new(Credentials::new(store, key, http)))
            })
            .await
    }
}

fn not_set_up(why: &str) -> PackError {
    PackError::new(
        codes::DISABLED,
        format!("per-user integrations are not set up on this packhost: {why}"),
    )
    .with_help("the host's admin sets this up; see the book's page on integrations")
}

fn oauth_failed(integration: &Integration, e: OAuthError) -> PackError {
    let message = format!("signing in to integration `{}`: {e}", integration.name);
    match e {
        OAuthError::Config(why) => not_set_up(&why),
        OAuthError::Upstream(_) => PackError::new(codes::UPSTREAM_ERROR, message),
        OAuthError::UnknownSignIn | OAuthError::Store(_) => PackError::internal(message),
    }
}

/// The caller's own token to `integration`: the stored one, refreshed when
/// due, else one they sign in for now.
pub(crate) async fn bearer(
    state: &State,
    ctx: &Context,
    integration: &Integration,
) -> Result<String, PackError> {
    let Some(Auth::PerUser {
        client_id,
        client_secret,
        scope,
    }) = &integration.auth
    else {
        unreachable!("only per-user integrations sign their callers in")
    };
    let (org, user) = (organisation(ctx)?, ctx.user());
    if user.is_empty() {
        return Err(PackError::new(
            codes::UNAUTHORIZED,
            format!(
                "integration `{}` acts as each user, and this call has no user",
                integration.name
            ),
        )
        .with_help("call with a token whose entry names a `user`"));
    }
    let credentials = state.credentials().await?;
    let who = CredentialKey {
        organization_id: &org,
        user_id: &user,
        integration_id: &integration.id,
    };
    let failed = |e| oauth_failed(integration, e);
    if let Some(token) = credentials.bearer(who).await.map_err(failed)? {
        return Ok(token);
    }
    let Some(callback) = &state.sign_in.callback else {
        return Err(not_set_up(
            "`public_url` is not set in `[packs.remote_mcp] config`, so no sign-in can come back",
        ));
    };
    let url = match &integration.transport {
        integrations_store::Transport::Http { url, .. } => url,
        integrations_store::Transport::Stdio { .. } => unreachable!("validated: HTTP only"),
    };
    let upstream = Upstream {
        url,
        client_id: client_id.as_deref(),
        client_secret: client_secret.as_deref(),
        scope: scope.as_deref(),
    };
    let sign_in = credentials
        .begin(who, upstream, callback)
        .await
        .map_err(failed)?;
    let message = format!(
        "Sign in to `{}` so packhost can call it as you. This link is yours alone and works once, \
         for {} minutes.",
        integration.name,
        SIGN_IN_LIFETIME.as_secs() / 60
    );
    let answer = ctx.elicit_url(&message, &sign_in.url, &sign_in.id).await?;
    if answer.action != pack_sdk::Action::Accept {
        return Err(PackError::new(
            codes::DECLINED,
            format!(
                "you did not sign in to integration `{}`, which acts as each user",
                integration.name
            ),
        )
        .with_help("call again and accept the sign-in"));
    }
    let deadline = Instant::now() + SIGN_IN_LIFETIME;
    while Instant::now() < deadline {
        tokio::time::sleep(POLL).await;
        if let Some(token) = credentials.bearer(who).await.map_err(failed)? {
            return Ok(token);
        }
    }
    Err(PackError::new(
        codes::UNAUTHORIZED,
        format!(
            "the sign-in to integration `{}` was not finished in time",
            integration.name
        ),
    )
    .with_help("call again for a new sign-in link"))
}

/// Signs the caller out of `integration`: their tokens are forgotten.
pub(crate) async fn sign_out(
    state: &State,
    ctx: &Context,
    integration: &Integration,
) -> Result<bool, PackError> {
    let (org, user) = (organisation(ctx)?, ctx.user());
    let who = CredentialKey {
        organization_id: &org,
        user_id: &user,
        integration_id: &integration.id,
    };
    let credentials = state.credentials().await?;
    credentials
        .forget(who)
        .await
        .map_err(|e| oauth_failed(integration, e))
}
