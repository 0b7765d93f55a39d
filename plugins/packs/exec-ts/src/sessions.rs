//! Notebook sessions: `session_create`, `session_list`, `session_delete`.

use std::sync::Arc;

use pack_sdk::{Context, Empty, PackError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    notebook::{self, Language},
    state::{State, blocking},
};

/// `exec_ts.session_create` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionCreateArgs {
    /// A title for listings and exports. Default `Untitled`.
    #[serde(default)]
    pub title: Option<String>,
    /// Language of cells created without a filename or language.
    #[serde(default)]
    pub language: Language,
}

/// `exec_ts.session_create` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCreated {
    /// The new session's id: pass it to the cell functions.
    pub session_id: String,
    /// Its directory (the working directory of its cells).
    pub dir: String,
}

pub(crate) async fn session_create(
    state: Arc<State>,
    args: SessionCreateArgs,
    ctx: Context,
) -> Result<SessionCreated, PackError> {
    let owner = state.notebooks.caller(&ctx);
    blocking(&state, move |state| {
        let title = args.title.unwrap_or_else(|| "Untitled".to_owned());
        let meta =
            state.locked(|nb| nb.create(&title, args.language, notebook::PACKAGE_JSON, &owner))?;
        Ok(SessionCreated {
            dir: state.notebooks.dir(&meta.id).display().to_string(),
            session_id: meta.id,
        })
    })
    .await
}

/// One session in `session_list`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// Session id.
    pub session_id: String,
    /// Title.
    pub title: String,
    /// Default language of new cells.
    pub language: Language,
    /// Its directory.
    pub dir: String,
    /// How many cells it has.
    pub cells: usize,
}

/// `exec_ts.session_list` result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionList {
    /// Your sessions under the notebooks root, by id.
    pub sessions: Vec<SessionInfo>,
    /// The notebooks root.
    pub root: String,
}

pub(crate) async fn session_list(
    state: Arc<State>,
    _: Empty,
    ctx: Context,
) -> Result<SessionList, PackError> {
    let owner = state.notebooks.caller(&ctx);
    blocking(&state, move |state| {
        let nb = &state.notebooks;
        let sessions = nb
            .sessions(&owner)?
            .into_iter()
            .map(|meta| SessionInfo {
                dir: nb.dir(&meta.id).display().to_string(),
                session_id: meta.id,
                title: meta.title,
                language: meta.language,
                cells: meta.cells.len(),
            })
            .collect();
        Ok(SessionList {
            sessions,
            root: nb.root().display().to_string(),
        })
    })
    .await
}

/// Arguments naming a session.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionArgs {
    /// Session id (from `session_create` or `session_list`).
    pub session_id: String,
}

/// `exec_ts.session_delete` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDeleted {
    /// The deleted session.
    pub session_id: String,
    /// Always true (a missing session is an error).
    pub deleted: bool,
}

pub(crate) async fn session_delete(
    state: Arc<State>,
    args: SessionArgs,
    ctx: Context,
) -> Result<SessionDeleted, PackError> {
    let owner = state.notebooks.caller(&ctx);
    blocking(&state, move |state| {
        state.locked(|nb| nb.delete(&args.session_id, &owner))?;
        Ok(SessionDeleted {
            session_id: args.session_id,
            deleted: true,
        })
    })
    .await
}
