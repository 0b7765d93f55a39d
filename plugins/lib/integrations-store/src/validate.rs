//! The checks a new integration passes before it is stored. Messages name
//! fields, headers and variables, never a secret value.

use std::collections::BTreeMap;

use pack_sandbox::Limits;

use crate::{Auth, NewIntegration, Sandbox, StoreError, Transport};

/// The longest integration name.
pub(crate) const MAX_NAME_LEN: usize = 64;

/// Checks every field of `new`; the first problem found is the error.
pub(crate) fn new_integration(new: &NewIntegration) -> Result<(), StoreError> {
    organization_id(&new.organization_id)?;
    name(&new.name)?;
    match &new.transport {
        Transport::Stdio {
            command,
            args,
            env,
            sandbox,
        } => {
            stdio(command, args, env)?;
            self::sandbox(sandbox)?;
        }
        Transport::Http { url, headers } => http(url, headers)?,
    }
    if let Some(auth) = &new.auth {
        self::auth(auth, &new.transport)?;
    }
    if let Some(timeout_ms) = new.timeout_ms
        && (timeout_ms == 0 || i64::try_from(timeout_ms).is_err())
    {
        return invalid(format!(
            "`timeout_ms` must be between 1 and {}, got {timeout_ms}; leave it out for the default",
            i64::MAX
        ));
    }
    Ok(())
}

fn invalid(message: String) -> Result<(), StoreError> {
    Err(StoreError::Invalid(message))
}

fn organization_id(organization_id: &str) -> Result<(), StoreError> {
    if organization_id.trim().is_empty() {
        return invalid("the organization id must not be empty".to_owned());
    }
    if organization_id.chars().any(char::is_control) {
        return invalid(format!(
            "the organization id {organization_id:?} has a control character; give the organization's id as configured"
        ));
    }
    Ok(())
}

fn name(name: &str) -> Result<(), StoreError> {
    const ALLOWED: &str = "use letters, digits, `_`, `.` and `-`";
    if name.is_empty() {
        return invalid(format!("the integration name must not be empty; {ALLOWED}"));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return invalid(format!(
            "integration name {name:?} has {bad:?}; {ALLOWED} (e.g. `github`, `my-server.v2`)"
        ));
    }
    if name.len() > MAX_NAME_LEN {
        return invalid(format!(
            "integration name `{name}` is {} characters long; use at most {MAX_NAME_LEN}",
            name.len()
        ));
    }
    Ok(())
}

fn stdio(command: &str, args: &[String], env: &BTreeMap<String, String>) -> Result<(), StoreError> {
    if command.trim().is_empty() {
        return invalid(
            "a stdio integration needs a `command` (the program to run, e.g. `npx`)".to_owned(),
        );
    }
    if command.contains('\0') || args.iter().any(|arg| arg.contains('\0')) {
        return invalid("the command and its args must not contain NUL characters".to_owned());
    }
    for (key, value) in env {
        if key.is_empty() || key.contains(['=', '\0']) {
            return invalid(format!(
                "env variable name {key:?} is not valid; a name is non-empty, without `=` or NUL"
            ));
        }
        if value.contains('\0') {
            return invalid(format!(
                "the value of env variable `{key}` contains a NUL character"
            ));
        }
    }
    Ok(())
}

fn sandbox(sandbox: &Sandbox) -> Result<(), StoreError> {
    for (what, paths) in [("read", &sandbox.read), ("write", &sandbox.write)] {
        if let Some(path) = paths.iter().find(|path| !path.is_absolute()) {
            return invalid(format!(
                "`--{what} {}` is not an absolute path; give the folder or file from `/`",
                path.display()
            ));
        }
    }
    Limits::default()
        .overlaid(&sandbox.limits)
        .map(drop)
        .map_err(StoreError::Invalid)
}

fn http(url: &str, headers: &BTreeMap<String, String>) -> Result<(), StoreError> {
    egress::downstream::check_url(url)
        .map_err(|e| StoreError::Invalid(format!("integration url: {e}")))?;
    let mut seen: Vec<String> = Vec::new();
    for (header, value) in headers {
        header_name(header)?;
        header_value(header, value)?;
        let lower = header.to_ascii_lowercase();
        if seen.contains(&lower) {
            return invalid(format!(
                "header `{header}` is given twice (header names ignore case); give it once"
            ));
        }
        seen.push(lower);
    }
    Ok(())
}

fn auth(auth: &Auth, transport: &Transport) -> Result<(), StoreError> {
    let header = match auth {
        Auth::Bearer { token } => {
            if token.is_empty() || token.contains(|c: char| c.is_whitespace() || c.is_control()) {
                return invalid(
                    "the bearer token must be non-empty, without spaces or control characters (the token alone, not `Bearer …`)"
                        .to_owned(),
                );
            }
            "Authorization"
        }
        Auth::Header { name, value } => {
            header_name(name)?;
            header_value(name, value)?;
            if value.is_empty() {
                return invalid(format!(
                    "the value of auth header `{name}` must not be empty"
                ));
            }
            name
        }
        Auth::PerUser {
            client_id,
            client_secret,
            scope,
            ..
        } => {
            if !matches!(transport, Transport::Http { .. }) {
                return invalid(
                    "per-user auth signs users in through the browser to an HTTP server; \
                     a stdio integration takes `env` values instead"
                        .to_owned(),
                );
            }
            if client_secret.is_some() && client_id.is_none() {
                return invalid(
                    "a client secret needs its client id; give both, or neither to let \
                     packhost register itself"
                        .to_owned(),
                );
            }
            for (what, value) in [("client id", client_id), ("scope", scope)] {
                if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                    return invalid(format!(
                        "the {what} must not be empty; leave it out instead"
                    ));
                }
            }
            "Authorization"
        }
    };
    if let Transport::Http { headers, .. } = transport
        && headers.keys().any(|h| h.eq_ignore_ascii_case(header))
    {
        return invalid(format!(
            "header `{header}` is given both in `headers` and as the auth; give it once, as the auth"
        ));
    }
    Ok(())
}

/// An HTTP field name is a non-empty token (RFC 9110 §5.1).
fn header_name(name: &str) -> Result<(), StoreError> {
    let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(tchar) {
        return invalid(format!(
            "header name {name:?} is not valid; use letters, digits and `-` (e.g. `X-Api-Key`)"
        ));
    }
    Ok(())
}

/// An HTTP field value has no CR, LF, NUL or other control but tab.
fn header_value(name: &str, value: &str) -> Result<(), StoreError> {
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return invalid(format!(
            "the value of header `{name}` contains a control character (line break?); give it on one line"
        ));
    }
    Ok(())
}
