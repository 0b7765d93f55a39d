//! The prompts, resources and templates of the caller's organisation's
//! enabled integrations, served per caller (`PackDef::serve_offers`):
//! prompts as `<integration name>.<prompt>` (the prompt's name made an
//! identifier; clients see `remote_mcp.` before it), resources and
//! templates under the URIs their servers give. Listings ask each server
//! on its integration's connection; renders, reads, completions and
//! subscriptions go on the caller's own connection (its lane), with the
//! caller as the relay of the server's questions. Another organisation's
//! prompts and URIs are not found, exactly as unknown ones.

use std::{sync::Arc, time::Duration};

use integrations_store::Integration;
use mcp_downstream::{DownstreamError, lane};
use pack_sdk::{Context, LogLevel, PackError, Value, json, names::identifier, protocol};
use tokio::task::JoinSet;

use crate::{State, organisation, relay::CallerRelay, upstream, uris::linked};

/// Answer MCP `method` with `params` for the caller of `ctx`.
pub(crate) async fn serve(
    state: Arc<State>,
    method: String,
    params: Value,
    ctx: Context,
) -> Result<Value, PackError> {
    // Nobody calls it: the browser has no token.
    if method == protocol::SIGN_IN_RETURNED {
        let query = params["query"].as_str().unwrap_or_default();
        return crate::sign_in::returned(&state, &ctx, query).await;
    }
    let org = organisation(&ctx)?;
    match method.as_str() {
        protocol::PROMPTS_LIST => {
            let mut prompts = Vec::new();
            for (integration, listed) in listed(&state, &org, protocol::PROMPTS_LIST).await? {
                prompts.extend(listed.into_iter().map(|mut prompt| {
                    let own = identifier(prompt["name"].as_str().unwrap_or_default());
                    prompt["name"] = format!("{}.{own}", integration.name).into();
                    prompt
                }));
            }
            Ok(json!({ "prompts": prompts }))
        }
        protocol::RESOURCES_LIST => {
            let resources = learn(&state, &org, protocol::RESOURCES_LIST).await?;
            Ok(json!({ "resources": resources }))
        }
        protocol::TEMPLATES_LIST => {
            let templates = learn(&state, &org, protocol::TEMPLATES_LIST).await?;
            Ok(json!({ "resourceTemplates": templates }))
        }
        protocol::PROMPTS_GET => {
            let name = params["name"].as_str().unwrap_or_default();
            let (integration, own) = prompt_named(&state, &org, name).await?;
            let params = json!({"name": own, "arguments": params["arguments"]});
            let got = request(&state, &ctx, &integration, protocol::PROMPTS_GET, params).await?;
            let messages = got["messages"].as_array().into_iter().flatten();
            let blocks: Vec<Value> = messages.map(|m| m["content"].clone()).collect();
            state.uris.keep(&org, &integration.id, linked(&blocks));
            Ok(got)
        }
        protocol::RESOURCES_READ => {
            let uri = params["uri"].as_str().unwrap_or_default();
            let integration = serving(&state, &org, uri).await?;
            request(&state, &ctx, &integration, protocol::RESOURCES_READ, params).await
        }
        protocol::COMPLETE => {
            let mut params = params;
            let reference = &params["ref"];
            let integration = if reference["type"] == "ref/prompt" {
                let name = reference["name"].as_str().unwrap_or_default();
                let (integration, own) = prompt_named(&state, &org, name).await?;
                params["ref"]["name"] = own.into();
                integration
            } else {
                let template = reference["uri"].as_str().unwrap_or_default();
                templated(&state, &org, template).await?
            };
            request(&state, &ctx, &integration, protocol::COMPLETE, params).await
        }
        protocol::RESOURCES_SUBSCRIBE => {
            let uri = params["uri"].as_str().unwrap_or_default();
            let integration = serving(&state, &org, uri).await?;
            follow(&state, &ctx, &integration, uri).await
        }
        _ => Err(PackError::not_found(format!(
            "remote_mcp serves no `{method}`"
        ))),
    }
}

/// The organisation's enabled integrations.
async fn enabled(state: &State, org: &str) -> Result<Vec<Integration>, PackError> {
    let all = state.store().await?.list(org).await;
    let all = all.map_err(crate::database_error)?;
    Ok(all.into_iter().filter(|i| i.enabled).collect())
}

/// Each enabled integration of `org` with what its server lists for
/// `method`, by name; a server that fails lists nothing (said in the log).
async fn listed(
    state: &Arc<State>,
    org: &str,
    method: &'static str,
) -> Result<Vec<(Integration, Vec<Value>)>, PackError> {
    let mut asked = JoinSet::new();
    for integration in enabled(state, org).await? {
        let state = Arc::clone(state);
        asked.spawn(async move {
            let endpoint = state.endpoint(&integration);
            let pool = state.pool().await;
            let listed = match endpoint {
                Ok(endpoint) => {
                    let timeout = time_limit(&state, &integration);
                    let listed = pool.list(&integration.id, &endpoint, timeout, method).await;
                    listed.map_err(|e| format!("{e:?}"))
                }
                Err(error) => Err(error.to_string()),
            };
            let listed = listed.unwrap_or_else(|why| {
                let (name, id) = (&integration.name, &integration.id);
                let line = format!("integration `{name}` (`{id}`) lists no {method}: {why}");
                state.host.log(LogLevel::Debug, &line);
                Vec::new()
            });
            (integration, listed)
        });
    }
    let mut all = asked.join_all().await;
    all.sort_by(|(a, _), (b, _)| a.name.cmp(&b.name));
    Ok(all)
}

/// The resources or templates of `org`'s integrations, each remembered as
/// its integration's.
async fn learn(
    state: &Arc<State>,
    org: &str,
    method: &'static str,
) -> Result<Vec<Value>, PackError> {
    let mut items = Vec::new();
    for (integration, listed) in listed(state, org, method).await? {
        if method == protocol::TEMPLATES_LIST {
            let templates = listed.iter().filter_map(|t| t["uriTemplate"].as_str());
            let templates = templates.map(str::to_owned).collect();
            state.uris.set_templates(org, &integration.id, templates);
        } else {
            let uris = listed.iter().filter_map(|r| r["uri"].as_str());
            state
                .uris
                .keep(org, &integration.id, uris.map(str::to_owned).collect());
        }
        items.extend(listed);
    }
    Ok(items)
}

/// The integration of `org` that serves `uri`: one it was learnt from, or,
/// when none, one whose listings have it now.
async fn serving(state: &Arc<State>, org: &str, uri: &str) -> Result<Integration, PackError> {
    let mut found = state.uris.integration_of(org, uri);
    if found.is_none() {
        learn(state, org, protocol::RESOURCES_LIST).await?;
        learn(state, org, protocol::TEMPLATES_LIST).await?;
        found = state.uris.integration_of(org, uri);
    }
    let unknown = || PackError::not_found(format!("no integration of yours serves `{uri}`"));
    state.integration(org, &found.ok_or_else(unknown)?).await
}

/// The integration of `org` with resource template `template`.
async fn templated(
    state: &Arc<State>,
    org: &str,
    template: &str,
) -> Result<Integration, PackError> {
    let mut found = state.uris.integration_of_template(org, template);
    if found.is_none() {
        learn(state, org, protocol::TEMPLATES_LIST).await?;
        found = state.uris.integration_of_template(org, template);
    }
    let unknown = || PackError::not_found(format!("no integration of yours has `{template}`"));
    state.integration(org, &found.ok_or_else(unknown)?).await
}

/// The integration of prompt `name` (`<integration>.<prompt>`, as listed)
/// and the prompt's own name on its server.
async fn prompt_named(
    state: &Arc<State>,
    org: &str,
    name: &str,
) -> Result<(Integration, String), PackError> {
    // An integration's name may hold `.`: each whose name starts it is tried.
    let mut candidates = enabled(state, org).await?;
    candidates.retain(|i| {
        name.strip_prefix(i.name.as_str())
            .is_some_and(|rest| rest.starts_with('.'))
    });
    for integration in candidates {
        let own = &name[integration.name.len() + 1..];
        // One that acts per user lists nothing for everyone.
        let Ok(endpoint) = state.endpoint(&integration) else {
            continue;
        };
        let timeout = time_limit(state, &integration);
        let pool = state.pool().await;
        let prompts = pool.list(&integration.id, &endpoint, timeout, protocol::PROMPTS_LIST);
        let prompts = prompts.await.map_err(downstream)?;
        let named = prompts.iter().filter_map(|p| p["name"].as_str());
        if let Some(found) = named.into_iter().find(|p| identifier(p) == own) {
            return Ok((integration, found.to_owned()));
        }
    }
    Err(PackError::not_found(format!(
        "no integration of yours has prompt `{name}`"
    )))
}

/// MCP request `method` to `integration`'s server on the caller's lane,
/// its questions, logs and progress relayed to the caller.
async fn request(
    state: &State,
    ctx: &Context,
    integration: &Integration,
    method: &str,
    params: Value,
) -> Result<Value, PackError> {
    let endpoint = state.endpoint_for(ctx, integration).await?;
    let relay = Arc::new(CallerRelay(ctx.clone()));
    let pool = state.pool().await;
    let key = caller_lane(integration, ctx);
    let timeout = time_limit(state, integration);
    let answered = pool.request(&key, &endpoint, timeout, method, params, Some(relay));
    answered.await.map_err(downstream)
}

/// Follow `uri` of `integration` for the caller until the host drops this
/// call: one downstream subscription on the caller's lane, its updates
/// told through `ctx`.
async fn follow(
    state: &State,
    ctx: &Context,
    integration: &Integration,
    uri: &str,
) -> Result<Value, PackError> {
    let endpoint = state.endpoint_for(ctx, integration).await?;
    let key = caller_lane(integration, ctx);
    let timeout = time_limit(state, integration);
    let pool = Arc::clone(state.pool().await);
    let unsubscribe = {
        let (pool, key, endpoint, uri) = (
            Arc::clone(&pool),
            key.clone(),
            endpoint.clone(),
            uri.to_owned(),
        );
        // Run where the host's drop ends the call: the pack's runtime.
        Box::new(move || pool.unsubscribe_soon(&key, &endpoint, &uri, timeout))
    };
    let mut watch = state.watchers.watch(&key, uri, unsubscribe);
    let subscribe = json!({ "uri": uri });
    let subscribed = pool.request(
        &key,
        &endpoint,
        timeout,
        protocol::RESOURCES_SUBSCRIBE,
        subscribe,
        None,
    );
    subscribed.await.map_err(downstream)?;
    ctx.subscribed().await?;
    while watch.changes.recv().await.is_some() {
        ctx.resource_updated(uri).await?;
    }
    Ok(json!({}))
}

/// The caller's own connection to `integration`'s server.
pub(crate) fn caller_lane(integration: &Integration, ctx: &Context) -> String {
    lane(&integration.id, &[&ctx.org(), &ctx.user()])
}

/// `integration`'s own time limit, or the pack's.
pub(crate) fn time_limit(state: &State, integration: &Integration) -> Duration {
    integration
        .timeout_ms
        .map_or(state.call_timeout, Duration::from_millis)
}

/// A server's error answer (an unknown prompt, a missing argument) as the
/// client's mistake; a connection that failed as `UPSTREAM_ERROR`.
fn downstream(failure: DownstreamError) -> PackError {
    match failure {
        DownstreamError::Rejected(message) => PackError::invalid_argument(message),
        DownstreamError::Upstream(reason) => upstream(reason),
    }
}
