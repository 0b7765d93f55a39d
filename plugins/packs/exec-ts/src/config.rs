//! `[packs.exec_ts] config`: what the pack reads at start.

use std::path::PathBuf;

use pack_process::Demand;
use pack_sdk::config::{Children, Sessions};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{network::CodeNetwork, npm};

/// `[packs.exec_ts] config = {...}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The `node` binary: a path, or a name looked up on PATH once at start.
    /// Default `node`. A leading `~` is the home directory.
    #[serde(
        default = "default_node",
        deserialize_with = "pack_sdk::paths::deserialize_home"
    )]
    pub node: PathBuf,
    /// Where notebook sessions live, one directory each (a leading `~` is the
    /// home directory). Default `~/.packhost/notebooks`.
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub notebooks_dir: Option<PathBuf>,
    /// `env_allow`, `sandbox` and `limits` of every process (`execute`,
    /// `cell_execute`, `npm_install`): confined to node's installation
    /// read-only and one writable folder (its own fresh one, or the
    /// session's).
    #[serde(flatten)]
    pub children: Children,
    /// Cap of each of stdout and stderr, in bytes. Default 1 MiB.
    #[serde(default = "default_max_output")]
    pub max_output_bytes: usize,
    /// The most idle `node` processes kept ready for `execute` calls that
    /// need node (without `cwd` and `env`): none before the first such
    /// call, one from then on, one more each time a call had to wait for a
    /// start, none after `pool_idle_secs` without such a call; 0 turns the
    /// pool off. Default 2.
    #[serde(default = "default_pool_size")]
    pub pool_size: usize,
    /// Seconds without a call after which the ready `node` processes are
    /// stopped (the next call starts them again). Default 30.
    #[serde(default = "default_pool_idle_secs")]
    pub pool_idle_secs: u64,
    /// Warm `node` workers that run `execute` blocks needing nothing of
    /// node's, each in a fresh realm (see the pack's docs for which blocks):
    /// at most this many at once, started when blocks need them; 0 runs
    /// every block in a node process of its own. Default 2.
    #[serde(default = "default_realm_workers")]
    pub realm_workers: usize,
    /// How long a realm worker waits for a block before it ends, in
    /// milliseconds. Default 60000.
    #[serde(default = "default_realm_idle_ms")]
    #[schemars(range(min = 1))]
    pub realm_idle_ms: u64,
    /// `share`, `max_sessions` (default 1000) and `max_sessions_per_owner`
    /// (default 100) of notebook sessions.
    #[serde(flatten)]
    pub sessions: Sessions<1000, 100>,
    /// Folders an `execute` `cwd` may be in (a leading `~` is the home
    /// directory), and where `npm_install` may take local packages from.
    /// Default none: `cwd` is refused.
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub cwd_roots: Vec<PathBuf>,
    /// Whether code may write in the `cwd` it is given (it always may in
    /// its own fresh folder). Default false.
    #[serde(default)]
    pub cwd_writable: bool,
    /// What code (`execute`, `cell_execute`) may reach: `false` (the
    /// default) no sockets at all; `true` everything the host can reach;
    /// a list of host names those only, on ports 443 and 80, through an
    /// egress proxy (`HTTPS_PROXY`/`HTTP_PROXY` in code's environment)
    /// that refuses loopback, private and metadata addresses.
    #[serde(default)]
    pub network: CodeNetwork,
    /// Whether `npm_install` may reach `npm_registry`, through an egress
    /// proxy that reaches nothing else (local packages install without).
    /// Default true; false: no network.
    #[serde(default = "default_true")]
    pub npm_network: bool,
    /// The npm registry `npm_install` uses, the one host its proxy
    /// reaches (on ports 443, 80 and the URL's own). Default
    /// `https://registry.npmjs.org/`.
    #[serde(default = "default_npm_registry")]
    pub npm_registry: String,
    /// Packages whose lifecycle scripts (`preinstall`, `install`,
    /// `postinstall`, a native build) run: after `npm_install`, when
    /// installed, confined like npm. Default none: no package's script runs.
    #[serde(default)]
    pub npm_scripts_allow: Vec<String>,
    /// The TypeScript compiler for type checks: the folder of the
    /// `typescript` npm package, 7 or newer (its native compiler), or its
    /// `tsc` binary. A leading `~` is the home directory. Default none:
    /// `typecheck` is refused.
    #[serde(default, deserialize_with = "pack_sdk::paths::deserialize_home")]
    pub typescript: Option<PathBuf>,
    /// Whether `execute` checks TypeScript against the packs' declarations
    /// before running it unless the call says otherwise. Default false.
    #[serde(default)]
    pub typecheck: bool,
}

fn default_true() -> bool {
    true
}

fn default_npm_registry() -> String {
    npm::DEFAULT_REGISTRY.to_owned()
}

impl Config {
    /// How many `node` processes are kept ready for calls.
    pub fn demand(&self) -> Demand {
        Demand::up_to(self.pool_size, self.pool_idle_secs)
    }
}

fn default_node() -> PathBuf {
    "node".into()
}

fn default_max_output() -> usize {
    1 << 20
}

fn default_pool_size() -> usize {
    2
}

fn default_pool_idle_secs() -> u64 {
    30
}

fn default_realm_workers() -> usize {
    2
}

fn default_realm_idle_ms() -> u64 {
    60_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_tilde_in_config_paths_is_the_home_directory() {
        let home = PathBuf::from(std::env::var_os("HOME").unwrap());
        let config: Config = serde_json::from_value(serde_json::json!({
            "node": "~/bin/node", "notebooks_dir": "~/nb",
        }))
        .unwrap();
        assert_eq!(config.node, home.join("bin/node"));
        assert_eq!(config.notebooks_dir, Some(home.join("nb")));
        let config: Config = serde_json::from_value(serde_json::json!({
            "notebooks_dir": "/abs/~/nb",
        }))
        .unwrap();
        assert_eq!(config.node, PathBuf::from("node"));
        assert_eq!(config.notebooks_dir, Some(PathBuf::from("/abs/~/nb")));
        let err = serde_json::from_value::<Config>(serde_json::json!({"notebooks_dir": "~bob/nb"}))
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("`~bob/nb`: `~user` is not expanded"),
            "{err}"
        );
    }

    #[test]
    fn config_refuses_unknown_keys_and_names_them() {
        let err = serde_json::from_value::<pack_sdk::config::Keyed<Config>>(
            serde_json::json!({"nodes": "x"}),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.starts_with("unknown field `nodes`, expected one of "),
            "{err}"
        );
        // The keys of the shared blocks too.
        for key in [
            "`node`",
            "`env_allow`",
            "`limits`",
            "`max_sessions`",
            "`typecheck`",
        ] {
            assert!(err.contains(key), "{key} missing from {err}");
        }
    }
}
