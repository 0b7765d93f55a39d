//! `[packs.exec_py] config`: what the pack reads at start.

use std::path::PathBuf;

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
    /// Interpreters forked ahead of demand, each already confined to its
    /// own folder and cgroup.
    #[serde(default = "default_pool_size")]
    pub pool_size: usize,
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

fn default_pool_size() -> usize {
    2
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
