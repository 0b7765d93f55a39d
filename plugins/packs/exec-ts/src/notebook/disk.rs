//! Sessions on this instance's disk: the folder holds the session's files,
//! and the host's record of session `id` is `<root>/.sessions/<id>.json`,
//! outside the folder code may write. A session folder from before this
//! layout (its record in its own `session.json`, which its code could have
//! rewritten) is not a session: export it with an older packhost, or
//! re-import its `.src.md`.

use std::{fs, io, path::PathBuf};

use beneath::{Dir, Links};
use pack_sdk::{PackError, owned::Share};

use super::{
    Fits, SessionMeta, Store, TSCONFIG_JSON, io_error, read, session_dir, valid_id, write,
};

/// The folder of the host's records, beside the session folders (not a
/// valid id, so never one of them).
const META_DIR: &str = ".sessions";

/// Sessions under a notebooks root.
pub struct Disk {
    root: PathBuf,
}

impl Disk {
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    fn meta_path(&self, id: &str) -> PathBuf {
        self.root.join(META_DIR).join(format!("{id}.json"))
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

    /// Every readable record.
    fn all(&self) -> Vec<SessionMeta> {
        let records = self.all_ids().map(|id| self.read(&id));
        records.filter_map(|read| read.ok().flatten()).collect()
    }
}

impl Store for Disk {
    fn read(&self, id: &str) -> Result<Option<SessionMeta>, PackError> {
        let path = self.meta_path(id);
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&path, e)),
        };
        let mut meta: SessionMeta = serde_json::from_str(&text).map_err(|e| {
            PackError::internal(format!(
                "{} is not a valid session file: {e}",
                path.display()
            ))
        })?;
        meta.id = id.to_owned();
        Ok(Some(meta))
    }

    fn list(&self, _org: &str) -> Result<Vec<SessionMeta>, PackError> {
        Ok(self.all())
    }

    fn create(
        &self,
        meta: &mut SessionMeta,
        package_json: &str,
        share: Share,
        fits: Fits<'_>,
    ) -> Result<(), PackError> {
        let all = self.all();
        let held = all.iter().filter(|m| share.allows(&m.owner, &meta.owner));
        fits(held.count(), all.len())?;
        let meta_dir = self.root.join(META_DIR);
        fs::create_dir_all(&meta_dir).map_err(|e| io_error(&meta_dir, e))?;
        let dir = self.root.join(&meta.id);
        fs::create_dir_all(dir.join("src")).map_err(|e| io_error(&dir, e))?;
        write(&dir, "package.json", package_json)?;
        write(&dir, "tsconfig.json", TSCONFIG_JSON)?;
        self.save(meta).map(drop)
    }

    /// Atomically: a crash never leaves half a file. One instance changes
    /// its records under the pack's lock, so no change crosses another.
    fn save(&self, meta: &SessionMeta) -> Result<bool, PackError> {
        let path = self.meta_path(&meta.id);
        let tmp = path.with_extension("json.tmp");
        let json = serde_json::to_string_pretty(meta).expect("session metadata is JSON");
        fs::write(&tmp, json + "\n").map_err(|e| io_error(&tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| io_error(&path, e))?;
        Ok(true)
    }

    fn remove(&self, id: &str) -> Result<(), PackError> {
        let path = self.meta_path(id);
        fs::remove_file(&path).map_err(|e| io_error(&path, e))?;
        let root = Dir::open(&self.root, Links::Refused).map_err(|e| io_error(&self.root, e))?;
        root.remove_dir_all(id)
            .map_err(|e| io_error(&self.root.join(id), e))
    }

    fn file(&self, meta: &SessionMeta, rel: &str) -> Result<String, PackError> {
        read(&self.root.join(&meta.id), rel)
    }

    fn set_file(
        &self,
        meta: &mut SessionMeta,
        rel: &str,
        content: Option<&str>,
    ) -> Result<(), PackError> {
        let dir = self.root.join(&meta.id);
        match content {
            Some(content) => write(&dir, rel, content),
            // Gone from the record already: a file left behind is harmless.
            None => {
                let _ = session_dir(&dir).map(|dir| dir.remove_file(rel));
                Ok(())
            }
        }
    }

    /// The folder is where the files live.
    fn materialise(&self, _: &SessionMeta) -> Result<(), PackError> {
        Ok(())
    }

    /// Only `npm_install` installs, here.
    fn needs_install(&self, _: &SessionMeta) -> bool {
        false
    }

    fn installed(&self, _: &SessionMeta) -> Result<(), PackError> {
        Ok(())
    }

    /// The folder's `package.json` is the session's already.
    fn npm_wrote(&self, _: &str) -> Result<Option<String>, PackError> {
        Ok(None)
    }
}
