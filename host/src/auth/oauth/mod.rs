//! packhost as an OAuth 2.1 resource server (`[auth.oauth]`): a JWT access
//! token is checked against the issuer's keys ([`keys`]): an accepted
//! asymmetric algorithm, its signature, `iss`, `aud` (RFC 8707: tokens
//! bound to this server), `exp` and `nbf` with a small leeway. Its claims
//! then name the caller, and its scopes grant the allow-list. The protected
//! resource metadata (RFC 9728) and the `WWW-Authenticate` challenges tell
//! clients where to get a token and which scope a call needs.

mod keys;
mod verified;

use std::{collections::BTreeSet, fmt, str::FromStr, sync::Arc};

use jsonwebtoken::{Algorithm, Validation, errors::ErrorKind};
use serde_json::{Map, Value, json};

use self::{keys::Keys, verified::Verified};
use super::{Authenticated, sha256};
use crate::{
    config::OAuthConfig,
    identity::{Identity, ToolFilter},
};

/// Why an access token was refused: for the log and the audit trail (it
/// never holds the token) and for `packhost check`; the caller only hears
/// "not valid".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    why: String,
    /// A short code of the fault (`expired`, `bad_signature`, ...).
    pub reason: &'static str,
    /// Who the token names, when the issuer's key signed it (so its claims
    /// are the issuer's) and only a claim check failed: (org, user).
    pub signed_for: Option<(String, Option<String>)>,
}

impl Rejection {
    /// Refused for `reason` (a short code), said as `why`.
    pub(super) fn because(reason: &'static str, why: impl Into<String>) -> Self {
        Self {
            why: why.into(),
            reason,
            signed_for: None,
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.why)
    }
}

/// Checks access tokens of one issuer for this resource.
pub struct Verifier {
    config: OAuthConfig,
    algorithms: Vec<Algorithm>,
    /// Everything but the algorithm, which is the token's (once accepted).
    validation: Validation,
    keys: Arc<Keys>,
    verified: Verified,
}

impl Verifier {
    /// From a checked `[auth.oauth]`.
    pub fn new(config: &OAuthConfig) -> Self {
        let algorithms = config
            .algorithms
            .iter()
            .filter_map(|alg| Algorithm::from_str(alg).ok())
            .collect();
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[&config.issuer]);
        validation.set_audience(&config.accepted_audiences());
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = config.leeway_secs;
        validation.validate_nbf = true;
        Self {
            algorithms,
            validation,
            keys: Keys::new(config),
            verified: Verified::default(),
            config: config.clone(),
        }
    }

    /// The issuer whose tokens are accepted.
    pub fn issuer(&self) -> &str {
        &self.config.issuer
    }

    /// Keep the issuer's keys fresh in the background from now on (in a
    /// tokio runtime).
    pub fn start(&self) {
        Keys::refresh_on_schedule(&self.keys);
    }

    /// Who `token` stands for, or why it is refused.
    pub async fn verify(&self, token: &str) -> Result<Authenticated, Rejection> {
        let (digest, now) = (sha256(token), unix_now());
        if let Some(caller) = self
            .verified
            .get(&digest, now, |key| self.keys.publishes(key))
        {
            return Ok(caller);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| match e.kind() {
            ErrorKind::Json(_) => Rejection::because(
                "algorithm",
                "its header names no algorithm packhost knows (`none`?)",
            ),
            _ => Rejection::because("malformed", "not a JWT"),
        })?;
        if !self.algorithms.contains(&header.alg) {
            return Err(Rejection::because(
                "algorithm",
                format!(
                    "signed with {:?}, which `auth.oauth.algorithms` does not accept",
                    header.alg
                ),
            ));
        }
        let key = self.keys.key(header.kid.as_deref(), header.alg).await?;
        let mut validation = self.validation.clone();
        validation.algorithms = vec![header.alg];
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| {
                let (code, why) = reason(e.kind());
                let mut rejection = Rejection::because(code, why);
                if signature_held(e.kind()) {
                    rejection.signed_for = self.signed_for(token, &key, &validation);
                }
                rejection
            })?
            .claims;
        let caller = self.caller(&claims)?;
        // `exp` is a required claim, checked above.
        if let Some(exp) = claims.get("exp").and_then(Value::as_u64) {
            let refused_from = exp.saturating_add(self.config.leeway_secs);
            self.verified
                .keep(digest, caller.clone(), key, refused_from, now);
        }
        Ok(caller)
    }

    /// Who a token whose signature held names (its claims are the
    /// issuer's): what the audit trail files its refusal under.
    fn signed_for(
        &self,
        token: &str,
        key: &jsonwebtoken::DecodingKey,
        validation: &Validation,
    ) -> Option<(String, Option<String>)> {
        let mut signature_only = validation.clone();
        signature_only.validate_exp = false;
        signature_only.validate_nbf = false;
        signature_only.validate_aud = false;
        signature_only.iss = None;
        signature_only.required_spec_claims.clear();
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, key, &signature_only)
            .ok()?
            .claims;
        let text = |claim: &str| claims.get(claim).and_then(Value::as_str).map(str::to_owned);
        let org = match (&self.config.org, &self.config.org_claim) {
            (Some(org), _) => org.clone(),
            (None, Some(claim)) => text(claim)?,
            (None, None) => return None,
        };
        Some((org, text(&self.config.user_claim)))
    }

    /// The caller `claims` name, with the tools their scopes allow.
    fn caller(&self, claims: &Map<String, Value>) -> Result<Authenticated, Rejection> {
        let text = |claim: &str| {
            claims
                .get(claim)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| {
                    let why = format!("it has no `{claim}` claim (a string)");
                    Rejection::because("missing_claim", why)
                })
        };
        let user = text(&self.config.user_claim)?;
        let org = match (&self.config.org, &self.config.org_claim) {
            (Some(org), _) => org.clone(),
            (None, Some(claim)) => text(claim)?,
            (None, None) => unreachable!("the config check asks for one of them"),
        };
        let scopes = granted(claims.get(&self.config.scope_claim));
        let allowed = (!self.config.scopes.is_empty()).then(|| {
            let tools = scopes
                .iter()
                .filter_map(|scope| self.config.scopes.get(scope))
                .flatten()
                .cloned()
                .collect();
            Arc::new(ToolFilter::new(tools))
        });
        let admin = (self.config.admin_scope.as_ref()).is_some_and(|admin| scopes.contains(admin));
        Ok(Authenticated {
            principal: sha256(&format!("oauth\n{org}\n{user}")),
            identity: Identity {
                user,
                org,
                allowed,
                admin,
            },
            scopes: Some(scopes),
        })
    }

    /// The scope to ask for besides `granted` so that `tool` may be
    /// called: the first configured scope that allows it, judged by its
    /// name alone (whether the tool exists is not told). `None` when no
    /// scope would.
    pub fn scope_for(&self, tool: &str) -> Option<&str> {
        self.config
            .scopes
            .iter()
            .find(|(_, tools)| ToolFilter::new(tools.to_vec()).allows(tool))
            .map(|(scope, _)| scope.as_str())
    }

    /// Where the protected resource metadata is: `/.well-known/
    /// oauth-protected-resource` inserted before the resource URI's path
    /// (RFC 9728 §3.1).
    pub fn metadata_url(&self) -> String {
        let resource = url::Url::parse(&self.config.resource).expect("checked at load");
        let path = resource.path().trim_end_matches('/');
        let mut url = resource.clone();
        url.set_path(&format!("/.well-known/oauth-protected-resource{path}"));
        url.to_string()
    }

    /// The protected resource metadata (RFC 9728): this resource, its
    /// authorization server, and the scopes it knows.
    pub fn metadata(&self) -> Value {
        let mut metadata = json!({
            "resource": self.config.resource,
            "authorization_servers": [self.config.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "packhost",
        });
        if !self.config.scopes.is_empty() {
            metadata["scopes_supported"] = json!(self.config.scopes.keys().collect::<Vec<_>>());
        }
        metadata
    }

    /// The `WWW-Authenticate` value of a 401: where the metadata is, and
    /// `invalid_token` when a token was sent.
    pub fn unauthorized_challenge(&self, had_token: bool) -> String {
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url());
        if had_token {
            challenge.push_str(
                ", error=\"invalid_token\", error_description=\"the access token is not valid\"",
            );
        }
        challenge
    }

    /// The `WWW-Authenticate` value of a 403 for a caller granted
    /// `granted` that needs `scope` too: the scopes to ask for (the ones
    /// held are kept, so stepping up loses nothing).
    pub fn insufficient_scope_challenge(&self, granted: &[String], scope: &str) -> String {
        let mut scopes: BTreeSet<&str> = granted.iter().map(String::as_str).collect();
        scopes.insert(scope);
        let scopes: Vec<&str> = scopes.into_iter().collect();
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\", \
             error_description=\"this call needs scope {scope}\"",
            scopes.join(" "),
            self.metadata_url()
        )
    }

    /// Fetch the issuer's metadata and keys now: what `packhost check`
    /// reports.
    pub async fn probe(&self) -> Result<usize, Rejection> {
        self.keys.fetch_now().await
    }
}

/// Seconds since the epoch, as `exp` counts them.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// The scopes a claim grants: space-separated (`scope`, RFC 9068) or a list
/// (`scp`, `roles`, `groups`).
fn granted(claim: Option<&Value>) -> Vec<String> {
    match claim {
        Some(Value::String(text)) => text.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// A checked token's fault: a short code and the words.
fn reason(kind: &ErrorKind) -> (&'static str, String) {
    match kind {
        ErrorKind::InvalidSignature => (
            "bad_signature",
            "its signature does not verify with the issuer's key".into(),
        ),
        ErrorKind::ExpiredSignature => ("expired", "it has expired".into()),
        ErrorKind::ImmatureSignature => ("not_yet_valid", "it is not valid yet (`nbf`)".into()),
        ErrorKind::InvalidIssuer => ("wrong_issuer", "it was issued by another issuer".into()),
        ErrorKind::InvalidAudience => (
            "wrong_audience",
            "its audience is not this resource (`auth.oauth.audiences`)".into(),
        ),
        ErrorKind::InvalidAlgorithm => (
            "algorithm",
            "its algorithm does not fit the issuer's key".into(),
        ),
        ErrorKind::MissingRequiredClaim(claim) => {
            ("malformed", format!("it has no `{claim}` claim"))
        }
        ErrorKind::InvalidClaimFormat(claim) => {
            ("malformed", format!("its `{claim}` claim is malformed"))
        }
        _ => ("malformed", "it is malformed".into()),
    }
}

/// Whether a token refused for `kind` had a signature that held: only a
/// claim (time, issuer, audience) failed, checked after the signature.
fn signature_held(kind: &ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::ExpiredSignature
            | ErrorKind::ImmatureSignature
            | ErrorKind::InvalidIssuer
            | ErrorKind::InvalidAudience
    )
}

#[cfg(test)]
mod tests;
