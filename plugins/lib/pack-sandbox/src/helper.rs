//! The helper: the host's own binary re-executed as
//! `packhost __packhost_sandbox <launch json> <program> <args...>`. It runs
//! single-threaded before anything else in `main`, confines itself, and
//! executes the program in its place (same pid, same process group), so no
//! confinement is ever applied between `fork` and `exec` of a threaded host.

use std::{
    ffi::OsString,
    os::{
        fd::{FromRawFd, OwnedFd},
        unix::process::CommandExt,
    },
    path::{Path, PathBuf},
};

use landlock::{AccessNet, NetPort, RulesetCreatedAttr};
use serde::{Deserialize, Serialize};

use crate::{Network, Policy, rules, seccomp};

/// The first argument that makes the host binary the helper.
pub(crate) const ARG: &str = "__packhost_sandbox";

/// The exit code of a helper that could not confine the program: it never
/// runs unconfined.
pub const SETUP_FAILED: i32 = 125;

/// What stderr starts with when the helper refused.
pub const SETUP_FAILED_PREFIX: &str = "packhost sandbox: ";

/// What the helper is told.
#[derive(Serialize, Deserialize)]
pub(crate) struct Launch {
    pub policy: Policy,
    /// `cgroup.procs` files to join before confining.
    pub cgroups: Vec<PathBuf>,
    /// The policy's opened folders and files, as the descriptors it inherits.
    pub granted: Vec<Granted>,
}

/// An inherited descriptor the helper grants access beneath, then closes.
#[derive(Serialize, Deserialize)]
pub(crate) struct Granted {
    pub fd: i32,
    pub write: bool,
}

/// In the host's `main`, before anything else (no threads yet): when this
/// process is the helper, confine it and run the program; never returns
/// then. Otherwise returns at once.
pub fn run_if_invoked() {
    let mut args = std::env::args_os();
    if args.nth(1).as_deref() != Some(ARG.as_ref()) {
        return;
    }
    let rest: Vec<OsString> = args.collect();
    let error = match launch(rest) {
        Ok(never) => match never {},
        Err(e) => e,
    };
    eprintln!("{SETUP_FAILED_PREFIX}{error}");
    std::process::exit(SETUP_FAILED);
}

enum Never {}

fn launch(args: Vec<OsString>) -> Result<Never, String> {
    let mut args = args.into_iter();
    let launch = args.next().ok_or("no launch description")?;
    let launch: Launch = serde_json::from_str(launch.to_str().ok_or("launch is not UTF-8")?)
        .map_err(|e| format!("bad launch description: {e}"))?;
    let program = args.next().ok_or("no program")?;
    let rest: Vec<OsString> = args.collect();
    for procs in &launch.cgroups {
        std::fs::write(procs, std::process::id().to_string())
            .map_err(|e| format!("cannot join the cgroup {}: {e}", procs.display()))?;
    }
    set_rlimits(&launch)?;
    drop_capabilities()?;
    landlock(&launch)?;
    seccomp::apply(&launch.policy.network)?;
    let error = std::process::Command::new(&program).args(rest).exec();
    Err(format!(
        "cannot run `{}`: {error}",
        Path::new(&program).display()
    ))
}

fn set_rlimits(launch: &Launch) -> Result<(), String> {
    let limits = &launch.policy.limits;
    let with_cgroup = !launch.cgroups.is_empty();
    let mut bounds = vec![
        (libc::RLIMIT_CPU, limits.cpu_seconds, "cpu_seconds"),
        (
            libc::RLIMIT_FSIZE,
            limits.file_size_mb << 20,
            "file_size_mb",
        ),
        (libc::RLIMIT_NOFILE, limits.open_files, "open_files"),
        (libc::RLIMIT_CORE, 0, "core"),
    ];
    if !with_cgroup {
        bounds.push((libc::RLIMIT_AS, limits.memory_mb << 20, "memory_mb"));
        bounds.push((libc::RLIMIT_NPROC, limits.processes, "processes"));
    }
    for (resource, value, name) in bounds {
        // At a hard CPU limit the kernel sends SIGKILL, which names nothing;
        // a second above the soft one, SIGXCPU tells the bound first.
        let hard = if resource == libc::RLIMIT_CPU {
            value.saturating_add(1)
        } else {
            value
        };
        let limit = libc::rlimit {
            rlim_cur: value,
            rlim_max: hard,
        };
        // SAFETY: setrlimit reads the struct we pass.
        if unsafe { libc::setrlimit(resource, &limit) } != 0 {
            return Err(format!(
                "cannot set the {name} bound: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// Every capability, even when the host runs as root: the bounding set (so
/// an exec cannot give them back), then the ambient, inheritable, permitted
/// and effective sets.
fn drop_capabilities() -> Result<(), String> {
    use caps::CapSet;
    let failed = |what: &str, e: caps::errors::CapsError| format!("cannot drop {what}: {e}");
    if caps::has_cap(None, CapSet::Effective, caps::Capability::CAP_SETPCAP)
        .map_err(|e| failed("capabilities", e))?
    {
        caps::clear(None, CapSet::Bounding).map_err(|e| failed("the bounding set", e))?;
    }
    for set in [
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ] {
        caps::clear(None, set).map_err(|e| failed("capabilities", e))?;
    }
    Ok(())
}

/// Files only where they are named; the network as the policy says; no
/// signal to and no abstract socket of any process outside the sandbox.
fn landlock(launch: &Launch) -> Result<(), String> {
    let policy = &launch.policy;
    let created = rules::ruleset(policy.network != Network::Full)?;
    let mut created = rules::grant_paths(created, &policy.read, &policy.write)?;
    for granted in &launch.granted {
        // SAFETY: the pack passed this descriptor for us alone; it is
        // closed here, so the program never holds it.
        let fd = unsafe { OwnedFd::from_raw_fd(granted.fd) };
        created = rules::beneath(
            created,
            fd,
            granted.write,
            format_args!("descriptor {}", granted.fd),
        )?;
    }
    let ports = match &policy.network {
        Network::Listen(ports) => ports.iter().map(|&p| (p, AccessNet::BindTcp)).collect(),
        Network::Proxy(port) => vec![(*port, AccessNet::ConnectTcp)],
        Network::None | Network::Full => Vec::new(),
    };
    for (port, access) in ports {
        created = created
            .add_rule(NetPort::new(port, access))
            .map_err(rules::failed)?;
    }
    rules::restrict_self(created)
}
