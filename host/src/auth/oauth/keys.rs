//! The issuer's signing keys: its metadata (RFC 8414, or OpenID Connect
//! discovery) names its JWKS, which is fetched in the background on a
//! schedule, and again when a token names a key not yet known (rotation),
//! at most once per `jwks_refetch_secs` so made-up key ids cannot make
//! packhost hammer the issuer. One fetch runs at a time; a request waits
//! for it at most [`WAIT`]. Every fetch is bounded by [`FETCH_TIMEOUT`]
//! and [`MAX_BODY_BYTES`].

use std::{
    str::FromStr as _,
    sync::{Arc, RwLock},
    time::{Duration, Instant},
};

use jsonwebtoken::{
    Algorithm, DecodingKey,
    jwk::{Jwk, PublicKeyUse},
};
use serde_json::Value;
use url::Url;

use super::Rejection;
use crate::config::OAuthConfig;

/// The longest one HTTP exchange with the issuer may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a request waits for the keys: a discovery and a JWKS fetch.
const WAIT: Duration = Duration::from_secs(11);
/// The largest metadata or JWKS document read.
const MAX_BODY_BYTES: usize = 1 << 20;

/// One usable key of the set.
struct Key {
    id: Option<String>,
    /// The algorithm the JWKS pins it to, if it does.
    alg: Option<Algorithm>,
    key: Arc<DecodingKey>,
}

/// The issuer's keys as last fetched.
pub(super) struct Keys {
    issuer: String,
    http: reqwest::Client,
    refresh: Duration,
    refetch: Duration,
    known: RwLock<Arc<Vec<Key>>>,
    /// Held while fetching, so one fetch runs at a time.
    fetching: tokio::sync::Mutex<Fetching>,
}

#[derive(Default)]
struct Fetching {
    /// From the issuer's metadata; forgotten when a fetch from it fails.
    jwks_uri: Option<Url>,
    last_attempt: Option<Instant>,
}

impl Keys {
    pub(super) fn new(config: &OAuthConfig) -> Arc<Self> {
        let http = crate::web::client()
            .connect_timeout(FETCH_TIMEOUT)
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .expect("an HTTP client without TLS options builds");
        Arc::new(Self {
            issuer: config.issuer.clone(),
            http,
            refresh: Duration::from_secs(config.jwks_refresh_secs),
            refetch: Duration::from_secs(config.jwks_refetch_secs),
            known: RwLock::default(),
            fetching: tokio::sync::Mutex::default(),
        })
    }

    /// Fetch the keys now and then every `jwks_refresh_secs` while `keys`
    /// lives; a failed fetch keeps the keys known.
    pub(super) fn refresh_on_schedule(keys: &Arc<Self>) {
        let keys = Arc::downgrade(keys);
        tokio::spawn(async move {
            while let Some(strong) = keys.upgrade() {
                if let Err(why) = strong.fetch_now().await {
                    tracing::warn!("cannot fetch the OAuth issuer's keys (known ones stay): {why}");
                }
                let every = strong.refresh;
                drop(strong);
                tokio::time::sleep(every).await;
            }
        });
    }

    /// Fetch the keys now (after any fetch under way): how many there are.
    pub(super) async fn fetch_now(&self) -> Result<usize, Rejection> {
        let mut fetching = self.fetching.lock().await;
        self.fetch(&mut fetching).await
    }

    /// The key that checks a token signed with `alg` by key `kid`.
    pub(super) async fn key(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Arc<DecodingKey>, Rejection> {
        if let Some(key) = self.find(kid, alg)? {
            return Ok(key);
        }
        let mut fetching = tokio::time::timeout(WAIT, self.fetching.lock())
            .await
            .map_err(|_| {
                Rejection::because(
                    "keys_unavailable",
                    "the issuer's keys are still being fetched",
                )
            })?;
        // Another request may have fetched them while this one waited.
        if let Some(key) = self.find(kid, alg)? {
            return Ok(key);
        }
        let unknown = || {
            Rejection::because(
                "unknown_key",
                "it is signed by a key the issuer does not publish",
            )
        };
        if fetching
            .last_attempt
            .is_some_and(|at| at.elapsed() < self.refetch)
        {
            return Err(unknown());
        }
        tokio::time::timeout(WAIT, self.fetch(&mut fetching))
            .await
            .map_err(|_| {
                Rejection::because(
                    "keys_unavailable",
                    "fetching the issuer's keys took too long",
                )
            })??;
        self.find(kid, alg)?.ok_or_else(unknown)
    }

    /// Whether `key` is still one of the issuer's (not withdrawn by a
    /// fetch since it was found).
    pub(super) fn publishes(&self, key: &Arc<DecodingKey>) -> bool {
        let known = self.known.read().unwrap_or_else(|e| e.into_inner());
        known.iter().any(|known| Arc::ptr_eq(&known.key, key))
    }

    /// A known key named `kid` (or the only one, for a token that names
    /// none) that fits `alg`.
    fn find(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Option<Arc<DecodingKey>>, Rejection> {
        let known = Arc::clone(&self.known.read().unwrap_or_else(|e| e.into_inner()));
        let mut fitting = known.iter().filter(|key| {
            kid.is_none_or(|kid| key.id.as_deref() == Some(kid))
                && key.alg.is_none_or(|pinned| pinned == alg)
                && key.key.family() == alg.family()
        });
        let found = fitting.next().map(|key| Arc::clone(&key.key));
        if kid.is_none() && fitting.next().is_some() {
            return Err(Rejection::because(
                "unknown_key",
                "it names no key (`kid`) and the issuer publishes several",
            ));
        }
        Ok(found)
    }

    /// Fetch the JWKS (discovering where it is first when needed) and keep
    /// its usable keys.
    async fn fetch(&self, fetching: &mut Fetching) -> Result<usize, Rejection> {
        fetching.last_attempt = Some(Instant::now());
        let jwks_uri = match &fetching.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let uri = self.discover().await?;
                fetching.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let set = match self.get_json(&jwks_uri).await {
            Ok(set) => set,
            Err(why) => {
                // The metadata may have moved it.
                fetching.jwks_uri = None;
                return Err(Rejection::because(
                    "keys_unavailable",
                    format!("the JWKS at {jwks_uri}: {why}"),
                ));
            }
        };
        let keys = usable(&set);
        if keys.is_empty() {
            return Err(Rejection::because(
                "keys_unavailable",
                format!(
                    "the JWKS at {jwks_uri} has no public signing key packhost can use (RSA, EC or \
                 OKP with `use` absent or `sig`)"
                ),
            ));
        }
        let count = keys.len();
        *self.known.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
        tracing::debug!(keys = count, "fetched the OAuth issuer's keys");
        Ok(count)
    }

    /// The `jwks_uri` of the issuer's metadata, from the first of RFC 8414's
    /// and OpenID Connect's well-known places that answers; the metadata
    /// must name this very issuer (a mix-up otherwise).
    async fn discover(&self) -> Result<Url, Rejection> {
        let issuer = Url::parse(&self.issuer)
            .map_err(|e| Rejection::because("keys_unavailable", e.to_string()))?;
        let path = issuer.path().trim_end_matches('/');
        let mut rfc8414 = issuer.clone();
        rfc8414.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
        let mut openid = issuer.clone();
        openid.set_path(&format!("{path}/.well-known/openid-configuration"));
        let mut tried = Vec::new();
        for place in [rfc8414, openid] {
            let metadata = match self.get_json(&place).await {
                Ok(metadata) => metadata,
                Err(why) => {
                    tried.push(format!("{place}: {why}"));
                    continue;
                }
            };
            let named = metadata.get("issuer").and_then(Value::as_str);
            if named != Some(self.issuer.as_str()) {
                return Err(Rejection::because(
                    "keys_unavailable",
                    format!(
                        "the metadata at {place} is of issuer {}, not `auth.oauth.issuer` \"{}\"",
                        named.map_or("(none)".to_owned(), |n| format!("\"{n}\"")),
                        self.issuer
                    ),
                ));
            }
            return metadata
                .get("jwks_uri")
                .and_then(Value::as_str)
                .and_then(|uri| Url::parse(uri).ok())
                .ok_or_else(|| {
                    Rejection::because(
                        "keys_unavailable",
                        format!("the metadata at {place} has no `jwks_uri`"),
                    )
                });
        }
        Err(Rejection::because(
            "keys_unavailable",
            format!(
                "no metadata for issuer \"{}\": {}",
                self.issuer,
                tried.join("; ")
            ),
        ))
    }

    /// The JSON document at `url`.
    async fn get_json(&self, url: &Url) -> Result<Value, String> {
        let mut response = self
            .http
            .get(url.clone())
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| format!("cannot fetch it ({e})"))?;
        if !response.status().is_success() {
            return Err(format!("answered HTTP {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("cannot read it ({e})"))?
        {
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(format!("it is larger than {MAX_BODY_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| format!("not JSON ({e})"))
    }
}

/// The public signing keys of JWKS `set`; others (encryption keys,
/// symmetric ones, kinds not known) are left out.
fn usable(set: &Value) -> Vec<Key> {
    let keys = set.get("keys").and_then(Value::as_array);
    keys.into_iter()
        .flatten()
        .filter_map(|key| serde_json::from_value::<Jwk>(key.clone()).ok())
        .filter(|jwk| {
            jwk.common
                .public_key_use
                .as_ref()
                .is_none_or(|u| *u == PublicKeyUse::Signature)
        })
        .filter_map(|jwk| {
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            if key.family() == jsonwebtoken::AlgorithmFamily::Hmac {
                return None;
            }
            let alg = match jwk.common.key_algorithm {
                Some(pinned) => Some(Algorithm::from_str(&pinned.to_string()).ok()?),
                None => None,
            };
            Some(Key {
                id: jwk.common.key_id,
                alg,
                key: Arc::new(key),
            })
        })
        .collect()
}
