//! How a stdio server is confined: what it may read and write, found from
//! its command line and its pack's config.
//!
//! A server gets the network (most call out), the system runtime, its
//! program's install folder, a fresh scratch folder of its own (its `HOME`,
//! `TMPDIR` and working directory, removed when it ends), and the folders
//! the config names, and the folders of its absolute-path arguments (`node
//! /srv/x/node_modules/server/dist/index.js`: a server must read the script
//! it runs), for server packs and integrations alike.

use std::{
    collections::BTreeMap,
    ffi::OsStr,
    path::{Path, PathBuf},
};

use pack_process::{Limits, Mode, Network, Policy};

/// The confinement of a stdio server, from its pack's config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// `Off` (an explicit `sandbox = "off"`): the server runs with every
    /// right of the host's user, in the host's folder, as the host's `HOME`.
    pub mode: Mode,
    /// Also readable (files or folders).
    pub read: Vec<PathBuf>,
    /// Also writable (files or folders).
    pub write: Vec<PathBuf>,
    /// The server's bounds (it and everything it starts).
    pub limits: Limits,
    /// The command line is the host admin's (a server pack's section): the
    /// program is looked up on the `PATH` its `env` gives, and a program
    /// given by path makes its install folder readable. An organisation's
    /// (an integration): the program is looked up on the host's `PATH`, and
    /// one given by path must be readable already.
    pub trusted: bool,
}

/// A server's program found, and the policy it runs under.
pub(crate) struct Plan {
    /// The program's path: the helper runs exactly this one, no lookup.
    pub program: PathBuf,
    pub policy: Policy,
}

/// Find `command` (a path, or a name looked up on `PATH`), and the policy of
/// a server started with `args` and `scratch` as its own folder.
pub(crate) fn plan(
    confinement: &Confinement,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    scratch: &Path,
) -> Result<Plan, String> {
    let host_path = std::env::var_os("PATH");
    let path = match env.get("PATH") {
        Some(path) if confinement.trusted => Some(path.as_ref()),
        _ => host_path.as_deref(),
    };
    let program = find_program(command, path)?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let home = home.as_deref().filter(|h| !h.as_os_str().is_empty());
    // An organisation's program path is its choice: its folder must be
    // readable already (the runtime, or the pack's `read`).
    let mut read = if confinement.trusted || !command.contains('/') {
        install_folders(&program, home)
    } else {
        Vec::new()
    };
    read.extend(
        args.iter()
            .filter(|arg| arg.starts_with('/'))
            .filter_map(|arg| argument_folder(Path::new(arg), home)),
    );
    read.extend(confinement.read.iter().cloned());
    let policy = Policy::new(read, scratch)
        .write(confinement.write.iter().cloned())
        .network(Network::Full)
        .limits(confinement.limits.clone());
    Ok(Plan { program, policy })
}

/// `command` as the helper will run it: a path as it is (relative to the
/// host's folder), a bare name from the first `PATH` folder that has it as
/// an executable file.
fn find_program(command: &str, path: Option<&OsStr>) -> Result<PathBuf, String> {
    if command.contains('/') {
        let program =
            std::path::absolute(command).map_err(|e| format!("not a usable path: {e}"))?;
        if !is_executable(&program) {
            return Err("not an executable file; give the path of the server's program".to_owned());
        }
        return Ok(program);
    }
    let folders: Vec<PathBuf> = path
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    folders
        .iter()
        .filter(|folder| folder.is_absolute())
        .map(|folder| folder.join(command))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| {
            format!(
                "not found on PATH ({}); install it, or give its full path",
                std::env::join_paths(&folders)
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default()
            )
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The install folders of `program`, as found and with its links followed:
/// the prefix above a `bin` folder (`/usr/bin/node` -> `/usr`,
/// `~/.nvm/versions/node/v22/bin/npx` -> `~/.nvm/versions/node/v22`), else
/// the program's own folder. A prefix too wide to hand out (see [`wide`])
/// gives the `bin` folder only (`~/.cargo/bin`).
fn install_folders(program: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let as_found = program.parent().and_then(|dir| dir.canonicalize().ok());
    let real = program
        .canonicalize()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf));
    let mut folders: Vec<PathBuf> = Vec::new();
    for dir in as_found.into_iter().chain(real) {
        let prefix = dir
            .parent()
            .filter(|_| dir.file_name() == Some(OsStr::new("bin")))
            .filter(|prefix| !wide(prefix, home));
        let folder = prefix.map_or(dir.clone(), Path::to_path_buf);
        if !folders.contains(&folder) {
            folders.push(folder);
        }
    }
    folders
}

/// What an absolute-path argument makes readable: the outermost
/// `node_modules` above it (a package needs its dependencies), else the
/// folder it names or the folder of the file it names; only the path itself
/// when that folder is too wide to hand out. Nothing when it does not exist.
fn argument_folder(arg: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let real = arg.canonicalize().ok()?;
    if private(&real, home) {
        return None;
    }
    let node_modules = real
        .ancestors()
        .filter(|a| a.file_name() == Some(OsStr::new("node_modules")))
        .last();
    let folder = match node_modules {
        Some(folder) => folder,
        None if real.is_dir() => &real,
        None => real.parent()?,
    };
    Some(if wide(folder, home) {
        real.clone()
    } else {
        folder.to_path_buf()
    })
}

/// Folders never handed out by a rule, only by name in `read`: `/` and the
/// folders right under it (`/etc` holds `/etc/shadow`), the home folder and
/// its parents, the folders right under it (`~/.cargo` holds a registry
/// token), and those that hold packhost's own ([`PRIVATE`]).
fn wide(folder: &Path, home: Option<&Path>) -> bool {
    folder.components().count() <= 2
        || home.is_some_and(|home| {
            home.starts_with(folder)
                || folder.parent() == Some(home)
                || PRIVATE.iter().any(|own| home.join(own).starts_with(folder))
        })
}

/// packhost's own folders under the host user's home: the integrations
/// database (every organisation's credentials), notebooks, packs.
const PRIVATE: &[&str] = &[".local/share/packhost", ".packhost"];

/// Whether `path` is in one of packhost's own folders: an argument there
/// makes nothing readable, not even itself.
fn private(path: &Path, home: Option<&Path>) -> bool {
    home.is_some_and(|home| PRIVATE.iter().any(|own| path.starts_with(home.join(own))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bin_folder_gives_its_prefix_unless_that_is_too_wide() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let program = root.join("opt/node/bin/node");
        std::fs::create_dir_all(program.parent().unwrap()).unwrap();
        std::fs::write(&program, "").unwrap();
        assert_eq!(install_folders(&program, None), [root.join("opt/node")]);
        // `/usr` is wide (and in the runtime anyway).
        let usr = install_folders(Path::new("/usr/bin/env"), None);
        assert_eq!(usr.first(), Some(&PathBuf::from("/usr/bin")), "{usr:?}");
        let home = Path::new("/home/ada");
        assert!(wide(Path::new("/"), Some(home)));
        assert!(wide(Path::new("/home"), Some(home)));
        assert!(wide(home, Some(home)));
        assert!(wide(&home.join(".local"), Some(home)));
        assert!(wide(Path::new("/etc"), Some(home)));
        assert!(!wide(Path::new("/etc/ssl"), Some(home)));
        assert!(!wide(&home.join(".nvm/versions/node/v22"), Some(home)));
        assert!(!wide(Path::new("/opt/node"), Some(home)));
        // Nothing of packhost's own: the folders that hold it are too wide,
        // and an argument inside grants nothing.
        assert!(wide(&home.join(".local/share"), Some(home)));
        assert!(wide(&home.join(".local/share/packhost"), Some(home)));
        assert!(private(
            &home.join(".local/share/packhost/integrations.db"),
            Some(home)
        ));
        assert!(private(&home.join(".packhost/notebooks/s1"), Some(home)));
        assert!(!private(&home.join("mcp/server.mjs"), Some(home)));
    }

    #[test]
    fn arguments_give_their_package_or_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let entry = root.join("app/node_modules/@scope/server/dist/index.js");
        std::fs::create_dir_all(entry.parent().unwrap()).unwrap();
        std::fs::write(&entry, "").unwrap();
        let script = root.join("tools/server.py");
        std::fs::create_dir_all(script.parent().unwrap()).unwrap();
        std::fs::write(&script, "").unwrap();
        let home = Some(root.as_path());
        assert_eq!(
            argument_folder(&entry, None),
            Some(root.join("app/node_modules"))
        );
        assert_eq!(argument_folder(&script, None), Some(root.join("tools")));
        assert_eq!(
            argument_folder(&root.join("tools"), None),
            Some(root.join("tools"))
        );
        // A file right in the home folder: that file only.
        std::fs::write(root.join("server.js"), "").unwrap();
        assert_eq!(
            argument_folder(&root.join("server.js"), home),
            Some(root.join("server.js"))
        );
        assert_eq!(argument_folder(&root.join("missing"), None), None);
    }

    #[test]
    fn arguments_widen_reading_for_everyone_an_env_path_for_the_admin_only() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().canonicalize().unwrap().join("server");
        std::fs::create_dir(&folder).unwrap();
        let args = vec![folder.display().to_string()];
        let env = BTreeMap::from([("PATH".to_owned(), folder.display().to_string())]);
        let scratch = Path::new("/tmp/scratch");
        let organisation = Confinement::default();
        let plan = plan(&organisation, "env", &args, &env, scratch).unwrap();
        assert!(plan.policy.read.contains(&folder), "{:?}", plan.policy.read);
        assert!(plan.program.ends_with("bin/env"), "{:?}", plan.program);
        let admin = Confinement {
            trusted: true,
            ..Confinement::default()
        };
        let plan = plan_of(&admin, &args, scratch);
        assert!(plan.policy.read.contains(&folder), "{:?}", plan.policy.read);
        assert_eq!(plan.policy.network, Network::Full);
        assert!(plan.policy.write.contains(&scratch.to_path_buf()));
    }

    fn plan_of(confinement: &Confinement, args: &[String], scratch: &Path) -> Plan {
        plan(confinement, "env", args, &BTreeMap::new(), scratch).unwrap()
    }

    #[test]
    fn a_missing_program_is_named_with_the_path_searched() {
        let err =
            find_program("no-such-server", Some(OsStr::new("/nowhere:/usr/bin"))).unwrap_err();
        assert!(
            err.contains("not found on PATH (/nowhere:/usr/bin)"),
            "{err}"
        );
        let err = find_program("/etc/passwd", None).unwrap_err();
        assert!(err.contains("not an executable file"), "{err}");
    }
}
