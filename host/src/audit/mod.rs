//! The audit trail as the host keeps it (`[audit]`): every call, approval,
//! refused sign-in and upstream credential event goes, as an
//! [`audit_store::Event`], through a bounded queue to one background writer
//! that stores them in batches and prunes what `keep_days` and
//! `keep_per_org` no longer keep. Recording never waits: when the queue is
//! full the event is dropped and counted, and the count is logged. The
//! database is opened by the first write or read, never on the start path.
//!
//! Read by `packhost audit` ([`cli`]) and by an organisation's admin over
//! MCP (`packhost.audit`, the host's own pack), who sees only their own
//! organisation's events.

pub mod cli;

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, SystemTime},
};

use audit_store::{AuditLog, Filter, Retention};
pub use audit_store::{CredentialAction, Event, Who};
use tokio::sync::{OnceCell, mpsc, oneshot};

use crate::config::Config;

/// Events written at once.
const BATCH: usize = 256;
/// The first pruning, after the start (off the start path), and then how
/// often.
const PRUNE_FIRST: Duration = Duration::from_secs(60);
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// How long a stop waits for queued events to be written.
const FLUSH_WAIT: Duration = Duration::from_secs(5);

/// Records events and reads them back; cheap to clone. Off (the default)
/// when the config has no `[audit]` or it says `enabled = false`.
#[derive(Clone, Default)]
pub struct Audit(Option<Arc<On>>);

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_on() {
            "Audit(on)"
        } else {
            "Audit(off)"
        })
    }
}

struct On {
    queue: mpsc::Sender<Message>,
    /// Events dropped because the queue was full.
    dropped: Arc<AtomicU64>,
    store: Arc<Store>,
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
    async fn log(&self) -> Result<&Arc<dyn AuditLog>, audit_store::StoreError> {
        self.log
            .get_or_try_init(|| audit_store::open(&self.database))
            .await
    }
}

impl Audit {
    /// As `config` says; starts the writer (in the current tokio runtime)
    /// when it is on.
    pub fn start(config: &Config) -> Self {
        let Some(audit) = config.audit.as_ref().filter(|audit| audit.enabled) else {
            return Self::default();
        };
        let store = Arc::new(Store {
            database: database(config),
            log: OnceCell::new(),
        });
        let (queue, receiver) = mpsc::channel(audit.queue);
        let dropped = Arc::new(AtomicU64::new(0));
        let retention = Retention {
            max_age_days: audit.keep_days,
            max_per_org: audit.keep_per_org,
        };
        let writer = Writer {
            store: Arc::clone(&store),
            dropped: Arc::clone(&dropped),
            retention,
        };
        tokio::spawn(writer.run(receiver));
        Self(Some(Arc::new(On {
            queue,
            dropped,
            store,
        })))
    }

    /// Whether events are recorded.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Record the event `event` makes (made only when the trail is on).
    /// Never waits: a full queue drops it, counted.
    pub fn record(&self, event: impl FnOnce() -> Event) {
        let Some(on) = &self.0 else {
            return;
        };
        if on.queue.try_send(Message::Event(event())).is_err() {
            on.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The events `filter` matches; `Err` says why they cannot be read.
    pub async fn query(&self, filter: &Filter) -> Result<Vec<Event>, String> {
        let Some(on) = &self.0 else {
            return Err("the audit trail is off: add an `[audit]` section to the config".into());
        };
        let log = on.store.log().await.map_err(|e| e.to_string())?;
        log.query(filter).await.map_err(|e| e.to_string())
    }

    /// Wait (a few seconds at most) until what was recorded so far is
    /// written: before the process ends.
    pub async fn flush(&self) {
        let Some(on) = &self.0 else {
            return;
        };
        let (done, written) = oneshot::channel();
        let flushed = async {
            if on.queue.send(Message::Flush(done)).await.is_ok() {
                let _ = written.await;
            }
        };
        if tokio::time::timeout(FLUSH_WAIT, flushed).await.is_err() {
            tracing::warn!("audit: events still queued after {FLUSH_WAIT:?} were not written");
        }
    }
}

/// The database `[audit]` names, else the integrations'.
pub fn database(config: &Config) -> String {
    let configured = config
        .audit
        .as_ref()
        .and_then(|audit| audit.database.clone());
    configured.unwrap_or_else(|| crate::integrations::database_of(config))
}

/// The one task that writes and prunes.
struct Writer {
    store: Arc<Store>,
    dropped: Arc<AtomicU64>,
    retention: Retention,
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
        let Some(log) = self.store.log.get() else {
            return;
        };
        match log.prune(&self.retention, SystemTime::now()).await {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(pruned, "audit: old events deleted"),
            Err(e) => tracing::warn!("audit: cannot prune: {e}"),
        }
    }
}

#[cfg(test)]
mod tests;
