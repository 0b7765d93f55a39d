//! `[auth.oauth]`: packhost as an OAuth 2.1 resource server. Who the caller
//! is and what they may call come from a JWT access token of one issuer:
//! claims name the user and organisation, scopes (or another claim) grant
//! the same allow-list `[[auth.tokens]]` has.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::error::{ConfigCode, ConfigProblem};

/// Signature algorithms a token may use: asymmetric only. HMAC would need
/// the issuer's secret here, and a verifier that accepts it can be fooled
/// with a token "signed" with the issuer's public key.
const ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// `[auth.oauth]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// The authorization server's issuer URL, exactly as its tokens' `iss`
    /// says; its metadata (and so its JWKS) is discovered from it.
    pub issuer: String,
    /// This server's resource URI, e.g. `https://mcp.example.com/mcp`: what
    /// clients ask tokens for (RFC 8707) and what the protected resource
    /// metadata names.
    pub resource: String,
    /// The `aud` values accepted; empty: `resource` only.
    #[serde(default)]
    pub audiences: Vec<String>,
    /// The signature algorithms accepted (asymmetric ones only).
    #[serde(default = "default_algorithms")]
    pub algorithms: Vec<String>,
    /// The claim that names the user.
    #[serde(default = "default_user_claim")]
    pub user_claim: String,
    /// The claim that names the organisation; or `org` for one fixed
    /// organisation.
    #[serde(default)]
    pub org_claim: Option<String>,
    /// Every caller's organisation, when no claim says it.
    #[serde(default)]
    pub org: Option<String>,
    /// The claim whose values (space-separated or a list) are looked up in
    /// `scopes`: `scope` by RFC 9068, `scp` for some providers, or any
    /// claim of roles or groups.
    #[serde(default = "default_scope_claim")]
    pub scope_claim: String,
    /// Scope → the tools it allows (`pack.function`, `pack.*`, `run`, `*`),
    /// as `[[auth.tokens]].tools`. Empty: every valid token may call
    /// everything; otherwise a token may call what its scopes allow
    /// together, nothing when none is listed here.
    #[serde(default)]
    pub scopes: BTreeMap<String, Vec<String>>,
    /// A value of `scope_claim` that makes its holder the admin of their
    /// organisation (may read its audit trail, `packhost.audit`), e.g.
    /// `packhost:admin`, or a role or group when `scope_claim` names one.
    #[serde(default)]
    pub admin_scope: Option<String>,
    /// Clock skew allowed on `exp` and `nbf`, in seconds.
    #[serde(default = "default_leeway")]
    pub leeway_secs: u64,
    /// How often the issuer's keys are fetched again, in seconds.
    #[serde(default = "default_refresh")]
    pub jwks_refresh_secs: u64,
    /// A token signed by a key not yet known fetches the keys again, at
    /// most once this often (seconds): rotation is followed, and made-up
    /// key ids cannot make packhost hammer the issuer.
    #[serde(default = "default_refetch")]
    pub jwks_refetch_secs: u64,
}

fn default_algorithms() -> Vec<String> {
    ["RS256", "PS256", "ES256", "EdDSA"]
        .map(String::from)
        .to_vec()
}

fn default_user_claim() -> String {
    "sub".to_owned()
}

fn default_scope_claim() -> String {
    "scope".to_owned()
}

fn default_leeway() -> u64 {
    30
}

fn default_refresh() -> u64 {
    300
}

fn default_refetch() -> u64 {
    10
}

/// Most clock skew worth allowing: past it an expired token lives on.
const MAX_LEEWAY_SECS: u64 = 300;

impl OAuthConfig {
    /// The `aud` values accepted.
    pub fn accepted_audiences(&self) -> Vec<String> {
        if self.audiences.is_empty() {
            vec![self.resource.clone()]
        } else {
            self.audiences.clone()
        }
    }

    /// Everything wrong with the section, one problem each.
    pub(crate) fn problems(&self) -> Vec<ConfigProblem> {
        let mut problems = Vec::new();
        let value = |what: String| ConfigProblem::new(ConfigCode::Value, what);
        for (key, url) in [("issuer", &self.issuer), ("resource", &self.resource)] {
            if let Err(why) = check_url(url) {
                problems.push(value(format!("`auth.oauth.{key}` = \"{url}\": {why}")));
            }
        }
        if self.algorithms.is_empty() {
            problems.push(value(format!(
                "`auth.oauth.algorithms` is empty: name at least one of {}",
                ALGORITHMS.join(", ")
            )));
        }
        for alg in &self.algorithms {
            if ALGORITHMS.contains(&alg.as_str()) {
                continue;
            }
            let why = if alg.to_ascii_uppercase().starts_with("HS") {
                "HMAC is never accepted: it needs the issuer's secret, and would let a token \
                 signed with the issuer's public key pass"
            } else if alg.eq_ignore_ascii_case("none") {
                "an unsigned token is never accepted"
            } else {
                "not a signature algorithm packhost accepts"
            };
            problems.push(
                value(format!("`auth.oauth.algorithms`: \"{alg}\": {why}"))
                    .with_fix(format!("use some of {}", ALGORITHMS.join(", "))),
            );
        }
        match (&self.org_claim, &self.org) {
            (Some(_), Some(_)) => problems.push(value(
                "`auth.oauth` sets both `org_claim` and `org`: say where the organisation \
                 comes from once"
                    .to_owned(),
            )),
            (None, None) => problems.push(
                value("`auth.oauth` says nothing of the organisation".to_owned()).with_fix(
                    "set `org_claim = \"CLAIM\"` (a claim of the token names it) or `org = \"NAME\"` \
                     (every caller's)",
                ),
            ),
            _ => {}
        }
        for (key, claim) in [
            ("user_claim", Some(&self.user_claim)),
            ("org_claim", self.org_claim.as_ref()),
            ("org", self.org.as_ref()),
            ("scope_claim", Some(&self.scope_claim)),
            ("admin_scope", self.admin_scope.as_ref()),
        ] {
            if claim.is_some_and(|c| c.trim().is_empty()) {
                problems.push(value(format!("`auth.oauth.{key}` is empty")));
            }
        }
        for (scope, tools) in &self.scopes {
            // RFC 6749's scope-token: it also travels in a header.
            let token =
                |b: u8| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b);
            if scope.is_empty() || !scope.bytes().all(token) {
                problems.push(value(format!(
                    "`auth.oauth.scopes.\"{scope}\"`: a scope is one word of printable ASCII \
                     without `\"` or `\\` (RFC 6749)"
                )));
            }
            if tools.is_empty() {
                problems.push(value(format!(
                    "`auth.oauth.scopes.\"{scope}\"` allows no tool: list some (`pack.*`, `run`) \
                     or remove the scope"
                )));
            }
        }
        if self.leeway_secs > MAX_LEEWAY_SECS {
            problems.push(value(format!(
                "`auth.oauth.leeway_secs` = {}: at most {MAX_LEEWAY_SECS} (a clock skew, not a \
                 token lifetime)",
                self.leeway_secs
            )));
        }
        for (key, secs) in [
            ("jwks_refresh_secs", self.jwks_refresh_secs),
            ("jwks_refetch_secs", self.jwks_refetch_secs),
        ] {
            if secs == 0 {
                problems.push(value(format!(
                    "`auth.oauth.{key}` must be at least 1 (seconds)"
                )));
            }
        }
        problems
    }
}

/// Why `text` cannot be an issuer or resource URI: it must be an absolute
/// `https` URL (`http` on a loopback address only) without a fragment or
/// query.
fn check_url(text: &str) -> Result<(), String> {
    let url = Url::parse(text).map_err(|e| format!("not a URL ({e})"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => return Err("must be `https` (plain `http` only on a loopback address)".into()),
        other => return Err(format!("must be an `https` URL, not `{other}`")),
    }
    if url.fragment().is_some() || url.query().is_some() {
        return Err("must have no query or fragment".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> OAuthConfig {
        toml::from_str(
            r#"
            issuer = "https://login.example.com/realms/acme"
            resource = "https://mcp.example.com/mcp"
            org = "acme"
            "#,
        )
        .unwrap()
    }

    #[test]
    fn a_minimal_section_is_right_and_accepts_its_resource() {
        let config = config();
        assert!(config.problems().is_empty(), "{:?}", config.problems());
        assert_eq!(config.accepted_audiences(), ["https://mcp.example.com/mcp"]);
        assert_eq!(config.user_claim, "sub");
    }

    #[test]
    fn wrong_values_are_named_with_what_would_be_right() {
        let mut config = config();
        config.issuer = "http://login.example.com".into();
        config.resource = "https://mcp.example.com/mcp#x".into();
        config.algorithms = vec!["HS256".into(), "none".into(), "RS256".into()];
        config.org_claim = Some("org".into());
        config.scopes.insert("read all".into(), vec![]);
        config.leeway_secs = 3600;
        config.jwks_refetch_secs = 0;
        let problems: Vec<String> = config.problems().iter().map(|p| p.to_string()).collect();
        let all = problems.join("\n");
        for expected in [
            "`auth.oauth.issuer` = \"http://login.example.com\": must be `https`",
            "`auth.oauth.resource` = \"https://mcp.example.com/mcp#x\": must have no query or fragment",
            "\"HS256\": HMAC is never accepted",
            "\"none\": an unsigned token is never accepted",
            "sets both `org_claim` and `org`",
            "`auth.oauth.scopes.\"read all\"`: a scope is one word",
            "`auth.oauth.scopes.\"read all\"` allows no tool",
            "`auth.oauth.leeway_secs` = 3600: at most 300",
            "`auth.oauth.jwks_refetch_secs` must be at least 1",
        ] {
            assert!(all.contains(expected), "missing {expected:?} in:\n{all}");
        }
        assert_eq!(problems.len(), 9, "{all}");
    }

    #[test]
    fn plain_http_is_for_loopback_only() {
        assert!(check_url("http://127.0.0.1:8080/").is_ok());
        assert!(check_url("http://localhost:8080/mcp").is_ok());
        assert!(check_url("http://[::1]:8080").is_ok());
        assert!(check_url("http://10.0.0.1/").is_err());
        assert!(check_url("ftp://example.com/").is_err());
        assert!(check_url("example.com").is_err());
    }
}
