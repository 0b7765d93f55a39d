//! A child that leads its own process group, and running it to the end.

use std::{
    io,
    os::unix::process::ExitStatusExt,
    process::ExitStatus,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use pack_sandbox::{Bound, Cgroup, Confined};
use tokio::{net::unix::pipe, process::Child, sync::oneshot};
use tokio_util::task::AbortOnDropHandle;

use crate::capture::{Capture, CaptureBuffer, read_capped};

/// How long output may still arrive after the group is gone: the pipes stay
/// open only while a process outside the group holds them.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// A spawned child leading its own process group (and, where the machine
/// has them, its own cgroup). Dropping it kills the whole group and reaps
/// the child.
pub struct ProcessGroup {
    /// Ours to wait for; `None` for an adopted process.
    child: Option<Child>,
    adopted: Option<Adopted>,
    pgid: Option<libc::pid_t>,
    /// Reaches what left the group (`setsid`); dropped after the child.
    cgroup: Option<Cgroup>,
}

/// A process another one started and reaps for the pack (a fork server's
/// child), leading its own process group: its pid, its wait status once
/// its parent has reaped it, and the read ends of its output.
pub struct Adopted {
    /// Its pid, which is also its process group.
    pub pid: u32,
    /// Its raw wait status, sent by its parent when it has reaped it.
    pub exit: oneshot::Receiver<i32>,
    /// Its standard output.
    pub stdout: pipe::Receiver,
    /// Its standard error.
    pub stderr: pipe::Receiver,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// It ran past its time limit and its group was killed.
    TimedOut,
    /// It passed a bound of its sandbox and was ended.
    Exceeded(Bound),
    /// It said it was done ([`ProcessGroup::finish_on_answer`]); what was
    /// left of its group was killed.
    Answered,
}

impl Exit {
    /// The shell's convention: the code, 128 + signal, 124 for a timeout.
    pub fn code(self) -> i32 {
        match self {
            Exit::Code(code) => code,
            Exit::Answered => 0,
            Exit::Signal(signal) => 128 + signal,
            Exit::TimedOut => 124,
            Exit::Exceeded(_) => 137,
        }
    }

    fn from_status(status: io::Result<ExitStatus>) -> Self {
        match status {
            Ok(status) => match (status.code(), status.signal()) {
                (Some(code), _) => Exit::Code(code),
                (None, Some(signal)) => Exit::Signal(signal),
                (None, None) => Exit::Code(-1),
            },
            Err(_) => Exit::Code(-1),
        }
    }
}

/// A child run to its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// Its standard output, capped.
    pub stdout: Capture,
    /// Its standard error, capped.
    pub stderr: Capture,
    /// How it ended.
    pub exit: Exit,
    /// From [`ProcessGroup::finish`] until the end.
    pub elapsed: Duration,
}

impl ProcessGroup {
    /// Spawn a confined command (from [`pack_sandbox::Sandbox::command`]) as
    /// the leader of a new process group. Set its environment (see
    /// [`crate::EnvAllowList`]) and pipes first.
    pub fn spawn(confined: Confined) -> io::Result<Self> {
        let Confined {
            mut command,
            cgroup,
        } = confined;
        command.process_group(0);
        let child = command.spawn()?;
        let pgid = child.id().and_then(|id| libc::pid_t::try_from(id).ok());
        Ok(Self {
            child: Some(child),
            adopted: None,
            pgid,
            cgroup,
        })
    }

    /// Take charge of a process the pack did not spawn (see [`Adopted`]),
    /// bounded by `cgroup` (which it has joined).
    pub fn adopt(adopted: Adopted, cgroup: Option<Cgroup>) -> Self {
        Self {
            child: None,
            pgid: libc::pid_t::try_from(adopted.pid).ok(),
            adopted: Some(adopted),
            cgroup,
        }
    }

    /// The bound the child passed, if it failed for one: the signal of an
    /// rlimit, or the kernel's count in its cgroup.
    pub fn exceeded(&self, exit: Exit) -> Option<Bound> {
        match exit {
            Exit::Code(0) | Exit::TimedOut | Exit::Exceeded(_) | Exit::Answered => None,
            Exit::Signal(signal) => Bound::from_signal(signal)
                .or_else(|| self.cgroup.as_ref().and_then(Cgroup::exceeded)),
            Exit::Code(_) => self.cgroup.as_ref().and_then(Cgroup::exceeded),
        }
    }

    /// The child, to take its pipes.
    pub fn child(&mut self) -> &mut Child {
        self.child
            .as_mut()
            .expect("the child is only taken on drop")
    }

    /// Whether the leader is still running (an idle pooled child may have
    /// died). A leader whose main thread has ended or is ending counts as
    /// gone although `waitpid` cannot reap it yet: a killed multi-threaded
    /// process ends in steps, its other threads (and its pipes) a moment
    /// after its main thread, and a request written to it in between sits in
    /// a pipe nobody will read. A process that ends its main thread on
    /// purpose while the others go on (`pthread_exit` in `main`) counts as
    /// gone too.
    pub fn is_running(&mut self) -> bool {
        let ending = |leader: u32| proc_stat(leader).map(|stat| stat.ending());
        match &mut self.child {
            Some(child) => {
                matches!(child.try_wait(), Ok(None)) && child.id().and_then(ending) != Some(true)
            }
            // An adopted leader is reaped by its parent: gone from /proc then.
            None => {
                self.pgid
                    .and_then(|pgid| u32::try_from(pgid).ok())
                    .and_then(ending)
                    == Some(false)
            }
        }
    }

    /// SIGKILL to every process of the group, and of its cgroup.
    pub fn kill(&self) {
        self.kill_group();
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill();
        }
    }

    fn kill_group(&self) {
        if let Some(pgid) = self.pgid {
            // SAFETY: killpg only sends a signal; ESRCH (group gone) is fine.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }

    /// Capture stdout and stderr (each up to `limit` bytes) until the child
    /// exits or `timeout` passes; then kill what is left of the group. Returns
    /// within `timeout` + about half a second whatever the children do.
    pub async fn finish(self, timeout: Duration, limit: usize) -> Finished {
        self.finish_on_answer(timeout, limit, std::future::pending())
            .await
    }

    /// [`finish`](Self::finish) for a child that says when it is done: once
    /// `answered` resolves, its output is taken up to the end of its pipes
    /// and its group killed, without waiting for it to exit. A child that
    /// closes its stdout and stderr before it answers loses nothing, and its
    /// caller does not wait for its exit to be seen (for an adopted child, a
    /// round trip through its parent).
    pub async fn finish_on_answer(
        mut self,
        timeout: Duration,
        limit: usize,
        answered: impl Future<Output = ()>,
    ) -> Finished {
        let started = Instant::now();
        let stdout = Arc::new(Mutex::new(CaptureBuffer::default()));
        let stderr = Arc::new(Mutex::new(CaptureBuffer::default()));
        let mut readers = Vec::new();
        if let Some(child) = &mut self.child {
            if let Some(pipe) = child.stdout.take() {
                readers.push(reader(pipe, limit, &stdout));
            }
            if let Some(pipe) = child.stderr.take() {
                readers.push(reader(pipe, limit, &stderr));
            }
        }
        let mut exit_status = None;
        if let Some(adopted) = self.adopted.take() {
            readers.push(reader(adopted.stdout, limit, &stdout));
            readers.push(reader(adopted.stderr, limit, &stderr));
            exit_status = Some(adopted.exit);
        }
        let ended = async {
            tokio::select! {
                status = self.wait(exit_status.as_mut()) => Exit::from_status(status),
                () = answered => Exit::Answered,
            }
        };
        let exit = match tokio::time::timeout(timeout, ended).await {
            Ok(exit) => exit,
            Err(_) => {
                self.kill();
                let _ = self.wait(exit_status.as_mut()).await;
                Exit::TimedOut
            }
        };
        let exit = match self.exceeded(exit) {
            Some(bound) => Exit::Exceeded(bound),
            None => exit,
        };
        // Grandchildren die with the call: no orphans.
        self.kill();
        let _ = tokio::time::timeout(DRAIN_GRACE, async {
            for reader in &mut readers {
                let _ = reader.await;
            }
        })
        .await;
        drop(readers);
        let finish = |buffer: &Arc<Mutex<CaptureBuffer>>| {
            buffer.lock().unwrap_or_else(|e| e.into_inner()).finish()
        };
        Finished {
            stdout: finish(&stdout),
            stderr: finish(&stderr),
            exit,
            elapsed: started.elapsed(),
        }
    }
}

/// Capture `pipe` into `buffer` until it closes.
fn reader(
    pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    limit: usize,
    buffer: &Arc<Mutex<CaptureBuffer>>,
) -> AbortOnDropHandle<()> {
    AbortOnDropHandle::new(tokio::spawn(read_capped(pipe, limit, Arc::clone(buffer))))
}

impl ProcessGroup {
    /// The leader's end: ours to reap, or reported by its parent.
    async fn wait(
        &mut self,
        adopted: Option<&mut oneshot::Receiver<i32>>,
    ) -> io::Result<ExitStatus> {
        match (&mut self.child, adopted) {
            (Some(child), _) => child.wait().await,
            (None, Some(exit)) => exit
                .await
                .map(ExitStatus::from_raw)
                .map_err(|_| io::Error::other("its parent did not report its end")),
            (None, None) => Err(io::Error::other("nothing to wait for")),
        }
    }
}

/// The live processes of group `pgid` (zombies excluded: they are dead and
/// only wait for their reaper), read from `/proc`.
pub fn live_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = proc_stat(pid)?;
            (stat.group == pgid && !stat.ended()).then_some(pid)
        })
        .collect()
}

/// What `/proc/<pid>/stat` says of a process's main thread.
struct ProcStat {
    state: char,
    group: u32,
    flags: u64,
}

impl ProcStat {
    /// `Z` (a zombie, waiting for its reaper) or `X` (dead).
    fn ended(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }

    /// Ended, or on its way out (the kernel's `PF_EXITING`).
    fn ending(&self) -> bool {
        const PF_EXITING: u64 = 0x4;
        self.ended() || self.flags & PF_EXITING != 0
    }
}

/// `None` without `/proc` or once the process is reaped.
fn proc_stat(pid: u32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After `(comm)`: state, ppid, pgrp, session, tty_nr, tpgid, flags.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let group = fields.nth(1)?.parse().ok()?;
    let flags = fields.nth(3)?.parse().ok()?;
    Some(ProcStat {
        state,
        group,
        flags,
    })
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill_group();
        // Its members killed and its folders removed once they are gone, on
        // the cgroup's own reaper thread.
        drop(self.cgroup.take());
        // An adopted child is reaped by its parent.
        let Some(mut child) = self.child.take() else {
            return;
        };
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        // `kill_on_drop` alone leaves a zombie when the reaper misses the
        // exit: wait for it explicitly.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let _ = child.wait().await;
                });
            }
            Err(_) => {
                std::thread::spawn(move || {
                    if let Some(id) = child.id() {
                        let mut status = 0;
                        // SAFETY: waiting on our own child's pid.
                        unsafe {
                            libc::waitpid(id as libc::pid_t, &mut status, 0);
                        }
                    }
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::proc_stat;

    #[test]
    fn a_process_whose_main_thread_ended_is_told() {
        let me = proc_stat(std::process::id()).expect("our own stat");
        assert!(!me.ending());
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("run `true`");
        let pid = child.id();
        // Unreaped: a zombie, whose main thread has ended.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !proc_stat(pid).is_some_and(|stat| stat.ending()) {
            assert!(Instant::now() < deadline, "`true` did not end");
            std::thread::sleep(Duration::from_millis(5));
        }
        child.wait().expect("reap `true`");
        assert!(proc_stat(pid).is_none(), "a reaped process has no stat");
    }
}
