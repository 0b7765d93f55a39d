//! The call-expression parser never panics, and a call it accepts has a
//! dotted identifier target and arguments that survive a JSON round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(Some(call)) = packhost_command::parse_call(text) {
        assert!(!call.target.is_empty());
        assert!(
            call.target.split('.').all(|part| !part.is_empty()),
            "target {:?}",
            call.target
        );
        for value in call.args.iter().chain(call.kwargs.iter().map(|(_, v)| v)) {
            let text = serde_json::to_string(value).expect("a parsed value is JSON");
            let back: serde_json::Value = serde_json::from_str(&text).expect("and reads back");
            assert_eq!(&back, value);
        }
    }
});
