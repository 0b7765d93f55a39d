//! The few REST calls the `server` backend makes to a Jupyter Server: plain
//! HTTP/1.1 over one connection per request (`Connection: close`), JSON in and
//! out, token in the `Authorization` header. Small on purpose: it replaces a
//! full HTTP client stack for five endpoints.

use std::time::Duration;

use serde_json::Value;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// How long one REST call may take (starting a kernel is the slow one).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A response: status and JSON body (`null` when empty or not JSON).
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: Value,
    pub text: String,
}

/// Where a Jupyter Server is and how to authenticate.
#[derive(Debug, Clone)]
pub struct Api {
    /// `http://host:port/base` without a trailing slash.
    pub base_url: String,
    host: String,
    port: u16,
    path_prefix: String,
    /// The server's token (may be empty).
    pub token: String,
}

impl Api {
    /// Parse `url` (`http://host:port[/base]`).
    pub fn new(url: &str, token: &str) -> Result<Self, String> {
        let parsed = url::Url::parse(url).map_err(|e| {
            format!("`url` {url:?} is not a URL ({e}); expected e.g. \"http://127.0.0.1:8888\"")
        })?;
        if parsed.scheme() != "http" {
            return Err(format!(
                "`url` {url:?} uses `{}`; the server backend speaks plain `http` (put a TLS-terminating proxy on the same host, or reach the server over a private network)",
                parsed.scheme()
            ));
        }
        let host = parsed
            .host_str()
            .ok_or_else(|| format!("`url` {url:?} has no host"))?
            .to_owned();
        let port = parsed.port_or_known_default().unwrap_or(80);
        let path_prefix = parsed.path().trim_end_matches('/').to_owned();
        Ok(Self {
            base_url: format!("http://{host}:{port}{path_prefix}"),
            host,
            port,
            path_prefix,
            token: token.to_owned(),
        })
    }

    /// `method /api/{path}` with an optional JSON body.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Response, String> {
        tokio::time::timeout(REQUEST_TIMEOUT, self.call_inner(method, path, body))
            .await
            .map_err(|_| {
                format!(
                    "{method} {}/api/{path} got no answer within {} s",
                    self.base_url,
                    REQUEST_TIMEOUT.as_secs()
                )
            })?
    }

    async fn call_inner(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Response, String> {
        let target = format!("{}/api/{path}", self.path_prefix);
        let mut stream = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| format!("cannot reach the Jupyter Server at {}: {e}", self.base_url))?;
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut request = format!(
            "{method} {target} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\nAccept: application/json\r\nContent-Length: {}\r\n",
            self.host,
            self.port,
            body.len()
        );
        if !body.is_empty() {
            request.push_str("Content-Type: application/json\r\n");
        }
        if !self.token.is_empty() {
            request.push_str(&format!("Authorization: token {}\r\n", self.token));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        let io = |e: std::io::Error| format!("{method} {}{target}: {e}", self.base_url);
        stream.write_all(request.as_bytes()).await.map_err(io)?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.map_err(io)?;
        parse_response(&raw).map_err(|e| format!("{method} {}{target}: {e}", self.base_url))
    }
}

fn parse_response(raw: &[u8]) -> Result<Response, String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the answer is not HTTP (no end of headers)")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or("the answer has no HTTP status line")?;
    let chunked = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let rest = &raw[split + 4..];
    let body = if chunked {
        dechunk(rest)?
    } else {
        rest.to_vec()
    };
    let text = String::from_utf8_lossy(&body).into_owned();
    Ok(Response {
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
    })
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("truncated chunked body")?;
        let size_text = String::from_utf8_lossy(&rest[..end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        rest = &rest[end + 2..];
        if size == 0 {
            return Ok(body);
        }
        if rest.len() < size {
            return Err("truncated chunk".to_owned());
        }
        body.extend_from_slice(&rest[..size]);
        rest = rest.get(size + 2..).unwrap_or_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_chunked_answers() {
        let plain =
            parse_response(b"HTTP/1.1 201 Created\r\nContent-Length: 9\r\n\r\n{\"id\":1}\n")
                .unwrap();
        assert_eq!((plain.status, plain.body["id"].as_i64()), (201, Some(1)));
        let chunked = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n:2}\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(chunked.body["a"], 2);
        assert!(parse_response(b"garbage").is_err());
    }

    #[test]
    fn only_http_urls_are_taken() {
        let api = Api::new("http://127.0.0.1:8888/base/", "t").unwrap();
        assert_eq!(api.base_url, "http://127.0.0.1:8888/base");
        let err = Api::new("https://example.org", "t").unwrap_err();
        assert!(err.contains("plain `http`"), "{err}");
        assert!(Api::new("not a url", "").is_err());
    }
}
