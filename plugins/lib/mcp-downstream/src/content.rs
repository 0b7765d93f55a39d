//! Reading what a server sends, the same way for server packs and
//! integrations: its log messages, and the resources its content links.

use pack_api::LogLevel;
use serde_json::Value;

/// A server's `notifications/message` params as a log line: the nearest
/// level packhost has, and its data as text.
pub fn log_line(params: &Value) -> (LogLevel, String) {
    let level = match params["level"].as_str().unwrap_or("info") {
        "debug" => LogLevel::Debug,
        "info" | "notice" => LogLevel::Info,
        "warning" => LogLevel::Warn,
        _ => LogLevel::Error,
    };
    let text = match &params["data"] {
        Value::String(text) => text.clone(),
        data => data.to_string(),
    };
    (level, text)
}

/// The URIs that MCP content `blocks` (as JSON) link (`resource_link`) or
/// embed (`resource`): what the caller who received them may read back.
pub fn linked_uris<'b>(
    blocks: impl IntoIterator<Item = &'b Value>,
) -> impl Iterator<Item = &'b str> {
    blocks
        .into_iter()
        .filter_map(|block| match block["type"].as_str()? {
            "resource_link" => block["uri"].as_str(),
            "resource" => block["resource"]["uri"].as_str(),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn links_and_embedded_resources_are_read_and_text_is_not() {
        let blocks = [
            json!({"type": "resource_link", "uri": "demo://a", "name": "a"}),
            json!({"type": "resource", "resource": {"uri": "demo://b", "text": "b"}}),
            json!({"type": "text", "text": "demo://c"}),
        ];
        assert_eq!(
            linked_uris(&blocks).collect::<Vec<_>>(),
            ["demo://a", "demo://b"]
        );
    }

    #[test]
    fn log_levels_map_to_the_nearest() {
        let line = log_line(&json!({"level": "notice", "data": "hi"}));
        assert!(matches!(line.0, LogLevel::Info) && line.1 == "hi");
        let line = log_line(&json!({"level": "critical", "data": {"n": 1}}));
        assert!(matches!(line.0, LogLevel::Error) && line.1 == r#"{"n":1}"#);
    }
}
