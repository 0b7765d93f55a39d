//! Sessions in PostgreSQL (`[state] database`), which every instance
//! behind the load balancer finds: one row each (`state_store`'s pack
//! sessions of `exec_ts`), holding the record and the session's files.
//! The instance that reads a session writes those files into its own
//! folder for it (`<root>/<id>/`); what code writes there stays on that
//! instance, and is never read back as the record.
//!
//! Calls run on blocking threads (as the disk's file work), so each waits
//! for the database there.

use std::{future::Future, path::PathBuf};

use beneath::{Dir, Links};
use pack_sdk::{PackError, owned::Share};
use state_store::{Counted, PackSessions, SessionRow, State, StoreError};

use super::{
    CellKind, Fits, SessionMeta, Store, TSCONFIG_JSON, cell_file, io_error, read, session_dir,
    write,
};

/// The pack's name for its rows.
const PACK: &str = "exec_ts";

/// In a session folder: the `package.json` its `node_modules` was last
/// installed from, on this instance.
const INSTALLED: &str = ".packhost/installed-package.json";

/// Sessions in a PostgreSQL database, their folders under a local root.
pub struct Postgres {
    sessions: PackSessions,
    root: PathBuf,
}

impl Postgres {
    /// Sessions in `database` (`postgres://…`), connected by the first call.
    pub fn new(database: &str, root: PathBuf) -> Self {
        let sessions = State::open(Some(database.to_owned()))
            .pack_sessions(PACK)
            .expect("a database keeps pack sessions");
        Self { sessions, root }
    }
}

/// `work` on the database, waited for on this blocking thread.
fn wait<T>(work: impl Future<Output = Result<T, StoreError>>) -> Result<T, PackError> {
    let done = tokio::runtime::Handle::current().block_on(work);
    done.map_err(|e| PackError::internal(format!("notebook sessions: {e}")))
}

/// The record in `row`: its id, owner and version are the row's.
fn record(row: SessionRow) -> Result<SessionMeta, PackError> {
    let mut meta: SessionMeta = serde_json::from_slice(&row.body).map_err(|e| {
        PackError::internal(format!("session `{}` has no valid record: {e}", row.id))
    })?;
    meta.id = row.id;
    meta.owner = row.owner;
    meta.version = row.version;
    Ok(meta)
}

fn body(meta: &SessionMeta) -> Vec<u8> {
    serde_json::to_vec(meta).expect("session metadata is JSON")
}

impl Store for Postgres {
    fn read(&self, id: &str) -> Result<Option<SessionMeta>, PackError> {
        wait(self.sessions.get(id))?.map(record).transpose()
    }

    fn list(&self, org: &str) -> Result<Vec<SessionMeta>, PackError> {
        let rows = wait(self.sessions.list(org))?;
        // An unreadable record is left out, as on disk.
        Ok(rows
            .into_iter()
            .filter_map(|row| record(row).ok())
            .collect())
    }

    fn create(
        &self,
        meta: &mut SessionMeta,
        package_json: &str,
        share: Share,
        fits: Fits<'_>,
    ) -> Result<(), PackError> {
        let files = [
            ("package.json", package_json),
            ("tsconfig.json", TSCONFIG_JSON),
        ];
        for (name, content) in files {
            meta.files.insert(name.to_owned(), content.to_owned());
        }
        let counted = match share {
            Share::User => Counted::PerUser,
            Share::Org => Counted::PerOrg,
        };
        let body = body(meta);
        wait(
            self.sessions
                .create(&meta.id, &meta.owner, &body, counted, fits),
        )??;
        meta.version = 1;
        Ok(())
    }

    fn save(&self, meta: &SessionMeta) -> Result<bool, PackError> {
        wait(self.sessions.update(&meta.id, meta.version, &body(meta)))
    }

    fn remove(&self, id: &str) -> Result<(), PackError> {
        wait(self.sessions.remove(id))?;
        let root = Dir::open(&self.root, Links::Refused).map_err(|e| io_error(&self.root, e))?;
        match root.remove_dir_all(id) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io_error(&self.root.join(id), e))
            }
            _ => Ok(()),
        }
    }

    fn file(&self, meta: &SessionMeta, rel: &str) -> Result<String, PackError> {
        meta.files.get(rel).cloned().ok_or_else(|| {
            PackError::internal(format!("session `{}` has no file `{rel}`", meta.id))
        })
    }

    fn set_file(
        &self,
        meta: &mut SessionMeta,
        rel: &str,
        content: Option<&str>,
    ) -> Result<(), PackError> {
        match content {
            Some(content) => meta.files.insert(rel.to_owned(), content.to_owned()),
            None => meta.files.remove(rel),
        };
        Ok(())
    }

    /// Writes `package.json`, `tsconfig.json` and each code cell's file
    /// (its name checked) where they differ from the record; nothing else
    /// the record names becomes a path.
    fn materialise(&self, meta: &SessionMeta) -> Result<(), PackError> {
        std::fs::create_dir_all(&self.root).map_err(|e| io_error(&self.root, e))?;
        let root = Dir::open(&self.root, Links::Refused).map_err(|e| io_error(&self.root, e))?;
        let dir = self.root.join(&meta.id);
        let src = format!("{}/src", meta.id);
        root.create_dir_all(&src)
            .map_err(|e| io_error(&self.root.join(&src), e))?;
        let session = session_dir(&dir)?;
        let code = meta.cells.iter().filter(|c| c.kind == CellKind::Code);
        let cells = code.filter_map(|c| c.filename.as_deref()).map(cell_file);
        let fixed = ["package.json", "tsconfig.json"].map(|name| Ok(name.to_owned()));
        for rel in fixed.into_iter().chain(cells) {
            let rel = rel?;
            let Some(content) = meta.files.get(&rel) else {
                continue;
            };
            if session.read_to_string(&rel).ok().as_ref() != Some(content) {
                // A link code put in its place goes, never what it leads to.
                let _ = session.remove_file(&rel);
                session
                    .write(&rel, content)
                    .map_err(|e| io_error(&dir.join(&rel), e))?;
            }
        }
        Ok(())
    }

    /// When `package.json` lists packages and this folder's last install
    /// was of another `package.json` (or none).
    fn needs_install(&self, meta: &SessionMeta) -> bool {
        let Some(package_json) = meta.files.get("package.json") else {
            return false;
        };
        let lists = serde_json::from_str::<serde_json::Value>(package_json).is_ok_and(|json| {
            ["dependencies", "devDependencies", "optionalDependencies"]
                .iter()
                .any(|key| json[key].as_object().is_some_and(|deps| !deps.is_empty()))
        });
        let dir = session_dir(&self.root.join(&meta.id)).ok();
        let done = dir.and_then(|dir| dir.read_to_string(INSTALLED).ok());
        lists && done.as_ref() != Some(package_json)
    }

    fn installed(&self, meta: &SessionMeta) -> Result<(), PackError> {
        let package_json = self.file(meta, "package.json")?;
        write(&self.root.join(&meta.id), INSTALLED, &package_json)
    }

    fn npm_wrote(&self, id: &str) -> Result<Option<String>, PackError> {
        read(&self.root.join(id), "package.json").map(Some)
    }
}
