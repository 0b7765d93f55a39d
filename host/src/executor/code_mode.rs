//! The host as a pack's call sees it (`CallContext`): identity, logs,
//! progress, cancellation, the catalog, and calls back into the executor
//! from code (code mode), one level deeper each time: of tools, and of the
//! caller's prompts and resources (`code_offers`).

use std::{future::Future, sync::Arc};

use abi_stable::std_types::{ROption, RResult, RStr, RString};
use async_ffi::{FfiFuture, FutureExt as _};
use pack_api::{CallContext, CallResult, LogLevel, protocol};
use packhost_command::Call;
use serde_json::{Map, Value};
use tokio_util::task::AbortOnDropHandle;

use super::{
    Caller, Executor, Output,
    code_offers::{Offer, no_positional},
};
use crate::{
    audit::{CredentialAction, Event, Who},
    error::CallError,
    failure::Failure,
};

/// Code mode can call tools that call tools; a loop must end somewhere.
const MAX_NESTING: u32 = 8;

/// The host as one call sees it.
#[derive(Clone)]
pub(super) struct PackCallContext {
    pub(super) executor: Arc<Executor>,
    pub(super) pack: String,
    pub(super) caller: Caller,
}

impl CallContext for PackCallContext {
    fn user(&self) -> RString {
        self.caller.identity.user.as_str().into()
    }

    fn org(&self) -> RString {
        self.caller.identity.org.as_str().into()
    }

    fn request_id(&self) -> RString {
        self.caller.request_id.as_str().into()
    }

    fn log(&self, level: LogLevel, message: RStr<'_>) {
        crate::logging::pack_log(
            &self.pack,
            Some(&self.caller.request_id),
            level,
            message.as_str(),
        );
        if let Some(sink) = &self.caller.log {
            sink(&self.pack, level, message.as_str());
        }
    }

    fn progress(&self, progress: f64, total: ROption<f64>, message: RStr<'_>) {
        if let Some(sink) = &self.caller.progress {
            sink(progress, total.into_option(), message.as_str().to_owned());
        }
    }

    fn is_cancelled(&self) -> bool {
        self.caller.cancel.is_cancelled()
    }

    fn remaining_ms(&self) -> u64 {
        self.caller.deadline.map_or(u64::MAX, |deadline| {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            u64::try_from(left.as_millis()).unwrap_or(u64::MAX)
        })
    }

    fn catalog(&self) -> RString {
        self.executor.catalog_for(&self.caller)
    }

    fn call_tool(&self, name: RStr<'_>, args_json: RStr<'_>) -> FfiFuture<CallResult> {
        if let Some(report) = super::subscription::report(self, name.as_str(), args_json.as_str()) {
            return report;
        }
        let args = args_json.as_str().to_owned();
        if name.as_str() == protocol::INPUT {
            let pack = self.pack.clone();
            return self.nested(name, move |_, name, caller| async move {
                let questions = json_of(&name, &args)?;
                let ask = caller.ask.ok_or(CallError::NoClientToAsk { pack })?;
                ask.ask(questions).await.map(Value::Object)
            });
        }
        if name.as_str() == protocol::ELICITATION_COMPLETE {
            return self.nested(name, move |_, name, caller| async move {
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct Completed {
                    elicitation_id: String,
                }
                let completed: Completed = json_of(&name, &args)?;
                if let Some(ask) = caller.ask {
                    ask.elicitation_complete(completed.elicitation_id).await;
                }
                Ok(Value::Object(Default::default()))
            });
        }
        if name.as_str() == protocol::AUDIT_CREDENTIAL {
            return self.nested(name, move |executor, name, caller| async move {
                let event: CredentialEvent = json_of(&name, &args)?;
                let who = Who {
                    org: event.org,
                    user: event.user,
                };
                executor.audit().record(|| {
                    let request = Some(caller.request_id.as_str());
                    Event::credential(&who, &event.integration, event.action, request)
                });
                Ok(Value::Object(Default::default()))
            });
        }
        if name.as_str() == protocol::OFFER {
            let pack = self.pack.clone();
            return self.nested(name, move |executor, name, _| async move {
                let args = json_of(&name, &args)?;
                Ok(executor.offer(&pack, args)?)
            });
        }
        if let Some(offer) = Offer::named(name.as_str()) {
            return self.nested(name, move |executor, name, caller| async move {
                let args = json_of(&name, &args)?;
                executor.code_offer(offer, args, &caller).await
            });
        }
        self.nested(name, move |executor, name, caller| async move {
            let args: Value = json_of(&name, &args)?;
            executor
                .call_tool(&name, args, &caller)
                .await
                .map(Output::into_value)
        })
    }

    fn call_with(
        &self,
        name: RStr<'_>,
        positional_json: RStr<'_>,
        keywords_json: RStr<'_>,
    ) -> FfiFuture<CallResult> {
        let (positional, keywords) = (
            positional_json.as_str().to_owned(),
            keywords_json.as_str().to_owned(),
        );
        if let Some(offer) = Offer::named(name.as_str()) {
            return self.nested(name, move |executor, name, caller| async move {
                no_positional(offer, &json_of::<Vec<Value>>(&name, &positional)?)?;
                let args = json_of(&name, &keywords)?;
                executor.code_offer(offer, args, &caller).await
            });
        }
        self.nested(name, move |executor, name, caller| async move {
            let call = Call {
                args: json_of(&name, &positional)?,
                kwargs: json_of::<Map<String, Value>>(&name, &keywords)?
                    .into_iter()
                    .collect(),
                target: name,
            };
            executor
                .call_bound(call, &caller)
                .await
                .map(Output::into_value)
        })
    }
}

impl PackCallContext {
    /// A call made from the pack's code, one level deeper. Runs on the pack's
    /// thread: the work goes to the host's runtime, and the pack gets a future
    /// that only waits for it (dropping it aborts it).
    pub(super) fn nested<F, Fut>(&self, name: RStr<'_>, call: F) -> FfiFuture<CallResult>
    where
        F: FnOnce(Arc<Executor>, String, Caller) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Value, Failure>> + Send + 'static,
    {
        let executor = Arc::clone(&self.executor);
        let name = name.as_str().to_owned();
        let caller = Caller {
            depth: self.caller.depth + 1,
            // A call made from here reports on no subscription of this one.
            subscriber: None,
            ..self.caller.clone()
        };
        let task = AbortOnDropHandle::new(self.executor.runtime.spawn(async move {
            if caller.depth > MAX_NESTING {
                return Err(CallError::TooDeep {
                    name,
                    max: MAX_NESTING,
                }
                .into());
            }
            call(executor, name, caller).await
        }));
        async move {
            match task.await {
                Ok(Ok(value)) => RResult::ROk(value.to_string().into()),
                Ok(Err(failure)) => RResult::RErr(failure.to_json().into()),
                Err(e) => RResult::RErr(
                    Failure::from(CallError::HostTask {
                        error: e.to_string(),
                    })
                    .to_json()
                    .into(),
                ),
            }
        }
        .into_ffi()
    }
}

/// Arguments code sent, which must be JSON of their kind.
/// What a pack reports of a user's upstream credential
/// (`protocol::AUDIT_CREDENTIAL`).
#[derive(serde::Deserialize)]
struct CredentialEvent {
    org: String,
    user: String,
    integration: String,
    action: CredentialAction,
}

fn json_of<T: serde::de::DeserializeOwned>(name: &str, json: &str) -> Result<T, CallError> {
    serde_json::from_str(json).map_err(|e| CallError::ArgumentsNotJson {
        name: name.to_owned(),
        error: e.to_string(),
    })
}
