//! A tool list that changes while clients listen: the stateless scenario
//! calls `test_trigger_tool_change` with a `subscriptions/listen` stream
//! open and expects `notifications/tools/list_changed` on it.

use std::sync::Arc;

use pack_sdk::{Content, Context, Empty, PackDef, PackError};
use serde::Serialize;

/// The function that comes and goes.
const DYNAMIC: &str = "test_dynamic_tool";

#[derive(Serialize, schemars::JsonSchema)]
struct Offered {
    /// Whether `test_dynamic_tool` is served now.
    dynamic_tool: bool,
}

/// Withdraws `test_dynamic_tool` when it is served, offers it again when
/// not: the catalog says which, so every host instance agrees.
async fn trigger(_: Arc<()>, _: Empty, ctx: Context) -> Result<Content<Offered>, PackError> {
    let catalog = ctx.catalog();
    let mut served: Vec<&str> = catalog
        .tools
        .iter()
        .filter(|t| t.pack == "conformance")
        .map(|t| t.function.as_str())
        .collect();
    let had = served.contains(&DYNAMIC);
    if had {
        served.retain(|name| *name != DYNAMIC);
    } else {
        served.push(DYNAMIC);
    }
    ctx.offer(&served).await?;
    let text = if had { "withdrawn" } else { "offered" };
    Ok(Content::new(Offered { dynamic_tool: !had }).text(format!("{DYNAMIC} {text}")))
}

async fn dynamic(_: Arc<()>, _: Empty, _: Context) -> Result<Content<Offered>, PackError> {
    Ok(Content::new(Offered { dynamic_tool: true }).text("the dynamic tool answers"))
}

pub(crate) fn add(pack: PackDef<()>) -> PackDef<()> {
    pack.function(
        "test_trigger_tool_change",
        "Withdraws test_dynamic_tool, or offers it again: the tool list changes",
        trigger,
    )
    .function(
        DYNAMIC,
        "Served until test_trigger_tool_change withdraws it",
        dynamic,
    )
}
