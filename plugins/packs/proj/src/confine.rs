//! The one rule for caller-supplied paths: they stay under their project root.
//!
//! Every function that takes a path goes through [`confine`]: relative paths
//! only, no `..`. The project root is opened once and every path is then
//! resolved beneath it by the kernel ([`beneath`]), which refuses any
//! symbolic link (anywhere along the path, dangling or not) that leads
//! outside, and what was resolved is used through its descriptor: code that
//! may write the project cannot swap a checked folder for a link in between.

use std::{
    fs::File,
    io,
    path::{Component, Path, PathBuf},
};

use beneath::{Dir, Links};
use pack_sdk::PackError;

/// A path that was checked to stay inside its root, with the root open.
#[derive(Debug)]
pub struct Confined {
    /// The project root, opened.
    root: Dir,
    /// The configured root joined with [`rel`](Self::rel), to show. Symlinks
    /// are left in place so callers see the path they asked for.
    pub path: PathBuf,
    /// The cleaned relative path, `/`-separated; empty for the root itself.
    pub rel: String,
    /// The project's name, for messages.
    project: String,
}

impl Confined {
    /// The relative path for messages: `.` for the root.
    pub fn shown(&self) -> &str {
        if self.rel.is_empty() { "." } else { &self.rel }
    }

    /// The project root, opened.
    pub fn root(&self) -> &Dir {
        &self.root
    }

    /// The file, opened beneath the root for reading (not blocking on a
    /// FIFO: check its metadata first).
    pub fn open_file(&self) -> Result<File, PackError> {
        self.root.open_file(&self.rel).map_err(|e| self.refused(e))
    }

    /// The folder, opened beneath the root.
    pub fn open_dir(&self) -> Result<Dir, PackError> {
        self.root.open_dir(&self.rel).map_err(|e| self.refused(e))
    }

    /// Check that what exists of the path resolves beneath the root; the
    /// rest may be missing (a path to create).
    pub fn check(&self) -> Result<(), PackError> {
        let mut existing = Path::new(&self.rel);
        loop {
            match self.root.locate(existing) {
                Ok(_) => return Ok(()),
                Err(e) if missing(&e) => match existing.parent() {
                    Some(parent) => existing = parent,
                    None => return Ok(()),
                },
                Err(e) => return Err(self.refused(e)),
            }
        }
    }

    /// A failure to open the path: not found, or denied saying why.
    fn refused(&self, e: io::Error) -> PackError {
        if missing(&e) {
            return PackError::not_found(format!(
                "`{}` does not exist in project `{}`",
                self.shown(),
                self.project
            ))
            .with_help("list directories with `proj.ls` or search with `proj.grep`");
        }
        if beneath::is_escape(&e) {
            return PackError::access_denied(format!(
                "path `{}` leads through a symlink (or `..`) outside the project root",
                self.shown()
            ))
            .with_help("only files under the project root are reachable");
        }
        match e.kind() {
            io::ErrorKind::PermissionDenied => {
                PackError::access_denied(format!("cannot open path `{}`: {e}", self.shown()))
            }
            _ => PackError::from(e),
        }
    }
}

fn missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// Check that `sub` (relative to the root of `project`) is a plain relative
/// path, and open the root.
pub fn confine(project: &str, root: &Path, sub: &str) -> Result<Confined, PackError> {
    let mut parts = Vec::new();
    for component in Path::new(sub).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(PackError::access_denied(format!(
                    "path `{sub}` contains `..`; paths must stay inside the project root"
                ))
                .with_help("pass a path relative to the project root without `..`"));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(PackError::access_denied(format!(
                    "path `{sub}` is absolute; paths are relative to the project root"
                ))
                .with_help("pass a path relative to the project root, e.g. `src/main.rs`"));
            }
        }
    }
    let rel = parts.join("/");
    let opened = Dir::open(root, Links::Inside).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => {
            PackError::not_found(format!("project root `{}` does not exist", root.display()))
                .with_help("create the directory or fix its path under `[projects]` in packs.toml")
        }
        io::ErrorKind::NotADirectory => PackError::not_found(format!(
            "project root `{}` is not a directory",
            root.display()
        ))
        .with_help("point the project at a directory under `[projects]` in packs.toml"),
        _ => PackError::from(e),
    })?;
    // `join("")` would add a trailing slash to the root.
    let path = if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(&rel)
    };
    Ok(Confined {
        root: opened,
        path,
        rel,
        project: project.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use std::{fs, os::unix::fs::symlink};

    use pack_sdk::codes;

    use super::*;

    fn tree() -> (tempfile::TempDir, tempfile::TempDir) {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("src/deep")).unwrap();
        fs::write(root.path().join("src/main.rs"), "fn main() {}\n").unwrap();
        fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
        (root, outside)
    }

    fn checked(root: &Path, sub: &str) -> Result<Confined, PackError> {
        let confined = confine("demo", root, sub)?;
        confined.check()?;
        Ok(confined)
    }

    fn denied(root: &Path, sub: &str) -> PackError {
        let err = checked(root, sub).expect_err(sub);
        assert_eq!(err.code(), codes::ACCESS_DENIED, "{sub}: {err}");
        err
    }

    #[test]
    fn plain_relative_paths_join_the_root() {
        let (root, _) = tree();
        let c = checked(root.path(), "src/main.rs").unwrap();
        assert_eq!(c.path, root.path().join("src/main.rs"));
        assert_eq!(c.rel, "src/main.rs");
        let c = checked(root.path(), "./src//deep/.").unwrap();
        assert_eq!(c.rel, "src/deep");
        let c = checked(root.path(), "").unwrap();
        assert_eq!(c.path, root.path());
        assert_eq!(c.shown(), ".");
    }

    #[test]
    fn parent_components_are_refused_even_when_they_would_stay_inside() {
        let (root, _) = tree();
        let err = denied(root.path(), "../x");
        assert!(err.message().contains("`..`"), "{err}");
        denied(root.path(), "src/../../x");
        denied(root.path(), "src/deep/../main.rs");
        denied(root.path(), "..");
    }

    #[test]
    fn absolute_paths_are_refused() {
        let (root, _) = tree();
        let err = denied(root.path(), "/etc/passwd");
        assert!(err.message().contains("absolute"), "{err}");
        denied(root.path(), &root.path().join("src").to_string_lossy());
    }

    #[test]
    fn symlinks_pointing_outside_are_refused() {
        let (root, outside) = tree();
        symlink(outside.path(), root.path().join("out_dir")).unwrap();
        symlink(
            outside.path().join("secret.txt"),
            root.path().join("src/secret"),
        )
        .unwrap();
        // A relative target that climbs out.
        symlink("../../..", root.path().join("src/deep/up")).unwrap();

        let err = denied(root.path(), "out_dir");
        assert!(err.message().contains("outside"), "{err}");
        denied(root.path(), "out_dir/secret.txt");
        denied(root.path(), "out_dir/not_yet_there.txt");
        denied(root.path(), "src/secret");
        denied(root.path(), "src/deep/up");
        denied(root.path(), "src/deep/up/etc");
        let c = confine("demo", root.path(), "src/secret").unwrap();
        assert_eq!(c.open_file().unwrap_err().code(), codes::ACCESS_DENIED);
        let c = confine("demo", root.path(), "out_dir").unwrap();
        assert_eq!(c.open_dir().unwrap_err().code(), codes::ACCESS_DENIED);
    }

    #[test]
    fn dangling_symlinks_pointing_outside_are_refused() {
        let (root, outside) = tree();
        symlink(outside.path().join("nope"), root.path().join("dangling")).unwrap();
        denied(root.path(), "dangling");
        denied(root.path(), "dangling/child.txt");
    }

    #[test]
    fn symlinks_inside_the_root_are_fine() {
        let (root, _) = tree();
        symlink("src", root.path().join("source")).unwrap();
        symlink("../main.rs", root.path().join("src/deep/main")).unwrap();
        // Pointing at the root itself is still inside.
        symlink("..", root.path().join("src/root")).unwrap();
        let c = checked(root.path(), "source/main.rs").unwrap();
        assert_eq!(c.path, root.path().join("source/main.rs"));
        c.open_file().unwrap();
        checked(root.path(), "src/deep/main").unwrap();
        checked(root.path(), "src/root/src").unwrap();
    }

    #[test]
    fn the_root_may_itself_be_reached_through_a_symlink() {
        let (root, _) = tree();
        let holder = tempfile::tempdir().unwrap();
        let link = holder.path().join("project");
        symlink(root.path(), &link).unwrap();
        let c = checked(&link, "src/main.rs").unwrap();
        assert_eq!(c.path, link.join("src/main.rs"));
        c.open_file().unwrap();
    }

    #[test]
    fn nonexistent_children_are_fine() {
        let (root, _) = tree();
        let c = checked(root.path(), "new/dir/file.txt").unwrap();
        assert_eq!(c.path, root.path().join("new/dir/file.txt"));
        assert_eq!(c.open_file().unwrap_err().code(), codes::NOT_FOUND);
        // Below a file: cannot exist, but does not escape either.
        checked(root.path(), "src/main.rs/child").unwrap();
    }

    #[test]
    fn symlink_loops_are_refused() {
        let (root, _) = tree();
        symlink("b", root.path().join("a")).unwrap();
        symlink("a", root.path().join("b")).unwrap();
        denied(root.path(), "a/x");
    }

    #[test]
    fn a_missing_root_is_not_found() {
        let holder = tempfile::tempdir().unwrap();
        let err = confine("demo", &holder.path().join("gone"), "x").unwrap_err();
        assert_eq!(err.code(), codes::NOT_FOUND);
        assert!(err.message().contains("does not exist"), "{err}");
    }

    #[test]
    fn a_folder_swapped_for_a_link_after_the_check_leads_nowhere() {
        let (root, outside) = tree();
        let c = confine("demo", root.path(), "src/main.rs").unwrap();
        c.check().unwrap();
        fs::rename(root.path().join("src"), root.path().join("old")).unwrap();
        fs::create_dir(outside.path().join("src")).unwrap();
        fs::write(outside.path().join("src/main.rs"), "secret\n").unwrap();
        symlink(outside.path().join("src"), root.path().join("src")).unwrap();
        assert_eq!(c.open_file().unwrap_err().code(), codes::ACCESS_DENIED);
    }
}
