//! A server's questions, logs and progress during a call, handed to the
//! caller of that call: the downstream's half of the one asking mechanism
//! (`Caller.ask`), so a question travels on the caller's own wire.

use std::{future::Future, pin::Pin, sync::Arc};

use mcp_downstream::{Refusal, Relay};
use pack_api::codes;
use serde_json::{Map, Value};

use crate::executor::{Caller, LogSink};

/// JSON-RPC's "method not found": what a client that cannot answer a kind
/// of question says.
const METHOD_NOT_FOUND: i32 = -32601;
const INTERNAL_ERROR: i32 = -32603;

/// The caller of one call into server pack `pack`.
pub(super) struct CallerRelay {
    pack: String,
    caller: Caller,
}

impl CallerRelay {
    pub(super) fn of(pack: &str, caller: &Caller) -> Arc<dyn Relay> {
        Arc::new(Self {
            pack: pack.to_owned(),
            caller: caller.clone(),
        })
    }
}

impl Relay for CallerRelay {
    fn ask(&self, question: Value) -> Pin<Box<dyn Future<Output = Result<Value, Refusal>> + Send>> {
        let Some(ask) = self.caller.ask.clone() else {
            return Box::pin(std::future::ready(Err(Refusal {
                code: METHOD_NOT_FOUND,
                message: "the caller of this request cannot be asked".to_owned(),
                data: None,
            })));
        };
        Box::pin(async move {
            const KEY: &str = "server";
            let mut questions = Map::new();
            questions.insert(KEY.to_owned(), question);
            let mut answers = ask.ask(questions).await.map_err(|failure| Refusal {
                code: match failure.code() {
                    codes::INPUT_UNAVAILABLE => METHOD_NOT_FOUND,
                    _ => INTERNAL_ERROR,
                },
                message: failure.text(),
                data: None,
            })?;
            answers.remove(KEY).ok_or_else(|| Refusal {
                code: INTERNAL_ERROR,
                message: "the client gave no answer".to_owned(),
                data: None,
            })
        })
    }

    fn log(&self, params: Value) {
        if let Some(sink) = &self.caller.log {
            log_to(sink, &self.pack, &params);
        }
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(sink) = &self.caller.progress {
            sink(progress, total, message.unwrap_or_default());
        }
    }
}

/// Write a server's `notifications/message` (its params) to `sink`, as a
/// line of pack `pack`.
pub(super) fn log_to(sink: &LogSink, pack: &str, params: &Value) {
    let (level, text) = mcp_downstream::log_line(params);
    sink(pack, level, &text);
}
