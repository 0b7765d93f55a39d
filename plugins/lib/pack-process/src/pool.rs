//! Pre-started children, one handed out per call, replaced in the background;
//! as many kept ready as recent calls needed.

use std::{
    collections::VecDeque,
    future::Future,
    io,
    pin::Pin,
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio::{sync::oneshot, time::Instant};

/// How long warm-up waits after a pack starts: the host's start-up
/// (`initialize`, then `tools/list`) takes a few milliseconds, and starting
/// interpreters at once took the CPU from it on a 2-core machine (exec_ts's
/// two node processes added ~20 ms to the first `tools/list`).
pub const WARM_UP_DELAY: Duration = Duration::from_millis(100);

type Start<T> =
    Box<dyn Fn(Wanted) -> Pin<Box<dyn Future<Output = io::Result<T>> + Send>> + Send + Sync>;

/// Why a child is started: to be kept ready ahead of calls, or for a call
/// that is waiting for it now (which anything the child does before it is
/// ready only delays).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// To be kept ready.
    Ahead,
    /// For a take waiting now.
    Now,
}

/// How many children a [`WarmPool`] keeps ready: `initial` from the start;
/// one more (up to `max`) each time a call found none ready and waited for
/// a start; none after `idle` without a call. So a lone caller keeps as
/// many as arrive while one starts, a burst as many as it had to wait for,
/// and a quiet pack holds nothing (its next call starts one, and from then
/// on one is kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Demand {
    /// Kept ready from the start, before any call.
    pub initial: usize,
    /// Kept ready however busy.
    pub max: usize,
    /// After this long without a call, none.
    pub idle: Duration,
}

impl Demand {
    /// A pack's `pool_size` and `pool_idle_secs`: nothing before the first
    /// call, one kept from then on, at most `max`, none after `idle_secs`
    /// without a call.
    pub fn up_to(max: usize, idle_secs: u64) -> Self {
        Self {
            initial: 1,
            max,
            idle: Duration::from_secs(idle_secs),
        }
    }
}

/// Keeps idle children ready, as many as [`Demand`] says. Each
/// [`take`](Self::take) hands out a fresh one (never reused: calls stay
/// isolated) with the [`Replacement`] that starts the next once the call is
/// done with it. Must be used inside a tokio runtime.
pub struct WarmPool<T> {
    inner: Arc<Inner<T>>,
}

struct Inner<T> {
    ready: Mutex<Vec<T>>,
    /// Takes that found none ready, oldest first: each gets the next child
    /// started (or its failure), whoever started it.
    waiting: Mutex<VecDeque<oneshot::Sender<io::Result<T>>>>,
    demand: Demand,
    /// Kept ready now: at most `demand.max`.
    target: AtomicUsize,
    starting: AtomicUsize,
    last_take: Mutex<Instant>,
    start: Start<T>,
    usable: fn(&mut T) -> bool,
}

impl<T: Send + 'static> WarmPool<T> {
    /// A pool whose ready children follow `demand` (see [`Demand`]), made
    /// by `start` (told why, [`Wanted`]); `usable` tells whether an idle one is still alive;
    /// `emptied` runs each time an idle period has emptied it (to stop what
    /// makes the children). Starts filling after [`WARM_UP_DELAY`] (a
    /// `take` before then starts a child at once).
    pub fn following<F, Fut>(
        demand: Demand,
        start: F,
        usable: fn(&mut T) -> bool,
        emptied: impl Fn() + Send + 'static,
    ) -> Self
    where
        F: Fn(Wanted) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = io::Result<T>> + Send + 'static,
    {
        let demand = Demand {
            initial: demand.initial.min(demand.max),
            ..demand
        };
        let pool = Self {
            inner: Arc::new(Inner {
                ready: Mutex::new(Vec::new()),
                waiting: Mutex::new(VecDeque::new()),
                demand,
                target: AtomicUsize::new(demand.initial),
                starting: AtomicUsize::new(0),
                last_take: Mutex::new(Instant::now()),
                start: Box::new(move |wanted| Box::pin(start(wanted))),
                usable,
            }),
        };
        let inner = Arc::downgrade(&pool.inner);
        tokio::spawn(async move {
            tokio::time::sleep(WARM_UP_DELAY).await;
            if let Some(inner) = inner.upgrade() {
                refill(&inner);
            }
            empty_when_idle(inner, emptied).await;
        });
        pool
    }

    /// A fresh child: a ready one if there is one, else one started now
    /// (and one more kept ready from now on); its replacement starts when
    /// the [`Replacement`] is dropped.
    pub async fn take(&self) -> io::Result<(T, Replacement<T>)> {
        *lock(&self.inner.last_take) = Instant::now();
        let child = self.take_ready().await?;
        Ok((child, Replacement(Arc::downgrade(&self.inner))))
    }

    async fn take_ready(&self) -> io::Result<T> {
        let inner = &self.inner;
        let ready = loop {
            let candidate = lock(&inner.ready).pop();
            match candidate {
                Some(mut child) => {
                    if (inner.usable)(&mut child) {
                        break Some(child);
                    }
                }
                None => break None,
            }
        };
        if let Some(child) = ready {
            return Ok(child);
        }
        let max = inner.demand.max;
        let _ = inner
            .target
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            });
        // The first child to start is this take's, so a start already under
        // way serves it rather than one more.
        let (sent, started) = oneshot::channel();
        lock(&inner.waiting).push_back(sent);
        refill(inner);
        started
            .await
            .unwrap_or_else(|_| Err(io::Error::other("the pool was dropped")))
    }

    /// How many children are ready now.
    pub fn ready(&self) -> usize {
        lock(&self.inner.ready).len()
    }

    /// Drop every idle child (their drop kills them).
    pub fn clear(&self) {
        lock(&self.inner.ready).clear();
    }
}

/// Starts the replacement of a taken child when dropped: hold it until the
/// call is done with the child. Started at the take, the replacement's fork
/// and preparation took the CPU from the call itself on a 2-core machine
/// (measured on the exec_py benchmark page of the book).
#[must_use = "the replacement starts when this is dropped"]
pub struct Replacement<T: Send + 'static>(Weak<Inner<T>>);

impl<T: Send + 'static> Drop for Replacement<T> {
    fn drop(&mut self) {
        // Not when the runtime is going away, dropping what it ran.
        if let (Some(inner), Ok(_)) = (self.0.upgrade(), tokio::runtime::Handle::try_current()) {
            refill(&inner);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Start children until the target are ready or starting, besides one for
/// each take waiting.
fn refill<T: Send + 'static>(inner: &Arc<Inner<T>>) {
    loop {
        let ready = lock(&inner.ready).len();
        let waiting = lock(&inner.waiting).len();
        let starting = inner.starting.load(Ordering::SeqCst);
        if ready + starting >= inner.target.load(Ordering::SeqCst) + waiting {
            return;
        }
        let wanted = match ready + starting < waiting {
            true => Wanted::Now,
            false => Wanted::Ahead,
        };
        inner.starting.fetch_add(1, Ordering::SeqCst);
        let inner = Arc::clone(inner);
        tokio::spawn(async move {
            let started = (inner.start)(wanted).await;
            inner.starting.fetch_sub(1, Ordering::SeqCst);
            hand_over(&inner, started);
        });
    }
}

/// A child just started (or its failure) to the oldest take still waiting;
/// a child nobody waits for is kept ready, a failure nobody waits for is
/// dropped (the next take starts again).
fn hand_over<T>(inner: &Inner<T>, mut started: io::Result<T>) {
    loop {
        let Some(waiter) = lock(&inner.waiting).pop_front() else {
            break;
        };
        match waiter.send(started) {
            Ok(()) => return,
            Err(unsent) => started = unsent, // that take was given up
        }
    }
    if let Ok(child) = started {
        lock(&inner.ready).push(child);
    }
}

/// Nothing ready once no child was taken for `idle` (the ready ones are
/// dropped, which kills them), then `emptied`; looked at again every `idle`
/// while nothing is taken.
async fn empty_when_idle<T>(inner: Weak<Inner<T>>, emptied: impl Fn()) {
    // The last take the pool was emptied after.
    let mut emptied_after = None;
    loop {
        let Some((since, idle)) = inner
            .upgrade()
            .map(|inner| (*lock(&inner.last_take), inner.demand.idle))
        else {
            return;
        };
        let Some(due) = since.checked_add(idle) else {
            return; // never idle for that long
        };
        let due = if emptied_after == Some(since) {
            Instant::now() + idle
        } else {
            due
        };
        tokio::time::sleep_until(due).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if emptied_after == Some(since) || *lock(&inner.last_take) != since {
            continue; // already emptied, or taken from meanwhile
        }
        inner.target.store(0, Ordering::SeqCst);
        let ready = std::mem::take(&mut *lock(&inner.ready));
        drop(ready);
        emptied_after = Some(since);
        emptied();
    }
}
