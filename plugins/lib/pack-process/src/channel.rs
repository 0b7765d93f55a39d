//! Code's private channel to its pack: a socket pair whose far end a child
//! gets as fd 3, apart from the stdout and stderr its code prints on (the
//! code mode bridge and the runners' requests travel there).

use std::{
    io,
    os::{
        fd::{AsRawFd, RawFd},
        unix::net::UnixStream as StdUnixStream,
    },
};

use tokio::net::UnixStream;

/// The file descriptor a child reads its channel from.
pub const CHANNEL_FD: RawFd = 3;

/// Both ends of a channel, until the child is spawned.
pub struct ChannelPair {
    ours: StdUnixStream,
    theirs: StdUnixStream,
}

impl ChannelPair {
    /// A fresh pair.
    pub fn new() -> io::Result<Self> {
        let (ours, theirs) = StdUnixStream::pair()?;
        Ok(Self { ours, theirs })
    }

    /// The child `command` starts gets the far end as its fd 3.
    pub fn pass_to(&self, command: &mut tokio::process::Command) {
        pass_as_channel(command, self.theirs.as_raw_fd());
    }

    /// Once the child is spawned: the far end closes here (only the child
    /// holds it), and ours is returned for the runtime.
    pub fn into_ours(self) -> io::Result<UnixStream> {
        drop(self.theirs);
        self.ours.set_nonblocking(true)?;
        UnixStream::from_std(self.ours)
    }
}

/// Give the child `fd` as its fd 3.
pub fn pass_as_channel(command: &mut tokio::process::Command, fd: RawFd) {
    // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let ok = if fd == CHANNEL_FD {
                // Already in place: only drop close-on-exec.
                libc::fcntl(fd, libc::F_SETFD, 0) >= 0
            } else {
                libc::dup2(fd, CHANNEL_FD) >= 0
            };
            if ok {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        });
    }
}
