//! Where a downstream MCP server is, and the outbound-address rules.

use std::{
    collections::BTreeMap,
    net::{IpAddr, SocketAddr},
};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::Confinement;

/// A downstream MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment (the host's own are not passed,
        /// apart from `PATH`, `HOME` and `LANG`; a confined server's `HOME`
        /// and `TMPDIR` are its scratch folder unless these say otherwise).
        env: BTreeMap<String, String>,
        /// What it may reach.
        confinement: Confinement,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// `http://` or `https://` URL of the MCP endpoint.
        url: String,
        /// Headers sent with every request (credentials go here).
        headers: BTreeMap<String, String>,
    },
}

impl Endpoint {
    /// For logs and messages: the program or the URL without query, never
    /// an environment value or a header.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Stdio { command, args, .. } => {
                let mut words = vec![command.as_str()];
                words.extend(args.iter().map(String::as_str));
                format!("stdio `{}`", words.join(" "))
            }
            Endpoint::Http { url, .. } => match url::Url::parse(url) {
                Ok(mut url) => {
                    url.set_query(None);
                    url.set_fragment(None);
                    format!("http {url}")
                }
                Err(_) => "http <invalid url>".to_owned(),
            },
        }
    }
}

impl Endpoint {
    /// What must never be shown from what the server says: its environment
    /// and header values, longest first (a value that holds another is
    /// replaced whole).
    pub(crate) fn secrets(&self) -> Vec<String> {
        let values = match self {
            Endpoint::Stdio { env, .. } => env.values(),
            Endpoint::Http { headers, .. } => headers.values(),
        };
        let mut secrets: Vec<String> = values.filter(|v| !v.is_empty()).cloned().collect();
        secrets.sort_by_key(|v| std::cmp::Reverse(v.len()));
        secrets
    }
}

/// Loopback, private, link-local and other non-public addresses: what an
/// SSRF guard keeps a server from reaching (the egress proxy's rule).
pub fn is_private(ip: IpAddr) -> bool {
    egress::address::refused(ip).is_some()
}

/// Refuse a URL whose host is a private address literal (names are checked
/// when they are resolved, by [`PublicOnly`]).
pub(crate) fn check_public_literal(url: &url::Url) -> Result<(), String> {
    let ip = match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
        _ => return Ok(()),
    };
    if is_private(ip) {
        return Err(forbidden(&ip.to_string()));
    }
    Ok(())
}

fn forbidden(host: &str) -> String {
    format!(
        "`{host}` is a private or loopback address, and outbound requests to those are \
         forbidden here (`forbid_private_addresses`)"
    )
}

/// A resolver that drops private and loopback addresses, so a name cannot
/// point an outbound request inside the network.
pub(crate) struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = all.into_iter().filter(|a| !is_private(a.ip())).collect();
            if public.is_empty() {
                return Err(forbidden(&host).into());
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_recognised() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_private(private.parse().unwrap()), "{private}");
        }
        for public in ["8.8.8.8", "1.1.1.1", "2606:4700::1111"] {
            assert!(!is_private(public.parse().unwrap()), "{public}");
        }
        let literal = url::Url::parse("http://[::1]:80/mcp").unwrap();
        assert!(check_public_literal(&literal).is_err());
    }

    #[test]
    fn descriptions_hide_secrets() {
        let http = Endpoint::Http {
            url: "http://h:1/mcp?token=secret".into(),
            headers: [("Authorization".into(), "Bearer secret".into())].into(),
        };
        assert_eq!(http.describe(), "http http://h:1/mcp");
        let stdio = Endpoint::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "server".into()],
            env: [("TOKEN".into(), "secret".into())].into(),
            confinement: Confinement::default(),
        };
        assert_eq!(stdio.describe(), "stdio `npx -y server`");
    }
}
