//! One live connection to a kernel, whatever carries it (ZeroMQ sockets or a
//! Jupyter Server websocket): outgoing shell requests, incoming messages
//! routed to their request by `parent_header.msg_id`, and whether the kernel
//! is gone.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use jupyter_protocol::{ExecutionState, JupyterMessage, JupyterMessageContent, KernelInfoRequest};
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;

/// A connection. Transports feed it with [`Conn::route`] from their reader
/// tasks and drain [`Conn::outgoing`] in their writer task.
pub struct Conn {
    /// The client session id written into every header.
    pub session: String,
    outgoing: mpsc::UnboundedSender<JupyterMessage>,
    routes: Mutex<HashMap<String, mpsc::UnboundedSender<JupyterMessage>>>,
    dead: watch::Sender<Option<String>>,
    tasks: Mutex<Vec<AbortHandle>>,
    /// Whether a `status: restarting/dead` without a request of ours means
    /// the kernel died (a Jupyter Server's nanny says so).
    status_means_death: bool,
}

/// How long `ready` waits for the kernel before it asks again.
const ASK_AGAIN: std::time::Duration = std::time::Duration::from_millis(250);

/// The receiving end of the shell requests, for the transport's writer.
pub type Outgoing = mpsc::UnboundedReceiver<JupyterMessage>;

/// The messages that answer one request; unregisters itself when dropped.
pub struct Inbox {
    conn: Arc<Conn>,
    msg_id: String,
    rx: mpsc::UnboundedReceiver<JupyterMessage>,
}

impl Inbox {
    /// The next message for this request; `None` when the connection closed.
    pub async fn recv(&mut self) -> Option<JupyterMessage> {
        self.rx.recv().await
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        self.conn.lock_routes().remove(&self.msg_id);
    }
}

impl Conn {
    /// A connection whose client session is `session`.
    pub fn new(session: String, status_means_death: bool) -> (Arc<Self>, Outgoing) {
        let (outgoing, rx) = mpsc::unbounded_channel();
        let conn = Arc::new(Self {
            session,
            outgoing,
            routes: Mutex::default(),
            dead: watch::channel(None).0,
            tasks: Mutex::default(),
            status_means_death,
        });
        (conn, rx)
    }

    fn lock_routes(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::UnboundedSender<JupyterMessage>>> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keep `task` (a reader or writer) for as long as the connection lives.
    pub fn own(&self, task: AbortHandle) {
        self.tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(task);
    }

    /// Send `content` on the shell channel; its messages arrive in the inbox.
    pub fn request(self: &Arc<Self>, content: impl Into<JupyterMessageContent>) -> Inbox {
        let message = JupyterMessage::new(content, None).with_session(&self.session);
        let msg_id = message.header.msg_id.clone();
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock_routes().insert(msg_id.clone(), tx);
        // A closed writer means a dead connection: the caller sees it in `dead`.
        let _ = self.outgoing.send(message);
        Inbox {
            conn: Arc::clone(self),
            msg_id,
            rx,
        }
    }

    /// Hand an incoming message to the request it answers.
    pub fn route(&self, message: JupyterMessage) {
        if self.status_means_death
            && let JupyterMessageContent::Status(status) = &message.content
            && matches!(
                status.execution_state,
                ExecutionState::Restarting | ExecutionState::AutoRestarting | ExecutionState::Dead
            )
        {
            self.mark_dead("the kernel died (its server reported it restarting)");
        }
        let Some(parent) = message.parent_header.as_ref() else {
            return;
        };
        let routes = self.lock_routes();
        if let Some(tx) = routes.get(&parent.msg_id) {
            let _ = tx.send(message);
        }
    }

    /// The kernel or the connection is gone, for `reason`.
    pub fn mark_dead(&self, reason: &str) {
        self.dead.send_if_modified(|dead| {
            if dead.is_none() {
                *dead = Some(reason.to_owned());
                true
            } else {
                false
            }
        });
    }

    /// Why the kernel is gone, if it is.
    pub fn dead_reason(&self) -> Option<String> {
        self.dead.borrow().clone()
    }

    /// Resolves when the kernel is gone, with the reason.
    pub async fn died(&self) -> String {
        let mut rx = self.dead.subscribe();
        match rx.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or_default(),
            Err(_) => "the connection closed".to_owned(),
        }
    }

    /// Ask for `kernel_info` until the kernel answers on shell and its iopub
    /// messages reach us: then it runs code and its output arrives. A
    /// subscription made moments ago can miss the first messages (ZeroMQ's
    /// slow joiner, also behind a Jupyter Server right after a restart), and
    /// the first execution would lose its output; jupyter_client asks again
    /// the same way. `Err` says why not (gone, or no answer by `deadline`).
    pub async fn ready(self: &Arc<Self>, deadline: tokio::time::Instant) -> Result<(), String> {
        let (mut replied, mut heard) = (false, false);
        let answered = tokio::time::timeout_at(deadline, async {
            loop {
                let mut inbox = self.request(KernelInfoRequest {});
                let again = tokio::time::sleep(ASK_AGAIN);
                tokio::pin!(again);
                loop {
                    tokio::select! {
                        message = inbox.recv() => match message.map(|m| m.content) {
                            Some(JupyterMessageContent::KernelInfoReply(_)) => replied = true,
                            Some(JupyterMessageContent::Status(_)) => heard = true,
                            Some(_) => {}
                            None => return Err("the connection closed".to_owned()),
                        },
                        reason = self.died() => return Err(reason),
                        () = &mut again => break,
                    }
                    if replied && heard {
                        return Ok(());
                    }
                }
            }
        })
        .await;
        answered.unwrap_or_else(|_| {
            Err(if replied {
                "the kernel answers but its output (iopub) does not arrive"
            } else {
                "no answer to kernel_info in time"
            }
            .to_owned())
        })
    }

    /// Stop the transport's tasks (the kernel itself is its owner's business).
    pub fn close(&self) {
        self.mark_dead("the session was closed");
        for task in self
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            task.abort();
        }
    }
}
