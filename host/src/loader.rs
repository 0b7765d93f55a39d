//! Finding and loading pack libraries.
//!
//! Loading a library runs its initialisers before any check can happen, so
//! pack directories and paths are trusted locations. Libraries are never
//! unloaded. A pack that fails to load is reported and skipped; the others
//! keep working.
//!
//! With a [`CatalogCache`] (`serve`), a pack whose manifest is kept for its
//! unchanged library and config is listed from it at once and loaded by
//! [`Deferred::finish`] in the background; the others load here and are
//! kept for the next start.

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
use pack_api::{Host, Host_TO, LogLevel, Manifest, PackBox, PackModule_Ref, protocol};

// `cli` names the error here.
pub use crate::error::LoadError;
use crate::{
    backend::{Backend, Library as Instance, LoadedPack, Loading},
    catalog_cache::{CatalogCache, Key},
    config::{Config, Library},
    error::LoadReason,
    executor::{Executor, Offers},
    failure::Failure,
};

/// What [`load_all`] came to.
pub struct Loaded {
    /// The packs to serve.
    pub packs: Vec<LoadedPack>,
    /// Those that failed, to report.
    pub errors: Vec<LoadError>,
    /// Those listed from the catalog cache, still to load.
    pub deferred: Deferred,
}

/// Load every enabled library pack of `config`, in name order (server packs
/// are [`crate::servers`]' work); with a `cache`, those it has a manifest
/// for are left to [`Deferred::finish`].
pub fn load_all(config: &Config, cache: Option<CatalogCache>) -> Loaded {
    let open: std::collections::BTreeMap<&String, &PathBuf> = config
        .projects
        .iter()
        .filter(|(_, p)| p.orgs.is_none())
        .map(|(name, p)| (name, &p.path))
        .collect();
    let projects: Arc<str> = serde_json::to_string(&open)
        .expect("paths are serialisable")
        .into();
    let state_database: Arc<str> = config.state.database.as_deref().unwrap_or("").into();
    let mut loaded: Vec<(PathBuf, LoadedPack)> = Vec::new();
    let mut errors = Vec::new();
    let mut pending = Vec::new();
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
            let job = Job {
                name: name.clone(),
                library: library.clone(),
                path: path.clone(),
                projects: Arc::clone(&projects),
                state_database: Arc::clone(&state_database),
                key: None,
            };
            let key = cache.as_ref().and_then(|cache| {
                let config = library.config.to_string();
                cache.key(name, &path, &[&config, &projects])
            });
            let kept = cache
                .as_ref()
                .zip(key.as_ref())
                .and_then(|(cache, key)| cache.get(key))
                .and_then(|json| Some((serde_json::from_str::<Manifest>(&json).ok()?, json)));
            let pack = match kept {
                Some((manifest, json)) => {
                    let (loading, instance) = Instance::loading(name);
                    // Its text, not a copy of every schema in it, to tell
                    // whether the library declares the same.
                    pending.push((Job { key, ..job }, json, loading));
                    LoadedPack {
                        name: name.clone(),
                        origin: path.display().to_string(),
                        manifest,
                        backend: Backend::Library(instance),
                        timeout,
                    }
                }
                None => {
                    let (manifest_json, pack) = job.load(timeout)?;
                    if let Some((cache, key)) = cache.as_ref().zip(key.as_ref()) {
                        cache.put(key, &manifest_json);
                    }
                    pack
                }
            };
            Ok((path, pack))
        });
        match result {
            Ok(pack) => loaded.push(pack),
            Err(e) => errors.push(e),
        }
    }
    Loaded {
        packs: loaded.into_iter().map(|(_, pack)| pack).collect(),
        errors,
        deferred: Deferred { pending, cache },
    }
}

/// The packs listed from the catalog cache, to load in the background.
pub struct Deferred {
    /// Each with the manifest the cache kept, as JSON.
    pending: Vec<(Job, String, Loading)>,
    cache: Option<CatalogCache>,
}

impl Deferred {
    /// Load them on a thread of their own, in name order, and hand each
    /// one's waiting calls its instance. One that fails is reported as at
    /// start, its calls answer why, and its entry is dropped so the next
    /// start loads it before serving. One whose functions differ from those
    /// kept (its manifest is not the same for the same file) is served with
    /// what it declares now.
    pub fn finish(self, executor: &Arc<Executor>, failed_at_start: usize) {
        if self.pending.is_empty() {
            return;
        }
        let executor = Arc::downgrade(executor);
        let spawned = std::thread::Builder::new()
            .name("pack-loader".to_owned())
            .spawn(move || {
                let mut failed = failed_at_start;
                for (job, kept, loading) in self.pending {
                    let cache = self.cache.as_ref().zip(job.key.as_ref());
                    match job.open() {
                        Ok((json, manifest, module)) => {
                            if !same_manifest(&json, &manifest, &kept) {
                                tracing::warn!(pack = %job.name, "the pack declares other functions than the catalog cache kept; serving what it declares now");
                                if let Some(executor) = executor.upgrade() {
                                    executor.set_functions(&job.name, &manifest.functions);
                                    executor.set_offers(&job.name, Offers::of(&manifest));
                                }
                                if let Some((cache, key)) = cache {
                                    cache.put(key, &json);
                                }
                            }
                            let instance = job.construct(module, &manifest);
                            if instance.is_err() {
                                failed += 1;
                            }
                            loading.finish(instance.inspect_err(|e| report(e, cache)));
                        }
                        Err(e) => {
                            failed += 1;
                            report(&e, cache);
                            loading.finish(Err(e));
                        }
                    }
                }
                if let Some(executor) = executor.upgrade() {
                    executor.metrics().set_load_failures(failed);
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the thread that loads packs");
        }
    }
}

/// Whether the library's manifest (`json`, read as `manifest`) is the one
/// the cache kept (`kept`): the same text, or the same once read.
fn same_manifest(json: &str, manifest: &Manifest, kept: &str) -> bool {
    json == kept || serde_json::from_str::<Manifest>(kept).is_ok_and(|kept| kept == *manifest)
}

/// Say why a pack did not load, as the start does, and forget its entry.
fn report(error: &LoadError, cache: Option<(&CatalogCache, &Key)>) {
    tracing::error!(code = error.code(), "{error}");
    if let Some((cache, key)) = cache {
        cache.forget(key);
    }
}

/// One library to load, and what its constructor is handed.
struct Job {
    name: String,
    library: Library,
    path: PathBuf,
    projects: Arc<str>,
    state_database: Arc<str>,
    /// Its catalog cache key, when there is a cache.
    key: Option<Key>,
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

impl Job {
    fn error(&self, reason: LoadReason) -> LoadError {
        error(&self.name, Some(&self.path), reason)
    }

    /// Load it now: its manifest's JSON and the pack.
    fn load(&self, timeout: Duration) -> Result<(String, LoadedPack), LoadError> {
        let (json, manifest, module) = self.open()?;
        let instance = self.construct(module, &manifest)?;
        let pack = LoadedPack {
            name: self.name.clone(),
            origin: self.path.display().to_string(),
            manifest,
            backend: Backend::Library(Instance::loaded(&self.name, instance)),
            timeout,
        };
        Ok((json, pack))
    }

    /// Open the library and read its manifest (as sent, and read).
    fn open(&self) -> Result<(String, Manifest, PackModule_Ref), LoadError> {
        let module = lib_header_from_path(&self.path)
            .and_then(|header| header.init_root_module::<PackModule_Ref>())
            .map_err(|e| self.error(e.into()))?;
        let json = module.manifest()().to_string();
        let manifest: Manifest = serde_json::from_str(&json).map_err(|e| {
            self.error(LoadReason::BadManifest {
                error: e.to_string(),
                json: json.clone(),
            })
        })?;
        Ok((json, manifest, module))
    }

    /// The config the pack's constructor gets: its `config` table, and the
    /// shared state database when the manifest asks for it (under a key
    /// only such packs are sent, so no other pack's config changes).
    fn config(&self, manifest: &Manifest) -> serde_json::Value {
        let mut config = self.library.config.clone();
        if manifest.shares_state
            && !self.state_database.is_empty()
            && let Some(table) = config.as_object_mut()
        {
            let database = serde_json::Value::from(&*self.state_database);
            table.insert(protocol::STATE_DATABASE.to_owned(), database);
        }
        config
    }

    /// Run the pack's constructor with its config.
    fn construct(&self, module: PackModule_Ref, manifest: &Manifest) -> Result<PackBox, LoadError> {
        let host = Host_TO::from_ptr(
            RArc::new(PackHost {
                pack: self.name.clone(),
                projects: Arc::clone(&self.projects),
            }),
            TD_Opaque,
        );
        let config = self.config(manifest).to_string();
        match module.new()(RStr::from_str(&config), host) {
            RResult::ROk(instance) => Ok(instance),
            RResult::RErr(json) => Err(self.error(LoadReason::Constructor(
                Failure::from_pack_json(&json).text(),
            ))),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_is_the_kept_one_by_its_text_or_once_read_and_not_when_it_declares_other_functions()
     {
        let kept = r#"{"name":"p","version":"1","description":"d","functions":[{"name":"f","description":"","input_schema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}},"output_schema":{}}]}"#;
        let read = |json: &str| serde_json::from_str::<Manifest>(json).unwrap();
        assert!(same_manifest(kept, &read(kept), kept));
        let reordered = kept.replace(
            r#"{"a":{"type":"string"},"b":{"type":"integer"}}"#,
            r#"{"b":{"type":"integer"},"a":{"type":"string"}}"#,
        );
        assert!(same_manifest(&reordered, &read(&reordered), kept));
        let other = kept.replace(r#""name":"f""#, r#""name":"g""#);
        assert!(!same_manifest(&other, &read(&other), kept));
    }
}
