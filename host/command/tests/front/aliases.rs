use std::collections::BTreeMap;

use packhost_command::{Front, Plan};
use serde_json::json;

use crate::{call, plan};

fn front() -> Front {
    Front {
        aliases: BTreeMap::from([
            ("ws".to_owned(), "brave.web_search".to_owned()),
            ("p.l".to_owned(), "proj.list".to_owned()),
        ]),
        snippets: BTreeMap::new(),
    }
}

#[test]
fn aliases_rewrite_call_targets_only() {
    let front = front();
    let cases = [
        (
            "ws(query=\"x\")",
            Plan::Call(call(
                "brave.web_search",
                vec![],
                vec![("query", json!("x"))],
            )),
        ),
        (
            "`ws('x')`",
            Plan::Call(call("brave.web_search", vec![json!("x")], vec![])),
        ),
        ("p . l()", Plan::Call(call("proj.list", vec![], vec![]))),
        // Not an alias: Python's (a builtin, or a name it explains).
        ("unknown(1)", Plan::Code("unknown(1)".to_owned())),
        ("abs(-3)", Plan::Code("abs(-3)".to_owned())),
        (
            "ws.more(1)",
            Plan::Call(call("ws.more", vec![json!(1)], vec![])),
        ),
        ("p(1)", Plan::Code("p(1)".to_owned())),
        ("ws", Plan::Code("ws".to_owned())),
        ("ws(query=q)", Plan::Code("ws(query=q)".to_owned())),
        (
            "r = ws(query='a')\nr",
            Plan::Code("r = ws(query='a')\nr".to_owned()),
        ),
    ];
    for (input, want) in cases {
        assert_eq!(plan(&front, input), want, "{input:?}");
    }
}

#[test]
fn an_alias_the_caller_may_not_use_is_no_alias() {
    let front = front();
    // This caller may use `p.l` only: `ws` is a plain name to it, so code.
    let only = |name: &str| (name == "p.l").then_some("proj.list");
    let interpret = |command: &str| front.interpret_with(command, only, |_| true).unwrap();
    assert_eq!(
        interpret("p.l()"),
        Plan::Call(call("proj.list", vec![], vec![]))
    );
    assert_eq!(interpret("ws('x')"), Plan::Code("ws('x')".to_owned()));
}
