//! A pack changing which of its functions it serves (`protocol::OFFER`):
//! the tool list changes for every client, as when a server pack's tools
//! change.

use serde::Deserialize;
use serde_json::Value;

use super::Executor;
use crate::error::CallError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Offer {
    functions: Vec<String>,
}

impl Executor {
    /// Serve only `args`' functions of `pack` (names its manifest declares)
    /// from now on.
    pub(super) fn offer(&self, pack: &str, args: Value) -> Result<Value, CallError> {
        let Offer { functions } =
            serde_json::from_value(args).map_err(|e| CallError::ArgumentsNotJson {
                name: pack_api::protocol::OFFER.to_owned(),
                error: format!("{e}; expected {{\"functions\": [names]}}"),
            })?;
        let declared = self
            .packs()
            .into_iter()
            .find(|(loaded, _)| loaded.name == pack)
            .map(|(loaded, _)| loaded.manifest.functions.clone())
            .unwrap_or_default();
        if let Some(unknown) = functions
            .iter()
            .find(|name| !declared.iter().any(|f| &f.name == *name))
        {
            return Err(CallError::UnknownFunction {
                pack: pack.to_owned(),
                function: unknown.clone(),
                functions: declared.into_iter().map(|f| f.name).collect(),
            });
        }
        let offered: Vec<_> = declared
            .into_iter()
            .filter(|f| functions.contains(&f.name))
            .collect();
        self.set_functions(pack, &offered);
        Ok(Value::Object(serde_json::Map::new()))
    }
}
