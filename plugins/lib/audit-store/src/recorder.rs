//! Recording without waiting: events go through a bounded queue to one
//! background task that writes them in batches and, when asked, prunes what
//! a [`Retention`] no longer keeps. When the queue is full an event is
//! dropped and counted, never waited for, and the count is logged. The
//! database is opened by the first write or read, never when the recorder
//! starts.
//!
//! The host keeps one (its `[audit]`); code elsewhere in the process that
//! must record (a pack that uses upstream credentials) may start its own on
//! the same database, without pruning.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, SystemTime},
};

use tokio::sync::{OnceCell, mpsc, oneshot};

use crate::{AuditLog, Event, Filter, Retention, StoreError};

/// Events written at once, in one transaction.
const BATCH: usize = 256;
/// How long the writer waits for more events after the first of a batch:
/// under load, one transaction (one sync of the file) for many events.
const GATHER: Duration = Duration::from_millis(20);
/// The first pruning, after the start (off the start path), and then how
/// often.
const PRUNE_FIRST: Duration = Duration::from_secs(60);
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// How long [`Recorder::flush`] waits for queued events to be written.
const FLUSH_WAIT: Duration = Duration::from_secs(5);

/// How a [`Recorder`] works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Events waiting to be written; past it new ones are dropped.
    pub queue: usize,
    /// What to prune (an hour after the start, then hourly); `None`: never
    /// (another recorder on the same database prunes).
    pub retention: Option<Retention>,
}

/// Records events without waiting and reads them back; cheap to clone.
#[derive(Clone)]
pub struct Recorder {
    queue: mpsc::Sender<Message>,
    /// Events dropped because the queue was full or the database failed.
    dropped: Arc<AtomicU64>,
    store: Arc<Store>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

/// What the writer is sent.
// Events are the traffic (a flush comes once per process): boxing them
// would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
enum Message {
    Event(Event),
    /// Write what came before, then answer.
    Flush(oneshot::Sender<()>),
}

/// The database, opened by whichever comes first: the writer or a reader.
struct Store {
    database: String,
    log: OnceCell<Arc<dyn AuditLog>>,
}

impl Store {
    async fn log(&self) -> Result<&Arc<dyn AuditLog>, StoreError> {
        self.log
            .get_or_try_init(|| crate::open(&self.database))
            .await
    }
}

impl Recorder {
    /// A recorder into `database` (as [`crate::open`] takes it); its writer
    /// runs on the current tokio runtime.
    pub fn start(database: String, options: Options) -> Self {
        let store = Arc::new(Store {
            database,
            log: OnceCell::new(),
        });
        let (queue, receiver) = mpsc::channel(options.queue.max(1));
        let dropped = Arc::new(AtomicU64::new(0));
        let writer = Writer {
            store: Arc::clone(&store),
            dropped: Arc::clone(&dropped),
            retention: options.retention,
        };
        tokio::spawn(writer.run(receiver));
        Self {
            queue,
            dropped,
            store,
        }
    }

    /// Record `event`; never waits: a full queue drops it, counted.
    pub fn record(&self, event: Event) {
        if self.queue.try_send(Message::Event(event)).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Record `event` only while more than half the queue is free, else
    /// drop it (counted): for what anyone can cause without signing in
    /// (refused sign-ins), so that a flood of them takes half the queue at
    /// most and never crowds out the events of callers who did.
    pub fn record_if_room(&self, event: Event) {
        if self.queue.capacity() * 2 > self.queue.max_capacity() {
            self.record(event);
        } else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Events dropped so far (queue full, or the database failed).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The events `filter` matches.
    pub async fn query(&self, filter: &Filter) -> Result<Vec<Event>, StoreError> {
        self.store.log().await?.query(filter).await
    }

    /// Wait (a few seconds at most) until what was recorded so far is
    /// written: before the process ends.
    pub async fn flush(&self) {
        let (done, written) = oneshot::channel();
        let flushed = async {
            if self.queue.send(Message::Flush(done)).await.is_ok() {
                let _ = written.await;
            }
        };
        if tokio::time::timeout(FLUSH_WAIT, flushed).await.is_err() {
            tracing::warn!("audit: events still queued after {FLUSH_WAIT:?} were not written");
        }
    }
}

/// Add to `messages` what comes within [`GATHER`], up to [`BATCH`]; a
/// flush is answered at once.
async fn gather(receiver: &mut mpsc::Receiver<Message>, messages: &mut Vec<Message>) {
    let until = tokio::time::Instant::now() + GATHER;
    let flushing = |messages: &[Message]| messages.iter().any(|m| matches!(m, Message::Flush(_)));
    while messages.len() < BATCH && !flushing(messages) {
        let room = BATCH - messages.len();
        match tokio::time::timeout_at(until, receiver.recv_many(messages, room)).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// The one task that writes and prunes.
struct Writer {
    store: Arc<Store>,
    dropped: Arc<AtomicU64>,
    retention: Option<Retention>,
}

impl Writer {
    async fn run(self, mut receiver: mpsc::Receiver<Message>) {
        let mut messages = Vec::with_capacity(BATCH);
        let mut events = Vec::with_capacity(BATCH);
        let start = tokio::time::Instant::now() + PRUNE_FIRST;
        let mut prune = tokio::time::interval_at(start, PRUNE_EVERY);
        let mut reported = 0;
        loop {
            tokio::select! {
                received = receiver.recv_many(&mut messages, BATCH) => {
                    if received == 0 {
                        return;
                    }
                    gather(&mut receiver, &mut messages).await;
                    let mut flushes = Vec::new();
                    for message in messages.drain(..) {
                        match message {
                            Message::Event(event) => events.push(event),
                            Message::Flush(done) => flushes.push(done),
                        }
                    }
                    self.write(&mut events).await;
                    for done in flushes {
                        let _ = done.send(());
                    }
                    reported = self.report_dropped(reported);
                }
                _ = prune.tick() => self.prune().await,
            }
        }
    }

    async fn write(&self, events: &mut Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let stored = match self.store.log().await {
            Ok(log) => log.insert(events).await,
            Err(e) => Err(e),
        };
        if let Err(e) = stored {
            self.dropped
                .fetch_add(events.len() as u64, Ordering::Relaxed);
            tracing::warn!(events = events.len(), "audit: events not stored: {e}");
        }
        events.clear();
    }

    /// Log the events dropped since `reported` (the count logged last);
    /// the count logged now.
    fn report_dropped(&self, reported: u64) -> u64 {
        let dropped = self.dropped.load(Ordering::Relaxed);
        if dropped > reported {
            tracing::warn!(
                dropped = dropped - reported,
                dropped_in_all = dropped,
                "audit: events dropped (queue full or database failing); raise `audit.queue` \
                 or check the database"
            );
        }
        dropped
    }

    /// Prune, once the database is open (pruning never opens it).
    async fn prune(&self) {
        let (Some(log), Some(retention)) = (self.store.log.get(), &self.retention) else {
            return;
        };
        match log.prune(retention, SystemTime::now()).await {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(pruned, "audit: old events deleted"),
            Err(e) => tracing::warn!("audit: cannot prune: {e}"),
        }
    }
}

#[cfg(test)]
mod tests;
