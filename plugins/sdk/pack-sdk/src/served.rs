//! A pack changing which of its functions it serves while it runs.

use serde_json::json;

use crate::{Context, PackError};

impl Context {
    /// Serve only `functions` (names this pack declares) from now on, for
    /// every caller; the others are unknown until offered again. Clients
    /// hear that the tool list changed. A pack serves all its functions
    /// until it says otherwise.
    pub async fn offer(&self, functions: &[&str]) -> Result<(), PackError> {
        let args = json!({ "functions": functions });
        self.call_tool(pack_api::protocol::OFFER, args).await?;
        Ok(())
    }
}
