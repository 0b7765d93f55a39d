//! End-to-end tests: each starts the real `packhost` binary and talks MCP
//! (or its CLI) to it. One binary, one module per area.

mod approval;
mod asking;
mod caller_offers;
mod calls;
mod cli;
mod code_mode_offers;
mod code_mode_ts;
mod config;
mod discovery;
mod discovery_meaning;
mod exec_py;
mod exec_ts;
mod first_hour;
mod hostile_files;
mod http;
mod jupyter;
mod kept_results;
mod loading;
mod new_pack;
mod notifications;
mod npm_egress;
mod official_clients;
mod pack_offers;
mod proj;
mod prompts;
mod remote_mcp;
mod remote_offers;
mod results;
mod robustness;
mod run_front;
mod sandbox;
mod servers;
mod tasks;
mod tenancy;
mod whole_servers;
