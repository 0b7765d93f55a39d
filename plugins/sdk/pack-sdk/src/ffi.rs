//! The ABI side of a pack: its own tokio runtime, panic catching, and the
//! `extern "C"` functions that [`export_pack!`](crate::export_pack) exports.

use std::{
    any::Any,
    collections::HashMap,
    panic::{AssertUnwindSafe, catch_unwind},
    sync::{Arc, Once, OnceLock},
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RResult, RStr, RString},
};
use async_ffi::{FfiFuture, FutureExt as _};
use pack_api::{
    CallContextBox, CallResult, HostBox, LogLevel, Pack, Pack_TO, PackBox, codes, protocol,
};
use serde_json::Value;
use tokio::runtime::Runtime;
// Dropping the handle aborts the task: that is how the host's cancellation
// reaches the pack.
use tokio_util::task::AbortOnDropHandle;

use crate::{Context, Host, PackDef, PackError, def::Shutdown, function::Handler};

/// Each pack library holds its own copy of tokio, so it runs its own runtime:
/// the host's runtime is not usable from here.
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("pack-worker")
            .enable_all()
            .build()
            .expect("a pack cannot run without its tokio runtime")
    })
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

struct PackImpl<S> {
    name: &'static str,
    state: Arc<S>,
    functions: HashMap<String, Handler<S>>,
    shutdown: Option<Shutdown<S>>,
}

impl<S: Send + Sync + 'static> Pack for PackImpl<S> {
    fn call(
        &self,
        function: RStr<'_>,
        args_json: RStr<'_>,
        ctx: CallContextBox,
    ) -> FfiFuture<CallResult> {
        let pack = self.name;
        let Some(handler) = self.functions.get(function.as_str()).cloned() else {
            // The host resolves names before calling; this only guards the ABI.
            let error = PackError::new(
                codes::UNKNOWN_FUNCTION,
                format!("pack `{pack}` has no function `{function}`"),
            );
            return async move { RResult::RErr(error.to_json().into()) }.into_ffi();
        };
        let state = Arc::clone(&self.state);
        let args = args_json.as_str().to_owned();
        let function = function.as_str().to_owned();
        let task = AbortOnDropHandle::new(runtime().spawn(async move {
            let args: Value = serde_json::from_str(&args)
                .map_err(|e| PackError::invalid_argument(format!("arguments are not JSON: {e}")))?;
            handler(state, args, Context::new(ctx)).await
        }));
        async move {
            let outcome = match task.await {
                Ok(outcome) => outcome,
                Err(e) if e.is_panic() => Err(PackError::internal(format!(
                    "`{pack}.{function}` panicked: {}",
                    panic_message(&*e.into_panic())
                ))),
                Err(_) => Err(PackError::new(codes::CANCELLED, "the call was cancelled")),
            };
            match outcome {
                Ok(value) => RResult::ROk(RString::from(value.to_string())),
                Err(error) => RResult::RErr(error.to_json().into()),
            }
        }
        .into_ffi()
    }

    fn shutdown(&self) -> FfiFuture<()> {
        let Some(shutdown) = self.shutdown.clone() else {
            return async {}.into_ffi();
        };
        let task = AbortOnDropHandle::new(runtime().spawn(shutdown(Arc::clone(&self.state))));
        async move {
            let _ = task.await;
        }
        .into_ffi()
    }
}

/// Body of the exported `manifest` function.
pub fn manifest<S: Send + Sync + 'static>(build: fn() -> PackDef<S>, version: &str) -> RString {
    let json = catch_unwind(|| serde_json::to_string(&build().manifest(version)));
    match json {
        Ok(Ok(json)) => json.into(),
        // The host refuses a manifest that is not JSON, naming the file.
        Ok(Err(e)) => format!("manifest is not serialisable: {e}").into(),
        Err(panic) => format!("building the manifest panicked: {}", panic_message(&*panic)).into(),
    }
}

/// This library has its own copy of std, hence its own panic hook: route the
/// pack's panics to the host's log as one line instead of a raw backtrace on
/// stderr. The panic itself still becomes an `INTERNAL` result.
fn report_panics_to(host: &HostBox) {
    static ONCE: Once = Once::new();
    let host = host.clone();
    ONCE.call_once(move || {
        std::panic::set_hook(Box::new(move |info| {
            host.log(LogLevel::Error, format!("panic: {info}").as_str().into());
        }));
    });
}

/// Build the pack's state from `config` and wrap it for the ABI (what the
/// host's `new` gets, and what `testing::PackTest` calls).
pub(crate) fn instantiate<S: Send + Sync + 'static>(
    def: PackDef<S>,
    mut config: Value,
    host: HostBox,
) -> Result<PackBox, PackError> {
    // The host's own key, never the pack's setting.
    let state_database = config
        .as_object_mut()
        .and_then(|table| table.remove(protocol::STATE_DATABASE))
        .and_then(|url| url.as_str().map(str::to_owned));
    // The constructor may start background work that needs a runtime.
    let state = {
        let _guard = runtime().enter();
        (def.init)(config, Host::new(host, state_database))?
    };
    let pack = PackImpl {
        name: def.name,
        state: Arc::new(state),
        functions: def
            .functions
            .into_iter()
            .map(|(spec, handler)| (spec.name, handler))
            .chain(def.offers.handlers(def.name))
            .chain(def.ready.map(|ready| (protocol::READY.to_owned(), ready)))
            .collect(),
        shutdown: def.shutdown,
    };
    Ok(Pack_TO::from_value(pack, TD_Opaque))
}

/// Body of the exported `new` function.
pub fn construct<S: Send + Sync + 'static>(
    build: fn() -> PackDef<S>,
    config_json: RStr<'_>,
    host: HostBox,
) -> RResult<PackBox, RString> {
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<PackBox, PackError> {
        let def = build();
        let config: Value = serde_json::from_str(config_json.as_str())
            .map_err(|e| PackError::invalid_argument(format!("config is not JSON: {e}")))?;
        report_panics_to(&host);
        instantiate(def, config, host)
    }));
    match result {
        Ok(Ok(pack)) => RResult::ROk(pack),
        Ok(Err(error)) => RResult::RErr(error.to_json().into()),
        Err(panic) => RResult::RErr(
            PackError::internal(format!(
                "the pack's constructor panicked: {}",
                panic_message(&*panic)
            ))
            .to_json()
            .into(),
        ),
    }
}
