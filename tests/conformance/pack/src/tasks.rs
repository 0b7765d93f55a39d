//! Tools of the tasks extension's scenarios.

use pack_sdk::PackDef;

pub(crate) fn add(pack: PackDef<()>) -> PackDef<()> {
    pack
}
