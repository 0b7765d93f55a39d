//! A call's notifications to its client: progress and log lines, in the
//! order the pack reported them, all sent before the call's result.
//!
//! Packs report from their own threads, where no host runtime runs: a
//! call's sinks only queue, and one task on the host's runtime sends. The
//! result waits for that task to catch up: on a stream that ends with the
//! result (2026-07-28's, or a POST's), a notification sent after it is
//! lost.
#![allow(deprecated)] // logging: see `logging`

use std::sync::Arc;

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
pub(super) struct Notices(mpsc::UnboundedSender<Notice>);

impl Notices {
    pub(super) fn to(peer: &Peer<RoleServer>) -> Self {
        let (sender, mut queue) = mpsc::unbounded_channel();
        let peer = peer.clone();
        tokio::spawn(async move {
            while let Some(notice) = queue.recv().await {
                let sent = match notice {
                    Notice::Progress(param) => peer.notify_progress(param).await,
                    Notice::Log(param) => peer.notify_logging_message(param).await,
                    Notice::Caught(done) => {
                        let _ = done.send(());
                        continue;
                    }
                };
                if let Err(e) = sent {
                    tracing::debug!(error = %e, "notification not delivered");
                }
            }
        });
        Self(sender)
    }

    /// Progress reports for the request that gave `token`.
    pub(super) fn progress(&self, token: ProgressToken) -> ProgressSink {
        let sender = self.0.clone();
        Arc::new(move |progress, total, message: String| {
            let mut param = ProgressNotificationParam::new(token.clone(), progress);
            param.total = total;
            param.message = Some(message).filter(|m| !m.is_empty());
            let _ = sender.send(Notice::Progress(param));
        })
    }

    /// A log line (the caller filters by level).
    pub(super) fn logger(
        &self,
    ) -> impl Fn(LoggingMessageNotificationParam) + Send + Sync + 'static {
        let sender = self.0.clone();
        move |param| {
            let _ = sender.send(Notice::Log(param));
        }
    }

    /// Once everything queued so far has been sent.
    pub(super) async fn caught_up(&self) {
        let (done, sent) = oneshot::channel();
        if self.0.send(Notice::Caught(done)).is_ok() {
            let _ = sent.await;
        }
    }
}
