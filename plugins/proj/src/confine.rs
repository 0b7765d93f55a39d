//! The one rule for caller-supplied paths: they stay under their project root.
//!
//! Every function that takes a path goes through [`confine`], so the rule
//! lives in one place: relative paths only, no `..`, and no symlink (anywhere
//! along the path, dangling or not) that leads outside the canonical root.

use std::{
    collections::VecDeque,
    fs, io,
    path::{Component, Path, PathBuf},
};

use pack_sdk::PackError;

/// How many symlinks one path may pass through (Linux's own limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// A path that was checked to stay inside its root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confined {
    /// The configured root joined with [`rel`](Self::rel). Symlinks are left
    /// in place so callers see the path they asked for.
    pub path: PathBuf,
    /// The cleaned relative path, `/`-separated; empty for the root itself.
    pub rel: String,
}

impl Confined {
    /// The relative path for messages: `.` for the root.
    pub fn shown(&self) -> &str {
        if self.rel.is_empty() { "." } else { &self.rel }
    }
}

/// Check that `sub` (relative to `root`) stays inside `root`, and return it
/// joined to `root`. The path need not exist; the deepest part that does is
/// resolved physically (symlinks followed) and must stay under the canonical
/// root, and so must any symlink target along the way.
pub fn confine(root: &Path, sub: &str) -> Result<Confined, PackError> {
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

    let canonical_root = fs::canonicalize(root).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => {
            PackError::not_found(format!("project root `{}` does not exist", root.display()))
                .with_help("create the directory or fix its path under `[projects]` in packs.toml")
        }
        _ => PackError::from(e),
    })?;
    if !canonical_root.is_dir() {
        return Err(PackError::not_found(format!(
            "project root `{}` is not a directory",
            root.display()
        ))
        .with_help("point the project at a directory under `[projects]` in packs.toml"));
    }

    let resolved = resolve_physical(&canonical_root, Path::new(&rel)).map_err(|e| {
        PackError::access_denied(format!("cannot resolve path `{rel}` safely: {e}"))
    })?;
    if !resolved.starts_with(&canonical_root) {
        return Err(PackError::access_denied(format!(
            "path `{rel}` leads through a symlink to `{}`, outside the project root",
            resolved.display()
        ))
        .with_help("only files under the project root are reachable"));
    }

    // `join("")` would add a trailing slash to the root.
    let path = if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(&rel)
    };
    Ok(Confined { path, rel })
}

/// `base.join(rest)` with every existing symlink resolved, like `realpath`,
/// except that a missing tail is kept as written instead of failing. This
/// also catches dangling symlinks that point outside (a plain `canonicalize`
/// of the deepest existing ancestor would stop before them).
fn resolve_physical(base: &Path, rest: &Path) -> io::Result<PathBuf> {
    let mut out = base.to_path_buf();
    let mut pending: VecDeque<PathBuf> = rest
        .components()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        match part.components().next() {
            None | Some(Component::CurDir) => {}
            Some(Component::ParentDir) => {
                out.pop();
            }
            // Only symlink targets bring these in; pushing one replaces `out`.
            Some(Component::RootDir | Component::Prefix(_)) => out.push(&part),
            Some(Component::Normal(_)) => {
                out.push(&part);
                match fs::symlink_metadata(&out) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        hops += 1;
                        if hops > MAX_SYMLINK_HOPS {
                            return Err(io::Error::other("too many levels of symbolic links"));
                        }
                        let target = fs::read_link(&out)?;
                        out.pop();
                        for c in target.components().rev() {
                            pending.push_front(PathBuf::from(c.as_os_str()));
                        }
                    }
                    Ok(_) => {}
                    // The rest does not exist (yet): keep it as written.
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                        ) => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

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

    fn denied(root: &Path, sub: &str) -> PackError {
        let err = confine(root, sub).expect_err(sub);
        assert_eq!(err.code(), codes::ACCESS_DENIED, "{sub}: {err}");
        err
    }

    #[test]
    fn plain_relative_paths_join_the_root() {
        let (root, _) = tree();
        let c = confine(root.path(), "src/main.rs").unwrap();
        assert_eq!(c.path, root.path().join("src/main.rs"));
        assert_eq!(c.rel, "src/main.rs");
        let c = confine(root.path(), "./src//deep/.").unwrap();
        assert_eq!(c.rel, "src/deep");
        let c = confine(root.path(), "").unwrap();
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
        let c = confine(root.path(), "source/main.rs").unwrap();
        assert_eq!(c.path, root.path().join("source/main.rs"));
        confine(root.path(), "src/deep/main").unwrap();
        confine(root.path(), "src/root/src").unwrap();
    }

    #[test]
    fn the_root_may_itself_be_reached_through_a_symlink() {
        let (root, _) = tree();
        let holder = tempfile::tempdir().unwrap();
        let link = holder.path().join("project");
        symlink(root.path(), &link).unwrap();
        let c = confine(&link, "src/main.rs").unwrap();
        assert_eq!(c.path, link.join("src/main.rs"));
    }

    #[test]
    fn nonexistent_children_are_fine() {
        let (root, _) = tree();
        let c = confine(root.path(), "new/dir/file.txt").unwrap();
        assert_eq!(c.path, root.path().join("new/dir/file.txt"));
        // Below a file: cannot exist, but does not escape either.
        confine(root.path(), "src/main.rs/child").unwrap();
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
        let err = confine(&holder.path().join("gone"), "x").unwrap_err();
        assert_eq!(err.code(), codes::NOT_FOUND);
        assert!(err.message().contains("does not exist"), "{err}");
    }
}
