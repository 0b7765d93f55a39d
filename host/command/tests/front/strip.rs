use packhost_command::{Front, Plan, strip};

use crate::assert_error;

#[test]
fn wrapping_markup_is_removed() {
    let cases = [
        (
            "fence with language",
            "```python\nproj.list()\n```",
            "proj.list()",
        ),
        ("fence with py tag", "```py\nx = 1\nx\n```", "x = 1\nx"),
        ("fence without tag", "```\nproj.list()\n```", "proj.list()"),
        (
            "four-backtick fence",
            "````python\nproj.list()\n````",
            "proj.list()",
        ),
        (
            "longer closing fence",
            "```\nproj.list()\n`````",
            "proj.list()",
        ),
        ("double backticks", "``proj.list()``", "proj.list()"),
        (
            "double backticks around a single one",
            "``a(`b`)``",
            "a(`b`)",
        ),
        ("single backticks", "`proj.list()`", "proj.list()"),
        (
            "triple backticks on one line",
            "```proj.list()```",
            "proj.list()",
        ),
        (
            "closing fence glued to the code",
            "```python\nproj.list()```",
            "proj.list()",
        ),
        (
            "fence never closed",
            "```python\nproj.list()",
            "proj.list()",
        ),
        ("prompt with space", ">>> proj.list()", "proj.list()"),
        ("prompt without space", ">>>proj.list()", "proj.list()"),
        (
            "prompt inside fence",
            "```python\n>>> proj.list()\n```",
            "proj.list()",
        ),
        ("prompt before fence", ">>> `proj.list()`", "proj.list()"),
        (
            "CRLF fence",
            "```py\r\nx = 1\r\ny = 2\r\n```\r\n",
            "x = 1\ny = 2",
        ),
        ("bare CR", "x = 1\ry = 2", "x = 1\ny = 2"),
        (
            "surrounding whitespace",
            "  \n\n  proj.list()  \n\t",
            "proj.list()",
        ),
        (
            "common indentation",
            "    x = 1\n    if x:\n        y = 2\n",
            "x = 1\nif x:\n    y = 2",
        ),
        (
            "indented fence body",
            "```\n  a = 1\n  b = 2\n```",
            "a = 1\nb = 2",
        ),
        (
            "fence line inside a string in a fenced block",
            "```python\ns = '''\n```\n'''\nprint(s)\n```",
            "s = '''\n```\n'''\nprint(s)",
        ),
        // Forms models write (issue 13).
        (
            "inline code inside double backticks",
            "`` `proj.list()` ``",
            "proj.list()",
        ),
        ("span in a fence", "```\n`proj.list()`\n```", "proj.list()"),
        (
            "fence inside a span",
            "`` ```python\nx = 1\nx\n``` ``",
            "x = 1\nx",
        ),
        (
            "python3 tag, trailing spaces",
            "```python3   \nproj.list()   \n```   ",
            "proj.list()",
        ),
        ("py3 tag", "```py3\nx = 1\n```", "x = 1"),
        (
            "tag after a space",
            "``` python\nproj.list()\n```",
            "proj.list()",
        ),
        (
            "one-line fence with a tag",
            "```python proj.list()```",
            "proj.list()",
        ),
        ("one-line fence with py tag", "```py x = 1```", "x = 1"),
        ("tilde fence", "~~~python\nproj.list()\n~~~", "proj.list()"),
        (
            "pycon transcript with output",
            "```pycon\n>>> x = 20\n>>> x + 1\n21\n```",
            "x = 20\nx + 1",
        ),
        (
            "transcript with continuation lines",
            ">>> def f(x):\n...     return x * 2\n...\n>>> f(21)\n42",
            "def f(x):\n    return x * 2\n\nf(21)",
        ),
        (
            "transcript without spaces after prompts",
            ">>>a = 1\n>>>a",
            "a = 1\na",
        ),
        (
            "one prompt, then plain lines",
            ">>> x = 1\ny = x",
            "x = 1\ny = x",
        ),
    ];
    for (name, input, want) in cases {
        assert_eq!(strip(input).as_deref(), Ok(want), "{name}: {input:?}");
    }
}

#[test]
fn text_that_is_not_wrapped_stays() {
    let cases = [
        "proj.list()",
        "print('```')",
        "s = \"```python\\nx\\n```\"",
        "intro = 1\n```python\nx\n```",
        "```python\na()\n```\nthen some prose",
        "`a` + `b`",
        "x = `y`\nz",
        "``",
        "```",
        "print(\"```\")\n```",
        "```py x``` + 1",
        "~~x~~",
        "s = '''\n~~~\n'''",
    ];
    for input in cases {
        assert_eq!(strip(input).as_deref(), Ok(input), "{input:?}");
    }
}

#[test]
fn empty_commands_are_rejected() {
    for input in [
        "",
        "   \n\t ",
        "```\n```",
        "```python\n\n```",
        "``` ```",
        ">>>",
        ">>>   ",
        "` `",
        "```\n>>>\n```",
    ] {
        assert_error(
            strip(input),
            "INVALID_ARGUMENT",
            &["empty command", "`proj.list()`", "block of Python"],
            input,
        );
    }
}

#[test]
fn stripped_text_feeds_the_pipeline() {
    let front = Front::default();
    let Ok(Plan::Call(call)) = front.interpret("```python\n>>> proj.list(limit=2)\n```") else {
        panic!("fenced call should parse");
    };
    assert_eq!(call.target, "proj.list");
    assert_eq!(
        front.interpret("```py\nx = 2\nx * 21\n```"),
        Ok(Plan::Code("x = 2\nx * 21".to_owned()))
    );
}

#[test]
fn bang_prefix_is_rejected_with_the_real_syntax() {
    let front = Front::default();
    let cases: [(&str, &[&str]); 5] = [
        (
            "!onetool proj.list()",
            &[
                "no `!` prefix",
                "`pack.function(arg=value)`",
                "$snippet",
                "alias",
                "Python",
                "`proj.list()`",
            ],
        ),
        ("!run x", &["no `!` prefix", "`x`"]),
        ("!proj.list()", &["no `!` prefix", "`proj.list()`"]),
        ("!", &["no `!` prefix", "Python code"]),
        (
            "```\n!run proj.list()\n```",
            &["no `!` prefix", "`proj.list()`"],
        ),
    ];
    for (input, fragments) in cases {
        assert_error(front.interpret(input), "INVALID_ARGUMENT", fragments, input);
    }
}
