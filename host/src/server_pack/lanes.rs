//! What a server says on a caller's connection outside that caller's
//! requests: log messages (to the client of the caller's latest request on
//! it) and updates of the resources it subscribed to there.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use mcp_downstream::Event;
use tokio::sync::broadcast;

use super::relay::log_to;
use crate::executor::LogSink;

/// Lanes remembered; past it the table starts over (a lane's next request
/// puts it back).
const LANES: usize = 4096;

#[derive(Default)]
pub(super) struct Lanes {
    /// Lane key → where its log messages go.
    logs: Mutex<HashMap<String, LogSink>>,
    /// (lane key, URI) → the subscriptions waiting for its updates.
    updates: Mutex<HashMap<(String, String), broadcast::Sender<()>>>,
}

impl Lanes {
    /// Log messages of `lane` go to `sink` from now on.
    pub(super) fn log_to(&self, lane: &str, sink: Option<&LogSink>) {
        let mut logs = self.logs.lock().unwrap_or_else(|e| e.into_inner());
        let Some(sink) = sink else {
            logs.remove(lane);
            return;
        };
        if logs.len() >= LANES && !logs.contains_key(lane) {
            logs.clear();
        }
        logs.insert(lane.to_owned(), Arc::clone(sink));
    }

    /// Wakes at each update of `uri` on `lane`.
    pub(super) fn updates(&self, lane: &str, uri: &str) -> broadcast::Receiver<()> {
        let mut updates = self.updates.lock().unwrap_or_else(|e| e.into_inner());
        updates.retain(|_, sender| sender.receiver_count() > 0);
        let key = (lane.to_owned(), uri.to_owned());
        updates
            .entry(key)
            .or_insert_with(|| broadcast::channel(16).0)
            .subscribe()
    }

    /// Hand on what pack `pack`'s server said on `lane`.
    pub(super) fn heard(&self, pack: &str, lane: &str, event: Event) {
        match event {
            Event::Log(params) => {
                let logs = self.logs.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(sink) = logs.get(lane) {
                    log_to(sink, pack, &params);
                }
            }
            Event::ResourceUpdated(uri) => {
                let updates = self.updates.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(sender) = updates.get(&(lane.to_owned(), uri)) {
                    let _ = sender.send(());
                }
            }
            Event::ToolsChanged | Event::PromptsChanged | Event::ResourcesChanged => {}
        }
    }
}
