//! Starting a stdio server: in its own process group, confined with a
//! scratch folder of its own, or as the host's user; and the scratch
//! folders' upkeep.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use pack_process::{EnvAllowList, Policy, ProcessGroup, Sandbox};
use tempfile::TempDir;

use crate::{Confinement, confine};

/// Start a stdio server in its own process group: confined, in a fresh
/// scratch folder that is its `HOME`, `TMPDIR` and working directory;
/// or, with `sandbox = "off"`, as the host's user in the host's folder.
pub(crate) fn spawn(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    confinement: &Confinement,
) -> Result<(ProcessGroup, Option<TempDir>), String> {
    let sandbox = Sandbox::new(confinement.mode);
    let (mut confined, extra, scratch) = if sandbox.gives_own_home() {
        let scratch = tempfile::Builder::new()
            .prefix("server-")
            .tempdir_in(scratch_root()?)
            .map_err(|e| format!("cannot make the server's scratch folder: {e}"))?;
        let plan = confine::plan(confinement, command, args, env, scratch.path())
            .map_err(|e| format!("cannot start `{command}`: {e}"))?;
        let mut confined = sandbox.command(&plan.policy, &plan.program)?;
        confined.command.current_dir(scratch.path());
        let own = scratch.path().display().to_string();
        let mut extra =
            BTreeMap::from([("HOME".to_owned(), own.clone()), ("TMPDIR".to_owned(), own)]);
        extra.extend(env.clone());
        (confined, extra, Some(scratch))
    } else {
        // Unconfined: no policy is applied, and the server keeps the host
        // user's home and folder.
        let policy = Policy::new([], Path::new("."));
        let confined = sandbox.command(&policy, Path::new(command))?;
        (confined, env.clone(), None)
    };
    let cmd = &mut confined.command;
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    EnvAllowList::default().apply(cmd, &extra);
    let group =
        ProcessGroup::spawn(confined).map_err(|e| format!("cannot start `{command}`: {e}"))?;
    Ok((group, scratch))
}

/// Where the scratch folders of this host's confined servers are made:
/// one folder per host process, so the folders of a host that was killed
/// before it could remove them are known by its pid ([`sweep_scratch`]).
fn scratch_root() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt as _;
    let root = std::env::temp_dir()
        .join("packhost-mcp")
        .join(std::process::id().to_string());
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&root)
        .map_err(|e| format!("cannot make {}: {e}", root.display()))?;
    Ok(root)
}

/// Remove the scratch folders of hosts that are gone (killed, so they
/// could not remove them).
pub(crate) fn sweep_scratch() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir().join("packhost-mcp")) else {
        return;
    };
    for entry in entries.flatten() {
        let gone = entry
            .file_name()
            .to_str()
            .and_then(|pid| pid.parse::<u32>().ok())
            .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
        if gone {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Wait a little for a server whose handshake failed to end and its stderr
/// to be read to its end (for its last lines); the reason the sandbox's
/// helper refused to start it, if it did: its exit code says it refused,
/// its first stderr line says why.
pub(crate) async fn ended(
    group: &mut ProcessGroup,
    stderr: tokio::task::JoinHandle<Option<String>>,
) -> Option<String> {
    let grace = Duration::from_secs(1);
    let status = tokio::time::timeout(grace, group.wait()).await.ok()?.ok()?;
    let refusal = tokio::time::timeout(grace, stderr).await.ok()?.ok()?;
    refusal.filter(|_| status.code() == Some(pack_sandbox::SETUP_FAILED))
}
