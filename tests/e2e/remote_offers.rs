//! `remote_mcp` carries its integrations whole, for the caller's
//! organisation only: server-everything added as an integration by the
//! real CLI, driven by the official Python SDK (tests/official-clients/
//! whole.py) — its prompts listed and rendered (arguments, completions),
//! resources listed, read and templated, links its tools return readable,
//! a subscription's updates, its questions answered by the calling client;
//! and a client of another organisation that sees, reads and hears none
//! of it.

use packhost_tests::{
    downstream::{everything_stdio, integrations},
    http::HttpHost,
};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::{
    http::token,
    remote_mcp::servers_read,
    whole_servers::{checked_walk, failed, output, steps, text_of, walk, with_id},
};

/// What clients call the integration's prompts: `remote_mcp.` and the
/// integration's name.
const PREFIX: &str = "remote_mcp.everything.";

/// A host serving `remote_mcp` to `entries` (token entries), with
/// server-everything added for `acme` as integration `everything`; the
/// folder holds its database.
async fn host(entries: &[&str]) -> (HttpHost, String, TempDir) {
    let dir = TempDir::new().unwrap();
    let database = dir.path().join("integrations.db").display().to_string();
    let config = format!(
        "[packs.remote_mcp]\nconfig = {{ database = {database:?}, read = {:?} }}\n\n{}\n",
        servers_read(),
        entries.join("\n\n")
    );
    std::fs::write(dir.path().join("packs.toml"), &config).unwrap();
    let mut add = vec!["add", "--org", "acme", "--name", "everything", "--"];
    let command = everything_stdio();
    add.extend(command.iter().map(String::as_str));
    let id = integrations(dir.path(), &add, &[]);
    (HttpHost::start(&config, &[]).await, id, dir)
}

#[tokio::test]
async fn an_integrations_prompts_resources_links_and_questions_reach_its_organisation_only() {
    let (ada, ada_entry) = token("ada", "acme", &[]);
    let (eve, eve_entry) = token("eve", "globex", &[]);
    let (host, id, _database) = host(&[&ada_entry, &eve_entry]).await;
    let execute = |tool: &str, parameters: Value| {
        json!({"op": "call", "tool": "remote_mcp.execute_tool",
               "arguments": {"integrationId": id, "toolName": tool, "parameters": parameters}})
    };
    let answers = json!({
        "elicitation": [{"action": "accept", "content": {"name": "Ada Lovelace", "check": true}}],
        "sampling": "a sampled answer",
        "roots": [{"uri": "file:///work/site", "name": "site"}],
    });
    let mut ada_steps = walk(PREFIX, execute);
    ada_steps.extend([
        with_id("elicit", execute("trigger-elicitation-request", json!({}))),
        with_id("sample", execute("trigger-sampling-request", json!({"prompt": "Say hi"}))),
        with_id("roots", execute("get-roots-list", json!({}))),
        json!({"id": "subscribe", "op": "subscribe", "uri": "demo://resource/dynamic/text/1"}),
        with_id("toggle", execute("toggle-subscriber-updates", json!({}))),
        json!({"id": "updated", "op": "updated", "uri": "demo://resource/dynamic/text/1", "seconds": 15}),
    ]);
    // eve of globex guesses what acme's integration served ada, and is there
    // to be asked while ada's call asks.
    let eve_answers = json!({
        "elicitation": [{"action": "accept", "content": {"name": "Eve", "check": true}}],
    });
    let eve_steps = json!([
        {"id": "prompts", "op": "prompts"},
        {"id": "resources", "op": "resources"},
        {"id": "templates", "op": "templates"},
        {"id": "prompt", "op": "prompt", "name": "remote_mcp.everything.simple_prompt"},
        {"id": "complete", "op": "complete",
         "ref": {"type": "ref/prompt", "name": "remote_mcp.everything.completable_prompt"},
         "argument": {"name": "department", "value": "Eng"}},
        {"id": "static", "op": "read", "uri": "demo://resource/static/document/architecture.md"},
        {"id": "templated", "op": "read", "uri": "demo://resource/dynamic/text/1"},
        {"id": "subscribe", "op": "subscribe", "uri": "demo://resource/dynamic/text/1"},
        {"id": "heard", "op": "updated", "uri": "demo://resource/dynamic/text/1", "seconds": 12},
    ]);
    let lines = steps(&host, Some(&ada), answers.clone(), Value::Array(ada_steps)).await;
    // Then eve, while ada's call asks again.
    let ada_again = json!([with_id(
        "elicit",
        execute("trigger-elicitation-request", json!({}))
    )]);
    let (again, eve_lines) = tokio::join!(
        steps(&host, Some(&ada), answers, ada_again),
        steps(&host, Some(&eve), eve_answers, eve_steps),
    );
    assert!(text_of(output(&again, "elicit")).contains("Ada Lovelace"));

    checked_walk(&lines, PREFIX);
    // server-everything also asks for roots on its own when a connection
    // starts, at a moment of its choosing: which questions reached ada
    // counts, not their order or how often roots were asked.
    let asked: std::collections::BTreeSet<&str> =
        lines.iter().filter_map(|l| l["asked"].as_str()).collect();
    assert_eq!(
        asked,
        ["elicitation/create", "roots/list", "sampling/createMessage"].into(),
        "{lines:#?}"
    );
    assert!(text_of(output(&lines, "elicit")).contains("Ada Lovelace"));
    assert!(text_of(output(&lines, "sample")).contains("a sampled answer"));
    assert!(text_of(output(&lines, "roots")).contains("file:///work/site"));
    assert_eq!(output(&lines, "updated"), &json!(true), "{lines:#?}");

    // Another organisation: none of it listed, nothing readable, no
    // question, no update.
    let listed = |id: &str| output(&eve_lines, id).to_string();
    assert!(
        !listed("prompts").contains("remote_mcp.everything"),
        "{}",
        listed("prompts")
    );
    assert!(
        !listed("resources").contains("demo://"),
        "{}",
        listed("resources")
    );
    assert!(
        !listed("templates").contains("demo://"),
        "{}",
        listed("templates")
    );
    for step in ["prompt", "complete", "static", "templated", "subscribe"] {
        failed(&eve_lines, step);
    }
    assert!(failed(&eve_lines, "static").contains("no resource"));
    assert_eq!(output(&eve_lines, "heard"), &json!(false));
    assert!(
        eve_lines.iter().all(|l| l.get("asked").is_none()),
        "{eve_lines:#?}"
    );
}
