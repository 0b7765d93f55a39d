//! Landlock rules: which accesses a read grant and a write grant give, for
//! the helper's domain and for a fork server's nested one alike.

use std::{
    fs::{File, OpenOptions},
    os::{fd::OwnedFd, unix::fs::OpenOptionsExt},
    path::PathBuf,
};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope,
};

/// The Landlock ABI the sandbox needs: 6 scopes signals and abstract Unix
/// sockets to the sandbox's own processes.
pub const LANDLOCK_ABI: ABI = ABI::V6;

/// A failed Landlock step, in words.
pub(crate) fn failed(e: landlock::RulesetError) -> String {
    format!("Landlock (ABI {}): {e}", LANDLOCK_ABI as i32)
}

/// A ruleset that handles every file access (only what is granted is
/// allowed) and keeps signals and abstract sockets inside the domain; with
/// `tcp`, binding and connecting too.
pub(crate) fn ruleset(tcp: bool) -> Result<RulesetCreated, String> {
    let abi = LANDLOCK_ABI;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(failed)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(failed)?;
    if tcp {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(failed)?;
    }
    ruleset.create().map_err(failed)
}

/// Grant reading `read` and everything on `write`; what is not there
/// grants nothing.
pub(crate) fn grant_paths(
    mut created: RulesetCreated,
    read: &[PathBuf],
    write: &[PathBuf],
) -> Result<RulesetCreated, String> {
    for (paths, write) in [(read, false), (write, true)] {
        for path in paths {
            let Ok(file) = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
                .open(path)
            else {
                continue;
            };
            created = beneath(created, file.into(), write, path.display())?;
        }
    }
    Ok(created)
}

/// A rule granting what `fd` is (read, or everything with `write`), and
/// all beneath it when it is a folder.
pub(crate) fn beneath(
    created: RulesetCreated,
    fd: OwnedFd,
    write: bool,
    what: impl std::fmt::Display,
) -> Result<RulesetCreated, String> {
    let abi = LANDLOCK_ABI;
    let is_dir = File::from(fd.try_clone().map_err(|e| format!("{what}: {e}"))?)
        .metadata()
        .map_err(|e| format!("{what}: {e}"))?
        .is_dir();
    let access = if write {
        AccessFs::from_all(abi)
    } else {
        AccessFs::from_read(abi)
    };
    let access = if is_dir {
        access
    } else {
        access & AccessFs::from_file(abi)
    };
    created
        .set_compatibility(CompatLevel::HardRequirement)
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| format!("Landlock rule for {what}: {e}"))
}

/// Apply `created` to the calling thread (and what it starts), all of it or
/// not at all. Also sets `no_new_privs`, so set-uid binaries are inert.
pub(crate) fn restrict_self(created: RulesetCreated) -> Result<(), String> {
    let status = created.restrict_self().map_err(failed)?;
    if status.ruleset != landlock::RulesetStatus::FullyEnforced {
        return Err(format!(
            "Landlock is only {:?} on this kernel",
            status.ruleset
        ));
    }
    Ok(())
}
