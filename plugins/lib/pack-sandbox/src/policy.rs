//! What a confined child may do: the policy a pack hands to the sandbox,
//! and the settings a pack's config gives it.

use std::{
    collections::BTreeMap,
    os::fd::OwnedFd,
    path::{Path, PathBuf},
    sync::Arc,
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a pack's children are confined. `"off"` must be written in the
/// config; the host logs a warning for it at start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Confined, or refused where the kernel cannot confine.
    #[default]
    On,
    /// Unconfined: the code runs with every right of the host's user.
    Off,
}

/// The bounds of one confined child and everything it starts. A child that
/// passes one is ended and its call fails with `LIMIT_EXCEEDED` naming it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Memory in MiB (a cgroup's memory limit; without cgroups, the
    /// address-space rlimit of each process).
    #[schemars(range(min = 1))]
    pub memory_mb: u64,
    /// Processes and threads together (a cgroup's `pids.max`; without
    /// cgroups, `RLIMIT_NPROC`, which counts all of the user's processes).
    #[schemars(range(min = 1))]
    pub processes: u64,
    /// CPU seconds of each process over its whole life (`RLIMIT_CPU`).
    #[schemars(range(min = 1))]
    pub cpu_seconds: u64,
    /// Size of one written file in MiB (`RLIMIT_FSIZE`).
    #[schemars(range(min = 1))]
    pub file_size_mb: u64,
    /// Open file descriptors of each process (`RLIMIT_NOFILE`).
    #[schemars(range(min = 16))]
    pub open_files: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_mb: 1024,
            processes: 128,
            cpu_seconds: 3600,
            file_size_mb: 1024,
            open_files: 1024,
        }
    }
}

impl Limits {
    /// These limits with the ones `over` names replaced (an integration's
    /// own over its pack's), checked as a config's are.
    pub fn overlaid(&self, over: &BTreeMap<String, u64>) -> Result<Limits, String> {
        let mut fields = match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(fields)) => fields,
            _ => unreachable!("limits serialize as an object of numbers"),
        };
        fields.extend(
            over.iter()
                .map(|(name, limit)| (name.clone(), (*limit).into())),
        );
        let limits: Limits = serde_json::from_value(fields.into())
            .map_err(|e| format!("limits: {e}; give NAME=NUMBER pairs"))?;
        limits.validate()?;
        Ok(limits)
    }

    /// A limit of 0 would refuse every child: refused when the config loads.
    pub fn validate(&self) -> Result<(), String> {
        let zero = [
            ("memory_mb", self.memory_mb),
            ("processes", self.processes),
            ("cpu_seconds", self.cpu_seconds),
            ("file_size_mb", self.file_size_mb),
            ("open_files", self.open_files),
        ]
        .into_iter()
        .find(|(_, value)| *value == 0);
        match zero {
            Some((name, _)) => Err(format!(
                "`limits.{name}` is 0, which would refuse every child: give a positive number"
            )),
            None => Ok(()),
        }
    }
}

/// A pack's sandbox settings, checked at start: `limits` (a 0 is refused),
/// and with [`Mode::Off`] the warning to log, saying that `what` runs
/// unconfined.
pub fn check_settings(mode: Mode, limits: &Limits, what: &str) -> Result<Option<String>, String> {
    limits.validate()?;
    Ok((mode == Mode::Off).then(|| {
        format!("sandbox = \"off\": {what} unconfined, with every right of the host's user")
    }))
}

/// What a confined child may reach over the network.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// No sockets at all (only the pipes and socket pairs it was given).
    None,
    /// TCP listening on exactly these ports (a kernel's own), no outgoing
    /// connection, no other socket.
    Listen(Vec<u16>),
    /// TCP connections to this port only: an egress proxy's on loopback,
    /// the one way out. Landlock restricts TCP by port, not address, so the
    /// port is open on every address; the proxy's is a fresh ephemeral one.
    /// No listening, no other socket.
    Proxy(u16),
    /// Everything the host can reach (MCP servers that call out).
    Full,
}

/// The confinement of one child: a read-only runtime, the folders it may
/// write, its network and its bounds. Anything not named is invisible.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Policy {
    /// Folders and files it may read and execute.
    pub read: Vec<PathBuf>,
    /// Folders and files it may also write, create and remove in.
    pub write: Vec<PathBuf>,
    /// Folders and files the pack opened itself, granted by descriptor.
    #[serde(skip)]
    pub opened: Vec<Opened>,
    /// Its network.
    pub network: Network,
    /// Its bounds.
    pub limits: Limits,
}

/// What every program needs to read: system libraries and binaries, a few
/// files of `/etc` (never `/etc/shadow`), and the harmless devices.
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/alternatives",
    "/etc/mime.types",
    "/etc/os-release",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/proc/self",
    "/proc/thread-self",
    "/proc/meminfo",
    "/proc/cpuinfo",
    "/proc/stat",
    "/sys/devices/system/cpu",
];

/// Devices every program may write.
const SYSTEM_WRITE: &[&str] = &["/dev/null", "/dev/full", "/dev/tty"];

impl Policy {
    /// The system runtime, `runtime` (an interpreter's own folders) read-only,
    /// and `work` writable; no network; default bounds.
    pub fn new(runtime: impl IntoIterator<Item = PathBuf>, work: &Path) -> Self {
        let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        read.extend(runtime);
        let mut write: Vec<PathBuf> = SYSTEM_WRITE.iter().map(PathBuf::from).collect();
        write.push(work.to_path_buf());
        Self {
            read,
            write,
            opened: Vec::new(),
            network: Network::None,
            limits: Limits::default(),
        }
    }

    /// Also readable.
    pub fn read(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.read.extend(paths);
        self
    }

    /// Also writable.
    pub fn write(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.write.extend(paths);
        self
    }

    /// Also readable: a folder or file the pack opened (see [`Opened`]).
    pub fn read_opened(mut self, opened: impl Into<OwnedFd>) -> Self {
        self.opened.push(Opened::new(opened.into(), false));
        self
    }

    /// Also writable: a folder or file the pack opened (see [`Opened`]).
    pub fn write_opened(mut self, opened: impl Into<OwnedFd>) -> Self {
        self.opened.push(Opened::new(opened.into(), true));
        self
    }

    /// With this network.
    pub fn network(mut self, network: Network) -> Self {
        self.network = network;
        self
    }

    /// With these bounds.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// A folder or file granted by the descriptor the pack opened it with
/// (beneath a root it trusts, e.g. with the `beneath` crate), not by name:
/// where code can rename what is on the way, a name checked and then opened
/// again by the sandbox could lead elsewhere, a descriptor cannot.
#[derive(Debug, Clone)]
pub struct Opened {
    pub(crate) fd: Arc<OwnedFd>,
    pub(crate) write: bool,
}

impl Opened {
    fn new(fd: OwnedFd, write: bool) -> Self {
        Self {
            fd: Arc::new(fd),
            write,
        }
    }
}

impl PartialEq for Opened {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.fd, &other.fd) && self.write == other.write
    }
}

impl Eq for Opened {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlaid_limits_replace_only_what_they_name() {
        let pack = Limits {
            memory_mb: 4096,
            ..Limits::default()
        };
        let over = BTreeMap::from([("processes".to_owned(), 16)]);
        let limits = pack.overlaid(&over).unwrap();
        assert_eq!((limits.memory_mb, limits.processes), (4096, 16));
        let unknown = pack.overlaid(&BTreeMap::from([("memory".to_owned(), 1)]));
        let unknown = unknown.unwrap_err();
        assert!(unknown.contains("unknown field `memory`") && unknown.contains("memory_mb"));
        let zero = pack.overlaid(&BTreeMap::from([("open_files".to_owned(), 0)]));
        assert!(zero.unwrap_err().contains("`limits.open_files` is 0"));
    }

    #[test]
    fn a_zero_limit_is_refused_by_name() {
        assert_eq!(Limits::default().validate(), Ok(()));
        let zero = Limits {
            processes: 0,
            ..Limits::default()
        };
        let err = zero.validate().unwrap_err();
        assert!(err.contains("`limits.processes` is 0"), "{err}");
    }

    #[test]
    fn secrets_of_the_system_are_not_in_the_runtime() {
        let policy = Policy::new([], Path::new("/tmp/w"));
        for path in ["/etc", "/etc/shadow", "/root", "/home", "/proc", "/tmp"] {
            assert!(
                !policy.read.contains(&PathBuf::from(path))
                    && !policy.write.contains(&PathBuf::from(path)),
                "{path} is in the policy"
            );
        }
    }
}
