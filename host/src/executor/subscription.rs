//! A caller's subscription to a resource of a pack that lists its offers
//! per caller: one `resources/subscribe` call into the pack, running without
//! a time limit until the subscription is dropped (the caller
//! unsubscribed or went away). The pack's reports on that call go to this
//! subscriber alone.

use std::{
    future::Future,
    panic::AssertUnwindSafe,
    pin::Pin,
    sync::{Arc, Mutex},
};

use async_ffi::FfiFuture;
use futures_util::FutureExt as _;
use pack_api::{
    CallResult, codes,
    protocol::{RESOURCE_UPDATED, RESOURCES_SUBSCRIBE, SUBSCRIBED},
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::{
    sync::{CancellationToken, DropGuard},
    task::AbortOnDropHandle,
};

use super::{
    Caller, Executor, Output, caller_offers::per_caller, code_mode::PackCallContext,
    offers::server_pack_of,
};
use crate::{error::CallError, failure::Failure};

/// Tells a subscriber that the resource at this URI changed.
pub type UpdateSink = Arc<dyn Fn(String) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Where the reports of one running `resources/subscribe` call go.
pub struct Subscriber {
    uri: String,
    /// Taken by the pack's `SUBSCRIBED`.
    subscribed: Mutex<Option<oneshot::Sender<()>>>,
    updates: UpdateSink,
}

/// A resource followed for one subscriber: dropping it ends the pack's call.
pub struct Subscription {
    _call: AbortOnDropHandle<()>,
    _cancel: DropGuard,
}

impl Executor {
    /// Follow `uri` for `caller`, each change told to `updates`: the first
    /// per-caller pack the caller may call that subscribes (one answering
    /// `NOT_FOUND` leaves it to the next). `None` when none serves `uri`.
    pub async fn subscribe_pack_resource(
        self: &Arc<Self>,
        uri: &str,
        caller: &Caller,
        updates: UpdateSink,
    ) -> Option<Result<Subscription, Failure>> {
        let packs: Vec<String> = {
            let visible = self.visible(&caller.identity);
            let server = server_pack_of(&visible, uri);
            (server.into_iter().chain(per_caller(&visible)))
                .map(|pack| pack.loaded.name.clone())
                .collect()
        };
        for pack in packs {
            match self
                .subscribe_in(pack, uri, caller, Arc::clone(&updates))
                .await
            {
                Err(failure) if failure.code() == codes::NOT_FOUND => {}
                subscribed => return Some(subscribed),
            }
        }
        None
    }

    /// Start `pack`'s subscribe call for `uri`, and wait until it says it
    /// follows the URI, or ends, or the pack's time limit passed.
    async fn subscribe_in(
        self: &Arc<Self>,
        pack: String,
        uri: &str,
        caller: &Caller,
        updates: UpdateSink,
    ) -> Result<Subscription, Failure> {
        let limit = self.registry().packs.get(&pack).map(|p| p.loaded.timeout);
        let limit = limit.unwrap_or_default();
        let out_of_time = CallError::OutOfTime {
            tool: self.registry().listed(&pack, RESOURCES_SUBSCRIBE),
            pack: pack.clone(),
            limit,
            own: false,
        };
        let (subscribed, followed) = oneshot::channel();
        let cancel = CancellationToken::new();
        let caller = Caller {
            subscriber: Some(Arc::new(Subscriber {
                uri: uri.to_owned(),
                subscribed: Mutex::new(Some(subscribed)),
                updates,
            })),
            cancel: cancel.clone(),
            deadline: None,
            ..caller.clone()
        };
        let (executor, uri) = (Arc::clone(self), uri.to_owned());
        let (ended, mut end) = oneshot::channel();
        let call = AbortOnDropHandle::new(self.runtime.spawn(async move {
            let outcome = executor.follow(&pack, &uri, &caller).await;
            if let Err(failure) = &outcome {
                tracing::debug!(pack, uri, error = %failure.text(), "subscription ended");
            }
            let _ = ended.send(outcome);
        }));
        tokio::select! {
            Ok(()) = followed => Ok(Subscription { _call: call, _cancel: cancel.drop_guard() }),
            outcome = &mut end => Err(match outcome {
                Ok(Err(failure)) => failure,
                Ok(Ok(_)) => Failure::internal(format!(
                    "the pack ended `{RESOURCES_SUBSCRIBE}` without following the resource"
                )),
                Err(_) => Failure::internal("the subscription's task ended"),
            }),
            () = tokio::time::sleep(limit) => Err(out_of_time.into()),
        }
    }

    /// The subscribe call of `pack` for `uri`: approved as any call, not
    /// counted as running (a shutdown does not wait for subscriptions),
    /// and without a time limit.
    async fn follow(
        self: &Arc<Self>,
        pack: &str,
        uri: &str,
        caller: &Caller,
    ) -> Result<Value, Failure> {
        let visible = self.visible(&caller.identity);
        let missing = || Failure::new(codes::NOT_FOUND, format!("pack `{pack}` is gone"));
        let pack = visible.pack(pack).ok_or_else(missing)?;
        let function = pack
            .reserved
            .iter()
            .find(|f| f.spec.name == RESOURCES_SUBSCRIBE);
        let function = function.ok_or_else(missing)?;
        let tool = self
            .registry()
            .listed(&pack.loaded.name, RESOURCES_SUBSCRIBE);
        let args = json!({ "uri": uri });
        self.approvals
            .check(&tool, &function.spec, &args, caller)
            .await?;
        let call = self.start(pack, function, &tool, args, caller.clone())?;
        tokio::select! {
            result = AssertUnwindSafe(call).catch_unwind() => match result {
                Ok(outcome) => outcome.map(Output::into_value),
                Err(_) => Err(CallError::Panicked { tool: tool.clone(), before_start: false }.into()),
            },
            () = caller.cancel.cancelled() => Err(CallError::Cancelled.into()),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Updated {
    uri: String,
}

/// A pack's report on its subscribe call (`SUBSCRIBED`,
/// `RESOURCE_UPDATED`), or `None` when `name` is none.
pub(super) fn report(
    ctx: &PackCallContext,
    name: &str,
    args: &str,
) -> Option<FfiFuture<CallResult>> {
    if name != SUBSCRIBED && name != RESOURCE_UPDATED {
        return None;
    }
    let (subscriber, args) = (ctx.caller.subscriber.clone(), args.to_owned());
    Some(ctx.nested(name.into(), move |_, name, _| async move {
        let Some(subscriber) = subscriber else {
            return Err(Failure::invalid_argument(format!(
                "`{name}` is for a `{RESOURCES_SUBSCRIBE}` call to report on; this call is none"
            )));
        };
        if name == SUBSCRIBED {
            subscriber.followed();
            return Ok(json!({}));
        }
        let Updated { uri } =
            serde_json::from_str(&args).map_err(|e| CallError::ArgumentsNotJson {
                name: name.clone(),
                error: format!("{e}; expected {{\"uri\": the URI subscribed to}}"),
            })?;
        if uri != subscriber.uri {
            return Err(Failure::invalid_argument(format!(
                "`{name}` of `{uri}`: this call follows `{}`, and reports on it only",
                subscriber.uri
            )));
        }
        subscriber.changed().await;
        Ok(json!({}))
    }))
}

impl Subscriber {
    /// The pack follows the resource now: the client's subscribe succeeds.
    pub fn followed(&self) {
        let subscribed = self
            .subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        subscribed.map(|subscribed| subscribed.send(()));
    }

    /// The resource changed: tell the subscriber.
    pub async fn changed(&self) {
        (self.updates)(self.uri.clone()).await;
    }
}
