//! Files inside a session folder as the host touches them. Code running in
//! the session may write there, so it may plant symbolic links (to another
//! session's cells, to the host's files); every path here is resolved by the
//! kernel beneath the folder with no link followed (`openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), so the host never reads or
//! writes anything else through one. The folder itself is trusted: code
//! cannot write the notebooks root it is in.

use std::{
    ffi::CString,
    fs::File,
    io::{self, Read, Write},
    os::{
        fd::{AsRawFd, FromRawFd, OwnedFd},
        unix::ffi::OsStrExt,
    },
    path::{Path, PathBuf},
};

/// Open `rel` beneath `dir` with `flags` (and `mode` when creating).
fn open(dir: &Path, rel: &Path, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    let root = File::open(dir)?;
    let name = CString::new(rel.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: open_how is plain integers; all zero is "no flags".
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    if flags & libc::O_CREAT != 0 {
        how.mode = u64::from(mode);
    }
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: openat2 reads the path and the struct we pass and returns a
    // new descriptor (owned below) or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            name.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(explain(dir, rel, io::Error::last_os_error()));
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// A refused link says so: ELOOP alone reads like a kernel riddle.
fn explain(dir: &Path, rel: &Path, e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::EXDEV) => io::Error::other(format!(
            "{} in the session folder {} is or passes through a symbolic link, which the \
             host does not follow (code in the session made it); remove it",
            rel.display(),
            dir.display()
        )),
        _ => e,
    }
}

/// The folder that holds `rel` (`.` for a plain name) and `rel`'s name.
fn split(rel: &Path) -> io::Result<(&Path, CString)> {
    let name = rel
        .file_name()
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    let parent = rel
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name =
        CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    Ok((parent, name))
}

/// The content of `rel`.
pub fn read(dir: &Path, rel: impl AsRef<Path>) -> io::Result<String> {
    let fd = open(dir, rel.as_ref(), libc::O_RDONLY, 0)?;
    let mut text = String::new();
    File::from(fd).read_to_string(&mut text)?;
    Ok(text)
}

/// Whether `rel` is a folder (not a link to one).
pub fn is_dir(dir: &Path, rel: impl AsRef<Path>) -> bool {
    open(dir, rel.as_ref(), libc::O_PATH | libc::O_DIRECTORY, 0).is_ok()
}

/// Replace `rel`'s content (creating it).
pub fn write(dir: &Path, rel: impl AsRef<Path>, content: &str) -> io::Result<()> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
    let fd = open(dir, rel.as_ref(), flags, 0o644)?;
    File::from(fd).write_all(content.as_bytes())
}

/// Remove the file `rel` (a link itself, never what it points to).
pub fn remove_file(dir: &Path, rel: impl AsRef<Path>) -> io::Result<()> {
    let (parent, name) = split(rel.as_ref())?;
    let parent = open(dir, parent, libc::O_PATH | libc::O_DIRECTORY, 0)?;
    // SAFETY: unlinkat reads the name; the descriptor is open.
    if unsafe { libc::unlinkat(parent.as_raw_fd(), name.as_ptr(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Make the folder `rel` and those above it, each a real folder.
pub fn create_dir_all(dir: &Path, rel: impl AsRef<Path>) -> io::Result<()> {
    let mut made = PathBuf::new();
    for part in rel.as_ref().components() {
        made.push(part);
        match make_dir(dir, &made) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // There already: a folder, not a link or a file.
                open(dir, &made, libc::O_PATH | libc::O_DIRECTORY, 0)?;
            }
            other => other?,
        }
    }
    Ok(())
}

fn make_dir(dir: &Path, rel: &Path) -> io::Result<()> {
    let (parent, name) = split(rel)?;
    let parent = open(dir, parent, libc::O_PATH | libc::O_DIRECTORY, 0)?;
    // SAFETY: mkdirat reads the name; the descriptor is open.
    if unsafe { libc::mkdirat(parent.as_raw_fd(), name.as_ptr(), 0o755) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A fresh folder made beneath a session folder, removed with what is in it
/// when dropped.
pub struct Scratch {
    path: PathBuf,
    rel: PathBuf,
}

impl Scratch {
    /// A new folder `<under>/<prefix><random>` beneath `dir`.
    pub fn new(dir: &Path, under: &str, prefix: &str) -> io::Result<Self> {
        create_dir_all(dir, under)?;
        loop {
            let rel = Path::new(under).join(crate::notebook::new_id(prefix));
            match make_dir(dir, &rel) {
                Ok(()) => {
                    return Ok(Self {
                        path: dir.join(&rel),
                        rel,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Its path.
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
        // remove_dir_all follows no link inside; a swapped parent only
        // leads to a folder of the same random name, which cannot exist.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_refused_and_plain_files_work() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        create_dir_all(dir.path(), "a/b").unwrap();
        write(dir.path(), "a/b/f", "x").unwrap();
        assert_eq!(read(dir.path(), "a/b/f").unwrap(), "x");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("a/s")).unwrap();
        for rel in ["link/secret", "a/s", "../x", "/etc/passwd"] {
            assert!(read(dir.path(), rel).is_err(), "{rel}");
        }
        let err = read(dir.path(), "a/s").unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(write(dir.path(), "link/secret", "overwritten").is_err());
        assert!(create_dir_all(dir.path(), "link/sub").is_err());
        assert!(Scratch::new(dir.path(), "link", "run-").is_err());
        remove_file(dir.path(), "a/s").unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "s"
        );
        assert!(!outside.path().join("sub").exists());
        let scratch = Scratch::new(dir.path(), ".packhost", "run-").unwrap();
        let path = scratch.path().to_path_buf();
        assert!(path.is_dir());
        drop(scratch);
        assert!(!path.exists());
    }
}
