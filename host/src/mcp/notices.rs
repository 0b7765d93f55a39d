//! A call's notifications to its client: progress and log lines, in the
//! order the pack reported them, all sent before the call's result.
//!
//! Packs report from their own threads, where no host runtime runs: a
//! call's sinks only queue, and one task on the host's runtime sends. The
//! result waits for that task to catch up: on a stream that ends with the
//! result (2026-07-28's, or a POST's), a notification sent after it is
//! lost.
#![allow(deprecated)] // logging: see `logging`

use std::sync::{
    Arc, OnceLock,
    atomic::{AtomicUsize, Ordering},
};

use rmcp::{
    RoleServer,
    model::{LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken},
    service::Peer,
};
use tokio::{
    runtime::Handle,
    sync::{mpsc, oneshot},
};

use crate::executor::ProgressSink;

enum Notice {
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
    /// Everything queued before has been sent.
    Caught(oneshot::Sender<()>),
}

/// One call's queue of notifications to `peer`. The task that sends them
/// starts with the first one: most calls send none, and pay for no task.
#[derive(Clone)]
pub(super) struct Notices(Arc<Queue>);

struct Queue {
    peer: Peer<RoleServer>,
    runtime: Handle,
    sender: OnceLock<mpsc::UnboundedSender<Notice>>,
    /// Queued and not sent yet: a call that sent nothing answers without a
    /// round trip to the sending task.
    pending: Arc<AtomicUsize>,
}

impl Notices {
    /// On the runtime of the calling task, which packs' threads lack.
    pub(super) fn to(peer: &Peer<RoleServer>) -> Self {
        Self(Arc::new(Queue {
            peer: peer.clone(),
            runtime: Handle::current(),
            sender: OnceLock::new(),
            pending: Arc::default(),
        }))
    }

    fn sender(&self) -> &mpsc::UnboundedSender<Notice> {
        let queue = &self.0;
        queue.sender.get_or_init(|| {
            let (sender, notices) = mpsc::unbounded_channel();
            let (peer, pending) = (queue.peer.clone(), Arc::clone(&queue.pending));
            queue.runtime.spawn(send_all(peer, notices, pending));
            sender
        })
    }

    fn send(&self, notice: Notice) {
        self.0.pending.fetch_add(1, Ordering::SeqCst);
        if self.sender().send(notice).is_err() {
            self.0.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Progress reports for the request that gave `token`.
    pub(super) fn progress(&self, token: ProgressToken) -> ProgressSink {
        let notices = self.clone();
        Arc::new(move |progress, total, message: String| {
            let mut param = ProgressNotificationParam::new(token.clone(), progress);
            param.total = total;
            param.message = Some(message).filter(|m| !m.is_empty());
            notices.send(Notice::Progress(param));
        })
    }

    /// A log line (the caller filters by level).
    pub(super) fn logger(
        &self,
    ) -> impl Fn(LoggingMessageNotificationParam) + Send + Sync + 'static {
        let notices = self.clone();
        move |param| notices.send(Notice::Log(param))
    }

    /// Once everything queued so far has been sent.
    pub(super) async fn caught_up(&self) {
        if self.0.pending.load(Ordering::SeqCst) == 0 {
            return;
        }
        let (done, sent) = oneshot::channel();
        if self.sender().send(Notice::Caught(done)).is_ok() {
            let _ = sent.await;
        }
    }
}

/// Sends `notices` to `peer` in order, until the call's queue is dropped.
async fn send_all(
    peer: Peer<RoleServer>,
    mut notices: mpsc::UnboundedReceiver<Notice>,
    pending: Arc<AtomicUsize>,
) {
    while let Some(notice) = notices.recv().await {
        let delivered = match notice {
            Notice::Progress(param) => peer.notify_progress(param).await,
            Notice::Log(param) => peer.notify_logging_message(param).await,
            Notice::Caught(done) => {
                let _ = done.send(());
                continue;
            }
        };
        pending.fetch_sub(1, Ordering::SeqCst);
        if let Err(e) = delivered {
            tracing::debug!(error = %e, "notification not delivered");
        }
    }
}
