//! Server packs: `[packs.<name>] kind = "mcp"` makes another MCP server a
//! pack. Its tools are the pack's functions (`<name>.<tool>` in `tools/list`,
//! `run` and code mode), called through one connection pool.
//!
//! A server that is down at start-up does not hold the host: its pack loads
//! with no functions, a call to it says why, and a background task keeps
//! trying; once the server answers, its tools appear.
//!
//! A stdio server runs in the sandbox with the policy of its section
//! (`sandbox`, `read`, `write`, `limits`; see `mcp_downstream::Confinement`).

use std::{
    collections::HashMap,
    sync::{Arc, RwLock, Weak},
    time::Duration,
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RResult, RStr},
};
use async_ffi::{FfiFuture, FutureExt as _};
use mcp_downstream::{
    CallToolResult, DownstreamError as Downstream, Endpoint, Level, Pool, PoolSettings, Tool,
};
use pack_api::{
    Annotations, CallContextBox, CallResult, ContentResult, FunctionSpec, Manifest, Pack, Pack_TO,
    codes,
};
use serde_json::{Value, json};

use crate::{
    config::Config, executor::Executor, failure::Failure, loader::LoadedPack, tool_name::identifier,
};

/// How long start-up waits for a server's tool list before going on
/// without it.
const STARTUP_WAIT: Duration = Duration::from_secs(10);

/// Retries of a server that was down: from 1 s, doubling, up to this.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// The server packs whose tools are not known yet.
pub struct Servers {
    pending: Vec<Pending>,
}

struct Pending {
    name: String,
    endpoint: Endpoint,
    names: Names,
    pool: Arc<Pool>,
}

/// Function name → the server's tool (see [`function_names`]).
type Names = Arc<RwLock<HashMap<String, ServerTool>>>;

/// One tool of the server.
#[derive(Clone)]
struct ServerTool {
    /// Its name on the server.
    name: String,
    /// Its output schema, when it declares one: results are checked against
    /// it, since MCP clients refuse a result that does not fit.
    output: Option<Arc<jsonschema::Validator>>,
}

/// A server pack as the executor sees it.
struct ServerPack {
    name: String,
    endpoint: Endpoint,
    pool: Arc<Pool>,
    names: Names,
    timeout: Duration,
}

/// Connect every enabled server pack of `config` (all at once, each for at
/// most [`STARTUP_WAIT`]). Without server packs no pool is made: start-up
/// pays nothing for them.
pub async fn connect_all(config: &Config) -> (Vec<LoadedPack>, Servers) {
    let servers: Vec<(&String, &Endpoint, Option<u64>)> = config
        .packs
        .iter()
        .filter(|(_, p)| p.enabled)
        .filter_map(|(name, p)| Some((name, p.server()?, p.timeout_ms)))
        .collect();
    if servers.is_empty() {
        return (
            Vec::new(),
            Servers {
                pending: Vec::new(),
            },
        );
    }
    let pool = Pool::new(PoolSettings {
        log: Arc::new(|level, message| match level {
            Level::Debug => tracing::debug!(target: "packhost::servers", "{message}"),
            Level::Info => tracing::info!(target: "packhost::servers", "{message}"),
            Level::Warn => tracing::warn!(target: "packhost::servers", "{message}"),
        }),
        ..PoolSettings::default()
    });
    for (name, endpoint, _) in &servers {
        if let Endpoint::Stdio { confinement, .. } = endpoint
            && let Ok(Some(warning)) = pack_sandbox::check_settings(
                confinement.mode,
                &confinement.limits,
                "the server runs",
            )
        {
            tracing::warn!(pack = %name, "{warning}");
        }
    }
    let connecting = servers.into_iter().map(|(name, endpoint, timeout_ms)| {
        let pool = Arc::clone(&pool);
        let timeout = Duration::from_millis(timeout_ms.unwrap_or(config.server.timeout_ms));
        let endpoint = endpoint.clone();
        async move {
            let tools =
                tokio::time::timeout(STARTUP_WAIT, pool.list_tools(name, &endpoint, timeout))
                    .await
                    .unwrap_or_else(|_| {
                        Err(Downstream::Upstream(format!(
                            "no tool list within {} s",
                            STARTUP_WAIT.as_secs()
                        )))
                    });
            (name.clone(), endpoint, timeout, tools)
        }
    });
    let mut loaded = Vec::new();
    let mut pending = Vec::new();
    for (name, endpoint, timeout, tools) in futures_util::future::join_all(connecting).await {
        let names = Names::default();
        let functions = match tools {
            Ok(tools) => functions(&name, &tools, &names),
            Err(failure) => {
                tracing::warn!(
                    pack = %name,
                    "server {} is not answering ({}); its tools appear once it does",
                    endpoint.describe(),
                    reason(&failure)
                );
                pending.push(Pending {
                    name: name.clone(),
                    endpoint: endpoint.clone(),
                    names: Arc::clone(&names),
                    pool: Arc::clone(&pool),
                });
                Vec::new()
            }
        };
        let pack = ServerPack {
            name: name.clone(),
            endpoint: endpoint.clone(),
            pool: Arc::clone(&pool),
            names,
            timeout,
        };
        loaded.push(LoadedPack {
            name: name.clone(),
            origin: endpoint.describe(),
            manifest: Manifest {
                name,
                version: "mcp".to_owned(),
                description: format!("Tools of the MCP server {}", endpoint.describe()),
                functions,
            },
            instance: Pack_TO::from_value(pack, TD_Opaque),
            timeout,
        });
    }
    (loaded, Servers { pending })
}

impl Servers {
    /// Keep asking the servers that were down for their tools, and hand
    /// them to `executor` once they answer.
    pub fn watch(self, executor: &Arc<Executor>) {
        for pending in self.pending {
            tokio::spawn(retry(pending, Arc::downgrade(executor)));
        }
    }
}

async fn retry(pending: Pending, executor: Weak<Executor>) {
    let mut delay = Duration::from_secs(1);
    loop {
        tokio::time::sleep(delay).await;
        if executor.strong_count() == 0 {
            return;
        }
        if let Ok(tools) = pending
            .pool
            .list_tools(&pending.name, &pending.endpoint, STARTUP_WAIT)
            .await
        {
            let specs = functions(&pending.name, &tools, &pending.names);
            let Some(executor) = executor.upgrade() else {
                return;
            };
            tracing::info!(pack = %pending.name, tools = specs.len(), "server answers; its tools are served");
            executor.set_functions(&pending.name, &specs);
            return;
        }
        delay = (delay * 2).min(MAX_RETRY_DELAY);
    }
}

fn reason(failure: &Downstream) -> &str {
    match failure {
        Downstream::Rejected(message) | Downstream::Upstream(message) => message,
    }
}

/// The server's tools as functions of pack `pack`; records the name each
/// stands for.
fn functions(pack: &str, tools: &[Tool], names: &Names) -> Vec<FunctionSpec> {
    let mut map = names.write().unwrap_or_else(|e| e.into_inner());
    map.clear();
    let tool_names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    tools
        .iter()
        .zip(function_names(pack, &tool_names))
        .map(|(tool, function)| {
            let output = tool.output_schema.as_ref().and_then(|schema| {
                jsonschema::validator_for(&Value::Object((**schema).clone()))
                    .map_err(|e| {
                        tracing::warn!(tool = %tool.name, error = %e, "the server's output schema does not compile; its results are not checked")
                    })
                    .ok()
                    .map(Arc::new)
            });
            map.insert(
                function.clone(),
                ServerTool {
                    name: tool.name.to_string(),
                    output,
                },
            );
            let hints = tool.annotations.as_ref();
            FunctionSpec {
                name: function,
                description: tool.description.as_deref().unwrap_or_default().to_owned(),
                input_schema: Value::Object((*tool.input_schema).clone()),
                output_schema: tool.output_schema.as_ref().map_or_else(
                    || json!({"type": "object"}),
                    |s| Value::Object((**s).clone()),
                ),
                // The server's own title and hints, as it gave them.
                title: tool
                    .title
                    .clone()
                    .or_else(|| hints.and_then(|a| a.title.clone())),
                annotations: hints.map_or_else(Annotations::default, |a| Annotations {
                    read_only: a.read_only_hint,
                    destructive: a.destructive_hint,
                    idempotent: a.idempotent_hint,
                    open_world: a.open_world_hint,
                }),
                content: true,
                ..FunctionSpec::default()
            }
        })
        .collect()
}

/// The function name of each tool, in the server's order: `_` for each
/// character an identifier cannot hold, so `run` can call it (`get-sum` →
/// `get_sum`). When tools come to one name, every one stays reachable: a
/// tool whose name is that identifier already keeps it (its name works as
/// the server documents it; else the first listed does), the others get
/// `_2`, `_3`, ... in the server's order (the first name free), and a
/// warning names both tools.
fn function_names(pack: &str, tools: &[&str]) -> Vec<String> {
    let plain: Vec<String> = tools.iter().map(|tool| identifier(tool)).collect();
    // Function name → the tool that has it.
    let mut holders: HashMap<String, &str> = tools
        .iter()
        .zip(&plain)
        .filter(|(tool, name)| **tool == name.as_str())
        .map(|(tool, name)| (name.clone(), *tool))
        .collect();
    tools
        .iter()
        .zip(plain)
        .map(|(tool, name)| match holders.get(&name).copied() {
            None => {
                holders.insert(name.clone(), tool);
                name
            }
            Some(holder) if holder == *tool => name,
            Some(holder) => {
                let free = (2..)
                    .map(|n| format!("{name}_{n}"))
                    .find(|candidate| !holders.contains_key(candidate))
                    .expect("some suffix is free");
                tracing::warn!(
                    pack,
                    "tools `{holder}` and `{tool}` of the server both make `{name}`: `{holder}` \
                     keeps it, `{tool}` is served as `{pack}.{free}`"
                );
                holders.insert(free.clone(), tool);
                free
            }
        })
        .collect()
}

/// A downstream result as a pack value. Without an output schema: see
/// [`value_of`]. With one (the host lists it as the tool's): the structured
/// content, or for servers that predate it the text when it is a JSON
/// object (the spec's advice for compatibility), and only when it fits the
/// schema; else the server broke its own contract (`UPSTREAM_ERROR`, with the
/// server's text).
fn checked_value(
    result: CallToolResult,
    tool: &ServerTool,
    output: &jsonschema::Validator,
) -> Result<Value, Failure> {
    let text = mcp_downstream::text_of(&result);
    let value = result
        .structured_content
        .filter(Value::is_object)
        .or_else(|| serde_json::from_str(&text).ok().filter(Value::is_object));
    let Some(value) = value else {
        return Err(Failure::new(
            codes::UPSTREAM_ERROR,
            format!(
                "tool `{}` declares an output schema but its result has no structured content; it said: {text}",
                tool.name
            ),
        ));
    };
    let misfit = output
        .iter_errors(&value)
        .next()
        .map(|e| format!("at `{}`: {e}", e.instance_path()));
    match misfit {
        None => Ok(value),
        Some(e) => Err(Failure::new(
            codes::UPSTREAM_ERROR,
            format!(
                "the result of tool `{}` does not fit its own output schema ({e}); it said: {value}",
                tool.name
            ),
        )),
    }
}

/// A downstream result as a pack value: its structured content when it has
/// one, else its text, with images as `{mime, data_base64}` and other blocks
/// as they are (what code mode gets; clients get the server's own blocks,
/// see [`content_of`]).
fn value_of(result: CallToolResult) -> Value {
    if let Some(structured) = result.structured_content.filter(Value::is_object) {
        return structured;
    }
    let mut text = Vec::new();
    let mut images = Vec::new();
    let mut other = Vec::new();
    for block in result.content {
        match block {
            mcp_downstream::ContentBlock::Text(t) => text.push(t.text),
            mcp_downstream::ContentBlock::Image(i) => {
                images.push(json!({"mime": i.mime_type, "data_base64": i.data}));
            }
            block => other.push(serde_json::to_value(block).unwrap_or(Value::Null)),
        }
    }
    let mut value = json!({ "text": text.join("\n") });
    if !images.is_empty() {
        value["images"] = Value::Array(images);
    }
    if !other.is_empty() {
        value["content"] = Value::Array(other);
    }
    value
}

/// What the server's result shows, passed on as it is: its text blocks as
/// one text, its other blocks (images, audio, resource links, embedded
/// resources) after it. Without text, structured content is shown as text
/// (as for any function); a result with neither has only its blocks.
fn content_of(result: &CallToolResult) -> (Option<String>, Vec<Value>) {
    let blocks = result
        .content
        .iter()
        .filter(|block| block.as_text().is_none())
        .filter_map(|block| serde_json::to_value(block).ok())
        .collect();
    let text = mcp_downstream::text_of(result);
    let structured = result
        .structured_content
        .as_ref()
        .is_some_and(Value::is_object);
    let text = (!text.is_empty() || !structured).then_some(text);
    (text, blocks)
}

impl Pack for ServerPack {
    fn call(
        &self,
        function: RStr<'_>,
        args_json: RStr<'_>,
        _ctx: CallContextBox,
    ) -> FfiFuture<CallResult> {
        let tool = self
            .names
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(function.as_str())
            .cloned()
            .unwrap_or_else(|| ServerTool {
                name: function.as_str().to_owned(),
                output: None,
            });
        let args = serde_json::from_str(args_json.as_str()).unwrap_or_default();
        let (pool, endpoint, name, timeout) = (
            Arc::clone(&self.pool),
            self.endpoint.clone(),
            self.name.clone(),
            self.timeout,
        );
        async move {
            let failure = match pool
                .call_tool(&name, &endpoint, &tool.name, args, timeout)
                .await
            {
                Ok(result) if result.is_error != Some(true) => {
                    let (text, blocks) = content_of(&result);
                    let value = match &tool.output {
                        None => Ok(value_of(result)),
                        Some(output) => checked_value(result, &tool, output),
                    };
                    match value {
                        Ok(value) => {
                            let content = ContentResult {
                                value,
                                text,
                                blocks,
                            };
                            return RResult::ROk(json!(content).to_string().into());
                        }
                        Err(failure) => failure,
                    }
                }
                Ok(result) => {
                    Failure::new(codes::EXECUTION_ERROR, mcp_downstream::text_of(&result))
                }
                Err(Downstream::Rejected(message)) => Failure::new(codes::EXECUTION_ERROR, message),
                Err(Downstream::Upstream(reason)) => Failure::new(codes::UPSTREAM_ERROR, reason)
                    .with_help(format!(
                        "check the server of `[packs.{name}]`; the next call reconnects"
                    )),
            };
            RResult::RErr(failure.to_json().into())
        }
        .into_ffi()
    }

    fn shutdown(&self) -> FfiFuture<()> {
        self.pool.close_all();
        async {}.into_ffi()
    }
}

#[cfg(test)]
mod tests {
    use super::function_names;

    #[test]
    fn tools_that_come_to_one_name_all_stay_reachable() {
        assert_eq!(
            function_names("fx", &["get-sum", "get_sum", "echo", "get.sum"]),
            ["get_sum_2", "get_sum", "echo", "get_sum_3"]
        );
        // Without an identifier among them, the first listed keeps the name;
        // a suffix never takes the name of another tool.
        assert_eq!(
            function_names("fx", &["a-b", "a_b_2", "a.b"]),
            ["a_b", "a_b_2", "a_b_3"]
        );
    }
}
