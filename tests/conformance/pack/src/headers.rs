//! A tool whose argument also travels as an HTTP header (SEP-2243's
//! `x-mcp-header`): the suite's `http-custom-header-server-validation`
//! checks that the host refuses a header that is missing, badly encoded, or
//! not the argument's value.

use std::sync::Arc;

use pack_sdk::{Content, Context, Function, PackDef, PackError, json};
use serde::{Deserialize, Serialize};

#[derive(Deserialize, schemars::JsonSchema)]
struct Args {
    region: String,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Echo {
    /// The region the call was for.
    region: String,
}

async fn echo(_: Arc<()>, args: Args, _: Context) -> Result<Content<Echo>, PackError> {
    let text = format!("region: {}", args.region);
    Ok(Content::new(Echo {
        region: args.region,
    })
    .text(text))
}

pub(crate) fn add(pack: PackDef<()>) -> PackDef<()> {
    pack.function_with(
        Function::new(
            "test_header_param",
            "Echoes `region`, which clients also send as the header `Mcp-Param-Region`",
            echo,
        )
        .input_schema(json!({
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"]
        })),
    )
}
