//! The few HTTP exchanges of a sign-in, each time-limited; what goes wrong
//! is said without a body that could hold a secret.

use std::time::Duration;

use serde_json::Value;

/// One exchange with an authorization server or a metadata document.
const TIME_LIMIT: Duration = Duration::from_secs(10);
/// Larger answers are not metadata or tokens.
const MAX_BODY: usize = 256 * 1024;

/// Why a token endpoint said no: its `error` code (`invalid_grant`...) and
/// description, or the status.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) error: Option<String>,
    pub(crate) said: String,
}

pub(crate) async fn get_json(client: &reqwest::Client, url: &str) -> Result<Value, String> {
    let response = client
        .get(url)
        .header("accept", "application/json")
        .timeout(TIME_LIMIT)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    json_of(response).await.map_err(|refused| refused.said)
}

pub(crate) async fn post_json(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
) -> Result<Value, String> {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(body.to_string())
        .timeout(TIME_LIMIT)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    json_of(response).await.map_err(|refused| refused.said)
}

/// A token request: `form` sent form-encoded, the client authenticated by
/// HTTP Basic when it has a secret (`client_secret_basic`).
pub(crate) async fn post_form(
    client: &reqwest::Client,
    url: &str,
    form: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> Result<Value, Refused> {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let mut request = client
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(body)
        .timeout(TIME_LIMIT);
    if let Some((id, secret)) = basic {
        request = request.basic_auth(form_encoded(id), Some(form_encoded(secret)));
    }
    let response = request.send().await.map_err(|e| Refused {
        error: None,
        said: e.to_string(),
    })?;
    json_of(response).await
}

/// RFC 6749 §2.3.1: Basic credentials are form-encoded first.
fn form_encoded(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

async fn json_of(response: reqwest::Response) -> Result<Value, Refused> {
    let status = response.status();
    let bytes = response.bytes().await.map_err(|e| Refused {
        error: None,
        said: e.to_string(),
    })?;
    if bytes.len() > MAX_BODY {
        return Err(Refused {
            error: None,
            said: format!("it answered {} bytes, more than {MAX_BODY}", bytes.len()),
        });
    }
    let value: Option<Value> = serde_json::from_slice(&bytes).ok();
    if !status.is_success() {
        let field = |name: &str| {
            value
                .as_ref()
                .and_then(|v| v.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let error = field("error");
        let said = match (&error, field("error_description")) {
            (Some(error), Some(description)) => format!("HTTP {status}: {error} ({description})"),
            (Some(error), None) => format!("HTTP {status}: {error}"),
            _ => format!("HTTP {status}"),
        };
        return Err(Refused { error, said });
    }
    value.ok_or_else(|| Refused {
        error: None,
        said: format!("HTTP {status} with a body that is not JSON"),
    })
}
