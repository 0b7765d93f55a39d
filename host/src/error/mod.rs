//! The host's errors, one family: each holds the facts, says one sentence
//! naming what was wrong, and carries a stable code and, where the host
//! knows it, what would be right.
//!
//! - [`ConfigError`] (a list of [`ConfigProblem`]s, codes [`ConfigCode`]):
//!   `packs.toml` or the `PACKHOST_*` environment is refused; the host does
//!   not start.
//! - [`LoadError`] ([`LoadReason`], codes `PACK_…`): one pack did not load;
//!   it is reported and skipped, the others serve.
//! - `CallError`: the host refused or ended one call (codes of
//!   `pack_api::codes`).
//!
//! What a caller sees of a failed call is one shape, [`crate::failure::Failure`]
//! (`{code, message, help?}`): a `CallError` becomes one, a pack's own
//! `pack_sdk::PackError` arrives as one over the ABI, and a server pack's
//! `mcp_downstream::DownstreamError` is turned into one by
//! [`crate::servers`].

mod call;
mod config;
mod load;

pub(crate) use self::call::{CallError, Known};
pub use self::{
    config::{ConfigCode, ConfigError, ConfigProblem},
    load::{LoadError, LoadReason},
};
