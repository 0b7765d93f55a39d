//! `[packs.jupyter] config`: what the pack reads at start.

use std::path::PathBuf;

use pack_sdk::config::{Children, Sessions};
use schemars::JsonSchema;
use serde::Deserialize;

/// Where kernels run.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// ipykernel launched by the pack, over ZeroMQ.
    #[default]
    Local,
    /// A Jupyter Server (`url`, `token`).
    Server,
}

/// `[packs.jupyter] config`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `local` (default) or `server`.
    #[serde(default)]
    pub backend: BackendKind,
    /// local: the Python that has ipykernel; default `python3` on PATH,
    /// resolved once to the real interpreter. A leading `~` is the home
    /// directory.
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub python: Option<PathBuf>,
    /// server: the Jupyter Server, e.g. `http://127.0.0.1:8888`.
    #[serde(default)]
    pub url: Option<String>,
    /// server: its token.
    #[serde(default)]
    pub token: Option<String>,
    /// Sessions idle this long are closed (default 30 min).
    #[serde(default = "default_ttl")]
    pub session_ttl_secs: u64,
    /// `share`, `max_sessions` (at most this many sessions at once on the
    /// host, default 8) and `max_sessions_per_owner` (default:
    /// `max_sessions`).
    #[serde(flatten)]
    pub sessions: Sessions<8, 0>,
    /// Images larger than this (after base64) are dropped with a note
    /// (default 1 MiB).
    #[serde(default = "default_max_image")]
    pub max_image_bytes: usize,
    /// Cap of stdout and of stderr of one execution, each (default 16 MiB).
    #[serde(default = "default_max_output")]
    pub max_output_bytes: usize,
    /// local: how long a kernel may take to start (default 60 s).
    #[serde(default = "default_startup")]
    pub startup_timeout_secs: u64,
    /// local: `env_allow`, `sandbox` and `limits` of each kernel: confined
    /// to its session's own folder (also its `HOME` and `TMPDIR`) with the
    /// Python installation read-only, no network but its own ports on
    /// loopback. A kernel ended for passing a limit fails the running
    /// execution with `LIMIT_EXCEEDED` naming it; the session is then dead
    /// until restarted.
    #[serde(flatten)]
    pub children: Children,
}

fn default_ttl() -> u64 {
    30 * 60
}
fn default_max_image() -> usize {
    1 << 20
}
fn default_max_output() -> usize {
    16 << 20
}
fn default_startup() -> u64 {
    60
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_tilde_in_the_python_path_is_the_home_directory() {
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        let config: Config =
            serde_json::from_value(serde_json::json!({"python": "~/venv/bin/python"})).unwrap();
        assert_eq!(config.python, Some(home.join("venv/bin/python")));
        let config: Config =
            serde_json::from_value(serde_json::json!({"python": "python3"})).unwrap();
        assert_eq!(config.python, Some(PathBuf::from("python3")));
    }
}
