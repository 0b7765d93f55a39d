//! A session's cells: `cell_create`, `cell_update`, `cell_list`,
//! `cell_delete` (`cell_execute` runs one).

use std::sync::Arc;

use pack_sdk::{Context, PackError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    notebook::{self, CellKind, CellMeta, Language},
    sessions::SessionArgs,
    state::State,
};

/// `exec_ts.cell_create` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CellCreateArgs {
    /// Session id.
    pub session_id: String,
    /// The cell's code (an ES module; other cells can import its exports as
    /// `./<filename>`).
    pub source: String,
    /// File name under `src/`, ending in .ts, .mts, .js or .mjs. Default
    /// `cell-<n>.ts` (or `.js` for JavaScript).
    #[serde(default)]
    pub filename: Option<String>,
    /// The cell's language; wins over the file extension. Default: from the
    /// extension, else the session's language.
    #[serde(default)]
    pub language: Option<Language>,
}

/// `exec_ts.cell_create` / `cell_update` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellRef {
    /// The cell's stable id.
    pub cell_id: String,
    /// Its file name under `src/`.
    pub filename: String,
}

pub(crate) async fn cell_create(
    state: Arc<State>,
    args: CellCreateArgs,
    ctx: Context,
) -> Result<CellRef, PackError> {
    state
        .in_session(&ctx, args.session_id, move |nb, mut meta| {
            let filename = match &args.filename {
                Some(name) => name.clone(),
                None => {
                    let ext = args.language.unwrap_or(meta.language).extension();
                    (1..)
                        .map(|n| format!("cell-{n}.{ext}"))
                        .find(|name| !meta.has_file(name))
                        .expect("an unused name exists")
                }
            };
            notebook::check_filename(&filename)?;
            if meta.has_file(&filename) {
                return Err(PackError::invalid_argument(format!(
                    "session `{}` already has a cell `{filename}`; pick another filename or use `exec_ts.cell_update`",
                    meta.id
                )));
            }
            let cell = CellMeta {
                id: notebook::new_id("c"),
                kind: CellKind::Code,
                filename: Some(filename.clone()),
                language: args.language,
                text: None,
            };
            nb.set_source(&mut meta, &filename, Some(&args.source))?;
            let cell_id = cell.id.clone();
            meta.cells.push(cell);
            nb.save(&meta)?;
            Ok(CellRef { cell_id, filename })
        })
        .await
}

/// `exec_ts.cell_update` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CellUpdateArgs {
    /// Session id.
    pub session_id: String,
    /// Cell id (from `cell_create` or `cell_list`).
    pub cell_id: String,
    /// The new source (code, or text of a markdown cell).
    pub source: String,
}

pub(crate) async fn cell_update(
    state: Arc<State>,
    args: CellUpdateArgs,
    ctx: Context,
) -> Result<CellRef, PackError> {
    state
        .in_session(&ctx, args.session_id, move |nb, mut meta| {
            let index = meta.cell_index(&args.cell_id)?;
            let filename = meta.cells[index].filename.clone();
            match &filename {
                Some(filename) => nb.set_source(&mut meta, filename, Some(&args.source))?,
                None => meta.cells[index].text = Some(args.source.clone()),
            }
            nb.save(&meta)?;
            Ok(CellRef {
                cell_id: args.cell_id.clone(),
                filename: filename.unwrap_or_default(),
            })
        })
        .await
}

/// One cell in `cell_list`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellInfo {
    /// Stable id.
    pub cell_id: String,
    /// `code` or `markdown`.
    #[serde(rename = "type")]
    pub kind: CellKind,
    /// File name under `src/` (code cells; empty for markdown).
    pub filename: String,
    /// Detected language (code cells).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<Language>,
    /// The code or markdown text.
    pub source: String,
}

/// `exec_ts.cell_list` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellList {
    /// Session id.
    pub session_id: String,
    /// Cells in order.
    pub cells: Vec<CellInfo>,
}

pub(crate) async fn cell_list(
    state: Arc<State>,
    args: SessionArgs,
    ctx: Context,
) -> Result<CellList, PackError> {
    state
        .in_session(&ctx, args.session_id, move |nb, meta| {
            let cells = meta
                .cells
                .iter()
                .map(|c| {
                    Ok(CellInfo {
                        cell_id: c.id.clone(),
                        kind: c.kind,
                        filename: c.filename.clone().unwrap_or_default(),
                        language: (c.kind == CellKind::Code).then(|| c.language()),
                        source: nb.source(&meta, c)?,
                    })
                })
                .collect::<Result<_, PackError>>()?;
            Ok(CellList {
                session_id: meta.id,
                cells,
            })
        })
        .await
}

/// Arguments naming a cell.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CellArgs {
    /// Session id.
    pub session_id: String,
    /// Cell id.
    pub cell_id: String,
}

/// `exec_ts.cell_delete` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellDeleted {
    /// Session id.
    pub session_id: String,
    /// The deleted cell.
    pub cell_id: String,
    /// Always true (a missing cell is an error).
    pub deleted: bool,
}

pub(crate) async fn cell_delete(
    state: Arc<State>,
    args: CellArgs,
    ctx: Context,
) -> Result<CellDeleted, PackError> {
    state
        .in_session(&ctx, args.session_id, move |nb, mut meta| {
            let cell = meta.cells.remove(meta.cell_index(&args.cell_id)?);
            if let Some(filename) = &cell.filename {
                nb.set_source(&mut meta, filename, None)?;
            }
            nb.save(&meta)?;
            Ok(CellDeleted {
                session_id: meta.id,
                cell_id: cell.id,
                deleted: true,
            })
        })
        .await
}
