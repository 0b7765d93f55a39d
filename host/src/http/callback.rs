//! Where a user's browser comes back from signing in elsewhere for a call
//! of theirs (an integration that acts per user): `/oauth/callback/<pack>`
//! hands the query to that pack (`SIGN_IN_RETURNED`), which finishes the
//! sign-in and says what page to show. The browser carries no packhost
//! token; the pack judges the query alone.

use std::sync::Arc;

use axum::{
    extract::{Path, RawQuery, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};

use pack_api::codes;

use super::AppState;

/// `GET /oauth/callback/{pack}`.
pub(super) async fn returned(
    State(state): State<AppState>,
    Path(pack): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let answered = Arc::clone(&state.executor)
        .sign_in_returned(&pack, query.as_deref().unwrap_or_default())
        .await;
    match answered {
        Some(Ok(page)) => {
            let status = page["status"].as_u64().and_then(|s| u16::try_from(s).ok());
            let status = status.and_then(|s| StatusCode::from_u16(s).ok());
            let text = |name: &str| page[name].as_str().unwrap_or_default().to_owned();
            shown(
                status.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                &text("title"),
                &text("text"),
            )
        }
        Some(Err(failure)) if failure.code() != codes::NOT_FOUND => {
            tracing::warn!("pack `{pack}` could not take a sign-in: {}", failure.text());
            shown(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Not signed in",
                "packhost could not finish this sign-in; its admin can read why in its log.",
            )
        }
        // No such pack, or one that takes no sign-ins.
        _ => shown(
            StatusCode::NOT_FOUND,
            "Not signed in",
            "Nothing signs in here.",
        ),
    }
}

/// A page for the user's browser: never cached, never sent on as a
/// referrer (its URL holds the code).
fn shown(status: StatusCode, title: &str, text: &str) -> Response {
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>packhost: {0}</title><h1>{0}</h1><p>{1}</p>\n",
        escape(title),
        escape(text)
    );
    let headers = [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
    ];
    (status, headers, body).into_response()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
