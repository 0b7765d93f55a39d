//! One cgroup per confined child, where the machine lets the host make them:
//! memory and process bounds for the child and all it starts, a kill that
//! reaches processes that left the process group (`setsid`), and the
//! kernel's count of which bound was hit.
//!
//! A cgroup emptied of its child is kept for a later one instead of being
//! removed: making a cgroup (each controller's files in the kernel's file
//! system) and removing it cost more of the kernel's time than the child's
//! own call folder, and on cgroup v1 each waits behind any move into a
//! cgroup under way (an RCU grace period, ~10 ms). A reused cgroup holds no
//! process; only its counts of bounds hit are its earlier children's, so
//! each child is judged from the counts it was handed out with.

use std::{
    collections::HashSet,
    fs, io,
    path::{Path, PathBuf},
    sync::{
        Mutex, OnceLock,
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
    /// Emptied cgroups, at most [`SPARE`], for the next children.
    spare: Mutex<Vec<Spare>>,
}

/// How many emptied cgroups a pack keeps: about as many as its children
/// running at once (more are removed).
const SPARE: usize = 16;

/// An emptied cgroup: its folders, the limits they hold, and its counts.
#[derive(Debug)]
struct Spare {
    dirs: Vec<PathBuf>,
    limits: Limits,
    counts: Counts,
}

/// The kernel's counts of a cgroup's bounds hit, over its whole life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    /// Processes killed for memory.
    oom_kills: u64,
    /// Forks refused at the process bound.
    refused_forks: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// One child's cgroup; dropping it kills what is left inside and keeps it
/// for a later child once empty (or removes it).
#[derive(Debug)]
pub struct Cgroup {
    version: Version,
    dirs: Vec<PathBuf>,
    limits: Limits,
    /// Its counts when it was handed out: those of its earlier children.
    before: Counts,
    /// Where it goes back once empty.
    home: &'static Cgroups,
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
                spare: Mutex::new(Vec::new()),
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

    /// An empty cgroup bounded by `limits`: an emptied one kept with the
    /// same limits, else a new one.
    pub fn create(&'static self, limits: &Limits) -> io::Result<Cgroup> {
        let (dirs, before) = match self.take_spare(limits) {
            Some(spare) => (spare.dirs, spare.counts),
            None => (self.make(limits)?, Counts::default()),
        };
        Ok(Cgroup {
            version: self.version,
            dirs,
            limits: limits.clone(),
            before,
            home: self,
        })
    }

    fn take_spare(&self, limits: &Limits) -> Option<Spare> {
        let mut spare = lock(&self.spare);
        let at = spare.iter().position(|spare| &spare.limits == limits)?;
        Some(spare.swap_remove(at))
    }

    /// The folders of a new cgroup bounded by `limits`.
    fn make(&self, limits: &Limits) -> io::Result<Vec<PathBuf>> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let dirs: Vec<PathBuf> = self
            .parents
            .iter()
            .map(|parent| parent.join(format!("c{id}")))
            .collect();
        let bounded = dirs
            .iter()
            .try_for_each(fs::create_dir)
            .and_then(|()| self.bound(&dirs, limits));
        match bounded {
            Ok(()) => Ok(dirs),
            Err(e) => {
                // Empty folders: nothing joined them yet.
                dirs.iter().for_each(|dir| drop(fs::remove_dir(dir)));
                Err(e)
            }
        }
    }

    fn bound(&self, dirs: &[PathBuf], limits: &Limits) -> io::Result<()> {
        let memory = (limits.memory_mb << 20).to_string();
        let processes = limits.processes.to_string();
        match self.version {
            Version::V1 => {
                fs::write(dirs[0].join("memory.limit_in_bytes"), &memory)?;
                fs::write(dirs[1].join("pids.max"), &processes)
            }
            Version::V2 => {
                fs::write(dirs[0].join("memory.max"), &memory)?;
                // Swap would let the bound be passed slowly instead of hit.
                let _ = fs::write(dirs[0].join("memory.swap.max"), "0");
                fs::write(dirs[0].join("pids.max"), &processes)
            }
        }
    }

    /// Keep an emptied cgroup for a later child, or remove it when enough
    /// are kept; false while it cannot be removed yet.
    fn keep(&self, dirs: &[PathBuf], limits: &Limits) -> bool {
        let mut spare = lock(&self.spare);
        if spare.len() < SPARE {
            spare.push(Spare {
                dirs: dirs.to_vec(),
                limits: limits.clone(),
                counts: counts(self.version, dirs),
            });
            return true;
        }
        drop(spare);
        remove(dirs)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Remove the folders of an empty cgroup; false while a member is still
/// there.
fn remove(dirs: &[PathBuf]) -> bool {
    dirs.iter().all(|dir| match fs::remove_dir(dir) {
        Ok(()) => true,
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    })
}

/// The kernel's counts of the bounds hit in the cgroup `dirs`.
fn counts(version: Version, dirs: &[PathBuf]) -> Counts {
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
    let (memory, pids) = match version {
        Version::V1 => (
            dirs[0].join("memory.oom_control"),
            dirs[1].join("pids.events"),
        ),
        Version::V2 => (dirs[0].join("memory.events"), dirs[0].join("pids.events")),
    };
    Counts {
        oom_kills: count(&memory, "oom_kill"),
        refused_forks: count(&pids, "max"),
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
        let now = counts(self.version, &self.dirs);
        if now.oom_kills > self.before.oom_kills {
            Some(Bound::Memory)
        } else if now.refused_forks > self.before.refused_forks {
            Some(Bound::Processes)
        } else {
            None
        }
    }
}

impl Drop for Cgroup {
    /// Its members are killed, and the cgroup kept or removed, on the
    /// reaper's thread, off the caller's path: it is empty only once its
    /// last member has been reaped, a moment after the kill.
    fn drop(&mut self) {
        let leftover = Leftover {
            version: self.version,
            dirs: std::mem::take(&mut self.dirs),
            limits: self.limits.clone(),
            home: self.home,
        };
        if let Err(mpsc::SendError(leftover)) = reaper().send(leftover) {
            // No reaper thread (it could not start): as much as can be done now.
            leftover.clear();
        }
    }
}

/// A dropped cgroup, still to be emptied, then kept or removed.
struct Leftover {
    version: Version,
    dirs: Vec<PathBuf>,
    limits: Limits,
    home: &'static Cgroups,
}

impl Leftover {
    /// Kill what is inside, then keep or remove the cgroup; false while a
    /// member is still there.
    fn clear(&self) -> bool {
        kill_members(self.version, &self.dirs);
        is_empty(&self.dirs) && self.home.keep(&self.dirs, &self.limits)
    }
}

/// No member left in any controller's folder, not even one killed and not
/// yet reaped (a cgroup v1 lists those).
fn is_empty(dirs: &[PathBuf]) -> bool {
    dirs.iter().all(|dir| {
        fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|procs| procs.trim().is_empty())
    })
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

#[cfg(test)]
mod tests {
    use std::{
        io::Write,
        process::{Command, Stdio},
        time::{Duration, Instant},
    };

    use super::*;

    /// A cgroup emptied of its child is handed out again, and the bound its
    /// earlier child hit is not the next child's.
    #[test]
    fn an_emptied_cgroup_is_reused_without_its_counts() {
        let cgroups = match Cgroups::detect() {
            Ok(cgroups) => Box::leak(Box::new(cgroups)),
            Err(why) => return eprintln!("skipped: no cgroups here: {why}"),
        };
        let limits = Limits {
            processes: 1,
            ..Limits::default()
        };
        let cgroup = cgroups.create(&limits).unwrap();
        // It forks only once it has joined (its line on stdin says so).
        let mut child = Command::new("sh")
            .args(["-c", "read joined; (true)"])
            .stdin(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        cgroup.adopt(child.id()).unwrap();
        child.stdin.take().unwrap().write_all(b"\n").unwrap();
        child.wait().unwrap();
        assert_eq!(cgroup.exceeded(), Some(Bound::Processes));
        let dirs = cgroup.dirs.clone();
        drop(cgroup);
        let deadline = Instant::now() + Duration::from_secs(10);
        while lock(&cgroups.spare).is_empty() {
            assert!(Instant::now() < deadline, "the emptied cgroup was not kept");
            std::thread::sleep(Duration::from_millis(10));
        }
        let again = cgroups.create(&limits).unwrap();
        assert_eq!(again.dirs, dirs);
        assert_eq!(again.exceeded(), None);
        let other = cgroups.create(&Limits::default()).unwrap();
        assert_ne!(other.dirs, dirs, "kept for its own limits only");
    }
}
