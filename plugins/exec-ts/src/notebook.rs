//! Notebook sessions on disk (the Srcbook model): one directory per session
//! under the notebooks root,
//!
//! ```text
//! <root>/<sessionId>/
//!   session.json    title, language, cells in order (ids, filenames, markdown text)
//!   package.json    {"type": "module", ...}: cells are ES modules; `npm_install` adds here
//!   tsconfig.json
//!   src/<filename>  one file per code cell
//!   .packhost/      the loader and per-run builds (JavaScript stripped from the cells)
//! ```
//!
//! Everything is read from disk on each call, so ids survive a host restart.
//! Ids are checked before they touch a path: anything but `[A-Za-z0-9_-]`
//! (so `../x` and absolute paths) is simply not found.
//!
//! Code that runs in a session may write its folder, so the host reads and
//! writes there only through [`crate::beneath`], which follows no link.
//!
//! A session belongs to the caller that created it: `session.json` records
//! its `owner` (organisation and user), so owners survive restarts too. Every
//! operation takes the caller, and a session the pack's
//! [`Ownership`] rule does not give it is not found, exactly as an unknown id
//! (listings and error messages name only the caller's own). A session
//! written before owners were recorded has none and belongs to the host's
//! `[identity]`.

use std::{
    fs,
    hash::{BuildHasher, Hasher},
    io,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
    time::{SystemTime, UNIX_EPOCH},
};

use crate::beneath;
use pack_sdk::{
    Context, PackError, Value, codes,
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

/// What `session.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionMeta {
    /// The session id (its directory name).
    pub id: String,
    /// Who created it; none in sessions from before owners were recorded
    /// (those belong to the host's `[identity]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
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

impl Notebooks {
    /// Sessions under `root` (created when the first session is), shared
    /// as `ownership` says.
    /// Sessions under `root`; a limit of 0 is refused, naming its key.
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

    /// The directory of session `id` (unchecked).
    pub fn dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    /// The ids of the sessions `caller` may use, sorted.
    pub fn ids(&self, caller: &Owner) -> Vec<String> {
        let mut ids: Vec<String> = self
            .all_ids()
            .filter(|id| self.allowed(id, caller))
            .collect();
        ids.sort();
        ids
    }

    /// Every session's id, whoever owns it.
    fn all_ids(&self) -> impl Iterator<Item = String> {
        fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|id| valid_id(id))
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

    /// Whether session `id` exists and `caller` may use it: its recorded
    /// owner, read alone (a file that is not JSON has none).
    fn allowed(&self, id: &str, caller: &Owner) -> bool {
        let Ok(text) = beneath::read(&self.dir(id), "session.json") else {
            return false;
        };
        let owner = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|mut meta| serde_json::from_value(meta.get_mut("owner")?.take()).ok());
        self.ownership.allows(owner.as_ref(), caller)
    }

    /// Read session `id`'s metadata, if `caller` may use it; else
    /// `SESSION_NOT_FOUND`, as for an id that does not exist.
    pub fn load(&self, id: &str, caller: &Owner) -> Result<SessionMeta, PackError> {
        let not_found =
            || PackError::new(codes::SESSION_NOT_FOUND, self.session_not_found(id, caller));
        if !valid_id(id) || !self.allowed(id, caller) {
            return Err(not_found());
        }
        let path = self.dir(id).join("session.json");
        let text = match beneath::read(&self.dir(id), "session.json") {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(not_found()),
            Err(e) => return Err(io_error(&path, e)),
        };
        serde_json::from_str(&text).map_err(|e| {
            PackError::internal(format!(
                "{} is not a valid session file: {e}",
                path.display()
            ))
        })
    }

    /// The sessions `caller` may use, by id (unreadable ones left out).
    pub fn sessions(&self, caller: &Owner) -> Vec<SessionMeta> {
        let ids = self.ids(caller);
        ids.iter()
            .filter_map(|id| self.load(id, caller).ok())
            .collect()
    }

    /// Write session metadata (atomically: a crash never leaves half a file).
    pub fn save(&self, meta: &SessionMeta) -> Result<(), PackError> {
        let dir = self.dir(&meta.id);
        let json = serde_json::to_string_pretty(meta).expect("session metadata is JSON");
        write(&dir, ".session.json.tmp", &(json + "\n"))?;
        // A rename replaces a link in the way; it never follows one.
        let path = dir.join("session.json");
        fs::rename(dir.join(".session.json.tmp"), &path).map_err(|e| io_error(&path, e))
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
        let id = new_id("s");
        let dir = self.dir(&id);
        fs::create_dir_all(dir.join("src")).map_err(|e| io_error(&dir, e))?;
        write(&dir, "package.json", package_json)?;
        write(&dir, "tsconfig.json", TSCONFIG_JSON)?;
        let meta = SessionMeta {
            id,
            owner: Some(owner.clone()),
            title: title.to_owned(),
            language,
            cells: Vec::new(),
        };
        self.save(&meta)?;
        Ok(meta)
    }

    /// Remove session `id` of `caller` and everything in its directory.
    pub fn delete(&self, id: &str, caller: &Owner) -> Result<(), PackError> {
        self.load(id, caller)?;
        let dir = self.dir(id);
        fs::remove_dir_all(&dir).map_err(|e| io_error(&dir, e))
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

/// `CELL_NOT_FOUND` for `cell` in `meta`, listing what exists.
pub fn cell_not_found(meta: &SessionMeta, cell: &str) -> String {
    let ids: Vec<String> = meta
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
    format!("session `{}` has no cell `{cell}` ({existing})", meta.id)
}

/// Write `rel` in the session folder `dir` (following no link), naming it
/// in the error.
pub fn write(dir: &Path, rel: impl AsRef<Path>, content: &str) -> Result<(), PackError> {
    let rel = rel.as_ref();
    beneath::write(dir, rel, content).map_err(|e| io_error(&dir.join(rel), e))
}

/// Read `rel` in the session folder `dir` (following no link), naming it in
/// the error.
pub fn read(dir: &Path, rel: impl AsRef<Path>) -> Result<String, PackError> {
    let rel = rel.as_ref();
    beneath::read(dir, rel).map_err(|e| io_error(&dir.join(rel), e))
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
        assert_eq!(again.load(&meta.id, &ada).unwrap().owner, Some(ada.clone()));
        let err = again.load("../x", &ada).unwrap_err();
        assert_eq!(err.code(), codes::SESSION_NOT_FOUND);
        assert!(err.message().contains(&meta.id), "{err}");
    }

    #[test]
    fn a_session_is_its_owners_alone_and_an_ownerless_one_the_identitys() {
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
        // A session.json from before owners: the host's identity's alone.
        let mut old = nb.load(&theirs.id, &ada).unwrap();
        old.owner = None;
        nb.save(&old).unwrap();
        let local = Owner::new("local", "local");
        assert!(nb.load(&old.id, &ada).is_err());
        assert_eq!(nb.load(&old.id, &local).unwrap().title, "a");
        // One that is not JSON has no owner either.
        fs::write(nb.dir(&mine.id).join("session.json"), "{").unwrap();
        assert_eq!(
            nb.load(&mine.id, &eve).unwrap_err().code(),
            codes::SESSION_NOT_FOUND
        );
        assert_eq!(
            nb.load(&mine.id, &local).unwrap_err().code(),
            codes::INTERNAL
        );
    }
}
