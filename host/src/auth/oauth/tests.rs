//! Claims → caller and the documents clients read; the token checks
//! themselves are tested end to end against a real provider
//! (`tests/e2e/oauth.rs`).

use serde_json::json;

use super::*;

fn verifier(extra: &str) -> Verifier {
    let config: OAuthConfig = toml::from_str(&format!(
        r#"
        issuer = "https://login.example.com/realms/acme"
        resource = "https://mcp.example.com/mcp"
        {extra}
        "#
    ))
    .unwrap();
    assert!(config.problems().is_empty(), "{:?}", config.problems());
    Verifier::new(&config)
}

fn claims(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[test]
fn claims_name_the_caller_and_scopes_grant_the_allow_list() {
    let verifier = verifier(
        r#"
        org_claim = "org"
        [scopes]
        "tools:proj" = ["proj.*"]
        "tools:code" = ["run", "exec_py.*"]
        "#,
    );
    let caller = verifier
        .caller(&claims(
            json!({"sub": "ada", "org": "acme", "scope": "openid tools:proj"}),
        ))
        .unwrap();
    assert_eq!(
        (caller.identity.user.as_str(), caller.identity.org.as_str()),
        ("ada", "acme")
    );
    assert_eq!(
        caller.scopes.as_deref(),
        Some(&["openid".into(), "tools:proj".into()][..])
    );
    assert!(caller.identity.may_call("proj.list"));
    assert!(!caller.identity.may_call("run"));
    assert!(!caller.identity.may_call("exec_py.run"));
    let none = verifier
        .caller(&claims(json!({"sub": "bob", "org": "acme"})))
        .unwrap();
    assert!(!none.identity.may_call("proj.list"), "no scope, no tool");
    assert_ne!(caller.principal, none.principal);
    let missing = verifier
        .caller(&claims(json!({"sub": "ada"})))
        .err()
        .unwrap();
    assert_eq!(missing.to_string(), "it has no `org` claim (a string)");
}

#[test]
fn without_a_scope_table_a_valid_token_may_call_everything() {
    let verifier = verifier(r#"org = "acme""#);
    let caller = verifier
        .caller(&claims(json!({"sub": "ada", "scp": ["x"]})))
        .unwrap();
    assert_eq!(caller.identity.org, "acme");
    assert!(caller.identity.allowed.is_none());
}

#[test]
fn a_list_claim_grants_scopes_too() {
    let verifier = verifier(
        r#"
        org = "acme"
        scope_claim = "roles"
        [scopes]
        admin = ["*"]
        "#,
    );
    let caller = verifier
        .caller(&claims(json!({"sub": "ada", "roles": ["admin"]})))
        .unwrap();
    assert!(caller.identity.may_call("exec_py.run"));
}

#[test]
fn the_scope_a_tool_needs_is_judged_by_its_name() {
    let verifier = verifier(
        r#"
        org = "acme"
        [scopes]
        "tools:code" = ["run", "exec_py.*"]
        "tools:proj" = ["proj.*"]
        "#,
    );
    assert_eq!(verifier.scope_for("proj.list"), Some("tools:proj"));
    assert_eq!(verifier.scope_for("proj.not_there"), Some("tools:proj"));
    assert_eq!(verifier.scope_for("run"), Some("tools:code"));
    assert_eq!(verifier.scope_for("jupyter.execute_code"), None);
    let challenge = verifier
        .insufficient_scope_challenge(&["tools:proj".into(), "openid".into()], "tools:code");
    assert!(
        challenge.starts_with(
            "Bearer error=\"insufficient_scope\", scope=\"openid tools:code tools:proj\", \
             resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\""
        ),
        "{challenge}"
    );
}

#[test]
fn the_metadata_names_the_resource_and_its_issuer() {
    let verifier = verifier(
        r#"
        org = "acme"
        [scopes]
        "tools:proj" = ["proj.*"]
        "#,
    );
    assert_eq!(
        verifier.metadata_url(),
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    );
    let metadata = verifier.metadata();
    assert_eq!(metadata["resource"], "https://mcp.example.com/mcp");
    assert_eq!(
        metadata["authorization_servers"],
        json!(["https://login.example.com/realms/acme"])
    );
    assert_eq!(metadata["scopes_supported"], json!(["tools:proj"]));
    assert_eq!(
        verifier.unauthorized_challenge(false),
        "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\""
    );
    assert!(
        verifier
            .unauthorized_challenge(true)
            .contains("error=\"invalid_token\"")
    );
}

#[test]
fn the_admin_scope_makes_an_admin_whatever_the_allow_list() {
    let verifier = verifier(
        r#"
        org_claim = "org"
        scope_claim = "roles"
        admin_scope = "packhost-admin"
        [scopes]
        "tools:proj" = ["proj.*"]
        "#,
    );
    let admin = verifier
        .caller(&claims(
            json!({"sub": "ada", "org": "acme", "roles": ["tools:proj", "packhost-admin"]}),
        ))
        .unwrap();
    assert!(admin.identity.admin);
    assert!(admin.identity.may_call("packhost.audit"));
    assert!(!admin.identity.may_call("run"), "admin is no tool grant");
    let user = verifier
        .caller(&claims(
            json!({"sub": "bob", "org": "acme", "roles": ["tools:proj"]}),
        ))
        .unwrap();
    assert!(!user.identity.admin);
    assert!(!user.identity.may_call("packhost.audit"));
    assert!(user.identity.may_call("packhost.search"));
}
