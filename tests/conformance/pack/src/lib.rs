//! The fixtures `@modelcontextprotocol/conformance` calls by name, written
//! as any pack is (pack-sdk, the real ABI) and served by
//! `tests/conformance/packs.toml` under their own names (`prefix = false`).
//! Each module holds one group of the suite's scenarios.

use pack_sdk::{Empty, PackDef};

mod catalog;
mod content;
mod headers;
mod input;
mod lists;
mod notes;
mod tasks;

fn conformance() -> PackDef<()> {
    let pack = PackDef::new(
        "conformance",
        "The MCP conformance suite's fixture tools, prompts and resources",
        |_: Empty, _host| Ok(()),
    );
    notes::add(tasks::add(input::add(catalog::add(lists::add(
        headers::add(content::add(pack)),
    )))))
}

pack_sdk::export_pack!(conformance);
