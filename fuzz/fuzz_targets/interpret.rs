//! The whole `run` front (strip, `!` check, snippet expansion with minijinja,
//! aliases, call parsing) never panics, whatever the command.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use packhost_command::{Front, Param, Snippet};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let snippet = Snippet {
        description: "fuzz".into(),
        params: BTreeMap::from([
            (
                "q".to_owned(),
                Param {
                    description: None,
                    default: None,
                },
            ),
            (
                "n".to_owned(),
                Param {
                    description: None,
                    default: Some(serde_json::json!(3)),
                },
            ),
        ]),
        body: "proj.grep(\"x\", {{ q | tojson }}, glob={{ n }})".into(),
    };
    let front = Front {
        aliases: BTreeMap::from([("ws".to_owned(), "brave.web_search".to_owned())]),
        snippets: BTreeMap::from([("s".to_owned(), snippet)]),
    };
    let _ = front.interpret(text);
});
