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
    whole_servers::{output, steps, text_of},
};

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

fn failed<'a>(lines: &'a [Value], id: &str) -> &'a str {
    let line = lines.iter().find(|l| l["id"] == id).unwrap();
    line["error"]
        .as_str()
        .unwrap_or_else(|| panic!("step {id} did not fail: {line}"))
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
    let with_id = |id: &str, mut step: Value| {
        step["id"] = id.into();
        step
    };
    let answers = json!({
        "elicitation": [{"action": "accept", "content": {"name": "Ada Lovelace", "check": true}}],
        "sampling": "a sampled answer",
        "roots": [{"uri": "file:///work/site", "name": "site"}],
    });
    let ada_steps = json!([
        {"id": "prompts", "op": "prompts"},
        {"id": "simple", "op": "prompt", "name": "remote_mcp.everything.simple_prompt"},
        {"id": "args", "op": "prompt", "name": "remote_mcp.everything.args_prompt",
         "arguments": {"city": "Lyon", "state": "Rhône"}},
        {"id": "department", "op": "complete",
         "ref": {"type": "ref/prompt", "name": "remote_mcp.everything.completable_prompt"},
         "argument": {"name": "department", "value": "Eng"}},
        {"id": "resources", "op": "resources"},
        {"id": "templates", "op": "templates"},
        {"id": "static", "op": "read", "uri": "{{resources.0.uri}}"},
        {"id": "templated", "op": "read", "uri": "demo://resource/dynamic/text/7"},
        with_id("links", execute("get-resource-links", json!({"count": 3}))),
        {"id": "link", "op": "read", "uri": "{{links.content.2.uri}}"},
        with_id("reference", execute("get-resource-reference", json!({"resourceType": "Text", "resourceId": 3}))),
        {"id": "embedded", "op": "read", "uri": "{{reference.content.1.resource.uri}}"},
        {"id": "unknown", "op": "read", "uri": "demo://nowhere"},
        with_id("elicit", execute("trigger-elicitation-request", json!({}))),
        with_id("sample", execute("trigger-sampling-request", json!({"prompt": "Say hi"}))),
        with_id("roots", execute("get-roots-list", json!({}))),
        {"id": "subscribe", "op": "subscribe", "uri": "demo://resource/dynamic/text/1"},
        with_id("toggle", execute("toggle-subscriber-updates", json!({}))),
        {"id": "updated", "op": "updated", "uri": "demo://resource/dynamic/text/1", "seconds": 15},
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
    let lines = steps(&host, Some(&ada), answers.clone(), ada_steps).await;
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

    let names: Vec<&str> = output(&lines, "prompts")
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for name in [
        "remote_mcp.everything.simple_prompt",
        "remote_mcp.everything.args_prompt",
        "remote_mcp.everything.completable_prompt",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let simple = output(&lines, "simple");
    assert!(
        !simple["messages"].as_array().unwrap().is_empty(),
        "{simple}"
    );
    assert!(output(&lines, "args").to_string().contains("Lyon"));
    assert_eq!(
        output(&lines, "department")["values"],
        json!(["Engineering"])
    );
    assert!(!output(&lines, "resources").as_array().unwrap().is_empty());
    let templates = output(&lines, "templates").to_string();
    assert!(
        templates.contains("demo://resource/dynamic/text/{"),
        "{templates}"
    );
    assert!(output(&lines, "static")["contents"][0]["uri"].is_string());
    let templated = output(&lines, "templated");
    assert_eq!(
        templated["contents"][0]["uri"],
        "demo://resource/dynamic/text/7"
    );
    for read in ["link", "embedded"] {
        let read = output(&lines, read);
        assert!(read["contents"][0]["uri"].is_string(), "{read}");
    }
    assert!(failed(&lines, "unknown").contains("no resource"));
    let asked: Vec<&str> = lines.iter().filter_map(|l| l["asked"].as_str()).collect();
    assert_eq!(
        asked,
        ["elicitation/create", "sampling/createMessage", "roots/list"],
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
