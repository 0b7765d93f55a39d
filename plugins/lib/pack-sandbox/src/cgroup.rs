//! One cgroup per confined child, where the machine lets the host make them:
//! memory and process bounds for the child and all it starts, a kill that
//! reaches processes that left the process group (`setsid`), and the
//! kernel's count of which bound was hit.

use std::{
    collections::HashSet,
    fs, io,
    path::{Path, PathBuf},
    sync::{
        OnceLock,
        atomic::{AtomicU64, Ordering},
        mpsc::{self, Receiver, RecvTimeoutError, Sender},
    },
    time::Duration,
};

use crate::{Bound, Limits, Pidfd};

/// Where a pack makes its children's cgroups: one folder per controller (v1)
/// or one folder (v2), named after the host's pid and removed with the pack.
#[derive(Debug)]
pub struct Cgroups {
    version: Version,
    /// v1: `[memory, pids]` folders; v2: one folder.
    parents: Vec<PathBuf>,
    next: AtomicU64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// One child's cgroup; dropping it kills what is left inside and removes it.
#[derive(Debug)]
pub struct Cgroup {
    version: Version,
    dirs: Vec<PathBuf>,
}

impl Cgroups {
    /// The host's own cgroup folders, if it may make sub-groups with the
    /// memory and pids controllers there; `Err` says why not.
    pub fn detect() -> Result<Self, String> {
        let own = fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
        // Each pack links its own copy of this crate: the time tells their
        // folders apart.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.subsec_nanos());
        let name = format!("packhost-{}-{nanos:x}", std::process::id());
        let v1 = |controller: &str| -> Option<PathBuf> {
            own.lines().find_map(|line| {
                let mut parts = line.splitn(3, ':');
                let (_, list, path) = (parts.next()?, parts.next()?, parts.next()?);
                list.split(',')
                    .any(|c| c == controller)
                    .then(|| cgroup_dir(&format!("/sys/fs/cgroup/{controller}"), path))
            })
        };
        let made = |dirs: Vec<PathBuf>, version| -> Result<Self, String> {
            dirs.iter().for_each(|dir| remove_stale(dir));
            let parents: Vec<PathBuf> = dirs.iter().map(|dir| dir.join(&name)).collect();
            for parent in &parents {
                match fs::create_dir(parent) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(format!("cannot make {}: {e}", parent.display())),
                }
            }
            Ok(Self {
                version,
                parents,
                next: AtomicU64::new(0),
            })
        };
        if let (Some(memory), Some(pids)) = (v1("memory"), v1("pids"))
            && memory.is_dir()
            && pids.is_dir()
        {
            return made(vec![memory, pids], Version::V1);
        }
        let unified = own
            .lines()
            .find_map(|line| line.strip_prefix("0::"))
            .ok_or("no memory and pids controllers (v1) and no cgroup v2")?;
        let root = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            .into_iter()
            .find(|root| {
                fs::read_to_string(Path::new(root).join("cgroup.controllers"))
                    .is_ok_and(|c| c.contains("memory") && c.contains("pids"))
            })
            .ok_or("cgroup v2 offers no memory and pids controllers")?;
        let dir = cgroup_dir(root, unified);
        let cgroups = made(vec![dir], Version::V2)?;
        // v2 hands controllers down only through `subtree_control`.
        fs::write(
            cgroups.parents[0].join("cgroup.subtree_control"),
            "+memory +pids",
        )
        .map_err(|e| format!("cannot enable memory and pids under {name}: {e}"))?;
        Ok(cgroups)
    }

    /// `"cgroup v1 (memory, pids)"` or `"cgroup v2"`.
    pub fn describe(&self) -> &'static str {
        match self.version {
            Version::V1 => "cgroup v1 (memory, pids)",
            Version::V2 => "cgroup v2 (memory, pids)",
        }
    }

    /// A new empty cgroup bounded by `limits`.
    pub fn create(&self, limits: &Limits) -> io::Result<Cgroup> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let dirs: Vec<PathBuf> = self
            .parents
            .iter()
            .map(|parent| parent.join(format!("c{id}")))
            .collect();
        for dir in &dirs {
            fs::create_dir(dir)?;
        }
        let cgroup = Cgroup {
            version: self.version,
            dirs,
        };
        let memory = (limits.memory_mb << 20).to_string();
        let processes = limits.processes.to_string();
        match self.version {
            Version::V1 => {
                fs::write(cgroup.dirs[0].join("memory.limit_in_bytes"), &memory)?;
                fs::write(cgroup.dirs[1].join("pids.max"), &processes)?;
            }
            Version::V2 => {
                fs::write(cgroup.dirs[0].join("memory.max"), &memory)?;
                // Swap would let the bound be passed slowly instead of hit.
                let _ = fs::write(cgroup.dirs[0].join("memory.swap.max"), "0");
                fs::write(cgroup.dirs[0].join("pids.max"), &processes)?;
            }
        }
        Ok(cgroup)
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        for parent in &self.parents {
            let _ = fs::remove_dir(parent);
        }
    }
}

/// The empty folders of hosts that ended without removing them (killed).
fn remove_stale(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix("packhost-"))
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        if let Ok(children) = fs::read_dir(entry.path()) {
            for child in children.flatten().filter(|c| c.path().is_dir()) {
                let _ = fs::remove_dir(child.path());
            }
        }
        let _ = fs::remove_dir(entry.path());
    }
}

/// `/proc/self/cgroup` gives paths from the hierarchy's root.
fn cgroup_dir(mount: &str, path: &str) -> PathBuf {
    Path::new(mount).join(path.trim_start_matches('/'))
}

impl Cgroup {
    /// The `cgroup.procs` files the child writes its pid into before it
    /// confines itself.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .map(|dir| dir.join("cgroup.procs"))
            .collect()
    }

    /// Move process `pid` (and the threads of it) in.
    pub fn adopt(&self, pid: u32) -> io::Result<()> {
        for procs in self.procs_files() {
            fs::write(procs, pid.to_string())?;
        }
        Ok(())
    }

    /// SIGKILL to every process inside, wherever its process group.
    pub fn kill(&self) {
        kill_members(self.version, &self.dirs);
    }

    /// The bound the kernel enforced, if any: an out-of-memory kill, or a
    /// fork refused at the process bound.
    pub fn exceeded(&self) -> Option<Bound> {
        let count = |file: &Path, key: &str| -> u64 {
            fs::read_to_string(file)
                .ok()
                .and_then(|text| {
                    text.lines().find_map(|line| {
                        let (name, value) = line.split_once(' ')?;
                        (name == key).then(|| value.trim().parse().ok())?
                    })
                })
                .unwrap_or(0)
        };
        let (oom, pids) = match self.version {
            Version::V1 => (
                count(&self.dirs[0].join("memory.oom_control"), "oom_kill"),
                count(&self.dirs[1].join("pids.events"), "max"),
            ),
            Version::V2 => (
                count(&self.dirs[0].join("memory.events"), "oom_kill"),
                count(&self.dirs[0].join("pids.events"), "max"),
            ),
        };
        if oom > 0 {
            Some(Bound::Memory)
        } else if pids > 0 {
            Some(Bound::Processes)
        } else {
            None
        }
    }
}

impl Drop for Cgroup {
    /// Its members are killed and the folders removed on the reaper's
    /// thread, off the caller's path: a folder can only go once its last
    /// member has been reaped, a moment after the kill.
    fn drop(&mut self) {
        let dirs = std::mem::take(&mut self.dirs);
        let leftover = Leftover {
            version: self.version,
            dirs,
        };
        if let Err(mpsc::SendError(leftover)) = reaper().send(leftover) {
            // No reaper thread (it could not start): as much as can be done now.
            leftover.clear();
        }
    }
}

/// A dropped cgroup's folders, still to be emptied and removed.
struct Leftover {
    version: Version,
    dirs: Vec<PathBuf>,
}

impl Leftover {
    /// Kill what is inside and remove the folders; false while a member is
    /// still there.
    fn clear(&self) -> bool {
        kill_members(self.version, &self.dirs);
        self.dirs.iter().all(|dir| match fs::remove_dir(dir) {
            Ok(()) => true,
            Err(e) => e.kind() == io::ErrorKind::NotFound,
        })
    }
}

/// How often, and how many times, a leftover cgroup is tried again.
const REAP_EVERY: Duration = Duration::from_millis(10);
const REAP_TRIES: u32 = 200;

/// The thread that removes dropped cgroups, started on first use.
fn reaper() -> &'static Sender<Leftover> {
    static REAPER: OnceLock<Sender<Leftover>> = OnceLock::new();
    REAPER.get_or_init(|| {
        let (sender, receiver) = mpsc::channel();
        let _ = std::thread::Builder::new()
            .name("cgroup-reaper".into())
            .spawn(move || reap(&receiver));
        sender
    })
}

/// Clear each leftover as it comes, and again every [`REAP_EVERY`] while
/// any is still there.
fn reap(receiver: &Receiver<Leftover>) {
    let mut waiting: Vec<(Leftover, u32)> = Vec::new();
    loop {
        let next = if waiting.is_empty() {
            receiver.recv().map_err(|_| RecvTimeoutError::Disconnected)
        } else {
            receiver.recv_timeout(REAP_EVERY)
        };
        match next {
            Ok(leftover) => waiting.push((leftover, 0)),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        waiting.retain_mut(|(leftover, tries)| {
            *tries += 1;
            !leftover.clear() && *tries < REAP_TRIES
        });
    }
}

/// SIGKILL to every process in the cgroup `dirs`.
fn kill_members(version: Version, dirs: &[PathBuf]) {
    let Some(first) = dirs.first() else {
        return;
    };
    if version == Version::V2 && fs::write(first.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    // v1: every member is in each controller's folder; one list is enough.
    // A killed process stays listed until it is reaped, so the list is
    // read again only for members that forked meanwhile; the pids bound
    // keeps that short. A listed pid may be reaped and taken by a process
    // outside before it is signalled: each is opened as a pidfd first and
    // signalled only if still listed after, when the pidfd surely names the
    // member.
    let listed = || -> Option<HashSet<u32>> {
        let procs = fs::read_to_string(first.join("cgroup.procs")).ok()?;
        Some(
            procs
                .lines()
                .filter_map(|line| line.trim().parse().ok())
                .collect(),
        )
    };
    let mut killed = HashSet::new();
    for _ in 0..8 {
        let Some(members) = listed() else {
            return;
        };
        let fresh: Vec<u32> = members
            .into_iter()
            .filter(|pid| killed.insert(*pid))
            .collect();
        if fresh.is_empty() {
            return;
        }
        let opened: Vec<Pidfd> = fresh
            .into_iter()
            .filter_map(|pid| Pidfd::open(pid).ok())
            .collect();
        let still = listed().unwrap_or_default();
        for member in opened.iter().filter(|member| still.contains(&member.pid())) {
            let _ = member.signal(libc::SIGKILL);
        }
    }
}
