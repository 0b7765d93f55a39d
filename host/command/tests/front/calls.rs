use packhost_command::{Front, Plan, parse_call};
use serde_json::{Value, json};

use crate::{call, literal, parsed, plan};

#[test]
fn call_shapes() {
    let cases = [
        ("proj.list()", call("proj.list", vec![], vec![])),
        ("print(\"a\")", call("print", vec![json!("a")], vec![])),
        ("f(1, 'x')", call("f", vec![json!(1), json!("x")], vec![])),
        (
            "f(k=1, j='x')",
            call("f", vec![], vec![("k", json!(1)), ("j", json!("x"))]),
        ),
        (
            "brave.web_search('rust', count=3, safe=True)",
            call(
                "brave.web_search",
                vec![json!("rust")],
                vec![("count", json!(3)), ("safe", json!(true))],
            ),
        ),
        ("a . b .c (1)", call("a.b.c", vec![json!(1)], vec![])),
        ("f (1)", call("f", vec![json!(1)], vec![])),
        ("f(1,)", call("f", vec![json!(1)], vec![])),
        ("f(a=1,)", call("f", vec![], vec![("a", json!(1))])),
        ("f( k = 2 )", call("f", vec![], vec![("k", json!(2))])),
        (
            "f(1)  # trailing comment",
            call("f", vec![json!(1)], vec![]),
        ),
        (
            "# leading comment\n\nf(1)\n# and after\n",
            call("f", vec![json!(1)], vec![]),
        ),
        (
            "proj.create(\n    name='x',  # the name\n    tags=[\n        'a',\n        'b',\n    ],\n)",
            call(
                "proj.create",
                vec![],
                vec![("name", json!("x")), ("tags", json!(["a", "b"]))],
            ),
        ),
        (
            "f(r='raw', b=1, u=2)",
            call(
                "f",
                vec![],
                vec![("r", json!("raw")), ("b", json!(1)), ("u", json!(2))],
            ),
        ),
        (
            "größe.zählen(x=1)",
            call("größe.zählen", vec![], vec![("x", json!(1))]),
        ),
        ("f(\\\n1)", call("f", vec![json!(1)], vec![])),
        ("match(1)", call("match", vec![json!(1)], vec![])),
    ];
    for (input, want) in cases {
        assert_eq!(parsed(input), want, "{input:?}");
    }
}

#[test]
fn strings() {
    let cases = [
        ("'a'", "a"),
        ("\"a\"", "a"),
        ("''", ""),
        ("'it\"s'", "it\"s"),
        ("'''a\nb'''", "a\nb"),
        ("\"\"\"say \"hi\" now\"\"\"", "say \"hi\" now"),
        ("'''a''b'''", "a''b"),
        (
            r#"'\n\t\r\\\'\"\0\a\b\f\v'"#,
            "\n\t\r\\'\"\0\x07\x08\x0c\x0b",
        ),
        (r"'\x41\u00e9\U0001F600\101\7\777'", "Aé😀A\x07ǿ"),
        ("'a\\\nb'", "ab"),
        ("'''a\\\nb'''", "ab"),
        (r"'\d+\.'", r"\d+\."),
        (r"r'\n\d'", r"\n\d"),
        (r#"R"a\"b""#, r#"a\"b"#),
        (r"r'\\'", r"\\"),
        ("r'''a\\\nb'''", "a\\\nb"),
        ("u'x'", "x"),
        ("'a' \"b\"", "ab"),
        ("'a' r'\\n' '''c'''", "a\\nc"),
        ("('a'\n 'b'  # split\n 'c')", "abc"),
        ("'é ü 😀'", "é ü 😀"),
        ("'#not a comment'", "#not a comment"),
    ];
    for (input, want) in cases {
        assert_eq!(literal(input), json!(want), "{input:?}");
    }
}

#[test]
fn numbers_and_constants() {
    let cases = [
        ("42", json!(42)),
        ("-42", json!(-42)),
        ("+7", json!(7)),
        ("- 5", json!(-5)),
        ("--5", json!(5)),
        ("0", json!(0)),
        ("00", json!(0)),
        ("1_000_000", json!(1_000_000)),
        ("0xff", json!(255)),
        ("0X_FF", json!(255)),
        ("0o17", json!(15)),
        ("0b1010", json!(10)),
        ("-0x10", json!(-16)),
        ("9223372036854775807", json!(i64::MAX)),
        ("-9223372036854775808", json!(i64::MIN)),
        ("18446744073709551615", json!(u64::MAX)),
        ("1.5", json!(1.5)),
        ("-2.5e-3", json!(-0.0025)),
        ("1e3", json!(1000.0)),
        ("1E+2", json!(100.0)),
        (".5", json!(0.5)),
        ("5.", json!(5.0)),
        ("1_0.2_5", json!(10.25)),
        ("1.e2", json!(100.0)),
        ("True", json!(true)),
        ("False", json!(false)),
        ("None", Value::Null),
    ];
    for (input, want) in cases {
        assert_eq!(literal(input), want, "{input:?}");
    }
    assert!(literal("1.0").is_f64());
    assert!(literal("1").is_i64());
}

#[test]
fn containers() {
    let cases = [
        ("[]", json!([])),
        ("[1, 'a', None]", json!([1, "a", null])),
        ("[1, [2, [3, []]]]", json!([1, [2, [3, []]]])),
        ("[1, 2,]", json!([1, 2])),
        ("()", json!([])),
        ("(1)", json!(1)),
        ("((('x')))", json!("x")),
        ("(1,)", json!([1])),
        ("(1, 2)", json!([1, 2])),
        ("(1, (2, 3), [4])", json!([1, [2, 3], [4]])),
        ("{}", json!({})),
        (
            "{'a': 1, \"b\": [True, None]}",
            json!({"a": 1, "b": [true, null]}),
        ),
        ("{'a': {'b': {'c': ()}},}", json!({"a": {"b": {"c": []}}})),
        (
            "{1: 'x', 2.5: 'y', True: 'z', -3: 'w'}",
            json!({"1": "x", "2.5": "y", "true": "z", "-3": "w"}),
        ),
        ("{'k': 1, 'k': 2}", json!({"k": 2})),
        ("[\n  1,  # one\n  # nothing here\n  2\n]", json!([1, 2])),
        ("{\n 'a'\n :\n 1\n }", json!({"a": 1})),
    ];
    for (input, want) in cases {
        assert_eq!(literal(input), want, "{input:?}");
    }
    let order: Vec<String> = literal("{'z': 1, 'a': 2, 'm': 3}")
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(order, ["z", "a", "m"], "dict order is kept");
}

#[test]
fn nesting_up_to_the_limit_parses() {
    let depth = 64;
    let src = format!("f({}1{})", "[".repeat(depth), "]".repeat(depth));
    let mut value = &parsed(&src).args[0];
    for _ in 0..depth {
        value = &value[0];
    }
    assert_eq!(value, &json!(1));
}

#[test]
fn not_a_single_literal_call_is_code() {
    let cases = [
        "x = 2\nx * 21",
        "print(a)",
        "f(x) + 1",
        "f(1)\ng(2)",
        "f(1); g(2)",
        "f",
        "proj.list",
        "proj.list ()()",
        "f(1).x",
        "f(1)[0]",
        "f(1 + 2)",
        "f(-x)",
        "f(*args)",
        "f(**kw)",
        "f(a=b)",
        "f(a == 1)",
        "f(x for x in y)",
        "f([x for x in y])",
        "f({k: 1})",
        "f({'k': v})",
        "f(lambda: 1)",
        "f(...)",
        "f(\"a\" % x)",
        "f('a' 1)",
        "f(f\"{x}\")",
        "f(rf'{x}')",
        "f('a' f'{b}')",
        "f(\"\\N{EM DASH}\")",
        "f(inf)",
        "f(ur'x')",
        "f(1) if y else g(2)",
        "if (1): pass",
        "not (1)",
        "await (x)",
        "print('a') ,",
        "import os",
        "[1, 2]",
        "'just a string'",
        "-1",
        "a.(1)",
        "f(,)",
        "[[[[[",
        "\"\"\"\"",
    ];
    for input in cases {
        assert_eq!(parse_call(input), Ok(None), "{input:?}");
        assert_eq!(
            Front::default().interpret(input),
            Ok(Plan::Code(input.to_owned())),
            "{input:?}"
        );
    }
}

#[test]
fn interpret_returns_calls() {
    let front = Front::default();
    assert_eq!(
        plan(&front, "proj.list(limit=2)"),
        Plan::Call(call("proj.list", vec![], vec![("limit", json!(2))]))
    );
    // A plain name that is no alias is Python's to resolve.
    assert_eq!(
        plan(&front, "print(\"a\")"),
        Plan::Code("print(\"a\")".to_owned())
    );
}
