//! The request ledger: what became of each request written to a stdio
//! server.

use std::{collections::HashMap, sync::Mutex};

use rmcp::model::RequestId;

/// What became of each request written to a stdio server, to tell a request
/// lost with its connection that certainly did not reach the server from
/// one that may have.
///
/// rmcp alone cannot tell them apart once a request is queued:
/// `Peer::send_request_with_option` fails (`TransportClosed`) only if its
/// service loop had ended before the request was queued; after that, a
/// request still queued when the loop ends (the server's stdout closed), one
/// being written, and one the server read before dying all end the same way,
/// as `TransportClosed` (its answer's sender dropped), or as `TransportSend`
/// if the loop saw the write fail before it ended. So the stdio transport
/// records, per request id, whether it took the request and how its write
/// ended; the caller settles the id when it stops waiting.
/// Taking and settling are one lock apart: a request settled before the
/// transport took it is never written.
#[derive(Default)]
pub(crate) struct Ledger(Mutex<HashMap<RequestId, Fate>>);

enum Fate {
    /// The transport took it: it may have reached the server.
    Written,
    /// Its write failed before its last byte, into a pipe nobody can read
    /// again (see [`StdioTransport`]): the server cannot have read it.
    Unread,
    /// Its caller stopped waiting before the transport took it.
    Withdrawn,
}

impl Ledger {
    fn fates(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Fate>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The transport is about to write request `id`: `false` if its caller
    /// has stopped waiting (then it must not be written).
    pub(crate) fn take(&self, id: &RequestId) -> bool {
        let mut fates = self.fates();
        if let Some(Fate::Withdrawn) = fates.remove(id) {
            return false;
        }
        // The handshake's `initialize` stays recorded: nobody settles it.
        fates.insert(id.clone(), Fate::Written);
        true
    }

    /// The write of request `id` failed and nothing can ever read it.
    pub(crate) fn unread(&self, id: &RequestId) {
        if let Some(fate @ Fate::Written) = self.fates().get_mut(id) {
            *fate = Fate::Unread;
        }
    }

    /// The caller stops waiting for request `id`: whether it may have
    /// reached the server. One not taken yet never will be.
    pub(crate) fn settle(&self, id: &RequestId) -> bool {
        let mut fates = self.fates();
        match fates.remove(id) {
            Some(Fate::Written) => true,
            Some(Fate::Unread | Fate::Withdrawn) => false,
            None => {
                fates.insert(id.clone(), Fate::Withdrawn);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_tells_unsent_requests_from_maybe_sent_ones() {
        let ledger = Ledger::default();
        let id = |n| RequestId::Number(n);
        // Written, then answered or lost: it may have reached the server.
        assert!(ledger.take(&id(1)));
        assert!(ledger.settle(&id(1)));
        // Its write broke the pipe: it cannot have.
        assert!(ledger.take(&id(2)));
        ledger.unread(&id(2));
        assert!(!ledger.settle(&id(2)));
        // Given up before the transport took it: it is never written.
        assert!(!ledger.settle(&id(3)));
        assert!(!ledger.take(&id(3)));
        // Nothing is left behind.
        assert!(ledger.fates().is_empty());
    }
}
