//! Confinement for every child process a pack starts: the one place where
//! what model-written code (and a started MCP server) may touch is decided
//! and enforced.
//!
//! A pack builds a [`Policy`] (read-only runtime folders, its writable work
//! folder, network, [`Limits`]) and asks its [`Sandbox`] for a [`Confined`]
//! command. The command runs the host's own binary as a helper
//! ([`run_if_invoked`], called first thing in `main`, single-threaded),
//! which joins a fresh cgroup, sets rlimits, drops every capability, applies
//! Landlock (files, TCP, signals, abstract sockets) and a seccomp filter,
//! and only then executes the program. Any step that fails ends the helper
//! with [`SETUP_FAILED`]: nothing runs unconfined by accident.
//!
//! A fork server's child (forked, not started through the helper) narrows
//! itself to its own call with the [`Narrowing`] the pack asks for here.
//!
//! With [`Mode::Off`] (an explicit `sandbox = "off"` in a pack's config) the
//! program runs directly, with the host user's rights.
#![deny(missing_docs)]

mod cgroup;
mod helper;
mod narrow;
mod pidfd;
mod policy;
mod python;
mod report;
mod rules;
mod seccomp;

use std::{
    ffi::OsStr,
    fmt, io,
    os::fd::{AsFd, AsRawFd, OwnedFd},
    path::{Path, PathBuf},
    sync::OnceLock,
};

pub use cgroup::Cgroup;
pub use helper::{SETUP_FAILED, SETUP_FAILED_PREFIX, run_if_invoked};
pub use narrow::Narrowing;
pub use pidfd::Pidfd;
pub use policy::{Limits, Mode, Network, Opened, Policy, check_settings};
pub use python::Python;
pub use report::Report;
pub use rules::LANDLOCK_ABI;

use crate::{
    cgroup::Cgroups,
    helper::{Granted, Launch},
};

/// A bound a confined child passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// `limits.memory_mb`.
    Memory,
    /// `limits.processes`.
    Processes,
    /// `limits.cpu_seconds`.
    CpuTime,
    /// `limits.file_size_mb`.
    FileSize,
}

impl Bound {
    /// The bound a signal that ended a child stands for: the kernel sends
    /// SIGXCPU past `RLIMIT_CPU` and SIGXFSZ past `RLIMIT_FSIZE`.
    pub fn from_signal(signal: i32) -> Option<Self> {
        match signal {
            libc::SIGXCPU => Some(Self::CpuTime),
            libc::SIGXFSZ => Some(Self::FileSize),
            _ => None,
        }
    }

    /// The config key of the bound.
    pub fn key(self) -> &'static str {
        match self {
            Bound::Memory => "limits.memory_mb",
            Bound::Processes => "limits.processes",
            Bound::CpuTime => "limits.cpu_seconds",
            Bound::FileSize => "limits.file_size_mb",
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            Bound::Memory => "its memory bound",
            Bound::Processes => "its bound on processes and threads",
            Bound::CpuTime => "its CPU-time bound",
            Bound::FileSize => "its file-size bound",
        };
        write!(f, "{what} (`{}`)", self.key())
    }
}

/// A close-on-exec copy of `fd` numbered `min` or above.
fn above(fd: impl AsFd, min: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor (owned below) or -1.
    let copy = unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), libc::F_DUPFD_CLOEXEC, min) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(copy) })
}

/// A pack's sandbox: its mode and the helper. Cheap to make: what the
/// machine offers is checked once per process.
pub struct Sandbox {
    mode: Mode,
    helper: PathBuf,
}

/// Checked once, at the first confined command of the process: `Err` says
/// what the machine lacks, and every command is refused with it; else the
/// machine's cgroups, where it has them.
static READY: OnceLock<Result<Option<Cgroups>, String>> = OnceLock::new();

/// A command ready to spawn, and the cgroup that bounds it (kill through
/// it, read [`Cgroup::exceeded`] after, drop it when the child is gone).
pub struct Confined {
    /// The command: set its arguments, directory, environment and pipes.
    pub command: tokio::process::Command,
    /// The child's own cgroup, where the machine has them.
    pub cgroup: Option<Cgroup>,
}

impl Confined {
    /// Start in the folder `dir` the pack opened (instead of
    /// `current_dir`, which goes by a name code may have redirected).
    pub fn current_dir_opened(&mut self, dir: impl Into<OwnedFd>) {
        let dir: OwnedFd = dir.into();
        // SAFETY: fchdir is async-signal-safe; it runs after the command's
        // own chdir, so this one wins.
        unsafe {
            self.command.pre_exec(move || {
                if libc::fchdir(dir.as_raw_fd()) == 0 {
                    Ok(())
                } else {
                    Err(io::Error::last_os_error())
                }
            });
        }
    }
}

/// The lowest descriptor an opened grant is passed as: above those a pack
/// puts in place for its child (its channel is fd 3).
const FIRST_GRANTED_FD: libc::c_int = 100;

impl Sandbox {
    /// A sandbox in `mode`, with the running binary as its helper (the host
    /// calls [`run_if_invoked`] first thing in `main`).
    pub fn new(mode: Mode) -> Self {
        Self {
            mode,
            helper: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe")),
        }
    }

    /// The sandbox a pack's config asks for, with its `limits` checked (a
    /// 0 is refused at start); with [`Mode::Off`], also the warning the
    /// pack logs at start, saying that `what` runs unconfined.
    pub fn configure(
        mode: Mode,
        limits: &Limits,
        what: &str,
    ) -> Result<(Self, Option<String>), String> {
        let warning = check_settings(mode, limits, what)?;
        Ok((Self::new(mode), warning))
    }

    /// Whether a child gets a home of its own (its own folder, as `HOME`,
    /// where programs keep their files): confined, the host user's home is
    /// out of its reach; unconfined, it keeps the host user's.
    pub fn gives_own_home(&self) -> bool {
        self.mode == Mode::On
    }

    /// A command that runs `program` under `policy`, or why it cannot be
    /// confined here (with `sandbox = "off"` as the way out, in words).
    pub fn command(&self, policy: &Policy, program: &Path) -> Result<Confined, String> {
        if self.mode == Mode::Off {
            return Ok(Confined {
                command: tokio::process::Command::new(program),
                cgroup: None,
            });
        }
        let cgroup = self.cgroup(&policy.limits)?;
        let mut passed = Vec::new();
        let mut granted = Vec::new();
        for opened in &policy.opened {
            let fd = above(opened.fd.as_fd(), FIRST_GRANTED_FD)
                .map_err(|e| format!("cannot pass an opened folder to the sandbox: {e}"))?;
            granted.push(Granted {
                fd: fd.as_raw_fd(),
                write: opened.write,
            });
            passed.push(fd);
        }
        let launch = Launch {
            policy: policy.clone(),
            cgroups: cgroup.iter().flat_map(Cgroup::procs_files).collect(),
            granted,
        };
        let launch = serde_json::to_string(&launch).map_err(|e| e.to_string())?;
        let mut command = tokio::process::Command::new(&self.helper);
        command
            .arg(helper::ARG)
            .arg(launch)
            .arg(OsStr::new(program));
        if !passed.is_empty() {
            // SAFETY: fcntl is async-signal-safe; the helper closes them
            // once its rules are made.
            unsafe {
                command.pre_exec(move || {
                    for fd in &passed {
                        if libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) < 0 {
                            return Err(io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
        }
        Ok(Confined { command, cgroup })
    }

    /// A fresh cgroup bounded by `limits`, where the machine has them (none
    /// with [`Mode::Off`]); `Err` when code cannot be confined here. For a
    /// child the pack did not spawn itself (a fork server's), joined with
    /// [`Cgroup::adopt`].
    pub fn cgroup(&self, limits: &Limits) -> Result<Option<Cgroup>, String> {
        if self.mode == Mode::Off {
            return Ok(None);
        }
        let cgroups = READY
            .get_or_init(|| {
                let report = Report::probe(&self.helper);
                report.ready()?;
                Ok(report.cgroups.ok())
            })
            .as_ref()
            .map_err(|missing| {
                format!(
                    "code cannot be confined on this machine: {missing}; \
                     run `packhost check` for the sandbox report, or set `sandbox = \"off\"` \
                     in the pack's config to run it unconfined"
                )
            })?;
        cgroups
            .as_ref()
            .map(|cgroups| cgroups.create(limits))
            .transpose()
            .map_err(|e| format!("cannot make the child's cgroup: {e}"))
    }
}
