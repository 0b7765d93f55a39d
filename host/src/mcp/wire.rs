//! Which way a request's questions travel: the one choice between the two
//! wires, for every request that calls into a pack and may ask (a tool
//! call, a prompt render).

use std::{future::Future, sync::Arc, time::Duration};

use pack_api::Owner;
use rmcp::{ErrorData, RoleServer, model::ClientCapabilities, service::RequestContext};

use super::{
    ask::PeerAsk,
    rounds::{Request, Retry, Rounds, Step},
};
use crate::executor::Caller;

/// What the client that sent `context` declared: per request on
/// 2026-07-28, at `initialize` before.
pub(super) fn capabilities_of(context: &RequestContext<RoleServer>) -> ClientCapabilities {
    context.client_capabilities().unwrap_or_default()
}

/// Whether the client answers by retrying (2026-07-28 and later) rather
/// than taking requests.
pub(super) fn answers_by_retry(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// Runs `work` as `caller`, whose questions go the way `context`'s client
/// takes them: requests to it (2025-11-25), or rounds of `input_required`
/// results answered by retries of the request `binding` names (2026-07-28),
/// where a call running `escalate_after` without ending or asking is
/// handed back running.
pub(super) async fn asking<T, F, Fut>(
    rounds: &Rounds<T>,
    context: &RequestContext<RoleServer>,
    binding: &str,
    retry: Retry,
    escalate_after: Option<Duration>,
    caller: Caller,
    work: F,
) -> Result<Step<T>, ErrorData>
where
    T: Send + 'static,
    F: FnOnce(Caller) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
{
    let capabilities = capabilities_of(context);
    if answers_by_retry(context) {
        let owner = Owner::new(&caller.identity.org, &caller.identity.user);
        let start = move |ask, cancel| {
            work(Caller {
                ask: Some(ask),
                cancel,
                ..caller
            })
        };
        let request = Request {
            owner: &owner,
            binding,
            retry,
            capabilities,
            cancelled: context.ct.clone(),
            escalate_after,
        };
        rounds.run(request, start).await
    } else {
        let ask = PeerAsk {
            peer: context.peer.clone(),
            capabilities,
            origin: context.id.clone(),
        };
        let caller = Caller {
            ask: Some(Arc::new(ask)),
            ..caller
        };
        Ok(Step::Done(work(caller).await))
    }
}
