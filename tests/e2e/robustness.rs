//! Hostile input on stdio: malformed JSON, invalid UTF-8, unknown methods,
//! odd tool names, deep nesting. Each gets a clear answer or is dropped; the
//! host keeps answering.

use std::{
    io::{BufRead, BufReader, Write},
    process::{ChildStdin, ChildStdout, Stdio},
};

use packhost_tests::{hello_section, packhost_command, schemas::check_raw_call};
use serde_json::{Value, json};
use tempfile::TempDir;

struct Raw {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Raw {
    fn send(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message with `id`; every stdout line must be JSON-RPC.
    fn response(&mut self, id: u64) -> Value {
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "stdout closed before response {id}"
            );
            let value: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            assert_eq!(value["jsonrpc"], "2.0", "{value}");
            if value["id"] == id {
                return value;
            }
        }
    }
}

#[test]
fn hostile_input_gets_clear_errors_and_the_host_keeps_serving() {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("packs.toml"), hello_section("")).unwrap();
    let mut child = packhost_command(dir.path())
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("stderr.log")).unwrap())
        .spawn()
        .unwrap();
    let mut raw = Raw {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()),
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    raw.send(init.to_string().as_bytes());
    assert_eq!(raw.response(1)["result"]["serverInfo"]["name"], "packhost");
    raw.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    raw.send(br#"{"jsonrpc":"2.0","id":10,"method":"tools/list"}"#);
    let tools = raw.response(10);

    raw.send(b"{not json at all");
    raw.send(b"\xff\xfe invalid utf-8 \xc3\x28");
    raw.send(br#"{"jsonrpc":"2.0","id":2,"method":"no/such/method"}"#);
    let unknown = raw.response(2);
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    for (id, name) in [
        (3, "../../etc/passwd"),
        (4, "hello/../greet"),
        (5, ""),
        (6, "hello.greet\u{0}"),
    ] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}});
        raw.send(call.to_string().as_bytes());
        let answer = raw.response(id);
        check_raw_call(&tools, name, &answer);
        assert_eq!(answer["result"]["isError"], true, "{name:?}: {answer}");
        let code = answer["result"]["_meta"]["packhost/error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            code == "UNKNOWN_PACK" || code == "UNKNOWN_FUNCTION",
            "{name:?}: {answer}"
        );
    }

    // 10,000 levels of nesting in the arguments: refused by the JSON parser's
    // depth limit, or answered as a bad argument; never a crash.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"hello.echo","arguments":{{"value":{}1{}}}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    raw.send(deep.as_bytes());
    // 60 levels fit the parser: echoed back whole.
    let nested = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"hello.echo","arguments":{{"value":{}1{}}}}}}}"#,
        "[".repeat(60),
        "]".repeat(60)
    );
    raw.send(nested.as_bytes());
    let echoed = raw.response(8);
    check_raw_call(&tools, "hello.echo", &echoed);
    assert_eq!(echoed["result"]["isError"], false, "{echoed}");

    raw.send(br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#);
    assert!(raw.response(9)["result"].is_object());
    drop(raw);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}
