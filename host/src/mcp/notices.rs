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
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use rmcp::{
    RoleServer,
    model::{LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken},
    service::Peer,
};
use tokio::sync::{mpsc, oneshot};

use crate::executor::ProgressSink;

enum Notice {
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
    /// Everything queued before has been sent.
    Caught(oneshot::Sender<()>),
}

/// One call's queue of notifications to `peer`.
#[derive(Clone)]
pub(super) struct Notices {
    sender: mpsc::UnboundedSender<Notice>,
    /// Queued and not sent yet: a call that sent nothing (most) answers
    /// without a round trip to the sending task.
    pending: Arc<AtomicUsize>,
}

impl Notices {
    pub(super) fn to(peer: &Peer<RoleServer>) -> Self {
        let (sender, mut queue) = mpsc::unbounded_channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let (peer, sent) = (peer.clone(), Arc::clone(&pending));
        tokio::spawn(async move {
            while let Some(notice) = queue.recv().await {
                let delivered = match notice {
                    Notice::Progress(param) => peer.notify_progress(param).await,
                    Notice::Log(param) => peer.notify_logging_message(param).await,
                    Notice::Caught(done) => {
                        let _ = done.send(());
                        continue;
                    }
                };
                sent.fetch_sub(1, Ordering::SeqCst);
                if let Err(e) = delivered {
                    tracing::debug!(error = %e, "notification not delivered");
                }
            }
        });
        Self { sender, pending }
    }

    fn send(&self, notice: Notice) {
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.sender.send(notice).is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
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
        if self.pending.load(Ordering::SeqCst) == 0 {
            return;
        }
        let (done, sent) = oneshot::channel();
        if self.sender.send(Notice::Caught(done)).is_ok() {
            let _ = sent.await;
        }
    }
}
