//! Finding and loading pack libraries.
//!
//! Loading a library runs its initialisers before any check can happen, so
//! pack directories and paths are trusted locations. Libraries are never
//! unloaded. A pack that fails to load is reported and skipped; the others
//! keep working.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use abi_stable::{
    library::lib_header_from_path,
    sabi_trait::TD_Opaque,
    std_types::{RArc, RResult, RStr, RString},
};
use pack_api::{Host, Host_TO, LogLevel, Manifest, PackModule_Ref};

// `cli` names the error here.
pub use crate::error::LoadError;
use crate::{
    backend::{Backend, LoadedPack},
    config::{Config, Library},
    error::LoadReason,
    failure::Failure,
};

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
        .filter(|(_, p)| p.enabled)
        .filter_map(|(name, p)| Some((name, p.library()?, p.timeout_ms)));
    for (name, library, timeout_ms) in libraries {
        let result = locate(name, library, &config.server.pack_dirs).and_then(|path| {
            if let Some((_, twin)) = loaded.iter().find(|(file, _)| same_file(file, &path)) {
                return Err(error(
                    name,
                    Some(&path),
                    LoadReason::AlreadyLoaded {
                        twin: twin.name.clone(),
                    },
                ));
            }
            let timeout = Duration::from_millis(timeout_ms.unwrap_or(config.server.timeout_ms));
            let pack = load_one(name, library, &path, &projects, timeout)?;
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

fn error(pack: &str, file: Option<&Path>, reason: LoadReason) -> LoadError {
    LoadError {
        pack: pack.to_owned(),
        file: file.map(Path::to_path_buf),
        reason,
    }
}

/// The library of pack `name`: its `path`, else `lib<name>.so` in the first
/// pack directory that has it.
fn locate(name: &str, library: &Library, dirs: &[PathBuf]) -> Result<PathBuf, LoadError> {
    if let Some(path) = &library.path {
        return if path.is_file() {
            Ok(path.clone())
        } else {
            Err(error(name, Some(path), LoadReason::NoFile))
        };
    }
    let file = format!("lib{name}.so");
    dirs.iter()
        .map(|dir| dir.join(&file))
        .find(|path| path.is_file())
        .ok_or_else(|| {
            let searched = dirs.iter().map(|d| d.display().to_string()).collect();
            error(name, None, LoadReason::NotInPackDirs { file, searched })
        })
}

fn load_one(
    name: &str,
    library: &Library,
    path: &Path,
    projects: &Arc<str>,
    timeout: Duration,
) -> Result<LoadedPack, LoadError> {
    let fail = |reason: LoadReason| error(name, Some(path), reason);
    let module = lib_header_from_path(path)
        .and_then(|header| header.init_root_module::<PackModule_Ref>())
        .map_err(|e| fail(e.into()))?;
    let manifest_json = module.manifest()();
    let manifest: Manifest = serde_json::from_str(&manifest_json).map_err(|e| {
        fail(LoadReason::BadManifest {
            error: e.to_string(),
            json: manifest_json.to_string(),
        })
    })?;
    let host = Host_TO::from_ptr(
        RArc::new(PackHost {
            pack: name.to_owned(),
            projects: Arc::clone(projects),
        }),
        TD_Opaque,
    );
    let config = library.config.to_string();
    let instance = match module.new()(RStr::from_str(&config), host) {
        RResult::ROk(instance) => instance,
        RResult::RErr(json) => {
            return Err(fail(LoadReason::Constructor(
                Failure::from_pack_json(&json).text(),
            )));
        }
    };
    Ok(LoadedPack {
        name: name.to_owned(),
        origin: path.display().to_string(),
        manifest,
        backend: Backend::Library(instance),
        timeout,
    })
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
