//! Integrations that act per user (`auth = per_user`): each caller reaches
//! the server with their own token, and a caller who has none is sent to
//! sign in (a URL-mode elicitation, on either wire) and their call goes on
//! once the browser came back to packhost's callback.

use std::{sync::Arc, time::Duration};

use integrations_store::{Auth, CredentialKey, Integration};
use pack_sdk::{Context, LogLevel, PackError, Value, codes, json, protocol};
use tokio::time::Instant;
use upstream_oauth::{
    Bearer, CALLBACK_PATH, Credentials, Key, OAuthError, SIGN_IN_LIFETIME, Upstream,
};

use crate::{State, organisation};

/// How often a call waiting for its caller's sign-in looks for the token.
const POLL: Duration = Duration::from_millis(250);

/// What per-user sign-in needs from the pack's config and environment.
pub(crate) struct SignInSettings {
    /// Where users' browsers come back: the public URL, [`CALLBACK_PATH`]
    /// and this pack's name; `None` without `public_url`.
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
                let base = base.trim_end_matches('/');
                Ok::<_, PackError>(format!(
                    "{base}{CALLBACK_PATH}/{}",
                    integrations_store::PACK
                ))
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
        OAuthError::UnknownSignIn | OAuthError::WrongUser | OAuthError::Store(_) => {
            PackError::internal(message)
        }
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
        same_user,
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
    if let Some(token) = usable(ctx, who, credentials.bearer(who).await.map_err(failed)?).await {
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
        same_user: *same_user,
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
        let found = credentials.bearer(who).await.map_err(failed)?;
        if let Some(token) = usable(ctx, who, found).await {
            ctx.elicitation_complete(&sign_in.id).await;
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
    let forgotten = credentials.forget(who).await;
    let forgotten = forgotten.map_err(|e| oauth_failed(integration, e))?;
    if forgotten {
        audit(ctx, who, "revoked").await;
    }
    Ok(forgotten)
}

/// The token `found` gives a call, each step recorded in the audit trail;
/// `None` when the caller must sign in.
async fn usable(ctx: &Context, who: CredentialKey<'_>, found: Bearer) -> Option<String> {
    let token = match found {
        Bearer::Stored(token) => token,
        Bearer::Refreshed(token) => {
            audit(ctx, who, "refreshed").await;
            token
        }
        Bearer::Dropped => {
            audit(ctx, who, "revoked").await;
            return None;
        }
        Bearer::None => return None,
    };
    audit(ctx, who, "used").await;
    Some(token)
}

/// Tell the host's audit trail what happened to `who`'s credential (never
/// the token). A host too old to keep a trail refuses the name: nothing to
/// record then.
async fn audit(ctx: &Context, who: CredentialKey<'_>, action: &str) {
    let event = json!({
        "org": who.organization_id,
        "user": who.user_id,
        "integration": who.integration_id,
        "action": action,
    });
    let _ = ctx.call_tool(protocol::AUDIT_CREDENTIAL, event).await;
}

/// A user's browser came back from signing in (the host's
/// `/oauth/callback/remote_mcp`, with the query it got): the sign-in it
/// names is finished, and the call waiting for it goes on. Any state that
/// names no sign-in under way gets the same page.
pub(crate) async fn returned(
    state: &State,
    ctx: &Context,
    query: &str,
) -> Result<Value, PackError> {
    let mut returned = std::collections::HashMap::new();
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        returned.insert(name.into_owned(), value.into_owned());
    }
    let page = |status: u16, title: &str, text: &str| {
        Ok(json!({"status": status, "title": title, "text": text}))
    };
    let (Some(sign_in), Some(code)) = (returned.get("state"), returned.get("code")) else {
        return match returned.get("error") {
            Some(error) => page(
                400,
                "Not signed in",
                &format!("The sign-in was not completed: the authorization server said `{error}`."),
            ),
            None => page(400, "Not signed in", NOT_VALID),
        };
    };
    let credentials = state.credentials().await?;
    match credentials.finish(sign_in, code).await {
        Ok(finished) => {
            let who = CredentialKey {
                organization_id: &finished.organization_id,
                user_id: &finished.user_id,
                integration_id: &finished.integration_id,
            };
            audit(ctx, who, "granted").await;
            state.host.log(
                LogLevel::Info,
                &format!(
                    "user `{}` of `{}` signed in to integration `{}`",
                    finished.user_id, finished.organization_id, finished.integration_id
                ),
            );
            page(
                200,
                "Signed in",
                "You are signed in. Close this window and go back to your client: your call goes on.",
            )
        }
        Err(OAuthError::UnknownSignIn) => page(400, "Not signed in", NOT_VALID),
        Err(OAuthError::WrongUser) => page(
            403,
            "Not signed in",
            "You signed in with another account than the one this link was made for. Nothing \
             was stored; the link is used up.",
        ),
        Err(e) => {
            state.host.log(
                LogLevel::Warn,
                &format!("a sign-in to an integration failed: {e}"),
            );
            page(502, "Not signed in", &e.to_string())
        }
    }
}

const NOT_VALID: &str = "This sign-in link is not valid: it expired or was used already. Call \
                         the tool again for a new one.";
