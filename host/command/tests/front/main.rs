//! Behaviour of the command front through its public API.

mod aliases;
mod calls;
mod errors;
mod robustness;
mod snippets;
mod strip;

use packhost_command::{Call, Front, FrontError, Plan, parse_call};
use serde_json::Value;

/// The call `src` must parse to.
fn parsed(src: &str) -> Call {
    match parse_call(src) {
        Ok(Some(call)) => call,
        other => panic!("{src:?} should be a call, got {other:?}"),
    }
}

/// The single positional argument of `f(<literal>)`.
fn literal(literal: &str) -> Value {
    let call = parsed(&format!("f({literal})"));
    assert_eq!(call.args.len(), 1, "{literal:?}");
    call.args.into_iter().next().unwrap()
}

fn call(target: &str, args: Vec<Value>, kwargs: Vec<(&str, Value)>) -> Call {
    Call {
        target: target.to_owned(),
        args,
        kwargs: kwargs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
    }
}

fn plan(front: &Front, command: &str) -> Plan {
    front
        .interpret(command)
        .unwrap_or_else(|e| panic!("{command:?} failed: {e}"))
}

/// Asserts the error's code and that its message contains every fragment.
fn assert_error(
    result: Result<impl std::fmt::Debug, FrontError>,
    code: &str,
    fragments: &[&str],
    input: &str,
) {
    let error = match result {
        Err(e) => e,
        Ok(v) => panic!("{input:?} should fail with {code}, got {v:?}"),
    };
    assert_eq!(error.code(), code, "{input:?}: {error}");
    let message = error.message();
    assert_eq!(message, error.to_string());
    for fragment in fragments {
        assert!(
            message.contains(fragment),
            "{input:?}: {message:?} lacks {fragment:?}"
        );
    }
}
