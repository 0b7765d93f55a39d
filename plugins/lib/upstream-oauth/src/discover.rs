//! Where a user signs in to an MCP server: its protected resource metadata
//! (RFC 9728) names its authorization server, whose metadata (RFC 8414, or
//! OpenID Connect discovery) names the endpoints.

use serde::Deserialize;
use serde_json::Value;
use url::Url;

use crate::{OAuthError, http};

/// What a sign-in to one MCP server needs to know.
#[derive(Debug, Clone)]
pub(crate) struct Server {
    /// The resource to ask a token for (RFC 8707).
    pub(crate) resource: String,
    pub(crate) authorization_endpoint: String,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    /// The scopes the server's metadata lists, space separated.
    pub(crate) scopes: Option<String>,
}

#[derive(Deserialize)]
struct ResourceMetadata {
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
}

#[derive(Deserialize)]
struct ServerMetadata {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    registration_endpoint: Option<String>,
    #[serde(default)]
    code_challenge_methods_supported: Option<Vec<String>>,
}

/// The metadata of the MCP server at `endpoint` and of its authorization
/// server.
pub(crate) async fn discover(
    client: &reqwest::Client,
    endpoint: &str,
) -> Result<Server, OAuthError> {
    let endpoint = Url::parse(endpoint)
        .map_err(|e| OAuthError::Upstream(format!("`{endpoint}` is not a URL: {e}")))?;
    let resource: ResourceMetadata = first_found(
        client,
        &well_known(&endpoint, "oauth-protected-resource"),
        "protected resource metadata (RFC 9728), which a server whose users sign in must publish",
    )
    .await?;
    let Some(issuer) = resource.authorization_servers.first() else {
        return Err(OAuthError::Upstream(format!(
            "the protected resource metadata of {} names no authorization server",
            shown(&endpoint)
        )));
    };
    let issuer_url = Url::parse(issuer).map_err(|e| {
        OAuthError::Upstream(format!(
            "its authorization server `{issuer}` is not a URL: {e}"
        ))
    })?;
    let mut candidates = well_known(&issuer_url, "oauth-authorization-server");
    candidates.extend(well_known(&issuer_url, "openid-configuration"));
    if issuer_url.path() != "/" {
        candidates.push(format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        ));
    }
    let server: ServerMetadata = first_found(
        client,
        &candidates,
        "authorization server metadata (RFC 8414)",
    )
    .await?;
    if server.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
        return Err(OAuthError::Upstream(format!(
            "the authorization server at `{issuer}` says its issuer is `{}`; they must be the same \
             (RFC 8414 §3.3)",
            server.issuer
        )));
    }
    // OAuth 2.1 and MCP: no PKCE, no sign-in (an absent list means none).
    if !server
        .code_challenge_methods_supported
        .is_some_and(|methods| methods.iter().any(|m| m == "S256"))
    {
        return Err(OAuthError::Upstream(format!(
            "the authorization server `{issuer}` does not say it supports PKCE with S256 \
             (`code_challenge_methods_supported`), which MCP requires"
        )));
    }
    Ok(Server {
        resource: resource.resource.unwrap_or_else(|| endpoint.to_string()),
        authorization_endpoint: server.authorization_endpoint,
        token_endpoint: server.token_endpoint,
        registration_endpoint: server.registration_endpoint,
        scopes: (!resource.scopes_supported.is_empty())
            .then(|| resource.scopes_supported.join(" ")),
    })
}

/// `url`'s well-known `name`: the path-suffixed form first, then the
/// origin's (RFC 9728 §3.1, RFC 8414 §3.1).
fn well_known(url: &Url, name: &str) -> Vec<String> {
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let mut candidates = Vec::new();
    if !path.is_empty() {
        candidates.push(format!("{origin}/.well-known/{name}{path}"));
    }
    candidates.push(format!("{origin}/.well-known/{name}"));
    candidates
}

/// The first of `urls` that answers with JSON of type `T`.
async fn first_found<T: serde::de::DeserializeOwned>(
    client: &reqwest::Client,
    urls: &[String],
    what: &str,
) -> Result<T, OAuthError> {
    let mut last = String::new();
    for url in urls {
        match http::get_json(client, url).await {
            Ok(value) => {
                return serde_json::from_value::<T>(value).map_err(|e| {
                    OAuthError::Upstream(format!("{url} is not the {what} expected: {e}"))
                });
            }
            Err(why) => last = why,
        }
    }
    Err(OAuthError::Upstream(format!(
        "found no {what} at {}: {last}",
        urls.join(" or ")
    )))
}

fn shown(url: &Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.to_string()
}

/// What a dynamic registration (RFC 7591) answered.
#[derive(Debug, Deserialize)]
pub(crate) struct Registered {
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<String>,
}

/// Registers packhost as a public client sending users back to `redirect`.
pub(crate) async fn register(
    client: &reqwest::Client,
    endpoint: &str,
    redirect: &str,
) -> Result<Registered, OAuthError> {
    let metadata = serde_json::json!({
        "client_name": "packhost",
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let answer: Value = http::post_json(client, endpoint, &metadata)
        .await
        .map_err(|why| {
            OAuthError::Upstream(format!(
                "the client registration at {endpoint} failed: {why}"
            ))
        })?;
    serde_json::from_value(answer).map_err(|e| {
        OAuthError::Upstream(format!(
            "the client registration at {endpoint} answered no client id: {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_well_known_document_is_looked_for_under_the_path_then_the_origin() {
        let at = |url: &str| well_known(&Url::parse(url).unwrap(), "oauth-protected-resource");
        assert_eq!(
            at("https://tracker.example.com/mcp/"),
            [
                "https://tracker.example.com/.well-known/oauth-protected-resource/mcp",
                "https://tracker.example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            at("http://127.0.0.1:8080"),
            ["http://127.0.0.1:8080/.well-known/oauth-protected-resource"]
        );
    }
}
