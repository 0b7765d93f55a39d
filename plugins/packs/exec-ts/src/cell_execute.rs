//! `exec_ts.cell_execute`: every code cell of the session stripped to
//! JavaScript in a fresh build folder, then the one asked for run with the
//! session folder as working directory.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use pack_sdk::{Context, PackError};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    instrument,
    node::{self, ExecOutput},
    notebook::{self, CellKind, CellMeta, Language, Notebooks, SessionMeta},
    npm_install::{default_npm_timeout, install},
    scratch::Scratch,
    state::{State, blocking, default_timeout, refused, timeout_of},
    strip::strip_types,
};

/// `exec_ts.cell_execute` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CellExecuteArgs {
    /// Session id.
    pub session_id: String,
    /// Cell id.
    pub cell_id: String,
    /// Time limit in milliseconds; past it the whole process group is killed
    /// and `exitCode` is 124.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1))]
    pub timeout: u64,
}

/// Resolves `./x`, `./x.js` to the TypeScript cells and loads `.ts` files as
/// ES modules (their content is already JavaScript: see `build`).
const LOADER_MJS: &str = include_str!("loader.mjs");
/// Registers the loader: node's `--import` runs it before the cell.
const REGISTER_MJS: &str = include_str!("register.mjs");

/// Strip every code cell of the session into a fresh `.packhost/run-*/src/`
/// (same file names, so cells import each other as they are written). The
/// executed cell's syntax error is returned; another cell's becomes a module
/// that throws it when imported.
fn build(
    nb: &Notebooks,
    meta: &SessionMeta,
    cell: &CellMeta,
) -> Result<Result<(Scratch, PathBuf), String>, PackError> {
    let dir = nb.dir(&meta.id);
    let hidden = Path::new(".packhost");
    let session = notebook::session_dir(&dir)?;
    session
        .create_dir_all(hidden)
        .map_err(|e| notebook::io_error(&dir.join(hidden), e))?;
    for (name, content) in [("loader.mjs", LOADER_MJS), ("register.mjs", REGISTER_MJS)] {
        let path = hidden.join(name);
        if session.read_to_string(&path).ok().as_deref() != Some(content) {
            notebook::write(&dir, &path, content)?;
        }
    }
    let run = Scratch::new(&dir, ".packhost", "run-")
        .map_err(|e| notebook::io_error(&dir.join(hidden), e))?;
    let src = run.rel().join("src");
    session
        .create_dir_all(&src)
        .map_err(|e| notebook::io_error(&dir.join(&src), e))?;
    let mut entry = None;
    for c in meta.cells.iter().filter(|c| c.kind == CellKind::Code) {
        let Some(filename) = &c.filename else {
            continue;
        };
        let source = nb.source(meta, c)?;
        let js = match c.language() {
            Language::Javascript => source,
            Language::Typescript => match strip_types(&source, filename) {
                Ok(js) => js,
                Err(e) if c.id == cell.id => return Ok(Err(e.0)),
                Err(e) => format!(
                    "throw new SyntaxError({});\n",
                    serde_json::to_string(&e.0).expect("a string is JSON")
                ),
            },
        };
        let path = src.join(filename);
        notebook::write(&dir, &path, &instrument::instrument(&js, false))?;
        if c.id == cell.id {
            entry = Some(dir.join(path));
        }
    }
    let entry = entry.ok_or_else(|| {
        PackError::invalid_argument(format!(
            "cell `{}` is a markdown cell; only code cells run",
            cell.id
        ))
    })?;
    Ok(Ok((run, entry)))
}

pub(crate) async fn cell_execute(
    state: Arc<State>,
    args: CellExecuteArgs,
    ctx: Context,
) -> Result<ExecOutput, PackError> {
    let started = Instant::now();
    let timeout = timeout_of(args.timeout)?;
    let prepared = state
        .in_session_run(&ctx, args.session_id, move |nb, meta| {
            // Not found: the run shape, with the error in stderr.
            let index = meta.cell_index(&args.cell_id).map_err(refused)?;
            let cell = meta.cells[index].clone();
            let built = build(nb, &meta, &cell)?;
            let dir = nb.dir(&meta.id);
            let install = nb.needs_install(&meta).then_some(meta);
            Ok((dir, cell, built, install))
        })
        .await?;
    let (dir, cell, built, install) = prepared;
    let what = format!("cell `{}`", cell.filename.as_deref().unwrap_or(&cell.id));
    let (run, entry) = match built {
        Ok(built) => built,
        Err(diagnostics) => return Err(ExecOutput::syntax_error(diagnostics, started)),
    };
    let started = match install {
        Some(meta) => install_first(&state, &dir, meta).await?,
        None => started,
    };
    // The session's folder is the only one it may write (nothing of other
    // sessions is visible); temporary files go in this run's build folder.
    let env = node::tmpdir(run.path());
    state
        .runner
        .run_cell(
            "./.packhost/register.mjs",
            &entry,
            &dir,
            &env,
            timeout,
            started,
            &ctx,
        )
        .await?
        .into_result(&what)
}

/// `npm install` of what the session's `package.json` lists, in a folder
/// whose `node_modules` lacks it (npm ran through another instance): its
/// failure is the cell's answer. Returns when the cell's own time starts.
async fn install_first(
    state: &Arc<State>,
    dir: &Path,
    meta: SessionMeta,
) -> Result<Instant, PackError> {
    let timeout = Duration::from_millis(default_npm_timeout());
    let output = install(state, dir, &[], Vec::new(), timeout, Instant::now()).await?;
    output.into_result("npm install of the session's package.json on this instance")?;
    blocking(state, move |state| state.notebooks.installed(&meta)).await?;
    Ok(Instant::now())
}
