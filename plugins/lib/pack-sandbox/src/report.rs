//! What the sandbox achieves on this machine: the kernel's features, and a
//! confined run of `true` through the helper to prove they apply.

use std::{fmt, path::Path, process::Stdio};

use crate::{
    LANDLOCK_ABI, Network, Policy, SETUP_FAILED_PREFIX,
    cgroup::Cgroups,
    helper::{ARG, Launch},
};

/// The sandbox on this machine (shown by its `Display`).
#[derive(Debug)]
pub struct Report {
    /// The kernel's Landlock ABI; `None` without Landlock.
    landlock_abi: Option<i64>,
    /// Whether seccomp filters can be installed.
    seccomp: bool,
    /// Where children's cgroups are made, or why there are none (rlimits
    /// then): a sandbox keeps these rather than looking again.
    pub(crate) cgroups: Result<Cgroups, String>,
    /// A confined `true`: `Err` with what the helper said.
    helper: Result<(), String>,
}

impl Report {
    /// Probe the kernel and run `true` through `helper`.
    pub fn probe(helper: &Path) -> Self {
        // SAFETY: with the VERSION flag the call only returns the ABI.
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                1u32, // LANDLOCK_CREATE_RULESET_VERSION
            )
        };
        let seccomp = std::fs::read_to_string("/proc/self/status")
            .is_ok_and(|status| status.lines().any(|line| line.starts_with("Seccomp:")));
        Self {
            landlock_abi: (abi > 0).then_some(abi),
            seccomp,
            cgroups: Cgroups::detect(),
            helper: run_true(helper),
        }
    }

    /// `Err` naming what is missing for code to run confined.
    pub fn ready(&self) -> Result<(), String> {
        let needed = LANDLOCK_ABI as i64;
        match self.landlock_abi {
            None => {
                return Err(
                    "the kernel has no Landlock (Linux 6.12+ with landlock in the `lsm=` list)"
                        .into(),
                );
            }
            Some(abi) if abi < needed => {
                return Err(format!(
                    "the kernel's Landlock ABI is {abi}; the sandbox needs {needed} (Linux 6.12+)"
                ));
            }
            Some(_) => {}
        }
        if !self.seccomp {
            return Err("the kernel has no seccomp".into());
        }
        self.helper.clone()
    }
}

fn run_true(helper: &Path) -> Result<(), String> {
    let work = std::env::temp_dir();
    let launch = Launch {
        policy: Policy::new([], &work).network(Network::None),
        cgroups: Vec::new(),
        granted: Vec::new(),
    };
    let launch = serde_json::to_string(&launch).map_err(|e| e.to_string())?;
    let output = std::process::Command::new(helper)
        .args([ARG, &launch, "true"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run the helper {}: {e}", helper.display()))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(
        match stderr
            .lines()
            .find_map(|l| l.strip_prefix(SETUP_FAILED_PREFIX))
        {
            Some(why) => why.to_owned(),
            None => format!(
                "the helper {} did not confine `true` ({}); is it packhost?",
                helper.display(),
                output.status
            ),
        },
    )
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let yes_no = |ok: bool| if ok { "yes" } else { "no" };
        match self.landlock_abi {
            Some(abi) => writeln!(
                f,
                "  Landlock ABI {abi} (needs {}): files, TCP, signals, abstract sockets",
                LANDLOCK_ABI as i64
            )?,
            None => writeln!(f, "  Landlock: not available")?,
        }
        writeln!(f, "  seccomp: {}", yes_no(self.seccomp))?;
        match &self.cgroups {
            Ok(cgroups) => writeln!(f, "  bounds: {} and rlimits", cgroups.describe())?,
            Err(why) => writeln!(f, "  bounds: rlimits only ({why})")?,
        }
        match self.ready() {
            Ok(()) => write!(f, "  code runs confined"),
            Err(why) => write!(f, "  code cannot run confined: {why}"),
        }
    }
}
