//! [`check_url`], the rule for a downstream MCP server's URL. Who it is
//! for: `integrations-store` (an integration's URL when it is added) and
//! `mcp-downstream` (a server pack's `url` and every HTTP connection; it
//! re-exports [`check_url`]). Here, beside the address rule, so that the
//! store checks a URL without linking the MCP client and its HTTP stack.

/// The one rule for a downstream URL (an integration's when it is stored, a
/// server pack's when the config is read): absolute `http` or `https` with a
/// host, no credentials in it. Errors never quote the URL, which may carry a
/// credential by mistake.
pub fn check_url(url: &str) -> Result<url::Url, String> {
    const GIVE: &str = "give an absolute `http://` or `https://` URL";
    if url.contains(|c: char| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "the URL must not contain whitespace or control characters; {GIVE}"
        ));
    }
    let parsed =
        url::Url::parse(url).map_err(|e| format!("the URL is not a valid URL ({e}); {GIVE}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("the URL has scheme `{}`; {GIVE}", parsed.scheme()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("the URL has no host; {GIVE}"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(
            "the URL must not contain credentials (`user:password@`); give them as \
                    auth (a bearer token or a header) instead"
                .to_owned(),
        );
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_with_reasons() {
        assert!(check_url("http://127.0.0.1:3001/mcp").is_ok());
        assert!(check_url("https://mcp.example.com/mcp").is_ok());
        let said = |url: &str| check_url(url).unwrap_err();
        assert!(said("ftp://x/y").contains("has scheme `ftp`"));
        assert!(said("file:///etc/passwd").contains("has scheme `file`"));
        assert!(said("relative/mcp").contains("not a valid URL"));
        assert!(said("http://h/a b").contains("whitespace"));
        let credentials = said("http://user:secret@host/mcp");
        assert!(credentials.contains("credentials") && !credentials.contains("secret"));
    }
}
