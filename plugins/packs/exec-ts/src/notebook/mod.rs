//! Notebook sessions (the Srcbook model): one folder per session under the
//! notebooks root, where its cells run,
//!
//! ```text
//! <root>/<sessionId>/
//!   package.json    {"type": "module", ...}: cells are ES modules; `npm_install` adds here
//!   tsconfig.json
//!   src/<filename>  one file per code cell
//!   .packhost/      the loader and per-run builds (JavaScript stripped from the cells)
//! ```
//!
//! and the host's record of it (owner, title, language, cells in order)
//! in a [`Store`]: on this instance's disk (`disk.rs`, the default), or in
//! PostgreSQL when the host has a `[state] database` (`postgres.rs`), where
//! every instance finds it and the record also holds the session's files,
//! written into the folder of the instance that reads it.
//!
//! Code running in a session may write everything in its folder, so
//! nothing there decides which folder, owner or file the host uses. The id
//! is always the one asked for (checked: 1–64 of `[A-Za-z0-9_-]`, so never
//! `..`, `/` or absolute), the folder always `<root>/<id>`, a cell's file
//! name checked before any path is made of it. Files in a session folder
//! are read and written only through [`beneath::Dir`] with
//! [`Links::Refused`]: no link code planted is followed.
//!
//! A session belongs to the caller that created it: its record holds its
//! `owner` (organisation and user). Every operation takes the caller, and a
//! session the pack's [`Ownership`] rule does not give it is not found,
//! exactly as an unknown id (listings and error messages name only the
//! caller's own). Records are read on every call, so ids survive a restart.

mod disk;
mod postgres;

use std::{
    collections::BTreeMap,
    hash::{BuildHasher, Hasher},
    io,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
    time::{SystemTime, UNIX_EPOCH},
};

use beneath::{Dir, Links};
use pack_sdk::{
    Context, PackError, codes,
    owned::{Kind, Limits, Owner, Ownership, Share},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A language of code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// TypeScript: types are stripped before `node` runs it.
    #[default]
    Typescript,
    /// JavaScript: runs as it is.
    Javascript,
}

impl Language {
    /// From a file name's extension: `.js`/`.mjs` are JavaScript, `.ts`/`.mts`
    /// TypeScript; anything else is unknown.
    pub fn from_filename(name: &str) -> Option<Self> {
        let ext = name.rsplit_once('.')?.1;
        match ext {
            "js" | "mjs" => Some(Self::Javascript),
            "ts" | "mts" => Some(Self::Typescript),
            _ => None,
        }
    }

    /// The extension a new cell gets.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Typescript => "ts",
            Self::Javascript => "js",
        }
    }

    /// The Markdown fence's info string.
    pub fn fence_name(self) -> &'static str {
        match self {
            Self::Typescript => "typescript",
            Self::Javascript => "javascript",
        }
    }
}

/// The host's record of a session.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionMeta {
    /// The session id (its directory name): the id asked for, never read.
    #[serde(skip)]
    pub id: String,
    /// Which record this was read from, for a change that must not cross
    /// another ([`Store::save`]).
    #[serde(skip)]
    pub version: i64,
    /// Who created it.
    pub owner: Owner,
    /// A title, shown in listings and exports.
    pub title: String,
    /// The language of new cells without filename or language.
    pub language: Language,
    /// Cells in order.
    pub cells: Vec<CellMeta>,
    /// The session's files when the record holds them (PostgreSQL):
    /// `package.json`, `tsconfig.json`, `src/<filename>` of each code cell.
    /// On disk the folder holds them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
}

/// One cell as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellMeta {
    /// Stable id.
    pub id: String,
    /// `code` or `markdown`.
    #[serde(rename = "type")]
    pub kind: CellKind,
    /// File name under `src/` (code cells).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Language set explicitly when the cell was created (wins over the
    /// extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Language>,
    /// The text of a markdown cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The kind of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CellKind {
    /// A file of code under `src/`.
    Code,
    /// Markdown text (from an imported `.src.md`).
    Markdown,
}

impl CellMeta {
    /// Detected language: the cell's metadata, then the file extension, then
    /// TypeScript.
    pub fn language(&self) -> Language {
        self.language
            .or_else(|| self.filename.as_deref().and_then(Language::from_filename))
            .unwrap_or_default()
    }
}

/// Where the host's records of notebook sessions live. Records are found
/// by id alone: [`Notebooks`] applies the owner rule to them.
pub trait Store: Send + Sync {
    /// Session `id`'s record, whoever owns it; `None` when there is none.
    fn read(&self, id: &str) -> Result<Option<SessionMeta>, PackError>;
    /// The records of organisation `org`'s sessions, maybe others too.
    fn list(&self, org: &str) -> Result<Vec<SessionMeta>, PackError>;
    /// Records the new session `meta`, its `package.json` given, if `fits`
    /// allows one more.
    fn create(
        &self,
        meta: &mut SessionMeta,
        package_json: &str,
        share: Share,
        fits: Fits<'_>,
    ) -> Result<(), PackError>;
    /// Writes `meta` back: `false` when it changed since it was read.
    fn save(&self, meta: &SessionMeta) -> Result<bool, PackError>;
    /// Forgets session `id` and removes its folder.
    fn remove(&self, id: &str) -> Result<(), PackError>;
    /// The file `rel` of session `meta` (`package.json`, `src/<filename>`).
    fn file(&self, meta: &SessionMeta, rel: &str) -> Result<String, PackError>;
    /// Sets the file `rel` of session `meta` to `content` (`None` removes
    /// it), kept by the next [`Self::save`] where the record holds files.
    fn set_file(
        &self,
        meta: &mut SessionMeta,
        rel: &str,
        content: Option<&str>,
    ) -> Result<(), PackError>;
    /// Makes the session's folder hold the files of `meta`, before anything
    /// there is read or run.
    fn materialise(&self, meta: &SessionMeta) -> Result<(), PackError>;
    /// Whether the folder's `node_modules` may lack what the `package.json`
    /// of `meta` lists (npm ran on another instance, or before a change).
    fn needs_install(&self, meta: &SessionMeta) -> bool;
    /// Notes that the folder's `node_modules` holds what the `package.json`
    /// of `meta` lists.
    fn installed(&self, meta: &SessionMeta) -> Result<(), PackError>;
    /// After `npm install` in session `id`'s folder: the `package.json` npm
    /// wrote there, where the record (not the folder) holds the files.
    fn npm_wrote(&self, id: &str) -> Result<Option<String>, PackError>;
}

/// Whether one more session fits, given how many its owner holds (a user,
/// or with `share = "org"` the organisation) and how many there are in all.
pub type Fits<'a> = &'a (dyn Fn(usize, usize) -> Result<(), PackError> + Sync);

/// The notebooks root, where the records live, and the operations on them
/// (blocking work), each for one caller.
pub struct Notebooks {
    root: PathBuf,
    ownership: Ownership,
    limits: Limits,
    store: Box<dyn Store>,
}

/// Whether `id` can name a session or cell: 1–64 of `[A-Za-z0-9_-]`.
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Whether `name` can be a cell file name: a plain name (no `/`, not
/// starting with `.`) ending in `.ts`, `.mts`, `.js` or `.mjs`.
pub fn check_filename(name: &str) -> Result<(), PackError> {
    let plain = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if plain && Language::from_filename(name).is_some() {
        return Ok(());
    }
    Err(PackError::invalid_argument(format!(
        "cell filename `{name}` is not allowed; use a plain file name of letters, digits, `_`, `-`, `.` \
         ending in .ts, .mts, .js or .mjs (e.g. `utils.ts`)"
    )))
}

/// A new random-looking id: `prefix` + 12 hex digits.
pub fn new_id(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    hasher.write_u128(nanos);
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    format!("{prefix}{:012x}", hasher.finish() & 0xffff_ffff_ffff)
}

/// What the limits call notebook sessions, and how to free one.
fn sessions() -> Kind {
    Kind {
        limit_help: "delete one of yours with exec_ts.session_delete(sessionId), or raise the \
                     limit in [packs.exec_ts] config",
        ..Kind::sessions("create one with exec_ts.session_create()")
    }
}

/// The `package.json` of a new session.
pub const PACKAGE_JSON: &str = "{\n  \"type\": \"module\",\n  \"dependencies\": {}\n}\n";

/// The `tsconfig.json` of a new session (for editors; stripping ignores it).
pub const TSCONFIG_JSON: &str = r#"{
  "compilerOptions": {
    "module": "nodenext",
    "moduleResolution": "nodenext",
    "target": "es2022",
    "strict": true,
    "allowImportingTsExtensions": true,
    "noEmit": true
  }
}
"#;

impl Notebooks {
    /// Sessions under `root`, shared as `ownership` says, their records on
    /// disk or, with a `database` (`postgres://…`), in PostgreSQL; a limit
    /// of 0 is refused, naming its key.
    pub fn new(
        root: PathBuf,
        ownership: Ownership,
        limits: Limits,
        database: Option<String>,
    ) -> Result<Self, PackError> {
        limits.validate(&sessions())?;
        let store: Box<dyn Store> = match database {
            None => Box::new(disk::Disk::new(root.clone())),
            Some(url) => Box::new(postgres::Postgres::new(&url, root.clone())),
        };
        Ok(Self {
            root,
            ownership,
            limits,
            store,
        })
    }

    /// Who the call of `ctx` is, for the operations below.
    pub fn caller(&self, ctx: &Context) -> Owner {
        self.ownership.caller(ctx)
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of session `id` (an id [`load`](Self::load) checked).
    pub fn dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    /// The ids of the sessions `caller` may use, sorted.
    pub fn ids(&self, caller: &Owner) -> Result<Vec<String>, PackError> {
        let sessions = self.sessions(caller)?;
        Ok(sessions.into_iter().map(|meta| meta.id).collect())
    }

    /// `SESSION_NOT_FOUND` for `id`, listing the sessions `caller` may use.
    fn session_not_found(&self, id: &str, caller: &Owner) -> PackError {
        let ids = match self.ids(caller) {
            Ok(ids) => ids,
            Err(e) => return e,
        };
        let existing = if ids.is_empty() {
            "you have no sessions; create one with `exec_ts.session_create`".to_owned()
        } else {
            format!("your sessions: {}", ids.join(", "))
        };
        let message = format!(
            "no session `{id}` under {} ({existing})",
            self.root.display()
        );
        PackError::new(codes::SESSION_NOT_FOUND, message)
    }

    fn allowed(&self, meta: &SessionMeta, caller: &Owner) -> bool {
        self.ownership.allows(Some(&meta.owner), caller)
    }

    /// Session `id`'s record, if `caller` may use it; else
    /// `SESSION_NOT_FOUND`, as for an id that does not exist.
    fn find(&self, id: &str, caller: &Owner) -> Result<SessionMeta, PackError> {
        if !valid_id(id) {
            return Err(self.session_not_found(id, caller));
        }
        match self.store.read(id)? {
            Some(meta) if self.allowed(&meta, caller) => Ok(meta),
            _ => Err(self.session_not_found(id, caller)),
        }
    }

    /// [`Self::find`], with the session's folder holding its files.
    pub fn load(&self, id: &str, caller: &Owner) -> Result<SessionMeta, PackError> {
        let meta = self.find(id, caller)?;
        self.store.materialise(&meta)?;
        Ok(meta)
    }

    /// The sessions `caller` may use, by id (unreadable ones left out).
    pub fn sessions(&self, caller: &Owner) -> Result<Vec<SessionMeta>, PackError> {
        let mut sessions = self.store.list(&caller.org)?;
        sessions.retain(|meta| self.allowed(meta, caller));
        sessions.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(sessions)
    }

    /// Writes back `meta`, read by [`Self::load`]; `CONFLICT` when another
    /// change to it came first.
    pub fn save(&self, meta: &SessionMeta) -> Result<(), PackError> {
        if self.store.save(meta)? {
            return Ok(());
        }
        Err(PackError::new(
            codes::CONFLICT,
            format!(
                "session `{}` was changed by another call at the same time, again and again; \
                 nothing of this call was kept: try it again",
                meta.id
            ),
        ))
    }

    /// Create a new session with its folder, owned by `owner`.
    pub fn create(
        &self,
        title: &str,
        language: Language,
        package_json: &str,
        owner: &Owner,
    ) -> Result<SessionMeta, PackError> {
        let mine = self.ids(owner)?;
        let share = self.ownership.share();
        let fits = |held, total| self.limits.check(&sessions(), share, &mine, held, total);
        let mut meta = SessionMeta {
            id: new_id("s"),
            version: 0,
            owner: owner.clone(),
            title: title.to_owned(),
            language,
            cells: Vec::new(),
            files: BTreeMap::new(),
        };
        self.store.create(&mut meta, package_json, share, &fits)?;
        self.store.materialise(&meta)?;
        Ok(meta)
    }

    /// Remove session `id` of `caller` and everything in its directory.
    pub fn delete(&self, id: &str, caller: &Owner) -> Result<(), PackError> {
        let meta = self.find(id, caller)?;
        self.store.remove(&meta.id)
    }

    /// The source of a cell (markdown text, or its file's content).
    pub fn source(&self, meta: &SessionMeta, cell: &CellMeta) -> Result<String, PackError> {
        match (&cell.kind, &cell.filename) {
            (CellKind::Code, Some(filename)) => self.store.file(meta, &cell_file(filename)?),
            _ => Ok(cell.text.clone().unwrap_or_default()),
        }
    }

    /// Sets the source of code cell file `filename` (`None` removes it);
    /// [`Self::save`] keeps it.
    pub fn set_source(
        &self,
        meta: &mut SessionMeta,
        filename: &str,
        source: Option<&str>,
    ) -> Result<(), PackError> {
        self.store.set_file(meta, &cell_file(filename)?, source)
    }

    /// The session's `package.json`, if it has one.
    pub fn package_json(&self, meta: &SessionMeta) -> Option<String> {
        self.store.file(meta, "package.json").ok()
    }

    /// Sets the session's `package.json`; [`Self::save`] keeps it.
    pub fn set_package_json(&self, meta: &mut SessionMeta, text: &str) -> Result<(), PackError> {
        self.store.set_file(meta, "package.json", Some(text))
    }

    /// See [`Store::needs_install`].
    pub fn needs_install(&self, meta: &SessionMeta) -> bool {
        self.store.needs_install(meta)
    }

    /// See [`Store::npm_wrote`].
    pub fn npm_wrote(&self, id: &str) -> Result<Option<String>, PackError> {
        self.store.npm_wrote(id)
    }

    /// See [`Store::installed`].
    pub fn installed(&self, meta: &SessionMeta) -> Result<(), PackError> {
        self.store.installed(meta)
    }
}

/// The file of code cell `filename` in its session, the name checked
/// (records from a shared database are checked as arguments are).
pub fn cell_file(filename: &str) -> Result<String, PackError> {
    check_filename(filename)?;
    Ok(format!("src/{filename}"))
}

impl SessionMeta {
    /// Where cell `id` is in `cells`; else `CELL_NOT_FOUND` listing what
    /// exists.
    pub fn cell_index(&self, id: &str) -> Result<usize, PackError> {
        self.cells
            .iter()
            .position(|c| c.id == id)
            .ok_or_else(|| PackError::new(codes::CELL_NOT_FOUND, self.cell_not_found(id)))
    }

    /// Whether a code cell has the file `name`.
    pub fn has_file(&self, name: &str) -> bool {
        self.cells
            .iter()
            .any(|c| c.filename.as_deref() == Some(name))
    }

    fn cell_not_found(&self, cell: &str) -> String {
        let ids: Vec<String> = self
            .cells
            .iter()
            .map(|c| match &c.filename {
                Some(f) => format!("{} ({f})", c.id),
                None => c.id.clone(),
            })
            .collect();
        let existing = if ids.is_empty() {
            "it has no cells; add one with `exec_ts.cell_create`".to_owned()
        } else {
            format!("cells: {}", ids.join(", "))
        };
        format!("session `{}` has no cell `{cell}` ({existing})", self.id)
    }
}

/// The session folder `dir`, where code may have planted links.
pub fn session_dir(dir: &Path) -> Result<Dir, PackError> {
    Dir::open(dir, Links::Refused).map_err(|e| io_error(dir, e))
}

/// Write `rel` in the session folder `dir` (following no link), naming it
/// in the error.
pub fn write(dir: &Path, rel: impl AsRef<Path>, content: &str) -> Result<(), PackError> {
    let rel = rel.as_ref();
    session_dir(dir)?
        .write(rel, content)
        .map_err(|e| io_error(&dir.join(rel), e))
}

/// Read `rel` in the session folder `dir` (following no link), naming it in
/// the error.
pub fn read(dir: &Path, rel: impl AsRef<Path>) -> Result<String, PackError> {
    let rel = rel.as_ref();
    session_dir(dir)?
        .read_to_string(rel)
        .map_err(|e| io_error(&dir.join(rel), e))
}

/// An I/O failure naming the path.
pub fn io_error(path: &Path, e: io::Error) -> PackError {
    PackError::internal(format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn ids_that_could_escape_are_invalid() {
        for bad in ["", "../x", "/etc", "a/b", ".", "..", "a b", &"x".repeat(65)] {
            assert!(!valid_id(bad), "{bad:?}");
        }
        assert!(valid_id("s0123abcdef01"));
        assert!(valid_id(&new_id("c")));
        assert_ne!(new_id("c"), new_id("c"));
    }

    #[test]
    fn language_comes_from_metadata_then_extension_then_typescript() {
        let cell = |filename: Option<&str>, language| CellMeta {
            id: "c1".into(),
            kind: CellKind::Code,
            filename: filename.map(Into::into),
            language,
            text: None,
        };
        assert_eq!(cell(Some("a.js"), None).language(), Language::Javascript);
        assert_eq!(cell(Some("a.mjs"), None).language(), Language::Javascript);
        assert_eq!(cell(Some("a.mts"), None).language(), Language::Typescript);
        assert_eq!(
            cell(Some("a.js"), Some(Language::Typescript)).language(),
            Language::Typescript
        );
        assert_eq!(cell(None, None).language(), Language::Typescript);
    }

    #[test]
    fn filenames_must_be_plain_code_files() {
        for bad in ["../a.ts", "/tmp/a.ts", "a/b.ts", ".a.ts", "a.py", "a", ""] {
            let err = check_filename(bad).unwrap_err();
            assert_eq!(err.code(), codes::INVALID_ARGUMENT, "{bad}");
        }
        check_filename("utils-2.mts").unwrap();
    }

    fn notebooks(root: &Path, share: Share) -> Notebooks {
        let rule = Ownership::with_unowned(share, Owner::new("local", "local"));
        let limits = Limits {
            max: 1000,
            per_owner: 100,
        };
        Notebooks::new(root.into(), rule, limits, None).unwrap()
    }

    #[test]
    fn a_session_is_found_after_a_restart_and_lists_what_exists() {
        let root = tempfile::tempdir().unwrap();
        let ada = Owner::new("acme", "ada");
        let meta = notebooks(root.path(), Share::User)
            .create("t", Language::Typescript, PACKAGE_JSON, &ada)
            .unwrap();
        // A second value over the same root: nothing is cached.
        let again = notebooks(root.path(), Share::User);
        assert_eq!(again.load(&meta.id, &ada).unwrap().title, "t");
        assert_eq!(again.load(&meta.id, &ada).unwrap().owner, ada);
        let err = again.load("../x", &ada).unwrap_err();
        assert_eq!(err.code(), codes::SESSION_NOT_FOUND);
        assert!(err.message().contains(&meta.id), "{err}");
    }

    #[test]
    fn a_session_is_its_owners_alone() {
        let root = tempfile::tempdir().unwrap();
        let nb = notebooks(root.path(), Share::User);
        let (ada, bob, eve) = (
            Owner::new("acme", "ada"),
            Owner::new("acme", "bob"),
            Owner::new("evil", "eve"),
        );
        let theirs = nb
            .create("a", Language::Typescript, PACKAGE_JSON, &ada)
            .unwrap();
        let mine = nb
            .create("e", Language::Typescript, PACKAGE_JSON, &eve)
            .unwrap();
        for caller in [&eve, &bob] {
            let err = nb.load(&theirs.id, caller).unwrap_err();
            assert_eq!(err.code(), codes::SESSION_NOT_FOUND);
            let unknown = nb.load("s-unknown", caller).unwrap_err();
            assert_eq!(
                err.message().replace(&theirs.id, "s-unknown"),
                unknown.message()
            );
            assert!(nb.delete(&theirs.id, caller).is_err());
        }
        assert_eq!(nb.ids(&eve).unwrap(), [mine.id.as_str()]);
        assert!(nb.ids(&bob).unwrap().is_empty());
        assert_eq!(
            notebooks(root.path(), Share::Org).ids(&bob).unwrap(),
            [theirs.id.as_str()]
        );
    }

    #[test]
    fn what_code_writes_in_its_folder_decides_nothing() {
        let root = tempfile::tempdir().unwrap();
        let nb = notebooks(root.path(), Share::User);
        let (ada, eve) = (Owner::new("acme", "ada"), Owner::new("evil", "eve"));
        let theirs = nb
            .create("a", Language::Typescript, PACKAGE_JSON, &ada)
            .unwrap();
        let mine = nb
            .create("e", Language::Typescript, PACKAGE_JSON, &eve)
            .unwrap();
        // Eve's code rewrites a session file in its own folder: another id,
        // another owner, a cell outside.
        let forged = serde_json::json!({
            "id": theirs.id, "owner": {"org": "acme", "user": "ada"}, "title": "x",
            "language": "typescript",
            "cells": [{"id": "cpwn", "type": "code", "filename": "../../x.js"}],
        });
        fs::write(nb.dir(&mine.id).join("session.json"), forged.to_string()).unwrap();
        let meta = nb.load(&mine.id, &eve).unwrap();
        assert_eq!(
            (meta.id.as_str(), meta.title.as_str()),
            (mine.id.as_str(), "e")
        );
        assert!(meta.cells.is_empty());
        assert_eq!(nb.ids(&eve).unwrap(), [mine.id.as_str()]);
        // A folder without the host's metadata is no session, whatever it holds.
        fs::create_dir(nb.dir("splanted")).unwrap();
        fs::write(nb.dir("splanted").join("session.json"), forged.to_string()).unwrap();
        for caller in [&ada, &eve] {
            assert!(!nb.ids(caller).unwrap().contains(&"splanted".to_owned()));
            assert_eq!(
                nb.load("splanted", caller).unwrap_err().code(),
                codes::SESSION_NOT_FOUND
            );
        }
    }
}
