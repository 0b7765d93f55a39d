//! packhost: an MCP tool server whose tools come from pack libraries.
//!
//! The binary is CLI + glue (`main.rs`); the pieces live here:
//! - [`config`]: `packs.toml` with env overrides, errors with file and line;
//! - [`backend`]: a loaded pack and what serves it: a library ([`loader`]:
//!   find and load pack libraries through the stable ABI; [`catalog_cache`]:
//!   what they declared, kept so `serve` lists them before they load),
//!   another MCP server ([`servers`] connects them, [`server_pack`] calls
//!   them), or the host's
//!   own [`builtin`] pack; only libraries cross the ABI;
//! - [`audit`]: the audit trail, recorded off the call path;
//! - [`executor`]: the one path of every call (resolve, validate, time limit,
//!   cancellation, errors as results); the `run` command front is the
//!   `packhost-command` crate; [`approval`]: the user's approval before the
//!   calls `[approval]` names, asked on that path;
//! - [`error`]: the host's errors, one family (config, load, call), each
//!   with a code and the fix;
//! - [`mcp`]: the rmcp server over the executor; [`http`] serves it over
//!   streamable HTTP with [`auth`];
//! - [`cli`]: the subcommands, on top of everything (nothing imports it);
//!   [`integrations`]: `packhost integrations`; [`exit`]: the error a
//!   subcommand stops with; [`shutdown`]: stop signals and releasing packs.
#![deny(missing_docs)]

pub mod approval;
pub mod audit;
pub mod auth;
pub mod backend;
pub mod builtin;
pub mod catalog_cache;
pub mod cli;
pub mod config;
pub mod error;
pub mod executor;
pub mod exit;
pub mod failure;
pub mod http;
pub mod identity;
pub mod integrations;
pub mod loader;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod new_pack;
pub mod output;
pub mod render;
pub mod results;
pub mod search;
pub mod server_pack;
pub mod servers;
pub mod shutdown;
pub mod tool_name;
pub mod web;
