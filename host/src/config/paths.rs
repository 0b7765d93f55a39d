//! Every path the host reads itself, made absolute and plain: `~` expanded
//! (`pack_api::paths`), relative paths joined to the config file's folder.
//! Paths inside a pack's `config` are the pack's to read (with the same `~`
//! rule).

use std::path::{Component, Path, PathBuf};

use pack_api::paths::expand_home;

use super::RawConfig;
use crate::error::{ConfigCode, ConfigError, ConfigProblem};

/// `base/p` without `.` and `a/..` components, so that paths shown to users
/// and compared for confinement are the plain ones.
pub(super) fn resolve(base: &Path, path: &Path) -> PathBuf {
    let mut clean = PathBuf::new();
    for component in base.join(path).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    clean
}

impl RawConfig {
    /// Resolve the paths of the file's sections against `base`, naming the
    /// key of each path that cannot be.
    pub(super) fn resolve_paths(&mut self, base: &Path) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        let mut refuse = |key: String, e: &dyn std::fmt::Display| {
            problems.push(ConfigProblem::new(
                ConfigCode::Path,
                format!("`{key}`: {e}"),
            ));
        };
        let mut fix = |key: String, path: &mut PathBuf| match expand_home(path) {
            Ok(expanded) => *path = resolve(base, &expanded),
            Err(e) => refuse(key, &e),
        };
        for (name, project) in &mut self.projects {
            fix(format!("projects.{name}"), &mut project.path);
        }
        for (name, pack) in &mut self.packs {
            if let Some(path) = &mut pack.path {
                fix(format!("packs.{name}.path"), path);
            }
            for (key, paths) in [("read", &mut pack.read), ("write", &mut pack.write)] {
                for (i, path) in paths.iter_mut().enumerate() {
                    fix(format!("packs.{name}.{key}[{i}]"), path);
                }
            }
        }
        if let Some(model) = &mut self.search.model {
            fix("search.model".to_owned(), model);
        }
        // The audit trail's SQLite file (a `postgres://` URL is no path).
        if let Some(database) = self.audit.as_mut().and_then(|a| a.database.as_mut())
            && !database.contains("://")
        {
            let mut path = PathBuf::from(database.as_str());
            fix("audit.database".to_owned(), &mut path);
            *database = path.to_string_lossy().into_owned();
        }
        for (i, dir) in self.server.pack_dirs.iter_mut().enumerate() {
            fix(format!("server.pack_dirs[{i}]"), dir);
        }
        // A server pack's program: `~` only (a bare name is looked up on PATH).
        for (name, pack) in &mut self.packs {
            if let Some(program) = pack.command.as_mut().and_then(|c| c.first_mut()) {
                match expand_home(Path::new(program.as_str())) {
                    Ok(expanded) => *program = expanded.to_string_lossy().into_owned(),
                    Err(e) => refuse(format!("packs.{name}.command"), &e),
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::new(problems))
        }
    }
}
