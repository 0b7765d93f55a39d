//! What code (`execute`, `cell_execute`) may reach over the network: the
//! `network` key of the pack's config.

use std::collections::BTreeMap;

use egress::{Allow, Bounds, Proxy};
use pack_process::Network;
use schemars::JsonSchema;
use serde::Deserialize;

/// `network = false | true | ["host", ...]`.
#[derive(Debug, Clone, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(untagged)]
pub enum CodeNetwork {
    /// `false`: no sockets at all (the default); `true`: everything the
    /// host can reach.
    Switch(bool),
    /// These hosts only (ports 443 and 80), through an egress proxy that
    /// refuses loopback, private, link-local and metadata addresses.
    Hosts(Vec<String>),
}

impl Default for CodeNetwork {
    fn default() -> Self {
        Self::Switch(false)
    }
}

/// Code's network as the sandbox enforces it, the variables that point
/// code at the proxy, and the proxy (it serves while kept).
pub struct Egress {
    pub network: Network,
    pub env: BTreeMap<String, String>,
    pub proxy: Option<Proxy>,
}

impl CodeNetwork {
    /// Start what `self` needs (inside the pack's runtime), or why the list
    /// is wrong.
    pub fn start(&self) -> Result<Egress, String> {
        let hosts = match self {
            Self::Switch(on) => {
                return Ok(Egress {
                    network: if *on { Network::Full } else { Network::None },
                    env: BTreeMap::new(),
                    proxy: None,
                });
            }
            Self::Hosts(hosts) => hosts,
        };
        if let Some(bad) = hosts.iter().find(|host| !is_host_name(host)) {
            return Err(format!(
                "`network` entry {bad:?} is not a host name; list names like \"api.github.com\" \
                 (ports 443 and 80), or set `network = true` for every host"
            ));
        }
        let proxy = Proxy::start(
            Allow::new(hosts.iter().cloned(), [443, 80]),
            Bounds::default(),
        )
        .map_err(|e| format!("cannot start code's egress proxy: {e}"))?;
        // Clients that follow the usual variables go through it (Python's,
        // curl's; node's fetch from 22.21 and 24 with NODE_USE_ENV_PROXY);
        // anything else cannot connect at all.
        let url = proxy.url();
        let env = ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"]
            .into_iter()
            .map(|key| (key.to_owned(), url.clone()))
            .chain([("NODE_USE_ENV_PROXY".to_owned(), "1".to_owned())])
            .collect();
        Ok(Egress {
            network: Network::Proxy(proxy.port()),
            env,
            proxy: Some(proxy),
        })
    }
}

/// Letters, digits, `-` and `.`, not empty, no port or scheme.
fn is_host_name(host: &str) -> bool {
    !host.is_empty()
        && !host.starts_with(['.', '-'])
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_reads_as_a_switch_or_a_list_of_host_names() {
        let read = |v: serde_json::Value| serde_json::from_value::<CodeNetwork>(v).unwrap();
        assert_eq!(read(serde_json::json!(true)), CodeNetwork::Switch(true));
        assert_eq!(
            read(serde_json::json!(["pypi.org"])),
            CodeNetwork::Hosts(vec!["pypi.org".into()])
        );
        for bad in ["https://pypi.org", "pypi.org:443", "", "../x"] {
            let err = CodeNetwork::Hosts(vec![bad.into()]).start().err().unwrap();
            assert!(err.contains("is not a host name"), "{bad}: {err}");
        }
    }
}
