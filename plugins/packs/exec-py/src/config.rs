//! `[packs.exec_py] config`: what the pack reads at start.

use std::path::PathBuf;

use pack_process::Demand;
use pack_sdk::config::Children;
use schemars::JsonSchema;
use serde::Deserialize;

/// `[packs.exec_py] config`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The Python interpreter; default `python3` on PATH, resolved once to the
    /// real binary. A leading `~` is the home directory.
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub python: Option<PathBuf>,
    /// The most interpreters kept forked ahead of demand, each already
    /// confined to its own folder and cgroup: one from the start, one more
    /// each time a call had to wait for a fork, none (and no zygote) after
    /// `pool_idle_secs` without a call. 0: every call forks its own.
    #[serde(default = "default_pool_size")]
    pub pool_size: usize,
    /// Seconds without a call after which the ready interpreters and the
    /// zygote are stopped (the next call starts them again).
    #[serde(default = "default_pool_idle_secs")]
    pub pool_idle_secs: u64,
    /// `env_allow` (`TMPDIR` is set besides, to the call's own temporary
    /// folder), `sandbox` and `limits` of each interpreter: confined to its
    /// folder, no network, bounded.
    #[serde(flatten)]
    pub children: Children,
    /// Cap of stdout, of stderr and of the result, each, in bytes.
    #[serde(default = "default_max_output")]
    pub max_output_bytes: usize,
    /// Folders the `cwd` argument may point into; empty: `cwd` is refused. A
    /// leading `~` is the home directory.
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub cwd_roots: Vec<PathBuf>,
    /// Whether code may write in a `cwd` it is given (it always may in its
    /// own fresh folder).
    #[serde(default)]
    pub cwd_writable: bool,
}

impl Config {
    /// How many interpreters are kept forked ahead of calls.
    pub fn demand(&self) -> Demand {
        Demand::up_to(self.pool_size, self.pool_idle_secs)
    }
}

fn default_pool_size() -> usize {
    2
}

fn default_pool_idle_secs() -> u64 {
    30
}

fn default_max_output() -> usize {
    1 << 20
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_tilde_in_config_paths_is_the_home_directory() {
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        let config: Config = serde_json::from_value(serde_json::json!({
            "python": "~/venv/bin/python", "cwd_roots": ["~/src", "/srv", "~"],
        }))
        .unwrap();
        assert_eq!(config.python, Some(home.join("venv/bin/python")));
        assert_eq!(
            config.cwd_roots,
            [home.join("src"), PathBuf::from("/srv"), home.clone()]
        );
        let err = serde_json::from_value::<Config>(serde_json::json!({"cwd_roots": ["~bob"]}))
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .starts_with("`~bob`: `~user` is not expanded"),
            "{err}"
        );
    }
}
