//! Tools and prompts that ask the client (elicitation, sampling, roots) on either wire.

use pack_sdk::PackDef;

pub(crate) fn add(pack: PackDef<()>) -> PackDef<()> {
    pack
}
