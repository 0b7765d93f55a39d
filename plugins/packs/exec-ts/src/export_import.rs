//! Srcbook documents: `session_export` writes a session as `.src.md`,
//! `session_import` makes a session of one.

use std::sync::Arc;

use pack_sdk::{Context, PackError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    cells::CellRef,
    notebook::{self, CellKind, CellMeta},
    sessions::SessionArgs,
    srcmd,
    state::{State, blocking},
};

/// `exec_ts.session_export` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionExported {
    /// Session id.
    pub session_id: String,
    /// Where the document was written (`<session dir>/<sessionId>.src.md`).
    pub path: String,
    /// The `.src.md` document (Srcbook's format).
    pub markdown: String,
}

pub(crate) async fn session_export(
    state: Arc<State>,
    args: SessionArgs,
    ctx: Context,
) -> Result<SessionExported, PackError> {
    state
        .in_session(&ctx, args.session_id, move |nb, meta| {
            let dir = nb.dir(&meta.id);
            let package_json = nb.package_json(&meta);
            let cells = meta
                .cells
                .iter()
                .map(|c| {
                    let source = nb.source(&meta, c)?;
                    Ok(match (&c.kind, &c.filename) {
                        (CellKind::Code, Some(filename)) => srcmd::Cell::Code {
                            filename: filename.clone(),
                            source,
                        },
                        _ => srcmd::Cell::Markdown(source),
                    })
                })
                .collect::<Result<_, PackError>>()?;
            let markdown = srcmd::render(&srcmd::Document {
                title: meta.title.clone(),
                language: meta.language,
                package_json,
                cells,
            });
            let name = format!("{}.src.md", meta.id);
            notebook::write(&dir, &name, &markdown)?;
            let path = dir.join(name);
            Ok(SessionExported {
                session_id: meta.id,
                path: path.display().to_string(),
                markdown,
            })
        })
        .await
}

/// `exec_ts.session_import` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionImportArgs {
    /// A `.src.md` document (Srcbook's format: `<!-- srcbook:{...} -->`
    /// header, `# Title`, `###### package.json` block, markdown cells,
    /// `###### name.ts` code blocks).
    pub markdown: String,
}

/// `exec_ts.session_import` result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionImported {
    /// The new session's id.
    pub session_id: String,
    /// Its directory.
    pub dir: String,
    /// Its title.
    pub title: String,
    /// Its cells, in order.
    pub cells: Vec<CellRef>,
}

pub(crate) async fn session_import(
    state: Arc<State>,
    args: SessionImportArgs,
    ctx: Context,
) -> Result<SessionImported, PackError> {
    let owner = state.notebooks.caller(&ctx);
    blocking(&state, move |state| {
        let doc = srcmd::parse(&args.markdown)
            .map_err(|e| PackError::invalid_argument(format!("`markdown`: {e}")))?;
        let mut seen = Vec::new();
        for cell in &doc.cells {
            if let srcmd::Cell::Code { filename, .. } = cell {
                notebook::check_filename(filename)?;
                if seen.contains(&filename) {
                    return Err(PackError::invalid_argument(format!(
                        "`markdown` has two code cells named `{filename}`; file names must be unique"
                    )));
                }
                seen.push(filename);
            }
        }
        state.locked(|nb| {
            let package = doc.package_json.as_deref().unwrap_or(notebook::PACKAGE_JSON);
            let mut meta = nb.create(&doc.title, doc.language, package, &owner)?;
            let mut refs = Vec::new();
            for cell in doc.cells {
                let id = notebook::new_id("c");
                let meta_cell = match cell {
                    srcmd::Cell::Markdown(text) => CellMeta {
                        id,
                        kind: CellKind::Markdown,
                        filename: None,
                        language: None,
                        text: Some(text),
                    },
                    srcmd::Cell::Code { filename, source } => {
                        nb.set_source(&mut meta, &filename, Some(&source))?;
                        refs.push(CellRef {
                            cell_id: id.clone(),
                            filename: filename.clone(),
                        });
                        CellMeta {
                            id,
                            kind: CellKind::Code,
                            filename: Some(filename),
                            language: None,
                            text: None,
                        }
                    }
                };
                meta.cells.push(meta_cell);
            }
            nb.save(&meta)?;
            Ok(SessionImported {
                dir: nb.dir(&meta.id).display().to_string(),
                session_id: meta.id,
                title: meta.title,
                cells: refs,
            })
        })
    })
    .await
}
