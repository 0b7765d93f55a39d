//! Signals through a pidfd: the one way packhost signals a single process.
//!
//! A pid names whichever process holds that number now. Once a process is
//! reaped its number goes to the next one started (with a `pid_max` of
//! 32768, soon), so a signal sent to a pid saved earlier can reach an
//! unrelated process. A pidfd names one process for good: a signal through
//! it after that process was reaped fails with `ESRCH` and reaches nobody.

use std::{
    io,
    os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd},
};

/// One process, named by a pidfd.
pub struct Pidfd {
    fd: OwnedFd,
    pid: u32,
}

impl Pidfd {
    /// Open one for `pid`, which must be known to be the process meant at
    /// this moment: a child of ours not reaped yet (its number cannot go to
    /// another process before), or a number checked again after the open.
    pub fn open(pid: u32) -> io::Result<Self> {
        let raw = libc::pid_t::try_from(pid).map_err(io::Error::other)?;
        // SAFETY: pidfd_open takes a pid and flags and returns a new
        // descriptor (close-on-exec), which we own.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, raw, 0) };
        if fd < 0 {
            let error = io::Error::last_os_error();
            return Err(io::Error::new(
                error.kind(),
                format!("pidfd_open of process {pid} (Linux 5.3 or later): {error}"),
            ));
        }
        // SAFETY: as above; a descriptor number fits an i32.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        Ok(Self { fd, pid })
    }

    /// One that the parent of `pid` opened before it could reap it, and
    /// handed over (a fork server, for each child it forks).
    pub fn from_fd(fd: OwnedFd, pid: u32) -> Self {
        Self { fd, pid }
    }

    /// Its pid, to read `/proc` (a reading is its own only while
    /// [`exited`](Self::exited) is false after it); never to signal it.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Send `signal`; `ESRCH` once it was reaped.
    pub fn signal(&self, signal: libc::c_int) -> io::Result<()> {
        // SAFETY: pidfd_send_signal only sends a signal to the process of
        // our descriptor (no siginfo, no flags).
        let sent = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.fd.as_raw_fd(),
                signal,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if sent == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Whether it has ended (a zombie, or reaped); never blocks. A pidfd
    /// turns readable when its process ends, whoever its parent.
    pub fn exited(&self) -> bool {
        let mut poll = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd of ours, no wait.
        unsafe { libc::poll(&mut poll, 1, 0) == 1 }
    }
}

impl AsFd for Pidfd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
