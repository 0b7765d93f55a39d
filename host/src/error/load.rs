//! Why one pack did not load: the pack is reported and skipped, the others
//! keep working.

use std::{fmt, path::PathBuf};

use abi_stable::library::LibraryError;

/// Why pack `pack` did not load.
#[derive(Debug, Clone)]
pub struct LoadError {
    /// The `[packs.<name>]` key.
    pub pack: String,
    /// The library file, once known.
    pub file: Option<PathBuf>,
    /// What went wrong.
    pub reason: LoadReason,
}

/// What went wrong loading a pack library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadReason {
    /// The same file is already loaded under another name.
    AlreadyLoaded {
        /// The pack it is loaded as.
        twin: String,
    },
    /// `path` names no file.
    NoFile,
    /// No `lib<name>.so` in any pack directory.
    NotInPackDirs {
        /// `lib<name>.so`.
        file: String,
        /// The directories looked in, in order.
        searched: Vec<String>,
    },
    /// The dynamic loader refused the file.
    CannotOpen(String),
    /// The library exports no pack root module.
    NotAPack,
    /// Built against another pack ABI version.
    AbiVersion {
        /// The pack's.
        pack: String,
        /// The host's.
        host: String,
    },
    /// Same version, different type layouts.
    AbiLayout {
        /// The head of abi_stable's report, one line per mismatch.
        errors: String,
    },
    /// Built with an abi_stable whose header this host cannot read.
    AbiHeader(String),
    /// Any other abi_stable failure, its first lines.
    Library(String),
    /// The manifest is not the JSON the host reads.
    BadManifest {
        /// The parse error.
        error: String,
        /// What the pack sent.
        json: String,
    },
    /// The pack's constructor returned an error (its text).
    Constructor(String),
}

const REBUILD: &str = "rebuild the pack against this host's `pack-sdk`";

impl LoadError {
    /// The stable code: what kind of fix is needed.
    pub fn code(&self) -> &'static str {
        use LoadReason::*;
        match &self.reason {
            AlreadyLoaded { .. } => "PACK_LOADED_TWICE",
            NoFile | NotInPackDirs { .. } => "PACK_NOT_FOUND",
            CannotOpen(_) | NotAPack | Library(_) => "PACK_NOT_LOADABLE",
            AbiVersion { .. } | AbiLayout { .. } | AbiHeader(_) => "PACK_ABI_MISMATCH",
            BadManifest { .. } => "PACK_BAD_MANIFEST",
            Constructor(_) => "PACK_CONSTRUCTOR_FAILED",
        }
    }

    /// What would be right, when the host knows.
    pub fn help(&self) -> Option<String> {
        use LoadReason::*;
        let pack = &self.pack;
        let help = match &self.reason {
            AlreadyLoaded { .. } => {
                "a library is loaded once, remove one of the two sections".to_owned()
            }
            NoFile => "fix `path` or build the pack".to_owned(),
            NotInPackDirs { .. } => {
                format!("set `path` in `[packs.{pack}]` or add its directory to `server.pack_dirs`")
            }
            AbiVersion { .. } | AbiHeader(_) => REBUILD.to_owned(),
            AbiLayout { .. } => {
                format!("{REBUILD} (PACKHOST_LOG=debug shows the whole layout report)")
            }
            CannotOpen(_) | NotAPack | Library(_) | BadManifest { .. } | Constructor(_) => {
                return None;
            }
        };
        Some(help)
    }

    /// What went wrong, without the fix.
    fn what(&self) -> String {
        use LoadReason::*;
        match &self.reason {
            AlreadyLoaded { twin } => format!("this library is already loaded as pack `{twin}`"),
            NoFile => "file not found".to_owned(),
            NotInPackDirs { file, searched } => format!(
                "`{file}` not found in the pack directories ({})",
                searched.join(", ")
            ),
            CannotOpen(error) => format!("cannot load the library: {error}"),
            NotAPack => "not a packhost pack: it exports no pack root module (a pack calls \
                         `pack_sdk::export_pack!`)"
                .to_owned(),
            AbiVersion { pack, host } => {
                format!("built against pack ABI {pack}, this host speaks {host}")
            }
            AbiLayout { errors } => {
                format!("its pack ABI layout differs from this host's ({errors})")
            }
            AbiHeader(header) => format!("built with an incompatible abi_stable ({header})"),
            Library(text) => text.clone(),
            BadManifest { error, json } => format!("its manifest is not valid ({error}): {json}"),
            Constructor(text) => format!("its constructor failed: {text}"),
        }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pack `{}`", self.pack)?;
        if let Some(file) = &self.file {
            write!(f, " ({})", file.display())?;
        }
        write!(f, ": {}", self.what())?;
        match self.help() {
            Some(help) => write!(f, "; {help}"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for LoadError {}

/// One readable reason per failure kind; abi_stable's own layout report runs
/// to thousands of lines, so only its head is shown.
impl From<LibraryError> for LoadReason {
    fn from(e: LibraryError) -> Self {
        match e {
            LibraryError::OpenError { err, .. } => LoadReason::CannotOpen(err.to_string()),
            LibraryError::GetSymbolError { .. } => LoadReason::NotAPack,
            LibraryError::IncompatibleVersionNumber {
                expected_version,
                actual_version,
                ..
            } => LoadReason::AbiVersion {
                pack: actual_version.to_string(),
                host: expected_version.to_string(),
            },
            LibraryError::AbiInstability(report) => {
                let report = report.to_string();
                tracing::debug!(%report, "full pack ABI layout report");
                LoadReason::AbiLayout {
                    errors: layout_errors(&report),
                }
            }
            LibraryError::InvalidAbiHeader(header) => LoadReason::AbiHeader(format!("{header:?}")),
            other => {
                let text = other.to_string();
                LoadReason::Library(text.lines().take(6).collect::<Vec<_>>().join("\n"))
            }
        }
    }
}

/// The `Error:` blocks at the end of abi_stable's layout report, each on one
/// line: "mismatched package Expected: pack-api Found: other".
fn layout_errors(report: &str) -> String {
    let mut errors = Vec::new();
    let mut lines = report.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(first) = line.trim().strip_prefix("Error:") {
            let mut block = vec![first.trim().to_owned()];
            while let Some(next) =
                lines.next_if(|l| !l.trim().is_empty() && !l.trim().starts_with("Error:"))
            {
                block.push(next.trim().to_owned());
            }
            errors.push(block.join(" "));
        }
    }
    if errors.is_empty() {
        return "no detail given".to_owned();
    }
    errors.truncate(3);
    errors.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(reason: LoadReason) -> LoadError {
        LoadError {
            pack: "mine".to_owned(),
            file: Some(PathBuf::from("/p/libmine.so")),
            reason,
        }
    }

    #[test]
    fn each_reason_has_a_code_and_shows_its_fix_after_the_sentence() {
        let missing = LoadError {
            file: None,
            ..error(LoadReason::NotInPackDirs {
                file: "libmine.so".to_owned(),
                searched: vec!["/a".to_owned(), "/b".to_owned()],
            })
        };
        assert_eq!(missing.code(), "PACK_NOT_FOUND");
        assert_eq!(
            missing.to_string(),
            "pack `mine`: `libmine.so` not found in the pack directories (/a, /b); set `path` \
             in `[packs.mine]` or add its directory to `server.pack_dirs`"
        );
        let abi = error(LoadReason::AbiVersion {
            pack: "0.1".to_owned(),
            host: "0.2".to_owned(),
        });
        assert_eq!(abi.code(), "PACK_ABI_MISMATCH");
        assert_eq!(abi.help().as_deref(), Some(REBUILD));
        assert_eq!(
            abi.to_string(),
            format!(
                "pack `mine` (/p/libmine.so): built against pack ABI 0.1, this host speaks 0.2; \
                 {REBUILD}"
            )
        );
        let refused = error(LoadReason::Constructor("INVALID_ARGUMENT: no".to_owned()));
        assert_eq!(refused.code(), "PACK_CONSTRUCTOR_FAILED");
        assert_eq!(refused.help(), None);
        assert!(
            refused
                .to_string()
                .ends_with(": its constructor failed: INVALID_ARGUMENT: no")
        );
    }

    #[test]
    fn a_layout_report_is_cut_to_its_error_blocks() {
        let report = "header\nError: mismatched package\n  Expected: pack-api\n  Found: other\n\n\
                      Error: second\n";
        assert_eq!(
            layout_errors(report),
            "mismatched package Expected: pack-api Found: other; second"
        );
        assert_eq!(layout_errors("nothing"), "no detail given");
    }
}
