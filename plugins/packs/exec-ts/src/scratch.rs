//! A fresh folder for one run (its build, npm's temporary files) inside a
//! session folder, where code may have planted links: made and removed
//! through [`beneath::Dir`], never by a path code could redirect.

use std::{
    io,
    path::{Path, PathBuf},
};

use beneath::{Dir, Links};

/// A fresh folder made beneath a session folder, removed with what is in it
/// when dropped.
pub struct Scratch {
    session: Dir,
    rel: PathBuf,
    path: PathBuf,
}

impl Scratch {
    /// A new folder `<under>/<prefix><random>` beneath the session folder
    /// `dir`.
    pub fn new(dir: &Path, under: &str, prefix: &str) -> io::Result<Self> {
        let session = Dir::open(dir, Links::Refused)?;
        session.create_dir_all(under)?;
        loop {
            let rel = Path::new(under).join(crate::notebook::new_id(prefix));
            match session.make_dir(&rel) {
                Ok(()) => {
                    return Ok(Self {
                        path: dir.join(&rel),
                        session,
                        rel,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Its path, for the child that works in it (confined to the session).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its path in the session folder.
    pub fn rel(&self) -> &Path {
        &self.rel
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = self.session.remove_dir_all(&self.rel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_folder_goes_with_its_contents_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "k").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        assert!(Scratch::new(dir.path(), "link", "run-").is_err());
        let scratch = Scratch::new(dir.path(), ".packhost", "run-").unwrap();
        let path = scratch.path().to_path_buf();
        std::fs::write(path.join("f"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), path.join("away")).unwrap();
        drop(scratch);
        assert!(!path.exists());
        assert!(outside.path().join("keep").exists());
    }
}
