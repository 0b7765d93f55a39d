//! Which functions `tools/list` shows (`[server] expose`, `[packs.x]
//! expose`). Listing is all it decides: every function stays callable by
//! name, from `run` and from code.

use std::collections::BTreeMap;

use crate::{
    builtin,
    config::{Config, Expose},
};

pub(super) struct Exposure {
    default: Expose,
    packs: BTreeMap<String, Expose>,
}

impl Exposure {
    pub(super) fn new(config: &Config) -> Self {
        let packs = config
            .packs
            .iter()
            .filter_map(|(name, pack)| Some((name.clone(), pack.expose?)))
            .collect();
        Self {
            default: config.server.expose,
            packs,
        }
    }

    /// Whether `pack.function` is listed. The discovery functions always
    /// are: they are how the rest is found.
    pub(super) fn lists(&self, pack: &str, function: &str) -> bool {
        let discovery = pack == builtin::PACK && builtin::DISCOVERY.contains(&function);
        discovery || self.packs.get(pack).copied().unwrap_or(self.default) == Expose::All
    }
}
