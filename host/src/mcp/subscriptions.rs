//! `resources/subscribe` and `resources/unsubscribe` of one session: a
//! kept result or a static resource of a pack is accepted (they never
//! change while read); a resource a pack lists per caller is followed by
//! one running subscribe call into that pack per (session, URI), ended at
//! unsubscribe and when the session ends. Its updates go to this session's
//! client only. On the 2026-07-28 wire, a `subscriptions/listen` stream
//! asking for resource URIs follows them the same way while it lasts.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use rmcp::{
    ErrorData, RoleServer,
    model::ResourceUpdatedNotificationParam,
    service::{RequestContext, SubscriptionContext},
};

use super::{PackhostServer, request::protocol_error, resources::not_found};
use crate::executor::{Subscription, UpdateSink};

/// The resources one session follows, by URI.
#[derive(Default)]
pub(super) struct Subscriptions(Mutex<HashMap<String, Subscription>>);

impl Subscriptions {
    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, Subscription>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl PackhostServer {
    /// Subscribe to a resource the caller may read; any other URI is not
    /// found, as for a read.
    pub(super) async fn resource_subscribe(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller_for(context);
        let identity = &caller.identity;
        // What no server nor pack follows never changes while served.
        let unchanging = self.executor.may_read(identity, uri).await
            && !self.executor.server_serves(identity, uri);
        if unchanging || self.subscriptions.held().contains_key(uri) {
            return Ok(());
        }
        let peer = context.peer.clone();
        let updates: UpdateSink = Arc::new(move |uri| {
            let peer = peer.clone();
            Box::pin(async move {
                let updated = ResourceUpdatedNotificationParam::new(uri);
                if let Err(e) = peer.notify_resource_updated(updated).await {
                    tracing::debug!(error = %e, "resource update not delivered");
                }
            })
        });
        let subscription = self.executor.subscribe_pack_resource(uri, &caller, updates);
        match subscription.await {
            Some(Ok(subscription)) => {
                self.subscriptions
                    .held()
                    .insert(uri.to_owned(), subscription);
                Ok(())
            }
            Some(Err(failure)) => Err(protocol_error(&failure)),
            None => Err(not_found(uri)),
        }
    }

    /// Stop following `uri` for this session (nothing to do for one it
    /// does not follow).
    pub(super) fn resource_unsubscribe(&self, uri: &str) {
        self.subscriptions.held().remove(uri);
    }
}

impl PackhostServer {
    /// The pack resources a `subscriptions/listen` stream asked for,
    /// followed for its caller and told on the stream while the returned
    /// subscriptions are held. A URI no pack follows for this caller (a
    /// kept result, a static resource, one it may not read) hears nothing.
    pub(super) async fn follow_listened(
        &self,
        subscription: &SubscriptionContext,
    ) -> Vec<Subscription> {
        let caller = self.caller_for(subscription.request_context());
        let uris = subscription.accepted().resource_subscriptions.clone();
        let mut followed = Vec::new();
        for uri in uris.unwrap_or_default() {
            let sink = subscription.sink().clone();
            let updates: UpdateSink = Arc::new(move |uri| {
                let sink = sink.clone();
                Box::pin(async move {
                    if let Err(e) = sink.notify_resource_updated(uri).await {
                        tracing::debug!(error = %e, "resource update not delivered");
                    }
                })
            });
            let subscribed = self
                .executor
                .subscribe_pack_resource(&uri, &caller, updates);
            match subscribed.await {
                Some(Ok(subscription)) => followed.push(subscription),
                Some(Err(failure)) => {
                    tracing::debug!(uri, error = %failure.text(), "not followed");
                }
                None => {}
            }
        }
        followed
    }
}
