//! `list`, `path`, `read` and `ls`: the plain (blocking) logic.

use std::io::{BufRead, BufReader};

use pack_sdk::PackError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::State;

/// Most content `read` returns in one call.
pub const MAX_READ_BYTES: usize = 256 * 1024;
/// Most entries `ls` returns.
pub const MAX_LS_ENTRIES: usize = 5000;
/// How far `read` looks for NUL bytes to call a file binary.
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// `proj.list` result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProjectList {
    /// The configured projects, sorted by name.
    pub projects: Vec<ProjectInfo>,
}

/// One configured project.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProjectInfo {
    /// Project name, as passed to the other functions.
    pub name: String,
    /// Absolute path of the project root.
    pub path: String,
    /// Whether the root exists as a directory.
    pub exists: bool,
}

/// The configured projects.
pub fn list(state: &State) -> ProjectList {
    ProjectList {
        projects: state
            .projects()
            .iter()
            .map(|(name, path)| ProjectInfo {
                name: name.clone(),
                path: path.display().to_string(),
                exists: path.is_dir(),
            })
            .collect(),
    }
}

/// `proj.path` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathArgs {
    /// Project name (see `proj.list`).
    pub name: String,
    /// Path relative to the project root; empty for the root itself. It need
    /// not exist yet.
    #[serde(default)]
    pub sub: String,
}

/// `proj.path` result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PathResult {
    /// The project name.
    pub project: String,
    /// Absolute path of `sub` inside the project.
    pub path: String,
}

/// The absolute path of `sub` inside the project, existing or not.
pub fn path(state: &State, args: &PathArgs) -> Result<PathResult, PackError> {
    let confined = state.resolve(&args.name, &args.sub)?;
    confined.check()?;
    Ok(PathResult {
        project: args.name.clone(),
        path: confined.path.display().to_string(),
    })
}

/// `proj.read` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// Project name (see `proj.list`).
    pub name: String,
    /// File path relative to the project root, e.g. `src/main.rs`.
    pub path: String,
    /// First line to return, 0-based.
    #[serde(default)]
    pub offset: usize,
    /// How many lines to return (at least 1).
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1))]
    pub limit: usize,
}

fn default_limit() -> usize {
    2000
}

/// `proj.read` result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadResult {
    /// The project name.
    pub project: String,
    /// The file, relative to the project root.
    pub path: String,
    /// The lines read, with their line endings.
    pub content: String,
    /// 0-based line the content starts at.
    pub offset: usize,
    /// How many lines `content` holds (the last one possibly cut short).
    pub lines: usize,
    /// Lines in the whole file.
    pub total_lines: usize,
    /// Whether lines after the content were left out or the content was cut
    /// at 256 KiB; continue with `offset + lines`.
    pub truncated: bool,
}

/// Lines `offset..offset + limit` of a UTF-8 text file.
pub fn read(state: &State, args: &ReadArgs) -> Result<ReadResult, PackError> {
    if args.limit == 0 {
        return Err(
            PackError::invalid_argument("`limit` is 0; pass at least 1 line")
                .with_help("omit `limit` to read up to 2000 lines"),
        );
    }
    let confined = state.resolve(&args.name, &args.path)?;
    // Opened once; what is checked and read is that file, whatever is
    // renamed meanwhile.
    let file = confined.open_file()?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(PackError::invalid_argument(format!(
            "`{}` is a directory, not a file; use `proj.ls` to list it",
            confined.shown()
        )));
    }
    if !meta.is_file() {
        // A FIFO or device could block forever or never end.
        return Err(PackError::invalid_argument(format!(
            "`{}` is not a regular file; `proj.read` reads text files only",
            confined.shown()
        )));
    }

    let not_text = |why: String| {
        PackError::invalid_argument(format!(
            "`{}` is not a UTF-8 text file ({why}); `proj.read` reads text files only",
            confined.shown()
        ))
    };
    let mut reader = BufReader::new(file);
    let head = reader.fill_buf()?;
    if head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Err(not_text("it contains NUL bytes".to_owned()));
    }

    let end = args.offset.saturating_add(args.limit);
    let mut content = String::new();
    let mut lines = 0;
    let mut bytes_cut = false;
    let mut total_lines = 0;
    let mut buf = Vec::new();
    // Read to the end even past the window: `total_lines` needs it, and a
    // non-UTF-8 file should be refused wherever the bad bytes are.
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        let line = std::str::from_utf8(&buf)
            .map_err(|_| not_text(format!("line {} is not valid UTF-8", total_lines + 1)))?;
        if (args.offset..end).contains(&total_lines) && !bytes_cut {
            if content.len() + line.len() <= MAX_READ_BYTES {
                content.push_str(line);
                lines += 1;
            } else {
                if lines == 0 {
                    // One huge line: return its start rather than nothing.
                    content.push_str(prefix(line, MAX_READ_BYTES));
                    lines = 1;
                }
                bytes_cut = true;
            }
        }
        total_lines += 1;
    }

    Ok(ReadResult {
        project: args.name.clone(),
        path: confined.rel,
        content,
        offset: args.offset,
        lines,
        total_lines,
        truncated: bytes_cut || args.offset.saturating_add(lines) < total_lines,
    })
}

/// `proj.ls` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LsArgs {
    /// Project name (see `proj.list`).
    pub name: String,
    /// Directory relative to the project root; empty for the root itself.
    #[serde(default)]
    pub path: String,
}

/// `proj.ls` result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LsResult {
    /// The project name.
    pub project: String,
    /// The directory, relative to the project root (empty for the root).
    pub path: String,
    /// Entries, directories first, then by name.
    pub entries: Vec<Entry>,
    /// Whether entries were left out (more than 5000).
    pub truncated: bool,
}

/// One directory entry.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Entry {
    /// File name.
    pub name: String,
    /// What it is; a symlink is reported as such, not as its target.
    pub kind: Kind,
    /// Size in bytes for files; 0 for anything else.
    pub size: u64,
}

/// Kind of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// Anything else (socket, FIFO, device).
    Other,
}

/// The entries of a directory in a project.
pub fn ls(state: &State, args: &LsArgs) -> Result<LsResult, PackError> {
    let confined = state.resolve(&args.name, &args.path)?;
    let dir = match confined.open_dir() {
        Ok(dir) => dir,
        // Refused as a folder but there: a file (or another non-folder).
        Err(_) if confined.open_file().is_ok() => {
            return Err(PackError::invalid_argument(format!(
                "`{}` is not a directory; use `proj.read` to read a file",
                confined.shown()
            )));
        }
        Err(e) => return Err(e),
    };
    let mut entries = Vec::new();
    for entry in dir.entries()? {
        // An entry that vanished or cannot be stat'ed is left out, not fatal.
        let Ok(entry) = entry else { continue };
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let (kind, size) = if file_type.is_symlink() {
            (Kind::Symlink, 0)
        } else if file_type.is_dir() {
            (Kind::Dir, 0)
        } else if file_type.is_file() {
            (Kind::File, entry.metadata().map(|m| m.len()).unwrap_or(0))
        } else {
            (Kind::Other, 0)
        };
        entries.push(Entry {
            name: entry.file_name().to_string_lossy().into_owned(),
            kind,
            size,
        });
    }
    entries.sort_by(|a, b| {
        (a.kind != Kind::Dir)
            .cmp(&(b.kind != Kind::Dir))
            .then_with(|| a.name.cmp(&b.name))
    });
    let truncated = entries.len() > MAX_LS_ENTRIES;
    entries.truncate(MAX_LS_ENTRIES);
    Ok(LsResult {
        project: args.name.clone(),
        path: confined.rel,
        entries,
        truncated,
    })
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub(crate) fn prefix(s: &str, max: usize) -> &str {
    &s[..s.floor_char_boundary(max)]
}

#[cfg(test)]
mod tests {
    use std::{collections::BTreeMap, fs, os::unix::fs::symlink};

    use pack_sdk::codes;

    use super::*;

    fn project() -> (tempfile::TempDir, State) {
        let dir = tempfile::tempdir().unwrap();
        let state = State::new(BTreeMap::from([
            ("demo".to_owned(), dir.path().to_path_buf()),
            ("missing".to_owned(), dir.path().join("not-there")),
        ]));
        fs::create_dir_all(dir.path().join("src/nested")).unwrap();
        fs::write(dir.path().join("src/main.rs"), "one\ntwo\nthree\n").unwrap();
        fs::write(dir.path().join("README.md"), "# demo\n").unwrap();
        (dir, state)
    }

    fn read_args(path: &str, offset: usize, limit: usize) -> ReadArgs {
        ReadArgs {
            name: "demo".into(),
            path: path.into(),
            offset,
            limit,
        }
    }

    #[test]
    fn list_reports_projects_sorted_with_existence() {
        let (dir, state) = project();
        let list = list(&state);
        let names: Vec<_> = list.projects.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["demo", "missing"]);
        assert!(list.projects[0].exists);
        assert!(!list.projects[1].exists);
        assert_eq!(list.projects[0].path, dir.path().display().to_string());
    }

    #[test]
    fn path_joins_and_allows_new_paths() {
        let (dir, state) = project();
        let args = PathArgs {
            name: "demo".into(),
            sub: "src/new.rs".into(),
        };
        let result = path(&state, &args).unwrap();
        assert_eq!(result.project, "demo");
        assert_eq!(
            result.path,
            dir.path().join("src/new.rs").display().to_string()
        );
        let args = PathArgs {
            name: "demo".into(),
            sub: String::new(),
        };
        assert_eq!(
            path(&state, &args).unwrap().path,
            dir.path().display().to_string()
        );
    }

    #[test]
    fn path_refuses_escapes() {
        let (_dir, state) = project();
        for sub in ["../x", "/etc"] {
            let args = PathArgs {
                name: "demo".into(),
                sub: sub.into(),
            };
            assert_eq!(
                path(&state, &args).unwrap_err().code(),
                codes::ACCESS_DENIED
            );
        }
    }

    #[test]
    fn read_whole_file() {
        let (_dir, state) = project();
        let r = read(&state, &read_args("src/main.rs", 0, 2000)).unwrap();
        assert_eq!(r.content, "one\ntwo\nthree\n");
        assert_eq!((r.offset, r.lines, r.total_lines), (0, 3, 3));
        assert!(!r.truncated);
        assert_eq!(r.path, "src/main.rs");
    }

    #[test]
    fn read_a_window() {
        let (_dir, state) = project();
        let r = read(&state, &read_args("src/main.rs", 1, 1)).unwrap();
        assert_eq!(r.content, "two\n");
        assert_eq!((r.offset, r.lines, r.total_lines), (1, 1, 3));
        assert!(r.truncated);
        let r = read(&state, &read_args("src/main.rs", 2, 5)).unwrap();
        assert_eq!(r.content, "three\n");
        assert!(!r.truncated);
        let r = read(&state, &read_args("src/main.rs", 10, 5)).unwrap();
        assert_eq!((r.content.as_str(), r.lines, r.total_lines), ("", 0, 3));
        assert!(!r.truncated);
    }

    #[test]
    fn read_without_trailing_newline_and_empty_files() {
        let (dir, state) = project();
        fs::write(dir.path().join("a.txt"), "x\ny").unwrap();
        let r = read(&state, &read_args("a.txt", 0, 10)).unwrap();
        assert_eq!((r.content.as_str(), r.total_lines), ("x\ny", 2));
        fs::write(dir.path().join("empty.txt"), "").unwrap();
        let r = read(&state, &read_args("empty.txt", 0, 10)).unwrap();
        assert_eq!((r.content.as_str(), r.lines, r.total_lines), ("", 0, 0));
        assert!(!r.truncated);
    }

    #[test]
    fn read_caps_content_bytes() {
        let (dir, state) = project();
        let line = format!("{}\n", "é".repeat(1000)); // 2001 bytes
        fs::write(dir.path().join("big.txt"), line.repeat(200)).unwrap();
        let r = read(&state, &read_args("big.txt", 0, 2000)).unwrap();
        assert!(r.truncated);
        assert!(r.content.len() <= MAX_READ_BYTES);
        assert_eq!(r.lines, MAX_READ_BYTES / line.len());
        assert_eq!(r.total_lines, 200);

        // A single line longer than the cap comes back cut, on a char boundary.
        fs::write(dir.path().join("huge.txt"), "é".repeat(MAX_READ_BYTES)).unwrap();
        let r = read(&state, &read_args("huge.txt", 0, 10)).unwrap();
        assert!(r.truncated);
        assert_eq!(r.lines, 1);
        assert_eq!(r.content.len(), MAX_READ_BYTES);
    }

    #[test]
    fn read_refuses_directories_binaries_and_missing_files() {
        let (dir, state) = project();
        let err = read(&state, &read_args("src", 0, 10)).unwrap_err();
        assert_eq!(err.code(), codes::INVALID_ARGUMENT);
        assert!(err.message().contains("`proj.ls`"), "{err}");

        fs::write(dir.path().join("bin"), b"ab\0cd").unwrap();
        let err = read(&state, &read_args("bin", 0, 10)).unwrap_err();
        assert_eq!(err.code(), codes::INVALID_ARGUMENT);
        assert!(err.message().contains("not a UTF-8 text file"), "{err}");

        fs::write(dir.path().join("latin1"), b"caf\xe9\n").unwrap();
        let err = read(&state, &read_args("latin1", 0, 10)).unwrap_err();
        assert_eq!(err.code(), codes::INVALID_ARGUMENT);
        assert!(err.message().contains("line 1"), "{err}");

        let err = read(&state, &read_args("src/nope.rs", 0, 10)).unwrap_err();
        assert_eq!(err.code(), codes::NOT_FOUND);
        assert!(err.message().contains("`src/nope.rs`"), "{err}");

        let err = read(&state, &read_args("src/main.rs", 0, 0)).unwrap_err();
        assert_eq!(err.code(), codes::INVALID_ARGUMENT);
    }

    #[test]
    fn read_refuses_symlinks_leading_outside() {
        let (dir, state) = project();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "s\n").unwrap();
        symlink(outside.path().join("secret"), dir.path().join("leak")).unwrap();
        let err = read(&state, &read_args("leak", 0, 10)).unwrap_err();
        assert_eq!(err.code(), codes::ACCESS_DENIED);
        symlink("src/main.rs", dir.path().join("main")).unwrap();
        assert_eq!(
            read(&state, &read_args("main", 0, 10)).unwrap().total_lines,
            3
        );
    }

    #[test]
    fn read_on_a_missing_root_is_not_found() {
        let (_dir, state) = project();
        let args = ReadArgs {
            name: "missing".into(),
            ..read_args("x", 0, 1)
        };
        assert_eq!(read(&state, &args).unwrap_err().code(), codes::NOT_FOUND);
    }

    #[test]
    fn ls_sorts_dirs_first_then_names() {
        let (dir, state) = project();
        fs::write(dir.path().join("a.txt"), "12345").unwrap();
        fs::create_dir(dir.path().join("zdir")).unwrap();
        symlink("src", dir.path().join("link")).unwrap();
        let args = LsArgs {
            name: "demo".into(),
            path: String::new(),
        };
        let r = ls(&state, &args).unwrap();
        let got: Vec<_> = r
            .entries
            .iter()
            .map(|e| (e.name.as_str(), e.kind, e.size))
            .collect();
        assert_eq!(
            got,
            [
                ("src", Kind::Dir, 0),
                ("zdir", Kind::Dir, 0),
                ("README.md", Kind::File, 7),
                ("a.txt", Kind::File, 5),
                ("link", Kind::Symlink, 0),
            ]
        );
        assert!(!r.truncated);
        assert_eq!(r.path, "");
    }

    #[test]
    fn ls_subdirectory_and_errors() {
        let (_dir, state) = project();
        let args = |path: &str| LsArgs {
            name: "demo".into(),
            path: path.into(),
        };
        let r = ls(&state, &args("src")).unwrap();
        assert_eq!(r.entries.len(), 2);
        assert_eq!(r.path, "src");
        let err = ls(&state, &args("src/main.rs")).unwrap_err();
        assert_eq!(err.code(), codes::INVALID_ARGUMENT);
        assert!(err.message().contains("`proj.read`"), "{err}");
        assert_eq!(
            ls(&state, &args("gone")).unwrap_err().code(),
            codes::NOT_FOUND
        );
        assert_eq!(
            ls(&state, &args("..")).unwrap_err().code(),
            codes::ACCESS_DENIED
        );
    }

    #[test]
    fn ls_caps_entries() {
        let (dir, state) = project();
        let many = dir.path().join("many");
        fs::create_dir(&many).unwrap();
        for i in 0..MAX_LS_ENTRIES + 3 {
            fs::write(many.join(format!("f{i:05}")), "").unwrap();
        }
        let args = LsArgs {
            name: "demo".into(),
            path: "many".into(),
        };
        let r = ls(&state, &args).unwrap();
        assert!(r.truncated);
        assert_eq!(r.entries.len(), MAX_LS_ENTRIES);
        assert_eq!(r.entries[0].name, "f00000");
    }

    #[test]
    fn prefix_keeps_char_boundaries() {
        assert_eq!(prefix("héllo", 2), "h");
        assert_eq!(prefix("héllo", 3), "hé");
        assert_eq!(prefix("hi", 10), "hi");
    }
}
