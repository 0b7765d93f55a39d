//! Child processes for packs, under the rules every pack that runs code
//! shares (one place for each rule):
//!
//! - a child runs in its own process group, and the whole group gets SIGKILL
//!   when the call times out, is cancelled, or the guard is dropped — so
//!   grandchildren (`sh -c 'sleep 100 &'`) never outlive the call;
//! - a killed child is reaped on the runtime (no zombies);
//! - a child is signalled through its pidfd, its group only while the
//!   leader is not yet reaped (the group is killed just before): never by a
//!   saved pid, which may be another process's once reaped;
//! - stdout and stderr are captured while streaming, each capped, with a
//!   marker when cut: memory stays bounded whatever the child prints
//!   ([`CaptureBuffer`], also for output that arrives as messages);
//! - a child's environment is an allow-list, never the host's whole
//!   environment (which holds tokens and credentials);
//! - a [`WarmPool`] keeps pre-started children so a call does not pay the
//!   interpreter's start-up;
//! - code talks to its pack over a private [channel](ChannelPair) (fd 3),
//!   never over the output it prints.
//!
//! Who it is for: pack authors whose functions start processes (`exec_py`,
//! `exec_ts`, `jupyter`).
#![deny(missing_docs)]

mod capture;
mod channel;
mod env;
mod group;
mod pool;

pub use capture::{Capture, CaptureBuffer, TRUNCATED_MARKER};
pub use channel::{CHANNEL_FD, ChannelPair, pass_as_channel};
pub use env::EnvAllowList;
pub use group::{Adopted, Exit, Finished, ProcessGroup, live_members};
pub use pack_sandbox::{
    Bound, Confined, Limits, Mode, Narrowing, Network, Pidfd, Policy, Python, Sandbox,
};
pub use pool::{Demand, Replacement, WARM_UP_DELAY, Wanted, WarmPool};
