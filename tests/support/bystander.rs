//! A process outside packhost that took a pid a child of packhost had, to
//! show that nothing packhost sends by a saved pid reaches it. Shared by the
//! e2e tests and pack-process's own (included there by path).

use std::{
    cell::Cell,
    ffi::CString,
    path::PathBuf,
    time::{Duration, Instant},
};

/// Runs `sh` under the pid it was given, leading its own session and group
/// as a shell's job would (so `killpg` of that number reaches it too), and
/// writes each catchable signal it gets to its log.
pub struct Bystander {
    pid: libc::pid_t,
    log: PathBuf,
    ended: Cell<bool>,
    _dir: tempfile::TempDir,
}

/// `struct clone_args` of clone3, up to `set_tid_size`.
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
}

impl Bystander {
    /// Start it as `pid`, which must be free (its process reaped): clone3
    /// with `set_tid`, which needs root (CAP_SYS_ADMIN), as tests run here
    /// and in CI. Returns once its traps are set.
    pub fn spawn(pid: u32) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = dir.path().join("signals");
        let ready = dir.path().join("ready");
        let script = format!(
            "for s in INT TERM HUP; do trap \"echo $s >> {log}\" $s; done; touch {ready}; while :; do sleep 0.05; done",
            log = log.display(),
            ready = ready.display()
        );
        // Made before the clone: the child only calls setsid and exec.
        let argv: Vec<CString> = ["/bin/sh", "-c", &script]
            .iter()
            .map(|arg| CString::new(*arg).expect("no NUL"))
            .collect();
        let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        pointers.push(std::ptr::null());
        let wanted = [pid as libc::pid_t];
        let mut args = CloneArgs {
            exit_signal: libc::SIGCHLD as u64,
            set_tid: wanted.as_ptr() as u64,
            set_tid_size: 1,
            ..Default::default()
        };
        // SAFETY: a plain fork whose child calls only async-signal-safe
        // functions on memory made before it.
        let got = unsafe {
            libc::syscall(
                libc::SYS_clone3,
                &mut args as *mut CloneArgs,
                std::mem::size_of::<CloneArgs>(),
            )
        };
        if got == 0 {
            // SAFETY: as above, in the child.
            unsafe {
                libc::setsid();
                libc::execv(pointers[0], pointers.as_ptr());
                libc::_exit(127);
            }
        }
        assert_eq!(
            got,
            i64::from(pid),
            "cannot take pid {pid}: {}",
            std::io::Error::last_os_error()
        );
        let bystander = Self {
            pid: pid as libc::pid_t,
            log,
            ended: Cell::new(false),
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ready.exists() {
            assert!(Instant::now() < deadline, "the bystander did not start");
            std::thread::sleep(Duration::from_millis(5));
        }
        bystander
    }

    /// Still running, and no signal noted, a moment after `what` was done
    /// (a trap runs once the `sleep` of the moment ends).
    #[track_caller]
    pub fn assert_untouched(&self, what: &str) {
        std::thread::sleep(Duration::from_millis(300));
        let mut status = 0;
        // SAFETY: our own child, not reaped before.
        let reaped = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        if reaped != 0 {
            self.ended.set(true);
        }
        assert_eq!(
            reaped, 0,
            "after {what}, the bystander (pid {}) was ended (wait status {status:#x})",
            self.pid
        );
        let signals = std::fs::read_to_string(&self.log).unwrap_or_default();
        assert!(
            signals.is_empty(),
            "after {what}, the bystander (pid {}) got {signals:?}",
            self.pid
        );
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        if self.ended.get() {
            return;
        }
        // SAFETY: our own child, not reaped before.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}
