//! A library pack's result JSON as an [`Output`]: the function's value, and
//! for a function whose manifest says `content` the content blocks its result
//! envelope ([`ContentResult`]) names. Only such functions' results are read
//! as envelopes, so no other value is ever mistaken for one.

use pack_api::ContentResult;

use super::registry::Function;
use crate::{
    error::CallError,
    output::{Content, Output},
};

/// The result JSON of `function` (called as `tool`) as an [`Output`].
pub(super) fn output_of(function: &Function, tool: &str, json: &str) -> Result<Output, CallError> {
    let not_json = |error: serde_json::Error| CallError::ResultNotJson {
        tool: tool.to_owned(),
        error: error.to_string(),
    };
    if !function.spec.content {
        return Ok(Output {
            value: serde_json::from_str(json).map_err(not_json)?,
            content: None,
        });
    }
    let bad = |error: String| CallError::BadContent {
        tool: tool.to_owned(),
        error,
    };
    let result: ContentResult = serde_json::from_str(json)
        .map_err(|e| bad(format!("its result is not a content result: {e}")))?;
    let blocks = result
        .blocks
        .into_iter()
        .map(|block| {
            serde_json::from_value(block.clone())
                .map_err(|e| bad(format!("{block} is not an MCP content block: {e}")))
        })
        .collect::<Result<_, _>>()?;
    Ok(Output {
        value: result.value,
        content: Some(Content {
            text: result.text,
            blocks,
        }),
    })
}

#[cfg(test)]
mod tests {
    use pack_api::FunctionSpec;
    use serde_json::json;

    use super::*;
    use crate::executor::registry::functions_of;

    fn function(content: bool) -> Function {
        let spec = FunctionSpec {
            name: "f".to_owned(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({"type": "object"}),
            content,
            ..FunctionSpec::default()
        };
        functions_of("p", &[spec]).remove(0)
    }

    #[test]
    fn only_a_function_that_says_content_has_its_result_read_as_an_envelope() {
        let envelope = json!({"value": {"a": 1}, "text": "", "blocks": [
            {"type": "image", "mimeType": "image/png", "data": "AA=="},
            {"type": "resource", "resource": {"uri": "file:///a.csv", "mimeType": "text/csv", "text": "a,b"}}
        ]});
        let plain = output_of(&function(false), "p.f", &envelope.to_string()).unwrap();
        assert_eq!(
            (plain.value, plain.content.is_none()),
            (envelope.clone(), true)
        );
        let output = output_of(&function(true), "p.f", &envelope.to_string()).unwrap();
        assert_eq!(output.value, json!({"a": 1}));
        let content = output.content.unwrap();
        assert_eq!(content.text.as_deref(), Some(""));
        assert!(content.blocks[0].as_image().is_some());
        assert!(content.blocks[1].as_resource().is_some());
    }

    #[test]
    fn content_that_is_not_mcps_fails_the_call() {
        let content = function(true);
        for (json, says) in [
            (json!({"a": 1}), "is not a content result"),
            (
                json!({"value": {}, "blocks": [{"type": "video", "data": "x"}]}),
                "is not an MCP content block",
            ),
        ] {
            let error = output_of(&content, "p.f", &json.to_string()).unwrap_err();
            assert_eq!(error.code(), "INTERNAL");
            assert!(error.to_string().contains(says), "{error}");
        }
    }
}
