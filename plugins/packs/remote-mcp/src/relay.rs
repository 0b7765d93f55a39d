//! A downstream server's questions, logs and progress during one request
//! made for a caller, handed to that caller through its call's
//! [`Context`]: a question travels on the caller's own wire.

use std::{future::Future, pin::Pin};

use mcp_downstream::{Refusal, Relay};
use pack_sdk::{Context, PackError, Value, codes, json, protocol};

/// JSON-RPC's "method not found": what a client that cannot answer a kind
/// of question says.
const METHOD_NOT_FOUND: i32 = -32601;
const INTERNAL_ERROR: i32 = -32603;

/// The caller of one request to an integration.
pub(crate) struct CallerRelay(pub(crate) Context);

impl Relay for CallerRelay {
    fn ask(&self, question: Value) -> Pin<Box<dyn Future<Output = Result<Value, Refusal>> + Send>> {
        let ctx = self.0.clone();
        Box::pin(async move {
            const KEY: &str = "server";
            let answers = ctx.call_tool(protocol::INPUT, json!({ KEY: question }));
            let mut answers = answers.await.map_err(refusal)?;
            match answers.get_mut(KEY).map(Value::take) {
                Some(answer) => Ok(answer),
                None => Err(Refusal {
                    code: INTERNAL_ERROR,
                    message: "the client gave no answer".to_owned(),
                    data: None,
                }),
            }
        })
    }

    fn log(&self, params: Value) {
        let (level, text) = mcp_downstream::log_line(&params);
        self.0.log(level, &text);
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        self.0
            .progress(progress, total, message.as_deref().unwrap_or_default());
    }
}

/// Why the caller's client did not answer, as the server gets it.
fn refusal(error: PackError) -> Refusal {
    Refusal {
        code: match error.code() {
            codes::INPUT_UNAVAILABLE => METHOD_NOT_FOUND,
            _ => INTERNAL_ERROR,
        },
        message: error.to_string(),
        data: None,
    }
}
