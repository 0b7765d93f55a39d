//! The sentence model, loaded when a search first needs it and dropped
//! after an idle period: it is ~100 MB once loaded, and most hosts search
//! seldom or never.
//!
//! Whoever uses the model holds it ([`InUse`]) for the time of the use; the
//! model is dropped only when nobody holds it and it was last let go longer
//! ago than the idle period. After the drop, `settle` runs (the host's
//! allocator returns the freed memory to the OS).

use std::{
    ops::Deref,
    sync::{Arc, Mutex, MutexGuard, Weak},
    time::{Duration, Instant},
};

use crate::Sentences;

/// Makes a model (reads its files): a few hundred milliseconds.
pub(crate) type Load = Box<dyn Fn() -> Result<Box<dyn Sentences>, String> + Send + Sync>;

/// A model always loaded, or one loaded on demand.
pub(crate) struct Model {
    shared: Arc<Shared>,
}

struct Shared {
    /// `None`: the model was given loaded and stays.
    on_demand: Option<OnDemand>,
    state: Mutex<State>,
    /// Held while loading, so that two searches load once.
    loading: Mutex<()>,
}

struct OnDemand {
    load: Load,
    idle: Duration,
    settle: fn(),
}

struct State {
    loaded: Option<Arc<dyn Sentences>>,
    users: usize,
    last_used: Instant,
}

/// The model, held for one use.
pub(crate) struct InUse {
    model: Arc<dyn Sentences>,
    shared: Arc<Shared>,
}

impl Model {
    /// `sentences`, kept for good.
    pub(crate) fn loaded(sentences: Box<dyn Sentences>) -> Self {
        Self::with(None, Some(Arc::from(sentences)))
    }

    /// Loaded by `load` when first used; dropped when unused for `idle`,
    /// then `settle` runs.
    pub(crate) fn on_demand(load: Load, idle: Duration, settle: fn()) -> Self {
        Self::with(Some(OnDemand { load, idle, settle }), None)
    }

    fn with(on_demand: Option<OnDemand>, loaded: Option<Arc<dyn Sentences>>) -> Self {
        Self {
            shared: Arc::new(Shared {
                on_demand,
                state: Mutex::new(State {
                    loaded,
                    users: 0,
                    last_used: Instant::now(),
                }),
                loading: Mutex::default(),
            }),
        }
    }

    /// Whether the model is in memory now.
    pub(crate) fn is_loaded(&self) -> bool {
        self.shared.state().loaded.is_some()
    }

    /// Returns memory freed by one-off work to the OS (for a model given
    /// loaded, nothing: it is never dropped either).
    pub(crate) fn settle(&self) {
        if let Some(on_demand) = &self.shared.on_demand {
            (on_demand.settle)();
        }
    }

    /// The model for one use, and how long loading it took when this use
    /// loaded it.
    pub(crate) fn hold(&self) -> Result<(InUse, Option<Duration>), String> {
        if let Some(held) = self.shared.hold_loaded() {
            return Ok((held, None));
        }
        let _loading = self.shared.loading.lock().expect("model loading");
        if let Some(held) = self.shared.hold_loaded() {
            return Ok((held, None));
        }
        let on_demand = self
            .shared
            .on_demand
            .as_ref()
            .expect("a model given loaded stays loaded");
        let started = Instant::now();
        let model: Arc<dyn Sentences> = Arc::from((on_demand.load)()?);
        let took = started.elapsed();
        {
            let mut state = self.shared.state();
            state.loaded = Some(Arc::clone(&model));
            state.users += 1;
        }
        (on_demand.settle)();
        watch(Arc::downgrade(&self.shared), on_demand.idle);
        let shared = Arc::clone(&self.shared);
        Ok((InUse { model, shared }, Some(took)))
    }
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("model state")
    }

    fn hold_loaded(self: &Arc<Self>) -> Option<InUse> {
        let mut state = self.state();
        let model = Arc::clone(state.loaded.as_ref()?);
        state.users += 1;
        Some(InUse {
            model,
            shared: Arc::clone(self),
        })
    }

    /// Drops the model if nobody held it for `idle`; else how long to wait
    /// before asking again.
    fn unload_if_idle(&self, idle: Duration) -> Option<Duration> {
        let mut state = self.state();
        state.loaded.as_ref()?;
        let unused = state.last_used.elapsed();
        if state.users > 0 || unused < idle {
            return Some(idle.saturating_sub(unused).max(Duration::from_millis(10)));
        }
        let model = state.loaded.take();
        drop(state);
        drop(model);
        None
    }
}

/// Unloads the model once idle, from a thread of its own that ends then
/// (or when the model's owner is gone).
fn watch(shared: Weak<Shared>, idle: Duration) {
    let watcher = move || {
        loop {
            let Some(strong) = shared.upgrade() else {
                return;
            };
            match strong.unload_if_idle(idle) {
                Some(wait) => {
                    drop(strong);
                    std::thread::sleep(wait);
                }
                None => {
                    if let Some(on_demand) = &strong.on_demand {
                        tracing::debug!("search model unloaded after {idle:?} unused");
                        (on_demand.settle)();
                    }
                    return;
                }
            }
        }
    };
    if let Err(error) = std::thread::Builder::new()
        .name("search-model-idle".to_owned())
        .spawn(watcher)
    {
        tracing::warn!(%error, "no thread to unload the idle search model: it stays loaded");
    }
}

impl Deref for InUse {
    type Target = dyn Sentences;

    fn deref(&self) -> &Self::Target {
        self.model.as_ref()
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        let mut state = self.shared.state();
        state.users -= 1;
        state.last_used = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    struct Constant;

    impl Sentences for Constant {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
            Ok(texts.iter().map(|_| vec![1.0]).collect())
        }

        fn knows_word(&self, _: &str) -> bool {
            true
        }
    }

    static LOADS: AtomicUsize = AtomicUsize::new(0);
    static SETTLED: AtomicUsize = AtomicUsize::new(0);

    fn until(what: &str, done: impl Fn() -> bool) {
        let started = Instant::now();
        while !done() {
            assert!(started.elapsed() < Duration::from_secs(10), "{what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn loaded_on_first_use_held_while_used_dropped_when_idle() {
        let model = Model::on_demand(
            Box::new(|| {
                LOADS.fetch_add(1, Ordering::SeqCst);
                Ok(Box::new(Constant))
            }),
            Duration::from_millis(100),
            || {
                SETTLED.fetch_add(1, Ordering::SeqCst);
            },
        );
        assert!(!model.is_loaded(), "nothing loads before a use");
        let (held, took) = model.hold().unwrap();
        assert!(took.is_some(), "the first use says it loaded");
        let (again, took) = model.hold().unwrap();
        assert!(took.is_none(), "a loaded model is not loaded again");
        drop(again);
        std::thread::sleep(Duration::from_millis(300));
        assert!(model.is_loaded(), "held past the idle period: kept");
        assert_eq!(held.embed(&["x"]).unwrap(), [vec![1.0]]);
        drop(held);
        until("unloaded once idle", || !model.is_loaded());
        until("settled after the load and the unload", || {
            SETTLED.load(Ordering::SeqCst) == 2
        });
        let (_, took) = model.hold().unwrap();
        assert!(took.is_some(), "loaded again after an unload");
        assert_eq!(LOADS.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_failed_load_is_said_and_tried_again() {
        let model = Model::on_demand(
            Box::new(|| Err("no weights".to_owned())),
            Duration::from_secs(1),
            || {},
        );
        assert_eq!(model.hold().err().as_deref(), Some("no weights"));
        assert!(model.hold().is_err() && !model.is_loaded());
    }
}
