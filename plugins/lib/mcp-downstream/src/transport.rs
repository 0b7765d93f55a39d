//! The transports: rmcp's stdio, keeping a [`Ledger`]; and any, handing a
//! request's progress and log messages to its caller in order ([`InOrder`]).

use std::{future::Future, io, sync::Arc};

use rmcp::{
    RoleClient,
    model::JsonRpcMessage,
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::{Transport, async_rw::AsyncRwTransport},
};
use tokio::process::{ChildStdin, ChildStdout};

use crate::{ledger::Ledger, relay::Running};

/// rmcp's newline-delimited stdio transport, keeping a [`Ledger`].
///
/// A write that fails with a broken pipe or on a closed transport counts as
/// unread: a broken pipe means every reader of the server's stdin had closed
/// it, and an anonymous pipe never gets a reader again; the write failed
/// before the message's last byte, its newline (the transport writes one
/// message at a time, under a lock), so the server held at most an
/// unterminated line, which MCP's stdio transport does not take as a
/// message. Any other failure counts as maybe read.
pub(crate) struct StdioTransport {
    pub(crate) inner: AsyncRwTransport<RoleClient, ChildStdout, ChildStdin>,
    pub(crate) ledger: Arc<Ledger>,
}

impl Transport<RoleClient> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let id = match &item {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let send = id
            .as_ref()
            .is_none_or(|id| self.ledger.take(id))
            .then(|| self.inner.send(item));
        let ledger = Arc::clone(&self.ledger);
        async move {
            let Some(send) = send else {
                return Err(io::Error::other(
                    "the caller stopped waiting before the request was written",
                ));
            };
            let result = send.await;
            if let (Err(error), Some(id)) = (&result, &id)
                && matches!(
                    error.kind(),
                    io::ErrorKind::BrokenPipe | io::ErrorKind::NotConnected
                )
            {
                ledger.unread(id);
            }
            result
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// A transport that hands each progress and log notification of a running
/// request to its caller as it is read, before anything read after it:
/// rmcp runs notification handlers as tasks of their own, which can lose
/// the race with the request's answer, and a client must hear a call's
/// progress and logs before its result.
pub(crate) struct InOrder<T> {
    pub(crate) inner: T,
    pub(crate) running: Arc<Running>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for InOrder<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await?;
            match message {
                JsonRpcMessage::Notification(notice) if self.running.took(&notice.notification) => {
                }
                message => return Some(message),
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
