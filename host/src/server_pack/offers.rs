//! A server's prompts, resources and templates as the pack's offers:
//! prompts under identifier names (as tools), resources and templates at
//! the URIs the server gives, so the links in its results stay valid.

use mcp_downstream::{DownstreamError, Endpoint, Pool};
use pack_api::PromptSpec;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Served, names::served_names};
use crate::executor::Offers;

/// What the server at `endpoint` (connection `key`, pack `pack`) lists now;
/// records the server's name of each prompt in `served`. A list the server
/// does not have (no such capability) is empty.
pub(crate) async fn offers(
    pool: &Pool,
    pack: &str,
    endpoint: &Endpoint,
    timeout: std::time::Duration,
    served: &Served,
) -> Result<Offers, DownstreamError> {
    let list = |method: &'static str| async move {
        match pool.list(pack, endpoint, timeout, method).await {
            // Method not found: the server offers none.
            Err(DownstreamError::Rejected(_)) => Ok(Vec::new()),
            listed => listed,
        }
    };
    let (prompts, resources, templates) = tokio::try_join!(
        list("prompts/list"),
        list("resources/list"),
        list("resources/templates/list")
    )?;
    let mut prompts: Vec<PromptSpec> = specs(pack, prompts);
    let own: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    let names = served_names(pack, "prompts", &own);
    let mut map = served.prompts.write().unwrap_or_else(|e| e.into_inner());
    map.clear();
    for (prompt, name) in prompts.iter_mut().zip(names) {
        map.insert(name.clone(), std::mem::replace(&mut prompt.name, name));
    }
    Ok(Offers {
        prompts,
        resources: specs(pack, resources),
        templates: specs(pack, templates),
    })
}

/// Listed items as specs; one that does not fit is left out and said.
fn specs<T: DeserializeOwned>(pack: &str, items: Vec<Value>) -> Vec<T> {
    items
        .into_iter()
        .filter_map(|item| {
            serde_json::from_value(item.clone())
                .inspect_err(|e| tracing::warn!(pack, %item, error = %e, "the server's offer is not MCP's; not served"))
                .ok()
        })
        .collect()
}
