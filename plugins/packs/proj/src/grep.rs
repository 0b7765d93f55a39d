//! `grep`: regex search over a project's text files.

use std::{
    io::{BufRead, BufReader},
    path::Path,
};

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use pack_sdk::{PackError, codes, text::clip_line};
use regex::bytes::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::State;

/// Most matches one call returns.
pub const MAX_MATCHES: usize = 1000;
/// How far a file is sniffed for NUL bytes to call it binary.
const BINARY_SNIFF_BYTES: usize = 8 * 1024;
/// Lines between cancellation checks inside one large file.
const CANCEL_CHECK_LINES: usize = 10_000;

/// `proj.grep` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// Project name (see `proj.list`).
    pub name: String,
    /// Regular expression (Rust `regex` syntax), matched against each line.
    pub pattern: String,
    /// Only search files whose path relative to the project root matches this
    /// glob, e.g. `*.rs` (any directory) or `src/**/*.py`.
    #[serde(default)]
    pub glob: Option<String>,
}

/// `proj.grep` result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GrepResult {
    /// The project name.
    pub project: String,
    /// Matching lines, in path order.
    pub matches: Vec<Match>,
    /// Whether there were more than 1000 matches and the rest were left out.
    pub truncated: bool,
}

/// One matching line.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Match {
    /// File path relative to the project root, `/`-separated.
    pub path: String,
    /// 1-based line number.
    pub line: usize,
    /// The line, without its line ending; cut at 500 characters (ending in
    /// `…` when cut).
    pub text: String,
}

/// Search the project's text files for `pattern`. Honours `.gitignore` (also
/// outside git repositories), `.ignore`, skips hidden and binary files, and
/// does not follow symlinks (so the walk cannot leave the root).
/// `cancelled` is polled per file and every few thousand lines.
pub fn grep(
    state: &State,
    args: &GrepArgs,
    cancelled: &dyn Fn() -> bool,
) -> Result<GrepResult, PackError> {
    if args.pattern.is_empty() {
        return Err(PackError::invalid_argument(
            "`pattern` is empty; pass a regular expression, e.g. `fn main`",
        ));
    }
    let regex = Regex::new(&args.pattern).map_err(|e| {
        PackError::invalid_argument(format!("`pattern` is not a valid regex: {e}"))
            .with_help("use Rust `regex` syntax; escape special characters like `(` as `\\(`")
    })?;
    let glob = args.glob.as_deref().map(compile_glob).transpose()?;
    let project = state.resolve(&args.name, "")?;
    let root = &project.path;

    let mut matches = Vec::new();
    let mut truncated = false;
    let walk = WalkBuilder::new(root)
        // Projects need not be git repositories; their .gitignore still says
        // what is generated.
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    'files: for entry in walk {
        if cancelled() {
            return Err(cancelled_error());
        }
        // Unreadable directories are skipped rather than failing the search.
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let rel = relative(root, entry.path());
        if glob.as_ref().is_some_and(|g| !g.is_match(&rel)) {
            continue;
        }
        // The walk goes by names, which code may swap for links meanwhile:
        // each file is opened beneath the root, where no link leads out.
        let Ok(file) = project.root().open_file(&rel) else {
            continue;
        };
        if !file.metadata().is_ok_and(|meta| meta.is_file()) {
            continue;
        }
        let mut reader = BufReader::new(file);
        match reader.fill_buf() {
            Ok(head) if !head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0) => {}
            _ => continue,
        }
        let mut buf = Vec::new();
        let mut line = 0;
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            line += 1;
            if line % CANCEL_CHECK_LINES == 0 && cancelled() {
                return Err(cancelled_error());
            }
            let text = trim_line_ending(&buf);
            if !regex.is_match(text) {
                continue;
            }
            if matches.len() == MAX_MATCHES {
                truncated = true;
                break 'files;
            }
            matches.push(Match {
                path: rel.clone(),
                line,
                text: clip_line(&String::from_utf8_lossy(text), "…"),
            });
        }
    }

    Ok(GrepResult {
        project: args.name.clone(),
        matches,
        truncated,
    })
}

fn compile_glob(glob: &str) -> Result<GlobMatcher, PackError> {
    // `*` crosses `/` so `*.rs` finds Rust files in every directory.
    GlobBuilder::new(glob)
        .literal_separator(false)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| {
            PackError::invalid_argument(format!("`glob` is not a valid glob: {e}"))
                .with_help("e.g. `*.rs` or `src/**/*.py`")
        })
}

fn cancelled_error() -> PackError {
    PackError::new(codes::CANCELLED, "`proj.grep` was cancelled")
}

/// `path` relative to `root`, `/`-separated whatever the platform.
fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn trim_line_ending(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use std::{collections::BTreeMap, fs, os::unix::fs::symlink};

    use pack_sdk::text::MAX_LINE_CHARS;

    use super::*;

    fn project() -> (tempfile::TempDir, State) {
        let dir = tempfile::tempdir().unwrap();
        let state = State::new(BTreeMap::from([(
            "demo".to_owned(),
            dir.path().to_path_buf(),
        )]));
        let p = dir.path();
        fs::create_dir_all(p.join("src/util")).unwrap();
        fs::create_dir_all(p.join("target")).unwrap();
        fs::write(p.join(".gitignore"), "target/\n*.log\n").unwrap();
        fs::write(p.join("src/main.rs"), "fn main() {\n    helper();\n}\n").unwrap();
        fs::write(p.join("src/util/helper.rs"), "pub fn helper() {}\r\n").unwrap();
        fs::write(p.join("src/tool.py"), "def helper():\n    pass\n").unwrap();
        fs::write(p.join("target/gen.rs"), "fn helper_generated() {}\n").unwrap();
        fs::write(p.join("debug.log"), "helper log\n").unwrap();
        fs::write(p.join("blob.bin"), b"helper\0\x01\x02").unwrap();
        (dir, state)
    }

    fn args(pattern: &str, glob: Option<&str>) -> GrepArgs {
        GrepArgs {
            name: "demo".into(),
            pattern: pattern.into(),
            glob: glob.map(Into::into),
        }
    }

    fn run(state: &State, args: &GrepArgs) -> Result<GrepResult, PackError> {
        grep(state, args, &|| false)
    }

    fn found(result: &GrepResult) -> Vec<(&str, usize, &str)> {
        result
            .matches
            .iter()
            .map(|m| (m.path.as_str(), m.line, m.text.as_str()))
            .collect()
    }

    #[test]
    fn finds_matches_honouring_gitignore_and_skipping_binaries() {
        let (_dir, state) = project();
        let r = run(&state, &args(r"helper\(", None)).unwrap();
        assert_eq!(
            found(&r),
            [
                ("src/main.rs", 2, "    helper();"),
                ("src/tool.py", 1, "def helper():"),
                ("src/util/helper.rs", 1, "pub fn helper() {}"),
            ]
        );
        assert!(!r.truncated);
        assert_eq!(r.project, "demo");
    }

    #[test]
    fn glob_filters_relative_paths() {
        let (_dir, state) = project();
        let r = run(&state, &args("helper", Some("*.rs"))).unwrap();
        let paths: Vec<_> = r.matches.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(paths, ["src/main.rs", "src/util/helper.rs"]);
        let r = run(&state, &args("helper", Some("src/**/*.py"))).unwrap();
        assert_eq!(found(&r), [("src/tool.py", 1, "def helper():")]);
        let r = run(&state, &args("helper", Some("src/util/*"))).unwrap();
        assert_eq!(r.matches.len(), 1);
    }

    #[test]
    fn bad_regex_and_glob_are_invalid_arguments() {
        let (_dir, state) = project();
        let err = run(&state, &args("fn (", None)).unwrap_err();
        assert_eq!(err.code(), codes::INVALID_ARGUMENT);
        assert!(err.message().contains("regex"), "{err}");
        let err = run(&state, &args("fn", Some("src/[a"))).unwrap_err();
        assert_eq!(err.code(), codes::INVALID_ARGUMENT);
        assert!(err.message().contains("glob"), "{err}");
        let err = run(&state, &args("", None)).unwrap_err();
        assert_eq!(err.code(), codes::INVALID_ARGUMENT);
    }

    #[test]
    fn unknown_project_is_not_found() {
        let (_dir, state) = project();
        let err = run(
            &state,
            &GrepArgs {
                name: "nope".into(),
                ..args("x", None)
            },
        )
        .unwrap_err();
        assert_eq!(err.code(), codes::NOT_FOUND);
        assert!(err.message().contains("projects: demo"), "{err}");
    }

    #[test]
    fn caps_matches_and_line_length() {
        let (dir, state) = project();
        let long = "x".repeat(MAX_LINE_CHARS + 50);
        fs::write(
            dir.path().join("many.txt"),
            format!("{long}\n").repeat(1500),
        )
        .unwrap();
        let r = run(&state, &args("^x", Some("many.txt"))).unwrap();
        assert!(r.truncated);
        assert_eq!(r.matches.len(), MAX_MATCHES);
        assert_eq!(r.matches[999].line, 1000);
        let text = &r.matches[0].text;
        assert_eq!(text.chars().count(), MAX_LINE_CHARS + 1);
        assert!(text.ends_with('…'));

        // Exactly the cap is not truncated.
        fs::write(dir.path().join("many.txt"), "x\n".repeat(MAX_MATCHES)).unwrap();
        let r = run(&state, &args("^x", Some("many.txt"))).unwrap();
        assert!(!r.truncated);
        assert_eq!(r.matches.len(), MAX_MATCHES);
    }

    #[test]
    fn does_not_follow_symlinks_out_of_the_root() {
        let (dir, state) = project();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret.txt"), "helper secret\n").unwrap();
        symlink(outside.path(), dir.path().join("out")).unwrap();
        symlink(outside.path().join("secret.txt"), dir.path().join("s.txt")).unwrap();
        let r = run(&state, &args("secret", None)).unwrap();
        assert!(r.matches.is_empty(), "{:?}", found(&r));
    }

    #[test]
    fn stops_when_cancelled() {
        let (_dir, state) = project();
        let err = grep(&state, &args("helper", None), &|| true).unwrap_err();
        assert_eq!(err.code(), codes::CANCELLED);
    }
}
