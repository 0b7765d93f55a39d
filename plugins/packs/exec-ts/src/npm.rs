//! How `npm_install` runs npm: no package's lifecycle scripts during the
//! install, then those of the packages the config allows (`npm rebuild`);
//! the registry its only network, through an egress proxy of the call's own.

use std::{collections::BTreeMap, ffi::OsString, io, path::Path};

use egress::{Allow, Bounds, Proxy};
use pack_process::Network;

use crate::{node::ExecOutput, notebook};

/// The default of `npm_registry`.
pub const DEFAULT_REGISTRY: &str = "https://registry.npmjs.org/";

/// npm's settings from the pack's config.
pub struct Npm {
    registry: String,
    /// What the proxy reaches; `None`: no network.
    egress: Option<Allow>,
    /// Packages whose scripts run.
    scripts_allow: Vec<String>,
}

impl Npm {
    /// From `npm_registry`, `npm_network` and `npm_scripts_allow`, or why
    /// they are wrong.
    pub fn new(
        registry: String,
        network: bool,
        scripts_allow: Vec<String>,
    ) -> Result<Self, String> {
        let url = url::Url::parse(&registry)
            .ok()
            .filter(|url| ["http", "https"].contains(&url.scheme()))
            .ok_or_else(|| {
                format!("`npm_registry` {registry:?} is not an http(s) URL; give e.g. {DEFAULT_REGISTRY:?}")
            })?;
        let host = match url.host() {
            Some(url::Host::Domain(name)) => name.to_owned(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err(format!("`npm_registry` {registry:?} has no host")),
        };
        // Tarballs may come over either scheme, and the registry's own port.
        let ports = [443, 80].into_iter().chain(url.port());
        if let Some(name) = scripts_allow.iter().find(|name| !is_package_name(name)) {
            return Err(format!(
                "`npm_scripts_allow` entry {name:?} is not an npm package name (like `esbuild` or `@scope/name`)"
            ));
        }
        Ok(Self {
            registry,
            egress: network.then(|| Allow::new([host], ports)),
            scripts_allow,
        })
    }

    /// The network of one call, and the proxy that is its way out (it
    /// serves until dropped, so keep it for the call).
    pub fn egress(&self) -> io::Result<(Network, Option<Proxy>)> {
        let Some(allow) = &self.egress else {
            return Ok((Network::None, None));
        };
        let proxy = Proxy::start(allow.clone(), Bounds::default())?;
        Ok((Network::Proxy(proxy.port()), Some(proxy)))
    }

    /// npm's environment: the registry, and the proxy for every URL.
    pub fn env(&self, proxy: Option<&Proxy>) -> BTreeMap<String, String> {
        let mut env = BTreeMap::from([("npm_config_registry".to_owned(), self.registry.clone())]);
        if let Some(proxy) = proxy {
            for key in ["npm_config_proxy", "npm_config_https_proxy"] {
                env.insert(key.to_owned(), proxy.url());
            }
            env.insert("npm_config_noproxy".to_owned(), String::new());
        }
        env
    }

    /// The allowed packages installed in `session`: theirs are the scripts
    /// to run.
    pub fn scripted(&self, session: &Path) -> Vec<String> {
        let Ok(session) = notebook::session_dir(session) else {
            return Vec::new();
        };
        // A real folder, not a link code left there.
        self.scripts_allow
            .iter()
            .filter(|name| {
                session
                    .open_dir(Path::new("node_modules").join(name))
                    .is_ok()
            })
            .cloned()
            .collect()
    }
}

/// `output` with what `proxy` refused at its end: npm shows a refusal only
/// as its status.
pub fn note_refusals(output: &mut ExecOutput, proxy: Option<&Proxy>) {
    for line in proxy.map(Proxy::refusals).unwrap_or_default() {
        if !output.stderr.is_empty() && !output.stderr.ends_with('\n') {
            output.stderr.push('\n');
        }
        output.stderr.push_str(&format!("[{line}]\n"));
    }
}

/// `npm install` of `packages` with no lifecycle script; a local package is
/// copied in (`--install-links`), not linked: cells read only their
/// session's folder.
pub fn install_args(packages: &[String]) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "install",
        "--no-audit",
        "--no-fund",
        "--no-progress",
        "--install-links",
        "--ignore-scripts",
    ]
    .map(OsString::from)
    .to_vec();
    args.extend(packages.iter().map(OsString::from));
    args
}

/// `npm rebuild` of `names`, which runs their install scripts (and native
/// builds), whatever an npmrc says.
pub fn rebuild_args(names: &[String]) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["rebuild", "--ignore-scripts=false"]
        .map(OsString::from)
        .to_vec();
    args.extend(names.iter().map(OsString::from));
    args
}

/// `name` or `@scope/name`, each part of the characters npm allows and not
/// starting with `.`, `_` or `-`: never a flag, never a path out of
/// `node_modules`.
fn is_package_name(name: &str) -> bool {
    let part = |p: &str| {
        p.starts_with(|c: char| c.is_ascii_alphanumeric())
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
    };
    match name.strip_prefix('@').map(|scoped| scoped.split_once('/')) {
        Some(Some((scope, name))) => part(scope) && part(name),
        Some(None) => false,
        None => part(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_are_names_and_nothing_else() {
        for name in ["esbuild", "@swc/core", "node-gyp", "JSONStream", "a.b_c~d"] {
            assert!(is_package_name(name), "{name}");
        }
        for name in [
            "",
            "-g",
            "--global",
            ".bin",
            "_x",
            "..",
            "../x",
            "@scope",
            "@scope/",
            "@/x",
            "@scope/../x",
            "a/b",
            "a b",
        ] {
            assert!(!is_package_name(name), "{name}");
        }
    }

    #[test]
    fn the_registry_is_the_one_host_and_its_port_is_allowed() {
        let npm = Npm::new("https://npm.example.org:8443/repo/".into(), true, vec![]).unwrap();
        assert_eq!(
            npm.egress,
            Some(Allow::new(["npm.example.org".into()], [80, 443, 8443]))
        );
        let offline = Npm::new(DEFAULT_REGISTRY.into(), false, vec![]).unwrap();
        assert_eq!(offline.egress, None);
        assert_eq!(offline.env(None)["npm_config_registry"], DEFAULT_REGISTRY);
        for wrong in [
            "registry.npmjs.org",
            "ftp://registry.npmjs.org/",
            "file:///x",
        ] {
            let err = Npm::new(wrong.into(), true, vec![]).err().unwrap();
            assert!(err.contains("`npm_registry`"), "{err}");
        }
        let err = Npm::new(DEFAULT_REGISTRY.into(), true, vec!["--global".into()])
            .err()
            .unwrap();
        assert!(
            err.contains("`npm_scripts_allow` entry \"--global\""),
            "{err}"
        );
    }
}
