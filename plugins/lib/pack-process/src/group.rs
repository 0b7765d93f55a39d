//! A child that leads its own process group, and running it to the end.
//!
//! Signals never go by a saved pid: a reaped process's number goes to the
//! next process started. The leader alone is signalled through its pidfd.
//! Its group is signalled with `killpg` only while the leader is not yet
//! reaped: until then no other process can hold that number as its pid or
//! its group. So the group is killed before the leader is reaped, at every
//! reaping (a group ends with its leader), and never after.

use std::{
    io,
    os::{fd::AsFd, unix::process::ExitStatusExt},
    process::ExitStatus,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use pack_sandbox::{Bound, Cgroup, Confined, Pidfd};
use tokio::{
    io::{Interest, unix::AsyncFd},
    net::unix::pipe,
    process::{Child, ChildStderr, ChildStdin, ChildStdout},
    sync::oneshot,
};
use tokio_util::task::AbortOnDropHandle;

use crate::capture::{Capture, CaptureBuffer, read_capped};

/// How long output may still arrive after the group is gone: the pipes stay
/// open only while a process outside the group holds them.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// How often a guard dropped outside a runtime tries to reap its killed
/// child.
const REAP_POLL: Duration = Duration::from_millis(10);

/// A spawned child leading its own process group (and, where the machine
/// has them, its own cgroup). Dropping it kills the whole group and reaps
/// the child.
pub struct ProcessGroup {
    /// Ours to wait for; `None` for an adopted process.
    child: Option<Child>,
    adopted: Option<Fostered>,
    /// The leader, whose pid is also the group's.
    leader: Pidfd,
    /// Reaches what left the group (`setsid`); dropped after the child.
    cgroup: Option<Cgroup>,
}

/// A process another one started and reaps for the pack (a fork server's
/// child), leading its own process group: its pidfd, its wait status once
/// its parent has reaped it, and the read ends of its output.
///
/// Its parent kills its group (`killpg`) before it reaps it: the pack never
/// signals the group, whose number may be another's once the leader is
/// reaped, only the leader through its pidfd.
pub struct Adopted {
    /// Opened by its parent before it could reap it ([`Pidfd::from_fd`]):
    /// the only way the pack signals it. Its pid is also its group's.
    pub pidfd: Pidfd,
    /// Its raw wait status, sent by its parent when it has reaped it.
    pub exit: oneshot::Receiver<i32>,
    /// Its standard output.
    pub stdout: pipe::Receiver,
    /// Its standard error.
    pub stderr: pipe::Receiver,
}

/// What the guard keeps of an [`Adopted`] process.
struct Fostered {
    exit: oneshot::Receiver<i32>,
    /// Once its parent reported it.
    status: Option<ExitStatus>,
    /// Until [`ProcessGroup::finish`] takes them.
    output: Option<(pipe::Receiver, pipe::Receiver)>,
}

impl Fostered {
    fn lost() -> io::Error {
        io::Error::other("its parent did not report its end")
    }

    fn try_status(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            match self.exit.try_recv() {
                Ok(raw) => self.status = Some(ExitStatus::from_raw(raw)),
                Err(oneshot::error::TryRecvError::Empty) => {}
                Err(oneshot::error::TryRecvError::Closed) => return Err(Self::lost()),
            }
        }
        Ok(self.status)
    }

    async fn status(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let status = ExitStatus::from_raw((&mut self.exit).await.map_err(|_| Self::lost())?);
        self.status = Some(status);
        Ok(status)
    }
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
        // Opened before anything can reap the child: it is surely its own.
        let leader = child
            .id()
            .ok_or_else(|| io::Error::other("the child was reaped at once"))
            .and_then(Pidfd::open);
        match leader {
            Ok(leader) => Ok(Self {
                child: Some(child),
                adopted: None,
                leader,
                cgroup,
            }),
            Err(e) => {
                kill_group_of(&child);
                Err(e)
            }
        }
    }

    /// Take charge of a process the pack did not spawn (see [`Adopted`]),
    /// bounded by `cgroup` (which it has joined).
    pub fn adopt(adopted: Adopted, cgroup: Option<Cgroup>) -> Self {
        let Adopted {
            pidfd,
            exit,
            stdout,
            stderr,
        } = adopted;
        Self {
            child: None,
            adopted: Some(Fostered {
                exit,
                status: None,
                output: Some((stdout, stderr)),
            }),
            leader: pidfd,
            cgroup,
        }
    }

    /// The leader's pid, which is also the group's: to read `/proc`, never
    /// to signal it (see [`kill`](Self::kill), [`interrupt`](Self::interrupt)).
    pub fn id(&self) -> u32 {
        self.leader.pid()
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

    /// The child's standard input, if piped and not yet taken.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.as_mut()?.stdin.take()
    }

    /// The child's standard output, if piped and not yet taken.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.as_mut()?.stdout.take()
    }

    /// The child's standard error, if piped and not yet taken.
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.as_mut()?.stderr.take()
    }

    /// Whether the leader is still running (an idle pooled child may have
    /// died). A leader whose main thread has ended or is ending counts as
    /// gone although `waitpid` cannot reap it yet: a killed multi-threaded
    /// process ends in steps, its other threads (and its pipes) a moment
    /// after its main thread, and a request written to it in between sits in
    /// a pipe nobody will read. A process that ends its main thread on
    /// purpose while the others go on (`pthread_exit` in `main`) counts as
    /// gone too.
    pub fn is_running(&self) -> bool {
        // Read first: if the leader has not ended after, the stat was its own
        // and not that of a process that took its number.
        let ending = proc_stat(self.leader.pid()).map(|stat| stat.ending());
        ending == Some(false) && !self.leader.exited()
    }

    /// SIGKILL to every process of the group, and of its cgroup.
    pub fn kill(&self) {
        self.kill_group();
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill();
        }
    }

    /// SIGINT to the leader alone (how a Jupyter kernel is interrupted);
    /// `ESRCH` once it was reaped.
    pub fn interrupt(&self) -> io::Result<()> {
        self.leader.signal(libc::SIGINT)
    }

    fn kill_group(&self) {
        match &self.child {
            Some(child) => kill_group_of(child),
            // Its parent kills its group before reaping it (see `Adopted`):
            // the group ends with the leader.
            None => {
                let _ = self.leader.signal(libc::SIGKILL);
            }
        }
    }

    /// The leader's exit status if it has ended, reaping it (an adopted
    /// one's, once its parent reported it); `None` while it runs. What is
    /// left of its group is killed first.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match (&mut self.child, &mut self.adopted) {
            (Some(child), _) => {
                if child.id().is_some() && !self.leader.exited() {
                    return Ok(None);
                }
                kill_group_of(child);
                child.try_wait()
            }
            (None, Some(adopted)) => adopted.try_status(),
            (None, None) => Err(io::Error::other("nothing to wait for")),
        }
    }

    /// Wait for the leader's end and reap it (an adopted one's end, as its
    /// parent reports it). What is left of its group is killed first.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match (&mut self.child, &mut self.adopted) {
            (Some(child), _) => {
                if child.id().is_some() {
                    ended(&self.leader).await?;
                    kill_group_of(child);
                }
                child.wait().await
            }
            (None, Some(adopted)) => adopted.status().await,
            (None, None) => Err(io::Error::other("nothing to wait for")),
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
        if let Some(pipe) = self.take_stdout() {
            readers.push(reader(pipe, limit, &stdout));
        }
        if let Some(pipe) = self.take_stderr() {
            readers.push(reader(pipe, limit, &stderr));
        }
        if let Some((out, err)) = self.adopted.as_mut().and_then(|a| a.output.take()) {
            readers.push(reader(out, limit, &stdout));
            readers.push(reader(err, limit, &stderr));
        }
        let ended = async {
            tokio::select! {
                status = self.wait() => Exit::from_status(status),
                () = answered => Exit::Answered,
            }
        };
        let exit = match tokio::time::timeout(timeout, ended).await {
            Ok(exit) => exit,
            Err(_) => {
                self.kill();
                let _ = self.wait().await;
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

/// SIGKILL to the group `child` leads, unless `child` was reaped: until then
/// no other process can hold its number, so the group is ours; once reaped,
/// the group was killed just before (it ends with its leader).
fn kill_group_of(child: &Child) {
    let Some(pgid) = child.id().and_then(|id| libc::pid_t::try_from(id).ok()) else {
        return;
    };
    // SAFETY: killpg only sends a signal; ESRCH (group gone) is fine.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// Until `leader` has ended, without reaping it.
async fn ended(leader: &Pidfd) -> io::Result<()> {
    // SAFETY: the descriptor is borrowed from `leader`, so it stays open and
    // the same for as long as this registration.
    let pidfd = unsafe { AsyncFd::register_with_interest(leader.as_fd(), Interest::READABLE)? };
    pidfd.readable().await.map(drop)
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
        // exit: wait for it explicitly, through `child` alone (a bare
        // `waitpid` would leave `child` to reap that number again later).
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let _ = child.wait().await;
                });
            }
            Err(_) => {
                std::thread::spawn(move || {
                    while let Ok(None) = child.try_wait() {
                        std::thread::sleep(REAP_POLL);
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
