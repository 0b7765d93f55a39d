//! The command line: `call`, `packs`, `check`, `--help`, and `serve` keeping
//! stdout for JSON-RPC only.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Output, Stdio},
};

use packhost_tests::{packhost_cli, packhost_command, schemas::check_raw_call};
use serde_json::{Value, json};
use tempfile::TempDir;

const CONFIG: &str = "[packs.proj]\n\n[projects]\nsub = \"sub\"\n";

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[track_caller]
fn exit_code(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
}

#[test]
fn call_prints_the_result_as_json_and_exits_0() {
    let output = packhost_cli(CONFIG, &["call", "proj.list()"]);
    exit_code(&output, 0);
    let value: Value = serde_json::from_str(&stdout(&output))
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", stdout(&output)));
    let projects = value["projects"].as_array().expect("projects");
    assert_eq!(projects.len(), 1, "{value}");
    assert_eq!(projects[0]["name"], "sub");
    assert_eq!(projects[0]["exists"], false);
    let path = projects[0]["path"].as_str().unwrap();
    assert!(
        path.starts_with('/') && path.ends_with("/sub"),
        "not an absolute path to `sub`: {path}"
    );
    // The log line of the call goes to stderr, not into the JSON.
    assert!(stderr(&output).contains("call done"), "{}", stderr(&output));
}

#[test]
fn a_failing_call_prints_the_error_and_exits_1() {
    let output = packhost_cli(CONFIG, &["call", "nope.x()"]);
    exit_code(&output, 1);
    assert_eq!(
        stdout(&output).trim_end(),
        "UNKNOWN_PACK: unknown pack `nope`; loaded packs: packhost, proj"
    );
    let output = packhost_cli(CONFIG, &["call", "proj.read('sub', '../x')"]);
    exit_code(&output, 1);
    assert!(
        stdout(&output).starts_with("ACCESS_DENIED: path `../x` contains `..`"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn packs_prints_every_signature() {
    let output = packhost_cli(CONFIG, &["packs"]);
    exit_code(&output, 0);
    let text = stdout(&output);
    // The host's own pack comes first (nine lines), then the configured ones.
    let lines: Vec<&str> = text.lines().skip(9).collect();
    assert!(
        lines[0].starts_with("proj 0.1.0 — Project paths and files"),
        "{text}"
    );
    assert!(lines[1].trim_start().ends_with("/libproj.so"), "{text}");
    assert_eq!(
        lines[2..],
        [
            "    proj.list()",
            "    proj.path(name: string, sub?: string = \"\")",
            "    proj.read(name: string, path: string, offset?: integer = 0, limit?: integer = 2000)",
            "    proj.ls(name: string, path?: string = \"\")",
            "    proj.grep(name: string, pattern: string, glob?: string)",
        ],
        "{text}"
    );
}

#[test]
fn packs_without_packs_says_how_to_add_one() {
    let output = packhost_cli("", &["packs"]);
    exit_code(&output, 0);
    assert!(
        stdout(&output).trim_end().ends_with(
            "\nno packs loaded but the host's own (add [packs.<name>] sections to packs.toml)"
        ),
        "{}",
        stdout(&output)
    );
}

#[test]
fn check_accepts_a_good_config() {
    let output = packhost_cli(CONFIG, &["check"]);
    exit_code(&output, 0);
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("config: /") && lines[0].ends_with("/packs.toml (ok)"),
        "{text}"
    );
    assert_eq!(
        lines[1], "ok    packhost (7 functions) built into the host",
        "{text}"
    );
    assert!(lines[2].starts_with("ok    proj (5 functions) /"), "{text}");
    assert_sandbox_report(&lines[3..]);
}

/// This machine has what the sandbox needs: the report must say so (the
/// suite fails here rather than skip where it does not).
fn assert_sandbox_report(lines: &[&str]) {
    let report = lines.join("\n");
    assert_eq!(lines[0], "sandbox:", "{report}");
    assert!(lines[1].starts_with("  Landlock ABI "), "{report}");
    assert_eq!(lines[2], "  seccomp: yes", "{report}");
    assert!(lines[3].starts_with("  bounds: cgroup v"), "{report}");
    assert_eq!(lines[4], "  code runs confined", "{report}");
    assert_eq!(lines.len(), 5, "{report}");
}

#[test]
fn check_without_a_config_file_uses_the_defaults() {
    let dir = TempDir::new().unwrap();
    let output = packhost_command(dir.path()).arg("check").output().unwrap();
    exit_code(&output, 0);
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0]
            .starts_with("config: no config file: none was given and there is no packs.toml in "),
        "{text}"
    );
    assert_eq!(
        lines[1], "ok    packhost (7 functions) built into the host",
        "{text}"
    );
    assert_sandbox_report(&lines[2..]);
}

#[test]
fn help_describes_the_tool_and_every_subcommand() {
    let output = packhost_cli("", &["--help"]);
    exit_code(&output, 0);
    let text = stdout(&output);
    assert!(
        text.contains("Usage: packhost [OPTIONS] <COMMAND>"),
        "{text}"
    );
    assert!(text.contains("MCP tool server"), "{text}");
    assert!(text.contains("--config <FILE>"), "{text}");
    for (command, purpose) in [
        ("serve", "Serve MCP on stdin/stdout"),
        ("call", "Run one `run` command and print its result"),
        (
            "packs",
            "List the loaded packs, their functions and signatures",
        ),
        ("check", "Check the config and load every pack"),
        ("token", "Make a bearer token for HTTP"),
    ] {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(command) && l.contains(purpose)),
            "top-level help lacks `{command}`:\n{text}"
        );
        let output = packhost_cli("", &[command, "--help"]);
        exit_code(&output, 0);
        let help = stdout(&output);
        assert!(help.starts_with(purpose), "{command} --help:\n{help}");
        assert!(
            help.contains(&format!("Usage: packhost {command} [OPTIONS]")),
            "{command} --help:\n{help}"
        );
    }
    let help = stdout(&packhost_cli("", &["call", "--help"]));
    assert!(
        help.contains("<COMMAND>") && help.contains("The command, e.g. 'proj.list()'"),
        "{help}"
    );
}

#[test]
fn an_unknown_subcommand_is_a_usage_error() {
    let output = packhost_cli("", &["frobnicate"]);
    exit_code(&output, 2);
    assert!(
        stderr(&output).contains("unrecognized subcommand 'frobnicate'"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_missing_config_file_exits_2_naming_it() {
    let output = packhost_cli(CONFIG, &["--config", "missing.toml", "call", "proj.list()"]);
    exit_code(&output, 2);
    assert_eq!(stdout(&output), "");
    assert!(
        stderr(&output).contains(
            "error: config file `missing.toml` does not exist; pass a TOML file to --config"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn serve_writes_only_json_rpc_to_stdout() {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("packs.toml"), CONFIG).unwrap();
    let log = dir.path().join("stderr.log");
    let mut child = packhost_command(dir.path())
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("spawn packhost serve");
    let mut stdin = child.stdin.take().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut lines: Vec<String> = Vec::new();
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    // Read until the response with `id` arrives; keep every line.
    let mut read_response = |id: u64, lines: &mut Vec<String>| -> Value {
        loop {
            let mut line = String::new();
            let n = reader.read_line(&mut line).unwrap();
            assert!(
                n > 0,
                "stdout closed before response {id}; lines: {lines:?}"
            );
            lines.push(line.clone());
            let value: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
            if value["id"] == id {
                return value;
            }
        }
    };

    send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}
        }
    }));
    let init = read_response(1, &mut lines);
    assert_eq!(init["result"]["serverInfo"]["name"], "packhost", "{init}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}));
    let tools = read_response(4, &mut lines);
    send(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "nope.tool", "arguments": {}}
    }));
    let unknown = read_response(2, &mut lines);
    check_raw_call(&tools, "nope.tool", &unknown);
    assert_eq!(unknown["result"]["isError"], true, "{unknown}");
    assert_eq!(
        unknown["result"]["_meta"]["packhost/error"]["code"], "UNKNOWN_PACK",
        "{unknown}"
    );
    send(json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "proj.list", "arguments": {}}
    }));
    let list = read_response(3, &mut lines);
    check_raw_call(&tools, "proj.list", &list);
    assert_eq!(
        list["result"]["structuredContent"]["projects"][0]["name"], "sub",
        "{list}"
    );
    drop(stdin);

    // After stdin closes the server ends; whatever else it wrote must be JSON-RPC too.
    for line in reader.lines() {
        lines.push(line.unwrap());
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "serve exited with {status}");
    assert!(lines.len() >= 3, "{lines:?}");
    for line in &lines {
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        assert_eq!(value["jsonrpc"], "2.0", "{line}");
    }
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("call done") && l.contains("tool=proj.list")),
        "stderr lacks the call log:\n{log}"
    );
}
