use std::collections::BTreeMap;

use packhost_command::{Front, Param, Plan, Snippet};
use serde_json::{Value, json};

use crate::{assert_error, call, plan};

fn param(description: Option<&str>, default: Option<Value>) -> Param {
    Param {
        description: description.map(str::to_owned),
        default,
    }
}

fn snippet(params: &[(&str, Param)], body: &str) -> Snippet {
    Snippet {
        description: String::new(),
        params: params
            .iter()
            .map(|(k, p)| ((*k).to_owned(), p.clone()))
            .collect(),
        body: body.to_owned(),
        place: Some("packs.toml:7".to_owned()),
    }
}

fn front() -> Front {
    let mut snippets = BTreeMap::new();
    snippets.insert(
        "search".to_owned(),
        snippet(
            &[
                ("q", param(Some("query text"), None)),
                ("limit", param(None, Some(json!(5)))),
            ],
            "brave.web_search(query=\"{{ q }}\", count={{ limit }})",
        ),
    );
    snippets.insert(
        "echo".to_owned(),
        snippet(&[("v", Param::default())], "t.echo({{ v }})"),
    );
    snippets.insert(
        "kind".to_owned(),
        snippet(
            &[("v", Param::default())],
            "t.kind(\"{% if v is boolean %}bool{% elif v is integer %}int{% elif v is float %}float{% else %}str{% endif %}\")",
        ),
    );
    snippets.insert(
        "script".to_owned(),
        snippet(
            &[("n", param(None, Some(json!(2))))],
            "\n  x = {{ n }}\n  print(x * 21)\n",
        ),
    );
    snippets.insert("nested".to_owned(), snippet(&[], "$search q=x"));
    snippets.insert("undefined".to_owned(), snippet(&[], "f({{ missing }})"));
    snippets.insert("badsyntax".to_owned(), snippet(&[], "f({{ x )"));
    snippets.insert("blank".to_owned(), snippet(&[], "{# nothing #}  "));
    snippets.insert("aliased".to_owned(), snippet(&[], "ws(query='a')"));
    Front {
        aliases: BTreeMap::from([("ws".to_owned(), "brave.web_search".to_owned())]),
        snippets,
    }
}

fn search(query: &str, count: Value) -> Plan {
    Plan::Call(call(
        "brave.web_search",
        vec![],
        vec![("query", json!(query)), ("count", count)],
    ))
}

#[test]
fn snippets_expand() {
    let front = front();
    let cases = [
        ("$search q=rust", search("rust", json!(5))),
        (
            "$search q=\"two words\" limit=3",
            search("two words", json!(3)),
        ),
        ("$search q='x'", search("x", json!(5))),
        ("$search   limit=1\tq=a ", search("a", json!(1))),
        ("$search q=\"tab\\tthere\"", search("tab\tthere", json!(5))),
        ("$search q='it\\'s'", search("it's", json!(5))),
        (
            "$kind v='''two\nlines'''",
            Plan::Call(call("t.kind", vec![json!("str")], vec![])),
        ),
        (
            "$search\nq: rust lang\nlimit: 7",
            search("rust lang", json!(7)),
        ),
        (
            "$search\n\n  q:   spaced out  \n\n",
            search("spaced out", json!(5)),
        ),
        (
            "$search\nq: \"quoted: yes\"",
            search("quoted: yes", json!(5)),
        ),
        ("$search\nq: 'a:b'\nlimit: 2.5", search("a:b", json!(2.5))),
        ("```\n$search q=fenced\n```", search("fenced", json!(5))),
        (
            "$echo v=5",
            Plan::Call(call("t.echo", vec![json!(5)], vec![])),
        ),
        (
            "$echo v=-1.5",
            Plan::Call(call("t.echo", vec![json!(-1.5)], vec![])),
        ),
        ("$echo v=word", Plan::Code("t.echo(word)".to_owned())),
        ("$script", Plan::Code("x = 2\nprint(x * 21)".to_owned())),
        ("$script n=3", Plan::Code("x = 3\nprint(x * 21)".to_owned())),
        ("$nested", Plan::Code("$search q=x".to_owned())),
        ("$aliased", search_alias()),
    ];
    for (input, want) in cases {
        assert_eq!(plan(&front, input), want, "{input:?}");
    }
}

fn search_alias() -> Plan {
    Plan::Call(call(
        "brave.web_search",
        vec![],
        vec![("query", json!("a"))],
    ))
}

#[test]
fn unquoted_values_are_typed() {
    let front = front();
    let cases = [
        ("5", "int"),
        ("-12", "int"),
        ("+3", "int"),
        ("18446744073709551615", "int"),
        ("1.5", "float"),
        ("1e3", "float"),
        (".5", "float"),
        ("true", "bool"),
        ("True", "bool"),
        ("false", "bool"),
        ("False", "bool"),
        ("007", "str"),
        ("99999999999999999999", "str"),
        ("1e999", "str"),
        ("inf", "str"),
        ("nan", "str"),
        ("1.2.3", "str"),
        ("TRUE", "str"),
        ("none", "str"),
        ("\"5\"", "str"),
        ("'true'", "str"),
    ];
    for (value, kind) in cases {
        for command in [format!("$kind v={value}"), format!("$kind\nv: {value}")] {
            let want = Plan::Call(call("t.kind", vec![json!(kind)], vec![]));
            assert_eq!(plan(&front, &command), want, "{command:?}");
        }
    }
}

#[test]
fn snippet_errors() {
    let front = front();
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "$nope",
            "NOT_FOUND",
            &[
                "unknown snippet `nope`",
                "available: aliased, badsyntax, blank, echo",
            ],
        ),
        ("$nope q=1", "NOT_FOUND", &["unknown snippet `nope`"]),
        (
            "$search",
            "INVALID_ARGUMENT",
            &[
                "snippet `search` needs parameter `q` (query text)",
                "`$search q=...`",
            ],
        ),
        (
            "$search limit=2",
            "INVALID_ARGUMENT",
            &["needs parameter `q`"],
        ),
        (
            "$echo",
            "INVALID_ARGUMENT",
            &["snippet `echo` needs parameter `v`;"],
        ),
        (
            "$search q=x foo=1",
            "INVALID_ARGUMENT",
            &[
                "snippet `search` has no parameter `foo`",
                "its parameters: limit, q",
            ],
        ),
        (
            "$script\nfoo: 1",
            "INVALID_ARGUMENT",
            &["has no parameter `foo`", "its parameters: n"],
        ),
        (
            "$nested x=1",
            "INVALID_ARGUMENT",
            &[
                "snippet `nested` has no parameter `x`",
                "it takes no parameters",
            ],
        ),
        (
            "$undefined",
            "INTERNAL",
            &[
                "snippet `undefined` is misconfigured: its body uses `missing`, which is none of \
                 its parameters (it has none); add `missing` to its `params` or use a parameter; \
                 fix `[snippets.undefined]` at packs.toml:7",
            ],
        ),
        (
            "$badsyntax",
            "INTERNAL",
            &[
                "snippet `badsyntax` is misconfigured: its body is not a valid template: ",
                "fix `[snippets.badsyntax]` at packs.toml:7",
            ],
        ),
        (
            "$blank",
            "INVALID_ARGUMENT",
            &["snippet `blank` rendered to empty text"],
        ),
        (
            "$search q",
            "INVALID_ARGUMENT",
            &["expected `=` right after `q` at 1:9", "`q=value`"],
        ),
        (
            "$search q =x",
            "INVALID_ARGUMENT",
            &["expected `=` right after `q`"],
        ),
        (
            "$search =x",
            "INVALID_ARGUMENT",
            &["expected `key=value` at 1:9", "got `=x`"],
        ),
        (
            "$search q=",
            "INVALID_ARGUMENT",
            &["`q` at 1:9 has no value", "`q=\"\"`"],
        ),
        (
            "$search q=\"open",
            "INVALID_ARGUMENT",
            &["unterminated string starting at 1:11"],
        ),
        (
            "$search q=\"a\"b",
            "INVALID_ARGUMENT",
            &["expected a space after the quoted value of `q` at 1:14"],
        ),
        (
            "$search q='\\x1'",
            "INVALID_ARGUMENT",
            &["truncated `\\x` escape"],
        ),
        (
            "$search q='\\N{BULLET}'",
            "INVALID_ARGUMENT",
            &["named escapes"],
        ),
        (
            "$search q=a q=b",
            "INVALID_ARGUMENT",
            &["parameter `q` of `$search` is given twice"],
        ),
        ("$search\nq: a\nq: b", "INVALID_ARGUMENT", &["given twice"]),
        (
            "$search\nq rust",
            "INVALID_ARGUMENT",
            &["expected `key: value` at 2:1", "got `q rust`"],
        ),
        (
            "$search\nmy q: x",
            "INVALID_ARGUMENT",
            &["expected a parameter name before `:` at 2:1", "got `my q`"],
        ),
        (
            "$search\nq:",
            "INVALID_ARGUMENT",
            &["`q` at 2:1 has no value"],
        ),
        (
            "$search\nq: \"a\" b",
            "INVALID_ARGUMENT",
            &["unexpected text after the closing quote of `q` at 2:7"],
        ),
        (
            "$search\nq: \"a",
            "INVALID_ARGUMENT",
            &["unterminated string starting at 2:4"],
        ),
        (
            "$",
            "INVALID_ARGUMENT",
            &[
                "expected a snippet name right after `$`",
                "available: aliased",
            ],
        ),
        ("$ search", "INVALID_ARGUMENT", &["expected a snippet name"]),
        (
            "$search(q=1)",
            "INVALID_ARGUMENT",
            &["expected a space after `$search` at 1:8"],
        ),
    ];
    for (input, code, fragments) in cases {
        assert_error(front.interpret(input), code, fragments, input);
    }
    assert_error(
        Front::default().interpret("$search q=1"),
        "NOT_FOUND",
        &["unknown snippet `search`; no snippets are configured"],
        "no snippets",
    );
}

#[test]
fn snippets_deserialize_strictly() {
    let snippet: Snippet = serde_json::from_value(json!({
        "body": "f({{ a }})",
        "params": {"a": {"default": 1, "description": "an a"}},
    }))
    .unwrap();
    assert_eq!(snippet.params["a"], param(Some("an a"), Some(json!(1))));
    assert_eq!(snippet.description, "");
    assert!(serde_json::from_value::<Snippet>(json!({"body": "x", "bodyy": "y"})).is_err());
    assert!(serde_json::from_value::<Snippet>(json!({"params": {}})).is_err());
    assert!(serde_json::from_value::<Param>(json!({"defualt": 1})).is_err());
}

#[test]
fn a_snippet_renders_as_a_prompt_with_string_arguments() {
    let search = snippet(
        &[
            ("q", param(Some("query text"), None)),
            ("limit", param(None, Some(json!(5)))),
        ],
        "brave.web_search(query=\"{{ q }}\", count={{ limit + 1 }})",
    );
    let arguments = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    // A number given as text is a number, as `$search limit=9` reads it.
    assert_eq!(
        search
            .render_prompt("search", &arguments(&[("q", "rust"), ("limit", "9")]))
            .unwrap(),
        "brave.web_search(query=\"rust\", count=10)"
    );
    assert_eq!(
        search
            .render_prompt("search", &arguments(&[("q", "two words")]))
            .unwrap(),
        "brave.web_search(query=\"two words\", count=6)"
    );
    let missing = search.render_prompt("search", &arguments(&[])).unwrap_err();
    assert!(
        missing
            .to_string()
            .contains("needs parameter `q` (query text)"),
        "{missing}"
    );
    let unknown = search
        .render_prompt("search", &arguments(&[("q", "x"), ("lang", "en")]))
        .unwrap_err();
    assert!(
        unknown
            .to_string()
            .contains("has no parameter `lang`; its parameters: limit, q"),
        "{unknown}"
    );
}

#[test]
fn a_body_that_cannot_render_with_its_defaults_is_a_config_problem() {
    let n = [("lines", param(None, Some(json!(10))))];
    let broken = snippet(&n, "proj.read('a', limit={{ n }})");
    assert_eq!(
        broken.problem().as_deref(),
        Some(
            "its body uses `n`, which is none of its parameters (its parameters: lines); \
             add `n` to its `params` or use a parameter"
        )
    );
    // A guarded optional name, globals and loop variables are fine; so is a
    // required parameter, which a caller must give.
    for body in [
        "f({{ lines }}{% if extra is defined %}, {{ extra }}{% endif %})",
        "f({% for i in range(lines) %}{{ i }}{{ loop.index }}{% endfor %})",
        "f({{ q | tojson }})",
    ] {
        let fine = snippet(
            &[("lines", Param::default()), ("q", Param::default())],
            body,
        );
        assert_eq!(fine.problem(), None, "{body}");
    }
    assert!(
        snippet(&[], "f({{ x )")
            .problem()
            .unwrap()
            .starts_with("its body is not a valid template: "),
    );
}
