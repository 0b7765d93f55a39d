//! A server pack's calls: one tool of another MCP server per function,
//! called directly through the connection pool, its result turned into the
//! pack's value (and the server's own content blocks, passed on); its
//! prompts, resources and completions forwarded under the reserved names
//! of `pack_api::protocol`.
//!
//! Every call for a caller goes on that caller's own connection (a "lane":
//! organisation, user, client session), so that the server's questions
//! during it reach exactly that caller (see `mcp_downstream::Relay`), and
//! whatever the server keeps per session (roots, answers, resources it
//! made) is that caller's. Listings go on the pack's own connection.

mod lanes;
mod links;
mod names;
mod offers;
mod relay;
mod tools;
mod value;

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
    time::Duration,
};

use mcp_downstream::{DownstreamError as Downstream, Endpoint, Event, JsonObject, Pool};
use pack_api::{
    codes,
    protocol::{COMPLETE, PROMPTS_GET, RESOURCES_READ, RESOURCES_SUBSCRIBE},
};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use self::{lanes::Lanes, links::Links, relay::CallerRelay};
pub(crate) use self::{offers::offers, tools::functions};
use crate::{
    executor::Caller,
    failure::Failure,
    output::{Content, Output},
};

/// What the pack serves of its server now: shared by the pack and the task
/// that lists the server.
#[derive(Default)]
pub(crate) struct Served {
    /// Function name → the server's tool.
    tools: RwLock<HashMap<String, ServerTool>>,
    /// Prompt name → the server's name of it.
    prompts: RwLock<HashMap<String, String>>,
    /// Why the server has not answered yet (its last failure), while it has
    /// not: what a call to the pack says meanwhile.
    unanswered: RwLock<Option<String>>,
    /// Where what the server says on callers' connections goes.
    lanes: Lanes,
}

impl Served {
    /// Say why the server does not answer (`None`: it does).
    pub(crate) fn set_unanswered(&self, why: Option<String>) {
        *self.unanswered.write().unwrap_or_else(|e| e.into_inner()) = why;
    }

    /// Hand on what pack `pack`'s server said outside a request on
    /// caller connection `lane`.
    pub(crate) fn heard(&self, pack: &str, lane: &str, event: Event) {
        self.lanes.heard(pack, lane, event);
    }
}

/// One tool of the server.
#[derive(Clone)]
pub(crate) struct ServerTool {
    /// Its name on the server.
    name: String,
    /// Its output schema, when it declares one: results are checked against
    /// it, since MCP clients refuse a result that does not fit.
    output: Option<Arc<jsonschema::Validator>>,
}

/// A server pack as the executor calls it.
pub struct ServerPack {
    name: String,
    endpoint: Endpoint,
    pool: Arc<Pool>,
    served: Arc<Served>,
    links: Links,
    timeout: Duration,
}

impl ServerPack {
    /// Pack `name`, served by the server at `endpoint` through `pool`;
    /// `served` holds what it serves once known.
    pub(crate) fn new(
        name: String,
        endpoint: Endpoint,
        pool: Arc<Pool>,
        served: Arc<Served>,
        timeout: Duration,
    ) -> Self {
        Self {
            name,
            endpoint,
            pool,
            served,
            links: Links::default(),
            timeout,
        }
    }

    /// Why its server has not answered yet, while it has not.
    pub fn unanswered(&self) -> Option<String> {
        let unanswered = self.served.unanswered.read();
        unanswered.unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether a result of this pack linked `uri` for `caller`.
    pub fn linked(&self, caller: &crate::identity::Identity, uri: &str) -> bool {
        self.links.has(caller, uri)
    }

    /// Call function `function` (a tool, or a reserved name) for `caller`.
    pub async fn call(
        &self,
        function: &str,
        args: Value,
        caller: &Caller,
    ) -> Result<Output, Failure> {
        match function {
            PROMPTS_GET => self.render(args, caller).await,
            RESOURCES_READ => self.forward("resources/read", args, caller).await,
            COMPLETE => self.complete(args, caller).await,
            RESOURCES_SUBSCRIBE => self.follow(args, caller).await,
            _ => self.call_tool(function, args, caller).await,
        }
    }

    async fn call_tool(
        &self,
        function: &str,
        args: Value,
        caller: &Caller,
    ) -> Result<Output, Failure> {
        let tool = self
            .served
            .tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(function)
            .cloned()
            .unwrap_or_else(|| ServerTool {
                name: function.to_owned(),
                output: None,
            });
        let args = match args {
            Value::Object(args) => args,
            _ => JsonObject::default(),
        };
        let relay = Some(CallerRelay::of(&self.name, caller));
        let called = self
            .pool
            .call_tool(
                &self.lane_of(caller),
                &self.endpoint,
                &tool.name,
                args,
                self.timeout,
                relay,
            )
            .await
            .map_err(|failure| self.failed(failure))?;
        if called.is_error == Some(true) {
            return Err(Failure::new(
                codes::EXECUTION_ERROR,
                mcp_downstream::text_of(&called),
            ));
        }
        let blocks: Vec<Value> = called
            .content
            .iter()
            .filter_map(|block| serde_json::to_value(block).ok())
            .collect();
        self.links.keep(&caller.identity, &blocks);
        let (text, blocks) = value::content_of(&called);
        let value = match &tool.output {
            None => value::value_of(called),
            Some(output) => value::checked_value(called, &tool, output)?,
        };
        Ok(Output {
            value,
            content: Some(Content { text, blocks }),
        })
    }

    /// `prompts/get` of a prompt by the name the pack serves it under.
    async fn render(&self, mut args: Value, caller: &Caller) -> Result<Output, Failure> {
        args["name"] = self.own_prompt(&args["name"]).into();
        let rendered = self.forward("prompts/get", args, caller).await?;
        let messages = rendered.value["messages"].as_array().into_iter().flatten();
        let blocks = messages.map(|message| &message["content"]);
        self.links.keep(&caller.identity, blocks);
        Ok(rendered)
    }

    /// `completion/complete`; a prompt is referred to by its served name.
    async fn complete(&self, mut args: Value, caller: &Caller) -> Result<Output, Failure> {
        if args["ref"]["type"] == "ref/prompt" {
            args["ref"]["name"] = self.own_prompt(&args["ref"]["name"]).into();
        }
        self.forward("completion/complete", args, caller).await
    }

    /// The server's name of served prompt `name`.
    fn own_prompt(&self, name: &Value) -> String {
        let name = name.as_str().unwrap_or_default();
        let prompts = self.served.prompts.read();
        let prompts = prompts.unwrap_or_else(|e| e.into_inner());
        prompts
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_owned())
    }

    /// Send request `method` with `params` for `caller`: its result is the
    /// value.
    async fn forward(
        &self,
        method: &str,
        params: Value,
        caller: &Caller,
    ) -> Result<Output, Failure> {
        let relay = Some(CallerRelay::of(&self.name, caller));
        let value = self
            .pool
            .request(
                &self.lane(caller),
                &self.endpoint,
                self.timeout,
                method,
                params,
                relay,
            )
            .await
            .map_err(|failure| match failure {
                // The server's own refusal: the client named something wrong.
                Downstream::Rejected(message) => Failure::new(codes::INVALID_ARGUMENT, message),
                other => self.failed(other),
            })?;
        Ok(Output {
            value,
            content: None,
        })
    }

    fn failed(&self, failure: Downstream) -> Failure {
        match failure {
            Downstream::Rejected(message) => Failure::new(codes::EXECUTION_ERROR, message),
            Downstream::Upstream(reason) => {
                Failure::new(codes::UPSTREAM_ERROR, reason).with_help(format!(
                    "check the server of `[packs.{}]`; the next call reconnects",
                    self.name
                ))
            }
        }
    }

    /// `resources/subscribe` for `caller`'s subscriber, on its
    /// connection: the subscriber hears of each update the server sends,
    /// until this call is dropped (the subscription then ends on the
    /// server too).
    async fn follow(&self, args: Value, caller: &Caller) -> Result<Output, Failure> {
        let (Some(uri), Some(subscriber)) = (args["uri"].as_str(), &caller.subscriber) else {
            return Err(Failure::invalid_argument(format!(
                "`{RESOURCES_SUBSCRIBE}` follows `{{\"uri\"}}` for a subscriber; this call is none"
            )));
        };
        let lane = self.lane(caller);
        let mut updates = self.served.lanes.updates(&lane, uri);
        self.forward("resources/subscribe", json!({ "uri": uri }), caller)
            .await?;
        let _subscribed = Subscribed {
            pack: self,
            lane,
            uri,
        };
        subscriber.followed();
        loop {
            match updates.recv().await {
                Ok(()) | Err(RecvError::Lagged(_)) => subscriber.changed().await,
                Err(RecvError::Closed) => {
                    return Err(Failure::internal("the server's updates ended"));
                }
            }
        }
    }

    /// The connection of `caller`'s calls.
    fn lane(&self, caller: &Caller) -> String {
        let identity = &caller.identity;
        let session = caller.session.map(|s| s.to_string()).unwrap_or_default();
        mcp_downstream::lane(&self.name, &[&identity.org, &identity.user, &session])
    }

    /// [`Self::lane`], whose log messages outside requests go to the client
    /// of this call from now on.
    fn lane_of(&self, caller: &Caller) -> String {
        let lane = self.lane(caller);
        self.served.lanes.log_to(&lane, caller.log.as_ref());
        lane
    }

    /// Close its connections.
    pub fn shutdown(&self) {
        self.pool.close_all();
    }
}

/// A subscription on a server: ended there when dropped.
struct Subscribed<'a> {
    pack: &'a ServerPack,
    lane: String,
    uri: &'a str,
}

impl Drop for Subscribed<'_> {
    fn drop(&mut self) {
        let pack = self.pack;
        pack.pool
            .unsubscribe_soon(&self.lane, &pack.endpoint, self.uri, pack.timeout);
    }
}
