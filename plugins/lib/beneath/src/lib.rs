//! Paths under a root, the one rule for files that model-written code can
//! change (a project it may write, a notebook session's folder, a `cwd`).
//!
//! A name checked and then opened again by name can be swapped in between
//! (a folder exchanged with a symbolic link to the host's HOME). So a path is
//! resolved once, by the kernel, beneath a directory opened from a root the
//! host trusts (`openat2` with `RESOLVE_BENEATH`, never a magic link), and
//! from then on used only through the descriptor it gave: reads, listings,
//! removals, and the sandbox's own rules. [`Links`] says whether symbolic
//! links that stay beneath the root may be followed.

use std::{
    ffi::{CStr, CString, OsStr},
    fs::{self, File},
    io::{self, Read, Write},
    os::{
        fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd},
        unix::ffi::OsStrExt,
    },
    path::{Component, Path, PathBuf},
};

/// Whether resolution may pass through symbolic links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// None at all: for folders the host made and code writes (a session's).
    Refused,
    /// Those whose target stays beneath the root (a project's own links).
    Inside,
}

/// Why a path was refused: it leads outside its root.
#[derive(Debug)]
struct Escape(String);

impl std::fmt::Display for Escape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Escape {}

/// Whether `e` refused a path for leading outside its root (through `..`
/// or a symbolic link), rather than for the file's own permissions.
pub fn is_escape(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Escape>())
}

/// How deep [`Dir::remove_dir_all`] goes: code can make a tree deeper than
/// any stack or descriptor table; what lies deeper is left where it is.
const MAX_REMOVE_DEPTH: usize = 128;

/// An open directory: a root, or a folder resolved beneath one.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
    links: Links,
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Dir {
    /// Open the directory `path` by name: a root the caller trusts (from its
    /// config, or one it made), never one code can replace.
    pub fn open(path: impl Into<PathBuf>, links: Links) -> io::Result<Self> {
        let path = path.into();
        let name = c_path(&path)?;
        // SAFETY: open reads the name and returns a new descriptor or -1.
        let fd = unsafe {
            libc::open(
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            // SAFETY: a fresh descriptor nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            path,
            links,
        })
    }

    /// The path it was opened as (for messages; never opened again).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path `rel` is shown as in messages.
    fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.path.join(rel)
    }

    fn proc_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// Open `rel` beneath this directory with `flags` (and `mode` when
    /// creating), a refusal explained; `""` and `.` are the directory itself.
    fn open_at(&self, rel: &Path, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
        openat2(&self.fd, rel, flags, mode, self.links).map_err(|e| self.explain(rel, e))
    }

    /// A refusal says why: EXDEV and ELOOP alone read like kernel riddles.
    fn explain(&self, rel: &Path, e: io::Error) -> io::Error {
        let (rel, dir) = (rel.display(), self.path.display());
        match (e.raw_os_error(), self.links) {
            (Some(libc::EXDEV), _) => io::Error::new(
                io::ErrorKind::PermissionDenied,
                Escape(format!(
                    "{rel} leads outside {dir} (through `..` or a symbolic link)"
                )),
            ),
            (Some(libc::ELOOP), Links::Refused) => io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{rel} in {dir} is or passes through a symbolic link, which is not \
                     followed there; remove it"
                ),
            ),
            (Some(libc::ELOOP), Links::Inside) => io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{rel} in {dir} passes through too many symbolic links (a loop?)"),
            ),
            _ => e,
        }
    }

    /// The folder `rel` beneath this one.
    pub fn open_dir(&self, rel: impl AsRef<Path>) -> io::Result<Dir> {
        let rel = rel.as_ref();
        let fd = self.open_at(rel, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        Ok(Dir {
            fd,
            path: self.path.join(rel),
            links: self.links,
        })
    }

    /// `rel` (a folder or a file) opened only to name it: an `O_PATH`
    /// descriptor, for a sandbox rule or to learn that it resolves beneath.
    pub fn locate(&self, rel: impl AsRef<Path>) -> io::Result<OwnedFd> {
        self.open_at(rel.as_ref(), libc::O_PATH, 0)
    }

    /// `rel` opened for reading. It does not block on a FIFO: check what it
    /// is (its metadata) before reading.
    pub fn open_file(&self, rel: impl AsRef<Path>) -> io::Result<File> {
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY;
        self.open_at(rel.as_ref(), flags, 0).map(File::from)
    }

    /// `rel` emptied or created, for writing.
    fn create_file(&self, rel: impl AsRef<Path>) -> io::Result<File> {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOCTTY;
        self.open_at(rel.as_ref(), flags, 0o644).map(File::from)
    }

    /// The text of the regular file `rel`.
    pub fn read_to_string(&self, rel: impl AsRef<Path>) -> io::Result<String> {
        let rel = rel.as_ref();
        let mut file = self.open_file(rel)?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", self.join(rel).display()),
            ));
        }
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        Ok(text)
    }

    /// Replace `rel`'s content (creating it).
    pub fn write(&self, rel: impl AsRef<Path>, content: impl AsRef<[u8]>) -> io::Result<()> {
        self.create_file(rel)?.write_all(content.as_ref())
    }

    /// Its entries. Through the descriptor's `/proc` name, which is this
    /// very directory whatever was renamed since; an entry's `file_type` and
    /// `metadata` are of the entry itself, never of a link's target.
    pub fn entries(&self) -> io::Result<fs::ReadDir> {
        fs::read_dir(self.proc_path())
    }

    /// Make the folder `rel` (its parent must exist).
    pub fn make_dir(&self, rel: impl AsRef<Path>) -> io::Result<()> {
        let (parent, name) = self.parent_of(rel.as_ref())?;
        // SAFETY: mkdirat reads the name; the descriptor is open.
        cvt(unsafe { libc::mkdirat(parent.fd.as_raw_fd(), name.as_ptr(), 0o755) })
    }

    /// Make the folder `rel` and those above it, each a real folder.
    pub fn create_dir_all(&self, rel: impl AsRef<Path>) -> io::Result<()> {
        let mut made = PathBuf::new();
        for part in rel.as_ref().components() {
            made.push(part);
            match self.make_dir(&made) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    // There already: a folder, not a link that leads away.
                    self.open_dir(&made)?;
                }
                other => other?,
            }
        }
        Ok(())
    }

    /// Remove the file `rel` (a link itself, never what it points to).
    pub fn remove_file(&self, rel: impl AsRef<Path>) -> io::Result<()> {
        let (parent, name) = self.parent_of(rel.as_ref())?;
        // SAFETY: unlinkat reads the name; the descriptor is open.
        cvt(unsafe { libc::unlinkat(parent.fd.as_raw_fd(), name.as_ptr(), 0) })
    }

    /// Remove the folder `rel` and everything in it, following no link
    /// (a link is removed, not its target). Gone already is fine.
    pub fn remove_dir_all(&self, rel: impl AsRef<Path>) -> io::Result<()> {
        let (parent, name) = self.parent_of(rel.as_ref())?;
        parent.remove_tree(&name, 0)
    }

    fn remove_tree(&self, name: &CStr, depth: usize) -> io::Result<()> {
        let child = match self.open_child_dir(name) {
            Ok(child) => child,
            // A file or a link (perhaps swapped in just now): unlink it.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) => {
                return self.unlink(name, 0);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if depth >= MAX_REMOVE_DEPTH {
            return Err(io::Error::other(format!(
                "{} is more than {MAX_REMOVE_DEPTH} folders deep; the rest is left",
                self.path.display()
            )));
        }
        for entry in child.entries()? {
            let entry = entry?;
            let entry_name = CString::new(entry.file_name().as_bytes())
                .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            if entry.file_type()?.is_dir() {
                child.remove_tree(&entry_name, depth + 1)?;
            } else {
                child.unlink(&entry_name, 0)?;
            }
        }
        self.unlink(name, libc::AT_REMOVEDIR)
    }

    /// The directory entry `name` of this one, following no link at all;
    /// the kernel's own error (ENOTDIR, ELOOP) for anything else.
    fn open_child_dir(&self, name: &CStr) -> io::Result<Dir> {
        let rel = Path::new(OsStr::from_bytes(name.to_bytes()));
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let fd = openat2(&self.fd, rel, flags, 0, Links::Refused)?;
        Ok(Dir {
            fd,
            path: self.path.join(rel),
            links: Links::Refused,
        })
    }

    fn unlink(&self, name: &CStr, flags: libc::c_int) -> io::Result<()> {
        // SAFETY: unlinkat reads the name; the descriptor is open.
        match cvt(unsafe { libc::unlinkat(self.fd.as_raw_fd(), name.as_ptr(), flags) }) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// The folder holding `rel` (opened beneath this one) and `rel`'s name.
    fn parent_of(&self, rel: &Path) -> io::Result<(Dir, CString)> {
        let name = match rel.components().next_back() {
            Some(Component::Normal(name)) => name,
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} does not end in a name", rel.display()),
                ));
            }
        };
        let parent = rel.parent().unwrap_or(Path::new(""));
        let name = CString::new(name.as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        Ok((self.open_dir(parent)?, name))
    }
}

/// `openat2` of `rel` beneath `dir`: never through a magic link, and with
/// [`Links::Refused`] through no link at all.
fn openat2(
    dir: &OwnedFd,
    rel: &Path,
    flags: libc::c_int,
    mode: libc::mode_t,
    links: Links,
) -> io::Result<OwnedFd> {
    let name = if rel.as_os_str().is_empty() {
        c".".to_owned()
    } else {
        c_path(rel)?
    };
    // SAFETY: open_how is plain integers; all zero is "no flags".
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    if flags & libc::O_CREAT != 0 {
        how.mode = u64::from(mode);
    }
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    if links == Links::Refused {
        how.resolve |= libc::RESOLVE_NO_SYMLINKS;
    }
    // SAFETY: openat2 reads the path and the struct we pass and returns a
    // new descriptor (owned below) or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            name.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// The folder `path` when it is beneath one of `roots` (with the links
/// `links` allows), opened: `PermissionDenied` when it is not (also when a
/// link leads it out), `NotFound` when it does not exist.
pub fn open_inside(roots: &[PathBuf], path: &Path, links: Links) -> io::Result<Dir> {
    find_inside(roots, path, links, |root, rel| {
        Ok(Dir {
            path: path.to_path_buf(),
            ..root.open_dir(rel)?
        })
    })
}

/// [`open_inside`] for a folder or a file, opened only to name it (an
/// `O_PATH` descriptor: for a sandbox rule, not for reading).
pub fn locate_inside(roots: &[PathBuf], path: &Path, links: Links) -> io::Result<OwnedFd> {
    find_inside(roots, path, links, |root, rel| root.locate(rel))
}

fn find_inside<T>(
    roots: &[PathBuf],
    path: &Path,
    links: Links,
    open: impl Fn(&Dir, &Path) -> io::Result<T>,
) -> io::Result<T> {
    let mut missing = None;
    for root in roots {
        let Some(rel) = strip_root(root, path) else {
            continue;
        };
        match Dir::open(root, links).and_then(|root| open(&root, &rel)) {
            Ok(found) => return Ok(found),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing = Some(io::Error::new(
                    e.kind(),
                    format!("{} cannot be used: {e}", path.display()),
                ));
            }
            // Another root may hold it lexically too (nested roots).
            Err(_) => {}
        }
    }
    Err(missing.unwrap_or_else(|| {
        let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        let roots = if roots.is_empty() {
            "none are configured".to_owned()
        } else {
            roots.join(", ")
        };
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is outside the allowed folders ({roots})",
                path.display()
            ),
        )
    }))
}

/// `path` relative to `root`, as written or as `root` really is.
fn strip_root(root: &Path, path: &Path) -> Option<PathBuf> {
    if let Ok(rel) = path.strip_prefix(root) {
        return Some(rel.to_path_buf());
    }
    let real = root.canonicalize().ok()?;
    path.strip_prefix(real).ok().map(Path::to_path_buf)
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} contains a NUL byte", path.display()),
        )
    })
}

fn cvt(result: libc::c_int) -> io::Result<()> {
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn tree() -> (tempfile::TempDir, tempfile::TempDir) {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "s").unwrap();
        fs::create_dir_all(root.path().join("a/b")).unwrap();
        fs::write(root.path().join("a/b/f"), "x").unwrap();
        symlink(outside.path(), root.path().join("out")).unwrap();
        symlink(outside.path().join("secret"), root.path().join("a/s")).unwrap();
        symlink("b", root.path().join("a/in")).unwrap();
        (root, outside)
    }

    #[test]
    fn refused_links_are_never_followed() {
        let (root, outside) = tree();
        let dir = Dir::open(root.path(), Links::Refused).unwrap();
        assert_eq!(dir.read_to_string("a/b/f").unwrap(), "x");
        for rel in ["out/secret", "a/s", "a/in/f", "../x", "/etc/passwd"] {
            let err = dir.read_to_string(rel).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{rel}: {err}");
        }
        let err = dir.read_to_string("a/s").unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(dir.write("out/secret", "overwritten").is_err());
        assert!(dir.create_dir_all("out/sub").is_err());
        dir.remove_file("a/s").unwrap();
        assert_eq!(
            fs::read_to_string(outside.path().join("secret")).unwrap(),
            "s"
        );
        assert!(!outside.path().join("sub").exists());
    }

    #[test]
    fn inside_links_are_followed_while_they_stay_inside() {
        let (root, _) = tree();
        let dir = Dir::open(root.path(), Links::Inside).unwrap();
        assert_eq!(dir.read_to_string("a/in/f").unwrap(), "x");
        for rel in ["out/secret", "a/s", "../x", "/etc/passwd"] {
            let err = dir.read_to_string(rel).unwrap_err();
            assert!(is_escape(&err), "{rel}: {err}");
            assert!(err.to_string().contains("leads outside"), "{err}");
        }
        let names: Vec<_> = dir
            .open_dir("a")
            .unwrap()
            .entries()
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }

    #[test]
    fn a_folder_swapped_for_a_link_after_opening_changes_nothing() {
        let (root, outside) = tree();
        let dir = Dir::open(root.path(), Links::Inside).unwrap();
        let a = dir.open_dir("a").unwrap();
        fs::rename(root.path().join("a"), root.path().join("moved")).unwrap();
        symlink(outside.path(), root.path().join("a")).unwrap();
        // The descriptor is still the folder that was opened.
        assert_eq!(a.read_to_string("b/f").unwrap(), "x");
        assert!(dir.read_to_string("a/secret").is_err());
    }

    #[test]
    fn remove_dir_all_removes_links_not_their_targets() {
        let (root, outside) = tree();
        let dir = Dir::open(root.path(), Links::Refused).unwrap();
        symlink(outside.path(), root.path().join("a/b/away")).unwrap();
        dir.remove_dir_all("a").unwrap();
        assert!(!root.path().join("a").exists());
        assert!(outside.path().join("secret").exists());
        // The link `out` itself goes, its target stays.
        dir.remove_dir_all("out").unwrap();
        assert!(outside.path().join("secret").exists());
        dir.remove_dir_all("gone").unwrap();
    }

    #[test]
    fn remove_dir_all_stops_at_its_depth() {
        let root = tempfile::tempdir().unwrap();
        let dir = Dir::open(root.path(), Links::Refused).unwrap();
        let deep: PathBuf = std::iter::repeat_n("d", MAX_REMOVE_DEPTH + 2).collect();
        dir.create_dir_all(&deep).unwrap();
        let err = dir.remove_dir_all("d").unwrap_err();
        assert!(err.to_string().contains("folders deep"), "{err}");
    }

    #[test]
    fn open_inside_takes_folders_under_a_root_only() {
        let (root, outside) = tree();
        let roots = [root.path().to_path_buf()];
        let a = open_inside(&roots, &root.path().join("a"), Links::Inside).unwrap();
        assert_eq!(a.read_to_string("b/f").unwrap(), "x");
        for path in [root.path().join("out"), outside.path().to_path_buf()] {
            let err = open_inside(&roots, &path, Links::Inside).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{path:?}");
        }
        let up = root.path().join("a/../..");
        assert!(open_inside(&roots, &up, Links::Inside).is_err());
        let err = open_inside(&roots, &root.path().join("nope"), Links::Inside).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        let file = root.path().join("a/b/f");
        locate_inside(&roots, &file, Links::Inside).unwrap();
        assert!(open_inside(&roots, &file, Links::Inside).is_err());
        assert!(locate_inside(&roots, &root.path().join("a/s"), Links::Inside).is_err());
    }
}
