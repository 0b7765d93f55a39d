//! What each pack library declared (its manifest), kept between starts so
//! that `serve` can answer `tools/list` before the libraries are loaded.
//!
//! An entry is found by a key that hashes everything its manifest and its
//! constructor's outcome depend on: the library file's identity (device,
//! inode, size, modification and change times), this host's version and
//! binary, the pack's name and what its constructor is handed (its `config`,
//! the projects), and the working directory and environment it starts in.
//! A file changed too recently for its times to tell a second change apart
//! (git's "racy clean" problem) gives no key: its pack loads as if nothing
//! were kept.
//!
//! Whatever is kept becomes tools, so only the host's user may have written
//! it: the folder is made private (0700) and a folder or entry that another
//! user owns, or that group or others may write, is not read. An entry that
//! is too large or not a manifest counts as absent. Entries are written to
//! a temporary file and renamed into place; the oldest are removed past
//! [`MAX_ENTRIES`].

use std::{
    fs::{self, DirBuilder, File, OpenOptions},
    io::{Read as _, Write as _},
    os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _},
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

use sha2::{Digest as _, Sha256};

/// How long a file must have been still before its times are trusted: well
/// above the coarsest timestamp granularity of Linux file systems.
const SETTLED: Duration = Duration::from_millis(100);

/// Entries kept; writing one more removes the oldest.
pub const MAX_ENTRIES: usize = 64;

/// The largest entry read (the shipped packs' manifests are 10–40 KB).
const MAX_ENTRY_BYTES: u64 = 4 << 20;

/// Bumped when what an entry holds changes meaning.
const FORMAT: &str = "packhost catalog cache 1";

/// The cache folder of this host's user.
#[derive(Debug, Clone)]
pub struct CatalogCache {
    dir: PathBuf,
    /// What every key shares (the host, its working directory and
    /// environment), hashed already.
    context: Sha256,
}

/// The key of one pack's entry: a hash of everything it depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key(String);

impl CatalogCache {
    /// `$XDG_CACHE_HOME/packhost/catalogs`, else `~/.cache/packhost/catalogs`;
    /// none when it cannot be made private to this user.
    pub fn open() -> Option<Self> {
        let base = match std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from) {
            Some(dir) if dir.is_absolute() => dir,
            _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache"),
        };
        Self::at(&base.join("packhost").join("catalogs"))
    }

    /// The cache in `dir` (made, 0700, when missing); none when it is not a
    /// folder of this user's that only this user may write.
    pub fn at(dir: &Path) -> Option<Self> {
        if let Some(parent) = dir.parent() {
            fs::create_dir_all(parent).ok()?;
        }
        match DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                tracing::debug!(dir = %dir.display(), error = %e, "no catalog cache");
                return None;
            }
        }
        let metadata = fs::symlink_metadata(dir).ok()?;
        if !metadata.is_dir() || !private(&metadata) {
            tracing::warn!(
                dir = %dir.display(),
                "catalog cache not used: the folder must be this user's and writable by no one \
                 else"
            );
            return None;
        }
        Some(Self {
            dir: dir.to_owned(),
            context: context(),
        })
    }

    /// The key of pack `pack` served from `library`, its constructor handed
    /// `init` (its config, the projects); none while the library's times
    /// are too recent to trust or it cannot be read.
    pub fn key(&self, pack: &str, library: &Path, init: &[&str]) -> Option<Key> {
        let stamp = settled_stamp(library)?;
        let mut hash = self.context.clone();
        part(&mut hash, pack.as_bytes());
        part(&mut hash, library.as_os_str().as_encoded_bytes());
        part(&mut hash, &stamp.to_bytes());
        for text in init {
            part(&mut hash, text.as_bytes());
        }
        Some(Key(crate::auth::hex(&hash.finalize())))
    }

    /// The manifest JSON kept under `key`, when a trusted entry has it.
    pub fn get(&self, key: &Key) -> Option<String> {
        let mut file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.path(key))
            .ok()?;
        let metadata = file.metadata().ok()?;
        if !metadata.is_file() || !private(&metadata) || metadata.len() > MAX_ENTRY_BYTES {
            tracing::warn!(entry = %self.path(key).display(), "catalog cache entry not trusted");
            return None;
        }
        let mut text = String::new();
        file.read_to_string(&mut text).ok()?;
        Some(text)
    }

    /// Keep `manifest` under `key`; a failure only costs the next start its
    /// speed, so it is logged at debug level.
    pub fn put(&self, key: &Key, manifest: &str) {
        let temporary = self
            .dir
            .join(format!(".{}.{}.tmp", key.0, std::process::id()));
        let written = write_new(&temporary, manifest.as_bytes())
            .and_then(|()| fs::rename(&temporary, self.path(key)));
        if let Err(e) = written {
            let _ = fs::remove_file(&temporary);
            tracing::debug!(error = %e, "catalog cache entry not written");
            return;
        }
        self.trim();
    }

    /// Drop the entry under `key` (its library did not load).
    pub fn forget(&self, key: &Key) {
        let _ = fs::remove_file(self.path(key));
    }

    fn path(&self, key: &Key) -> PathBuf {
        self.dir.join(format!("{}.json", key.0))
    }

    /// Remove the oldest entries past [`MAX_ENTRIES`].
    fn trim(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        let mut kept: Vec<(SystemTime, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        if kept.len() <= MAX_ENTRIES {
            return;
        }
        kept.sort();
        for (_, path) in &kept[..kept.len() - MAX_ENTRIES] {
            let _ = fs::remove_file(path);
        }
    }
}

/// Owned by this process's user and writable by no one else.
fn private(metadata: &fs::Metadata) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    metadata.uid() == me && metadata.mode() & 0o022 == 0
}

fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file: File = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
}

/// One length-prefixed part of a key, so that parts cannot run together.
fn part(hash: &mut Sha256, bytes: &[u8]) {
    hash.update((bytes.len() as u64).to_le_bytes());
    hash.update(bytes);
}

/// What every key shares: the format, this host's version and binary, and
/// the working directory and environment packs start in.
fn context() -> Sha256 {
    let mut hash = Sha256::new();
    part(&mut hash, FORMAT.as_bytes());
    part(&mut hash, env!("CARGO_PKG_VERSION").as_bytes());
    // A rebuilt host may read a manifest or check a layout differently.
    let exe = std::env::current_exe().ok();
    let host = exe.as_deref().and_then(stamp).unwrap_or_default();
    part(&mut hash, &host.to_bytes());
    let cwd = std::env::current_dir().unwrap_or_default();
    part(&mut hash, cwd.as_os_str().as_encoded_bytes());
    let mut vars: Vec<_> = std::env::vars_os().collect();
    vars.sort();
    for (name, value) in vars {
        part(&mut hash, name.as_encoded_bytes());
        part(&mut hash, value.as_encoded_bytes());
    }
    hash
}

/// A file's identity: equal stamps mean the same unchanged file.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    fn to_bytes(self) -> Vec<u8> {
        let fields = [
            self.device,
            self.inode,
            self.size,
            self.modified.0 as u64,
            self.modified.1 as u64,
            self.changed.0 as u64,
            self.changed.1 as u64,
        ];
        fields.iter().flat_map(|f| f.to_le_bytes()).collect()
    }
}

fn stamp(path: &Path) -> Option<Stamp> {
    let metadata = fs::metadata(path).ok()?;
    Some(Stamp {
        device: metadata.dev(),
        inode: metadata.ino(),
        size: metadata.size(),
        modified: (metadata.mtime(), metadata.mtime_nsec()),
        changed: (metadata.ctime(), metadata.ctime_nsec()),
    })
}

/// `path`'s stamp, when its last modification and change are at least
/// [`SETTLED`] old.
fn settled_stamp(path: &Path) -> Option<Stamp> {
    let stamp = stamp(path)?;
    let now = SystemTime::now();
    let settled = |(secs, nanos): (i64, i64)| {
        let since_epoch = Duration::new(u64::try_from(secs).unwrap_or(0), nanos as u32);
        now.duration_since(SystemTime::UNIX_EPOCH + since_epoch)
            .is_ok_and(|age| age >= SETTLED)
    };
    (settled(stamp.modified) && settled(stamp.changed)).then_some(stamp)
}

#[cfg(test)]
mod tests;
