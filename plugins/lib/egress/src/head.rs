//! A client's request head: where it wants to go, and for plain HTTP the
//! head to send there instead.

/// What a client asked for.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    /// The host name or address, lower case, without a trailing dot or
    /// IPv6 brackets.
    pub host: String,
    /// The port.
    pub port: u16,
    /// `None` for a tunnel (CONNECT); for plain HTTP, the head to send
    /// upstream.
    pub forward: Option<String>,
}

/// Hop-by-hop headers a proxy consumes, and `Host`, which it sets from the
/// target.
const DROPPED: &[&str] = &[
    "host",
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "te",
    "upgrade",
];

/// The request of `head` (everything before the blank line), or why it is
/// not one the proxy serves.
pub fn parse(head: &str) -> Result<Request, String> {
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut words = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(format!("not an HTTP request line: {line:?}"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("unsupported HTTP version {version:?}"));
    }
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = authority(target)?;
        let port = port.ok_or_else(|| format!("CONNECT {target:?} has no port"))?;
        return Ok(Request {
            host,
            port,
            forward: None,
        });
    }
    // Plain HTTP arrives in absolute form; HTTPS comes as a CONNECT.
    let rest = target
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("http://"))
        .map(|_| &target[7..])
        .ok_or_else(|| format!("{method} {target:?}: only http:// URLs and CONNECT are proxied"))?;
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (host, port) = authority(&rest[..end])?;
    let path = match &rest[end..] {
        "" => "/".to_owned(),
        query if query.starts_with('?') => format!("/{query}"),
        path => path.to_owned(),
    };
    let port = port.unwrap_or(80);
    // One request per connection: the upstream connection serves only the
    // host that was checked.
    let mut forward = format!("{method} {path} {version}\r\nHost: {}\r\n", &rest[..end]);
    for header in lines {
        let name = header.split(':').next().unwrap_or_default().trim();
        if !DROPPED.iter().any(|d| name.eq_ignore_ascii_case(d)) {
            forward.push_str(header);
            forward.push_str("\r\n");
        }
    }
    forward.push_str("Connection: close\r\n\r\n");
    Ok(Request {
        host,
        port,
        forward: Some(forward),
    })
}

/// `host[:port]` or `[v6][:port]`: the host normalised, the port if given.
fn authority(text: &str) -> Result<(String, Option<u16>), String> {
    let bad = || format!("{text:?} is not a host and port");
    let (host, port) = match text.strip_prefix('[') {
        Some(bracketed) => {
            let (host, after) = bracketed.split_once(']').ok_or_else(bad)?;
            match after {
                "" => (host, None),
                _ => (host, Some(after.strip_prefix(':').ok_or_else(bad)?)),
            }
        }
        None => match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        },
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let valid = |c: char| c.is_ascii_alphanumeric() || "-._:".contains(c);
    if host.is_empty() || !host.chars().all(valid) {
        return Err(bad());
    }
    let port = port
        .map(|port| port.parse::<u16>().ok().filter(|&p| p != 0).ok_or_else(bad))
        .transpose()?;
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connect_names_host_and_port() {
        let request = parse("CONNECT Registry.NPMjs.org.:443 HTTP/1.1\r\nHost: x").unwrap();
        assert_eq!(
            request,
            Request {
                host: "registry.npmjs.org".into(),
                port: 443,
                forward: None
            }
        );
        let v6 = parse("CONNECT [::1]:8080 HTTP/1.1").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 8080));
    }

    #[test]
    fn plain_http_is_sent_on_in_origin_form_for_one_request() {
        let request = parse(
            "GET http://example.org/a/b?c HTTP/1.1\r\nHost: elsewhere\r\nProxy-Connection: keep-alive\r\nAccept: */*",
        )
        .unwrap();
        assert_eq!((request.host.as_str(), request.port), ("example.org", 80));
        assert_eq!(
            request.forward.unwrap(),
            "GET /a/b?c HTTP/1.1\r\nHost: example.org\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let bare = parse("HEAD http://example.org:8080?q HTTP/1.0").unwrap();
        assert_eq!(bare.port, 8080);
        assert!(bare.forward.unwrap().starts_with("HEAD /?q HTTP/1.0\r\n"));
    }

    #[test]
    fn what_is_not_a_proxy_request_is_refused() {
        for head in [
            "",
            "CONNECT example.org HTTP/1.1",
            "CONNECT example.org:0 HTTP/1.1",
            "CONNECT example.org:99999 HTTP/1.1",
            "CONNECT user@example.org:443 HTTP/1.1",
            "CONNECT [::1 HTTP/1.1",
            "GET /relative HTTP/1.1",
            "GET https://example.org/ HTTP/1.1",
            "GET http:///path HTTP/1.1",
            "GET http://example.org/ HTTP/2",
            "GET http://exa mple.org/ HTTP/1.1",
        ] {
            assert!(parse(head).is_err(), "{head:?} was accepted");
        }
    }
}
