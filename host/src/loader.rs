//! Finding and loading pack libraries.
//!
//! Loading a library runs its initialisers before any check can happen, so
//! pack directories and paths are trusted locations. Libraries are never
//! unloaded. A pack that fails to load is reported and skipped; the others
//! keep working.

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use abi_stable::{
    library::{LibraryError, lib_header_from_path},
    sabi_trait::TD_Opaque,
    std_types::{RArc, RResult, RStr, RString},
};
use pack_api::{Host, Host_TO, LogLevel, Manifest, PackModule_Ref};

use crate::{
    backend::{Backend, LoadedPack},
    config::{Config, PackConfig, PackKind},
    failure::Failure,
};

/// Why one pack did not load.
#[derive(Debug, Clone)]
pub struct LoadError {
    /// The `[packs.<name>]` key.
    pub pack: String,
    /// The library file, once known.
    pub file: Option<PathBuf>,
    /// What went wrong and what would fix it.
    pub reason: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(
                f,
                "pack `{}` ({}): {}",
                self.pack,
                file.display(),
                self.reason
            ),
            None => write!(f, "pack `{}`: {}", self.pack, self.reason),
        }
    }
}

/// Load every enabled library pack of `config`, in name order (server packs
/// are [`crate::servers`]' work).
pub fn load_all(config: &Config) -> (Vec<LoadedPack>, Vec<LoadError>) {
    let open: std::collections::BTreeMap<&String, &PathBuf> = config
        .projects
        .iter()
        .filter(|(_, p)| p.orgs.is_none())
        .map(|(name, p)| (name, &p.path))
        .collect();
    let projects: Arc<str> = serde_json::to_string(&open)
        .expect("paths are serialisable")
        .into();
    let mut loaded: Vec<(PathBuf, LoadedPack)> = Vec::new();
    let mut errors = Vec::new();
    let libraries = config
        .packs
        .iter()
        .filter(|(_, p)| p.enabled && p.kind == PackKind::Library);
    for (name, pack) in libraries {
        let result = locate(name, pack, &config.server.pack_dirs).and_then(|path| {
            if let Some((_, twin)) = loaded.iter().find(|(file, _)| same_file(file, &path)) {
                return Err(error(
                    name,
                    Some(&path),
                    format!(
                        "this library is already loaded as pack `{}`; a library is loaded once, \
                         remove one of the two sections",
                        twin.name
                    ),
                ));
            }
            let pack = load_one(name, pack, &path, &projects, config.server.timeout_ms)?;
            Ok((path, pack))
        });
        match result {
            Ok(pack) => loaded.push(pack),
            Err(e) => errors.push(e),
        }
    }
    (loaded.into_iter().map(|(_, pack)| pack).collect(), errors)
}

fn same_file(a: &Path, b: &Path) -> bool {
    a.canonicalize()
        .ok()
        .is_some_and(|a| b.canonicalize().ok().is_some_and(|b| a == b))
}

fn error(pack: &str, file: Option<&Path>, reason: impl Into<String>) -> LoadError {
    LoadError {
        pack: pack.to_owned(),
        file: file.map(Path::to_path_buf),
        reason: reason.into(),
    }
}

/// The library of pack `name`: its `path`, else `lib<name>.so` in the first
/// pack directory that has it.
fn locate(name: &str, pack: &PackConfig, dirs: &[PathBuf]) -> Result<PathBuf, LoadError> {
    if let Some(path) = &pack.path {
        return if path.is_file() {
            Ok(path.clone())
        } else {
            Err(error(
                name,
                Some(path),
                "file not found; fix `path` or build the pack",
            ))
        };
    }
    let file = format!("lib{name}.so");
    dirs.iter()
        .map(|dir| dir.join(&file))
        .find(|path| path.is_file())
        .ok_or_else(|| {
            let searched: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            error(
                name,
                None,
                format!(
                    "`{file}` not found in the pack directories ({}); set `path` in `[packs.{name}]` \
                     or add its directory to `server.pack_dirs`",
                    searched.join(", ")
                ),
            )
        })
}

fn load_one(
    name: &str,
    pack: &PackConfig,
    path: &Path,
    projects: &Arc<str>,
    default_timeout_ms: u64,
) -> Result<LoadedPack, LoadError> {
    let fail = |reason: String| error(name, Some(path), reason);
    let module = lib_header_from_path(path)
        .and_then(|header| header.init_root_module::<PackModule_Ref>())
        .map_err(|e| fail(explain(e)))?;
    let manifest_json = module.manifest()();
    let manifest: Manifest = serde_json::from_str(&manifest_json)
        .map_err(|e| fail(format!("its manifest is not valid ({e}): {manifest_json}")))?;
    let host = Host_TO::from_ptr(
        RArc::new(PackHost {
            pack: name.to_owned(),
            projects: Arc::clone(projects),
        }),
        TD_Opaque,
    );
    let config = pack.config.to_string();
    let instance = match module.new()(RStr::from_str(&config), host) {
        RResult::ROk(instance) => instance,
        RResult::RErr(json) => {
            return Err(fail(format!(
                "its constructor failed: {}",
                Failure::from_pack_json(&json).text()
            )));
        }
    };
    Ok(LoadedPack {
        name: name.to_owned(),
        origin: path.display().to_string(),
        manifest,
        backend: Backend::Library(instance),
        timeout: Duration::from_millis(pack.timeout_ms.unwrap_or(default_timeout_ms)),
    })
}

/// One readable reason per failure kind; abi_stable's own layout report runs
/// to thousands of lines, so only its head is shown.
fn explain(e: LibraryError) -> String {
    const REBUILD: &str = "rebuild the pack against this host's `pack-sdk`";
    match e {
        LibraryError::OpenError { err, .. } => format!("cannot load the library: {err}"),
        LibraryError::GetSymbolError { .. } => {
            "not a packhost pack: it exports no pack root module (a pack calls \
             `pack_sdk::export_pack!`)"
                .to_owned()
        }
        LibraryError::IncompatibleVersionNumber {
            expected_version,
            actual_version,
            ..
        } => format!(
            "built against pack ABI {actual_version}, this host speaks {expected_version}; {REBUILD}"
        ),
        LibraryError::AbiInstability(report) => {
            let report = report.to_string();
            tracing::debug!(%report, "full pack ABI layout report");
            format!(
                "its pack ABI layout differs from this host's ({}); {REBUILD} (PACKHOST_LOG=debug \
                 shows the whole layout report)",
                layout_errors(&report)
            )
        }
        LibraryError::InvalidAbiHeader(header) => {
            format!("built with an incompatible abi_stable ({header:?}); {REBUILD}")
        }
        other => {
            let text = other.to_string();
            text.lines().take(6).collect::<Vec<_>>().join("\n")
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

/// The host as one pack sees it: its logs carry the pack's name.
#[derive(Clone)]
struct PackHost {
    pack: String,
    /// The projects every organisation sees, as JSON (those named for some
    /// organisations only reach a pack through each call's catalog).
    projects: Arc<str>,
}

impl Host for PackHost {
    fn projects(&self) -> RString {
        RString::from(&*self.projects)
    }

    fn log(&self, level: LogLevel, message: RStr<'_>) {
        crate::logging::pack_log(&self.pack, None, level, message.as_str());
    }
}
