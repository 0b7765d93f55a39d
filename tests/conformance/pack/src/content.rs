//! Content of every kind (text, image, audio, embedded resources), progress, logging, errors; the suite's prompts and resources.

use pack_sdk::PackDef;

pub(crate) fn add(pack: PackDef<()>) -> PackDef<()> {
    pack
}
