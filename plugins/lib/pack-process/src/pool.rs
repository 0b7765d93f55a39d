//! Pre-started children, one handed out per call, replaced in the background.

use std::{
    future::Future,
    io,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

/// How long warm-up waits after a pack starts: the host's start-up
/// (`initialize`, then `tools/list`) takes a few milliseconds, and starting
/// interpreters at once took the CPU from it on a 2-core machine (exec_ts's
/// two node processes added ~20 ms to the first `tools/list`).
pub const WARM_UP_DELAY: Duration = Duration::from_millis(100);

type Start<T> = Box<dyn Fn() -> Pin<Box<dyn Future<Output = io::Result<T>> + Send>> + Send + Sync>;

/// Keeps up to `size` idle children ready. Each [`take`](Self::take) hands
/// out a fresh one (never reused: calls stay isolated) and starts its
/// replacement. Must be used inside a tokio runtime.
pub struct WarmPool<T> {
    inner: Arc<Inner<T>>,
}

struct Inner<T> {
    ready: Mutex<Vec<T>>,
    size: usize,
    starting: AtomicUsize,
    start: Start<T>,
    usable: fn(&mut T) -> bool,
}

impl<T: Send + 'static> WarmPool<T> {
    /// A pool of `size` children made by `start`; `usable` tells whether an
    /// idle one is still alive. Starts filling after [`WARM_UP_DELAY`] (a
    /// `take` before then starts a child at once).
    pub fn new<F, Fut>(size: usize, start: F, usable: fn(&mut T) -> bool) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = io::Result<T>> + Send + 'static,
    {
        let pool = Self {
            inner: Arc::new(Inner {
                ready: Mutex::new(Vec::new()),
                size,
                starting: AtomicUsize::new(0),
                start: Box::new(move || Box::pin(start())),
                usable,
            }),
        };
        let inner = Arc::downgrade(&pool.inner);
        tokio::spawn(async move {
            tokio::time::sleep(WARM_UP_DELAY).await;
            if let Some(inner) = inner.upgrade() {
                refill(&inner);
            }
        });
        pool
    }

    /// A fresh child: a ready one if there is one, else one started now.
    /// Its replacement starts at once.
    pub async fn take(&self) -> io::Result<T> {
        let child = self.take_ready().await;
        self.refill();
        child
    }

    async fn take_ready(&self) -> io::Result<T> {
        let ready = loop {
            let candidate = self
                .inner
                .ready
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop();
            match candidate {
                Some(mut child) => {
                    if (self.inner.usable)(&mut child) {
                        break Some(child);
                    }
                }
                None => break None,
            }
        };
        match ready {
            Some(child) => Ok(child),
            None => (self.inner.start)().await,
        }
    }

    /// Drop every idle child (their drop kills them).
    pub fn clear(&self) {
        self.inner
            .ready
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    fn refill(&self) {
        refill(&self.inner);
    }
}

/// Start children until `size` are ready or starting.
fn refill<T: Send + 'static>(inner: &Arc<Inner<T>>) {
    loop {
        let ready = inner.ready.lock().unwrap_or_else(|e| e.into_inner()).len();
        let starting = inner.starting.load(Ordering::SeqCst);
        if ready + starting >= inner.size {
            return;
        }
        inner.starting.fetch_add(1, Ordering::SeqCst);
        let inner = Arc::clone(inner);
        tokio::spawn(async move {
            let started = (inner.start)().await;
            inner.starting.fetch_sub(1, Ordering::SeqCst);
            if let Ok(child) = started {
                inner
                    .ready
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(child);
            }
        });
    }
}
