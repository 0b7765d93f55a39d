//! Where a user's browser comes back from signing in to an integration
//! that acts per user (`upstream-oauth`): the code is exchanged and their
//! token stored, and the call that sent them there goes on. The browser
//! carries no packhost token: the sign-in's single-use `state`, bound to
//! the user who was asked, is what counts; a state that names no sign-in
//! under way gets the same page whatever the reason.

use std::sync::Arc;

use axum::{
    extract::{RawQuery, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use tokio::sync::OnceCell;
use upstream_oauth::{Credentials, Key, OAuthError};

use crate::config::Config;

/// What the callback needs: the integrations database `remote_mcp` uses,
/// opened on the first sign-in that comes back.
pub struct Callback {
    database: String,
    credentials: OnceCell<Result<Arc<Credentials>, String>>,
}

impl Callback {
    /// For the `remote_mcp` pack of `config`; `None` without one.
    pub fn new(config: &Config) -> Option<Arc<Self>> {
        let pack = config.packs.get(integrations_store::PACK)?;
        let pack_config = pack.library().map(|library| &library.config);
        Some(Arc::new(Self {
            database: integrations_store::database_in(pack_config),
            credentials: OnceCell::new(),
        }))
    }

    async fn credentials(&self) -> Result<&Arc<Credentials>, String> {
        self.credentials
            .get_or_init(|| async {
                let key = Key::from_env()
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("no {} is set", upstream_oauth::KEY_VAR))?;
                let store = integrations_store::open(&self.database)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(Arc::new(Credentials::new(
                    store,
                    key,
                    upstream_oauth::http_client(),
                )))
            })
            .await
            .as_ref()
            .map_err(String::clone)
    }
}

/// The query the authorization server sends the browser back with.
#[derive(Default)]
struct Returned {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
}

impl Returned {
    fn parse(query: Option<&str>) -> Self {
        let mut returned = Returned::default();
        for (name, value) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            let field = match name.as_ref() {
                "state" => &mut returned.state,
                "code" => &mut returned.code,
                "error" => &mut returned.error,
                _ => continue,
            };
            *field = Some(value.into_owned());
        }
        returned
    }
}

/// `GET /oauth/callback`.
pub async fn returned(
    State(callback): State<Option<Arc<Callback>>>,
    RawQuery(query): RawQuery,
) -> Response {
    let returned = Returned::parse(query.as_deref());
    let Some(callback) = callback else {
        return page(StatusCode::NOT_FOUND, "Nothing to sign in to", NOT_VALID);
    };
    let (Some(state), Some(code)) = (returned.state, returned.code) else {
        return match returned.error {
            Some(error) => page(
                StatusCode::BAD_REQUEST,
                "Not signed in",
                &format!("The sign-in was not completed: the authorization server said `{error}`."),
            ),
            None => page(StatusCode::BAD_REQUEST, "Not signed in", NOT_VALID),
        };
    };
    let credentials = match callback.credentials().await {
        Ok(credentials) => credentials,
        Err(why) => {
            tracing::warn!("a sign-in came back, and per-user integrations are not set up: {why}");
            return page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Not signed in",
                "This packhost cannot keep sign-ins now; its admin has been told.",
            );
        }
    };
    match credentials.finish(&state, &code).await {
        Ok(finished) => {
            tracing::info!(
                org = %finished.organization_id,
                user = %finished.user_id,
                integration = %finished.integration_id,
                "signed in to an integration"
            );
            page(
                StatusCode::OK,
                "Signed in",
                "You are signed in. Close this window and go back to your client: your call goes on.",
            )
        }
        Err(OAuthError::UnknownSignIn) => page(StatusCode::BAD_REQUEST, "Not signed in", NOT_VALID),
        Err(e) => {
            tracing::warn!("a sign-in to an integration failed: {e}");
            page(StatusCode::BAD_GATEWAY, "Not signed in", &e.to_string())
        }
    }
}

const NOT_VALID: &str = "This sign-in link is not valid: it expired or was used already. \
                         Call the tool again for a new one.";

/// A page for the user's browser: never cached, never sent on as a
/// referrer (its URL holds the code).
fn page(status: StatusCode, title: &str, text: &str) -> Response {
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>packhost: {title}</title>\
         <h1>{title}</h1><p>{}</p>\n",
        escape(text)
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        body,
    )
        .into_response()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
