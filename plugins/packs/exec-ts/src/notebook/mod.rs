//! Notebook sessions on disk (the Srcbook model): one directory per session
//! under the notebooks root,
//!
//! ```text
//! <root>/.sessions/<sessionId>.json   owner, title, language, cells in order
//!                                      (ids, filenames, markdown text): the host's
//! <root>/<sessionId>/
//!   package.json    {"type": "module", ...}: cells are ES modules; `npm_install` adds here
//!   tsconfig.json
//!   src/<filename>  one file per code cell
//!   .packhost/      the loader and per-run builds (JavaScript stripped from the cells)
//! ```
//!
//! What the host knows of a session (its owner, title, cells and their file
//! names) is in `<root>/.sessions/<sessionId>.json`, outside the session's
//! folder: code running in the session may write everything in its folder,
//! so nothing there decides which folder, owner or file the host uses. The
//! id is always the one asked for (checked: 1–64 of `[A-Za-z0-9_-]`, so never
//! `..`, `/` or absolute), the folder always `<root>/<id>`. A session folder
//! from before this layout (its metadata in its own `session.json`, which its
//! code could have rewritten) is not a session: export it with an older
//! packhost, or re-import its `.src.md`.
//!
//! Everything is read from disk on each call, so ids survive a host restart.
//! Files in a session folder are read and written only through
//! [`beneath::Dir`] with [`Links::Refused`]: no link code planted is followed.
//!
//! A session belongs to the caller that created it: its metadata records
//! its `owner` (organisation and user), so owners survive restarts too. Every
//! operation takes the caller, and a session the pack's
//! [`Ownership`] rule does not give it is not found, exactly as an unknown id
//! (listings and error messages name only the caller's own).

use std::{
    fs,
    hash::{BuildHasher, Hasher},
    io,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
    time::{SystemTime, UNIX_EPOCH},
};

use beneath::{Dir, Links};
use pack_sdk::{
    Context, PackError, codes,
    owned::{Kind, Limits, Owner, Ownership},
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

/// What the host keeps of a session (`.sessions/<id>.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionMeta {
    /// The session id (its directory name): the id asked for, never read.
    #[serde(skip)]
    pub id: String,
    /// Who created it.
    pub owner: Owner,
    /// A title, shown in listings and exports.
    pub title: String,
    /// The language of new cells without filename or language.
    pub language: Language,
    /// Cells in order.
    pub cells: Vec<CellMeta>,
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

/// The notebooks root and the operations on it (blocking file work), each
/// for one caller.
#[derive(Debug)]
pub struct Notebooks {
    root: PathBuf,
    ownership: Ownership,
    limits: Limits,
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

/// The folder of the host's session metadata, beside the session folders
/// (not a valid id, so never one of them).
const META_DIR: &str = ".sessions";

impl Notebooks {
    /// Sessions under `root`, shared as `ownership` says; a limit of 0 is
    /// refused, naming its key.
    pub fn new(root: PathBuf, ownership: Ownership, limits: Limits) -> Result<Self, PackError> {
        limits.validate(&sessions())?;
        Ok(Self {
            root,
            ownership,
            limits,
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

    /// The host's metadata file of session `id`.
    fn meta_path(&self, id: &str) -> PathBuf {
        self.root.join(META_DIR).join(format!("{id}.json"))
    }

    /// The ids of the sessions `caller` may use, sorted.
    pub fn ids(&self, caller: &Owner) -> Vec<String> {
        self.sessions(caller)
            .into_iter()
            .map(|meta| meta.id)
            .collect()
    }

    /// Every session's id, whoever owns it.
    fn all_ids(&self) -> impl Iterator<Item = String> {
        fs::read_dir(self.root.join(META_DIR))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let id = name.strip_suffix(".json")?;
                valid_id(id).then(|| id.to_owned())
            })
    }

    /// `SESSION_NOT_FOUND` for `id`, listing the sessions `caller` may use.
    pub fn session_not_found(&self, id: &str, caller: &Owner) -> String {
        let ids = self.ids(caller);
        let existing = if ids.is_empty() {
            "you have no sessions; create one with `exec_ts.session_create`".to_owned()
        } else {
            format!("your sessions: {}", ids.join(", "))
        };
        format!(
            "no session `{id}` under {} ({existing})",
            self.root.display()
        )
    }

    fn allowed(&self, meta: &SessionMeta, caller: &Owner) -> bool {
        self.ownership.allows(Some(&meta.owner), caller)
    }

    /// Session `id`'s metadata as the host wrote it, whoever owns it.
    fn read_meta(&self, id: &str) -> Result<SessionMeta, PackError> {
        let path = self.meta_path(id);
        let text = fs::read_to_string(&path).map_err(|e| io_error(&path, e))?;
        let mut meta: SessionMeta = serde_json::from_str(&text).map_err(|e| {
            PackError::internal(format!(
                "{} is not a valid session file: {e}",
                path.display()
            ))
        })?;
        meta.id = id.to_owned();
        Ok(meta)
    }

    /// Session `id`'s metadata, if `caller` may use it; else
    /// `SESSION_NOT_FOUND`, as for an id that does not exist.
    pub fn load(&self, id: &str, caller: &Owner) -> Result<SessionMeta, PackError> {
        let not_found =
            || PackError::new(codes::SESSION_NOT_FOUND, self.session_not_found(id, caller));
        if !valid_id(id) {
            return Err(not_found());
        }
        match self.read_meta(id) {
            Ok(meta) if self.allowed(&meta, caller) => Ok(meta),
            Ok(_) => Err(not_found()),
            Err(_) if !self.meta_path(id).exists() => Err(not_found()),
            Err(e) => Err(e),
        }
    }

    /// The sessions `caller` may use, by id (unreadable ones left out):
    /// each metadata file read once.
    pub fn sessions(&self, caller: &Owner) -> Vec<SessionMeta> {
        let mut sessions: Vec<SessionMeta> = self
            .all_ids()
            .filter_map(|id| self.read_meta(&id).ok())
            .filter(|meta| self.allowed(meta, caller))
            .collect();
        sessions.sort_by(|a, b| a.id.cmp(&b.id));
        sessions
    }

    /// Write session metadata (atomically: a crash never leaves half a file).
    pub fn save(&self, meta: &SessionMeta) -> Result<(), PackError> {
        let path = self.meta_path(&meta.id);
        let tmp = path.with_extension("json.tmp");
        let json = serde_json::to_string_pretty(meta).expect("session metadata is JSON");
        fs::write(&tmp, json + "\n").map_err(|e| io_error(&tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| io_error(&path, e))
    }

    /// Create a new session directory with its files, owned by `owner`.
    pub fn create(
        &self,
        title: &str,
        language: Language,
        package_json: &str,
        owner: &Owner,
    ) -> Result<SessionMeta, PackError> {
        let mine = self.ids(owner);
        let share = self.ownership.share();
        self.limits.check(
            &sessions(),
            share,
            &mine,
            mine.len(),
            self.all_ids().count(),
        )?;
        let meta_dir = self.root.join(META_DIR);
        fs::create_dir_all(&meta_dir).map_err(|e| io_error(&meta_dir, e))?;
        let id = new_id("s");
        let dir = self.dir(&id);
        fs::create_dir_all(dir.join("src")).map_err(|e| io_error(&dir, e))?;
        write(&dir, "package.json", package_json)?;
        write(&dir, "tsconfig.json", TSCONFIG_JSON)?;
        let meta = SessionMeta {
            id,
            owner: owner.clone(),
            title: title.to_owned(),
            language,
            cells: Vec::new(),
        };
        self.save(&meta)?;
        Ok(meta)
    }

    /// Remove session `id` of `caller` and everything in its directory.
    pub fn delete(&self, id: &str, caller: &Owner) -> Result<(), PackError> {
        let meta = self.load(id, caller)?;
        let path = self.meta_path(&meta.id);
        fs::remove_file(&path).map_err(|e| io_error(&path, e))?;
        let root = Dir::open(&self.root, Links::Refused).map_err(|e| io_error(&self.root, e))?;
        root.remove_dir_all(&meta.id)
            .map_err(|e| io_error(&self.dir(&meta.id), e))
    }

    /// The source file of a code cell, in its session's folder.
    pub fn cell_file(filename: &str) -> PathBuf {
        Path::new("src").join(filename)
    }

    /// The source of a cell (markdown text, or its file's content).
    pub fn source(&self, session: &str, cell: &CellMeta) -> Result<String, PackError> {
        match (&cell.kind, &cell.filename) {
            (CellKind::Code, Some(filename)) => read(&self.dir(session), Self::cell_file(filename)),
            _ => Ok(cell.text.clone().unwrap_or_default()),
        }
    }
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
    use pack_sdk::owned::Share;

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
        Notebooks::new(root.into(), rule, limits).unwrap()
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
        assert_eq!(nb.ids(&eve), [mine.id.as_str()]);
        assert!(nb.ids(&bob).is_empty());
        assert_eq!(
            notebooks(root.path(), Share::Org).ids(&bob),
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
        assert_eq!(nb.ids(&eve), [mine.id.as_str()]);
        // A folder without the host's metadata is no session, whatever it holds.
        fs::create_dir(nb.dir("splanted")).unwrap();
        fs::write(nb.dir("splanted").join("session.json"), forged.to_string()).unwrap();
        for caller in [&ada, &eve] {
            assert!(!nb.ids(caller).contains(&"splanted".to_owned()));
            assert_eq!(
                nb.load("splanted", caller).unwrap_err().code(),
                codes::SESSION_NOT_FOUND
            );
        }
    }
}
