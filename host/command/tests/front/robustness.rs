//! Hostile inputs: every one must finish quickly with a result, never a panic.

use std::time::{Duration, Instant};

use packhost_command::{Front, FrontError, Plan, parse_call, strip};
use serde_json::json;

use crate::{assert_error, parsed};

const MB: usize = 1 << 20;

/// Runs the whole pipeline and checks it stays fast and keeps messages short.
fn survive(input: &str) -> Result<Plan, FrontError> {
    let started = Instant::now();
    let result = Front::default().interpret(input);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{} bytes took {:?}",
        input.len(),
        started.elapsed()
    );
    if let Err(e) = &result {
        assert!(
            e.message().len() < 500,
            "message too long: {} bytes",
            e.message().len()
        );
    }
    result
}

/// Deterministic pseudo-random text over an alphabet rich in Python syntax.
fn junk(seed: u64, len: usize) -> String {
    let alphabet: Vec<char> = "[](){}'\"\\,:=#\n\t ab_xyzeEjJrRbBfF0123456789.+-*$!`é😀\u{0}"
        .chars()
        .collect();
    let mut state = seed;
    let mut out = String::with_capacity(len);
    while out.len() < len {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push(alphabet[(state >> 33) as usize % alphabet.len()]);
    }
    out
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let openers = ["[", "(", "{'k': ", "[(", "{1: ["];
    for opener in openers {
        let input = format!("f({}", opener.repeat(10_000));
        assert_error(
            survive(&input),
            "INVALID_ARGUMENT",
            &["nest deeper than 64 levels"],
            opener,
        );
    }
    let input = format!("f({}1{})", "[".repeat(65), "]".repeat(65));
    assert_error(
        survive(&input),
        "INVALID_ARGUMENT",
        &["nest deeper than 64 levels at 1:67"],
        "65 levels",
    );
}

#[test]
fn a_megabyte_of_one_character() {
    for c in [
        "[", "\"", "'", "(", "{", "`", "\\", "#", "-", ">", "$", "!", "_", "9", "é", " ",
    ] {
        let _ = survive(&c.repeat(MB));
        let _ = survive(&format!("f({}", c.repeat(MB)));
        let _ = survive(&format!("f({})", c.repeat(MB)));
        let _ = survive(&format!("$search {}", c.repeat(MB)));
    }
    assert_eq!(parse_call(&"[".repeat(MB)), Ok(None));
    assert_error(
        survive(&format!("f({}", "\"".repeat(MB))),
        "INVALID_ARGUMENT",
        &["unterminated string"],
        "quotes",
    );
    assert_error(
        survive(&format!("f({})", "9".repeat(MB))),
        "INVALID_ARGUMENT",
        &["is out of range", "…"],
        "digits",
    );
}

#[test]
fn a_megabyte_of_junk() {
    for seed in 0..8 {
        let text = junk(seed, MB);
        let _ = survive(&text);
        let _ = survive(&format!("f({text}"));
        let _ = survive(&format!("```python\n{text}\n```"));
        let _ = strip(&text);
    }
    let bytes: Vec<u8> = junk(99, MB).bytes().map(|b| b.wrapping_mul(31)).collect();
    let _ = survive(&String::from_utf8_lossy(&bytes));
}

#[test]
fn short_junk_in_many_shapes() {
    for seed in 0..20_000 {
        let text = junk(seed, (seed % 40) as usize);
        let _ = survive(&text);
        let _ = survive(&format!("f({text}"));
        let _ = survive(&format!("f({text})"));
        let _ = survive(&format!("$x {text}"));
    }
}

#[test]
fn big_valid_arguments_parse() {
    let text = "a".repeat(MB);
    assert_eq!(parsed(&format!("f(\"{text}\")")).args, [json!(text)]);
    let escaped = parsed(&format!("f('{}')", "\\n".repeat(MB / 2)));
    assert_eq!(escaped.args, [json!("\n".repeat(MB / 2))]);
    let pieces = parsed(&format!("f({})", "'ab' ".repeat(MB / 5)));
    assert_eq!(pieces.args, [json!("ab".repeat(MB / 5))]);

    let keywords: Vec<String> = (0..100_000).map(|i| format!("k{i}={i}")).collect();
    let call = parsed(&format!("f({})", keywords.join(", ")));
    assert_eq!(call.kwargs.len(), 100_000);
    assert_eq!(call.kwargs[99_999], ("k99999".to_owned(), json!(99_999)));

    let list = parsed(&format!("f([{}])", "1, ".repeat(MB / 3)));
    assert_eq!(list.args[0].as_array().map(Vec::len), Some(MB / 3));
    assert!(matches!(
        survive(&format!("p.f({}1)", "-".repeat(MB))),
        Ok(Plan::Call(_))
    ));
}

/// Found by the `parse_call` fuzz target: a float must reach the pack with
/// the very same value after the JSON text between host and pack
/// (serde_json's `float_roundtrip`).
#[test]
fn floats_survive_the_json_text_between_host_and_pack() {
    let call =
        packhost_command::parse_call("heol.lecHo(1.1111222222222222222, 0.1, 1e-300, 2.5e+300)")
            .unwrap()
            .unwrap();
    for value in &call.args {
        let text = serde_json::to_string(value).unwrap();
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(&back, value, "{text}");
    }
}
