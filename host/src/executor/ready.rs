//! Whether the packs can serve calls now, for `GET /readyz`: each pack
//! that checks its own readiness (`protocol::READY`, a Jupyter Server it
//! depends on) is asked, with no caller, outside the audit trail and the
//! call metrics (a load balancer asks every second).

use std::{panic::AssertUnwindSafe, sync::Arc, time::Duration};

use futures_util::FutureExt as _;
use pack_api::protocol::READY;
use serde_json::json;

use super::{Caller, Executor};
use crate::identity::Identity;

/// How long a pack may take to say it is ready: a load balancer's check
/// waits about a second.
const ANSWER_WITHIN: Duration = Duration::from_millis(900);

impl Executor {
    /// The first pack that is not ready, and why (for the log only).
    pub async fn unready_pack(self: &Arc<Self>) -> Option<(String, String)> {
        let registry = self.registry();
        for pack in registry.packs.values() {
            let Some(function) = pack.reserved.iter().find(|f| f.spec.name == READY) else {
                continue;
            };
            let caller = Caller::new(Identity::nobody(), "readyz");
            let why = match self.start(pack, function, READY, json!({}), caller) {
                Err(e) => Some(e.to_string()),
                Ok(call) => {
                    match tokio::time::timeout(ANSWER_WITHIN, AssertUnwindSafe(call).catch_unwind())
                        .await
                    {
                        Ok(Ok(Ok(_))) => None,
                        Ok(Ok(Err(failure))) => Some(failure.text()),
                        Ok(Err(_)) => Some("its readiness check panicked".to_owned()),
                        Err(_) => {
                            Some(format!("no answer within {} ms", ANSWER_WITHIN.as_millis()))
                        }
                    }
                }
            };
            if let Some(why) = why {
                return Some((pack.loaded.name.clone(), why));
            }
        }
        None
    }
}
