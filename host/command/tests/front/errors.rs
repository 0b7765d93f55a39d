use packhost_command::{Front, parse_call};

use crate::assert_error;

/// Broken call attempts: (input, fragments the message must contain).
const BROKEN: &[(&str, &[&str])] = &[
    // strings
    (
        "f(\"abc",
        &["unterminated string starting at 1:3", "close it with `\"`"],
    ),
    (
        "f('abc\n')",
        &[
            "unterminated string starting at 1:3",
            "close it with `'` on the same line",
            "`'''`",
        ],
    ),
    (
        "f(\"\"\"abc)",
        &[
            "unterminated string starting at 1:3",
            "close it with `\"\"\"`",
        ],
    ),
    ("f(\n  x='abc,\n)", &["unterminated string starting at 2:5"]),
    ("f('é', \"x)", &["unterminated string starting at 1:8"]),
    ("f('abc\\", &["unterminated string starting at 1:3"]),
    ("f(r'abc\\')", &["unterminated string starting at 1:3"]),
    ("f('ok' 'broken)", &["unterminated string starting at 1:8"]),
    // escapes
    (
        "f('\\x4')",
        &[
            "truncated `\\x` escape at 1:4",
            "exactly 2 hex digits",
            "`\\x41`",
        ],
    ),
    (
        "f('\\u12')",
        &["truncated `\\u` escape at 1:4", "exactly 4 hex digits"],
    ),
    (
        "f('\\U0001F6')",
        &["truncated `\\U` escape at 1:4", "exactly 8 hex digits"],
    ),
    (
        "f('\\U00110000')",
        &["`\\U00110000` at 1:4", "beyond", "U+10FFFF"],
    ),
    ("f('\\ud800')", &["`\\ud800` at 1:4", "surrogate"]),
    // brackets
    (
        "f(1, 2",
        &[
            "unexpected end of the command",
            "`(` opened at 1:2 is never closed",
            "add `)`",
        ],
    ),
    ("f(", &["`(` opened at 1:2 is never closed"]),
    ("f(a=", &["`(` opened at 1:2 is never closed"]),
    ("f(-", &["`(` opened at 1:2 is never closed"]),
    ("f([1, 2", &["`[` opened at 1:3 is never closed", "add `]`"]),
    ("f({'a': (1,", &["`(` opened at 1:9 is never closed"]),
    (
        "f([1, 2)",
        &[
            "`)` at 1:8 doesn't match the `[` opened at 1:3",
            "close that with `]`",
        ],
    ),
    (
        "f({'a': 1])",
        &["`]` at 1:10 doesn't match the `{` opened at 1:3"],
    ),
    ("f(])", &["`]` at 1:3 doesn't match the `(` opened at 1:2"]),
    ("f(1))", &["unmatched `)` at 1:5"]),
    // arguments
    (
        "f(a=1, 2)",
        &[
            "positional argument at 1:8 follows keyword argument `a` at 1:3",
            "positional arguments first",
        ],
    ),
    (
        "f(a=1, b=2, a=3)",
        &["keyword argument `a` repeated at 1:13", "once"],
    ),
    // numbers
    (
        "f(99999999999999999999)",
        &[
            "integer `99999999999999999999` at 1:3 is out of range",
            "64 bits",
            "string",
        ],
    ),
    (
        "f(-9223372036854775809)",
        &["integer `-9223372036854775809` at 1:3 is out of range"],
    ),
    ("f(0x1_0000_0000_0000_0000)", &["out of range"]),
    ("f(1e999)", &["number `1e999` at 1:3", "infinity"]),
    ("f(-1e999)", &["infinity"]),
    ("f(2j)", &["complex number at 1:3"]),
    ("f(01)", &["leading zeros in `01` at 1:3", "0o"]),
    ("f(1__0)", &["misplaced `_` in number at 1:3", "`1_000`"]),
    ("f(1_)", &["misplaced `_`"]),
    ("f(1._5)", &["misplaced `_`"]),
    ("f(0x)", &["number `0x` at 1:3 has no digits"]),
    ("f(1abc)", &["invalid number `1abc` at 1:3"]),
    ("f(0x1g)", &["invalid number `0x1g`"]),
    ("f(1e)", &["invalid number `1e`"]),
    // values without a JSON form
    ("f(b'x')", &["bytes literal at 1:3", "normal string"]),
    ("f('a' b'x')", &["bytes literal at 1:7"]),
    ("f(Rb'x')", &["bytes literal"]),
    ("f({1, 2})", &["set literal at 1:3", "list"]),
    ("f({'a'})", &["set literal"]),
    ("f({None: 1})", &["dict key at 1:4 is None", "strings"]),
    ("f({(1, 2): 1})", &["dict key at 1:4 is a tuple or list"]),
];

#[test]
fn broken_calls_are_invalid_arguments() {
    for (input, fragments) in BROKEN {
        assert_error(parse_call(input), "INVALID_ARGUMENT", fragments, input);
        assert_error(
            Front::default().interpret(input),
            "INVALID_ARGUMENT",
            fragments,
            input,
        );
    }
}

#[test]
fn error_positions_count_lines_after_stripping() {
    assert_error(
        Front::default().interpret("```python\nproj.add(\n    name='x,\n)\n```"),
        "INVALID_ARGUMENT",
        &["unterminated string starting at 2:10"],
        "fenced",
    );
}
