//! The README's set-up, as a newcomer follows it: `./dev install` puts
//! `packhost` and the shipped packs where the README's client configs name
//! them, and the official Python and TypeScript SDK clients connect with
//! each config exactly as the README shows it (read from README.md, so the
//! two cannot drift). A second install, as a second clone's, leaves a host
//! running from the first working.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use packhost_tests::{TestHost, build_dir, http::HttpHost};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::official_clients::{Sdk, drive, ok};

const README: &str = include_str!("../../README.md");

/// The README's stand-ins: this clone, and the home folder.
const CLONE: &str = "/home/you/src/packhost";
const HOME: &str = "/home/you";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the repository")
}

/// The JSON blocks the README marks `<!-- readme-test: KIND -->`, with its
/// stand-ins replaced by this clone and `home`.
fn snippets(kind: &str, home: &Path) -> Vec<Value> {
    let marker = format!("<!-- readme-test: {kind} -->\n```json\n");
    let blocks: Vec<Value> = README
        .split(&marker)
        .skip(1)
        .map(|rest| {
            let block = &rest[..rest.find("\n```").expect("the block ends")];
            let block = block
                .replace(CLONE, repository().to_str().unwrap())
                .replace(HOME, home.to_str().unwrap());
            serde_json::from_str(&block).unwrap_or_else(|e| panic!("not JSON ({e}):\n{block}"))
        })
        .collect();
    assert!(!blocks.is_empty(), "the README marks no {kind} config");
    blocks
}

/// The `packhost` entry of a client config: `mcpServers` (Claude Desktop,
/// Cursor, Claude Code) or `servers` (VS Code).
fn entry(config: &Value) -> &Value {
    let servers = config.get("mcpServers").or_else(|| config.get("servers"));
    let entry = &servers.expect("mcpServers or servers")["packhost"];
    assert!(entry.is_object(), "no `packhost` server in {config}");
    entry
}

/// `./dev install --from` this build into `home`, as `./dev run` installs.
fn install(home: &Path, from: &Path) -> String {
    let output = Command::new("bash")
        .arg(repository().join("dev"))
        .args(["install", "--from"])
        .arg(from)
        .env("HOME", home)
        .env("CARGO_TARGET_DIR", build_dir().parent().unwrap())
        .env_remove("PACKHOST_PREFIX")
        .output()
        .expect("run ./dev install");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "./dev install failed:\n{stderr}");
    stderr
}

/// The folder `~/.local/bin/packhost` links to.
fn installed(home: &Path) -> PathBuf {
    let binary = home
        .join(".local/bin/packhost")
        .canonicalize()
        .expect("the link");
    binary.parent().unwrap().to_path_buf()
}

/// A home where the installed host finds the search model `./dev test`
/// installed (the shipped packs.toml names it under `~`).
fn fresh_home() -> TempDir {
    let home = TempDir::new().expect("temp home");
    let model = std::env::var_os("PACKHOST_SEARCH_MODEL")
        .map(PathBuf::from)
        .expect("PACKHOST_SEARCH_MODEL: run the tests with `./dev test`");
    let models = home.path().join(".cache/packhost-models");
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(&model, models.join("all-MiniLM-L6-v2")).unwrap();
    home
}

/// `proj.list()` through `run`, as each SDK's client sends it on
/// `transport`: the shipped projects come back.
async fn lists_projects(transport: Value, dir: &TempDir, log: impl Fn() -> String + Copy) {
    let calls = [ok("list", "run", json!({"command": "proj.list()"}), &[])];
    for sdk in [Sdk::Python, Sdk::TypeScript] {
        let lines = drive(sdk, dir, transport.clone(), &calls, log).await;
        let line = &lines[1];
        assert_eq!(line["isError"], json!(false), "{sdk:?}: {line}\n{}", log());
        assert_eq!(
            line["structuredContent"]["projects"][0]["name"],
            json!("packhost"),
            "{sdk:?}: {line}"
        );
    }
}

#[tokio::test]
async fn the_readme_after_block_runs_as_shown() {
    let (before, after) = ("→ tools/call run {\"command\": \"", "\"}\n← ");
    let start = README.find(before).expect("the README's `run` call") + before.len();
    let command = &README[start..start + README[start..].find(after).expect("its end")];
    let config = format!(
        "[packs.exec_py]\n[packs.proj]\n[projects]\npackhost = {:?}\n",
        repository()
    );
    let host = TestHost::start(&config).await;
    let answer = packhost_tests::ok(&host.run(command).await);
    assert_eq!(answer["success"], json!(true), "{answer}");
    let heads = answer["result"].as_object().expect("a dict of file heads");
    assert!(!heads.is_empty(), "no file has `fn main`: {answer}");
    for (path, head) in heads {
        let file = std::fs::read_to_string(repository().join(path)).expect("a file of the project");
        assert!(file.contains("fn main"), "{path} has no `fn main`");
        assert!(
            head.as_str().is_some_and(|head| file.starts_with(head)),
            "{path}: {head}"
        );
    }
}

#[tokio::test]
async fn the_readme_stdio_configs_run_the_installed_packhost() {
    let home = fresh_home();
    let said = install(home.path(), &build_dir());
    let folder = installed(home.path());
    assert!(said.contains(&format!("in {}", folder.display())), "{said}");
    for pack in ["proj", "exec_py", "exec_ts", "jupyter", "remote_mcp"] {
        assert!(
            folder.join(format!("lib{pack}.so")).is_file(),
            "no {pack} beside the binary"
        );
    }
    let version = Command::new(home.path().join(".local/bin/packhost"))
        .arg("--version")
        .output()
        .expect("run packhost --version");
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("packhost "));

    for config in snippets("stdio", home.path()) {
        let server = entry(&config);
        let command = server["command"].as_str().expect("a command");
        assert_eq!(Path::new(command), home.path().join(".local/bin/packhost"));
        let dir = TempDir::new().unwrap();
        let log_path = dir.path().join("stderr.log");
        let transport = json!({"stdio": {
            "command": command,
            "args": server["args"],
            "env": {"HOME": home.path(), "PATH": std::env::var("PATH").unwrap()},
            "stderr": log_path,
        }});
        let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
        lists_projects(transport, &dir, &log).await;
    }
}

#[tokio::test]
async fn the_readme_http_config_reaches_a_served_packhost() {
    // The README serves where its client config points.
    let config = snippets("http", Path::new(HOME)).remove(0);
    let server = entry(&config);
    let url = server["url"].as_str().expect("a url");
    let address = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
        .expect("http://ADDRESS/mcp");
    assert!(
        README.contains(&format!("packhost serve --http {address} ")),
        "the README serves elsewhere than {url}"
    );
    let header = server["headers"]["Authorization"]
        .as_str()
        .expect("a header");
    let token_slot = header.strip_prefix("Bearer ").expect("a bearer header");

    let (token, tokens_entry) = crate::http::token("ada", "acme", &[]);
    let projects = format!("[projects]\npackhost = {:?}\n", repository());
    let host = HttpHost::start(&format!("[packs.proj]\n{projects}{tokens_entry}"), &[]).await;
    let url = url.replace(&format!("http://{address}"), &host.base);
    let transport = json!({"http": {"url": url, "token": token_slot.replace("<token>", &token)}});
    let dir = TempDir::new().unwrap();
    lists_projects(transport, &dir, &|| host.stderr()).await;
}

#[tokio::test]
async fn a_second_install_leaves_a_host_running_from_the_first_working() {
    let home = fresh_home();
    install(home.path(), &build_dir());
    let first = installed(home.path());
    let mut running = Command::new(home.path().join(".local/bin/packhost"))
        .args(["serve", "--config"])
        .arg(repository().join("packs.toml"))
        .env("HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the installed packhost");

    // Another clone's build: the same files, one of them different.
    let other = TempDir::new().unwrap();
    for file in std::fs::read_dir(&first).unwrap() {
        let file = file.unwrap().path();
        std::fs::copy(&file, other.path().join(file.file_name().unwrap())).unwrap();
    }
    let mut bytes = std::fs::read(other.path().join("libproj.so")).unwrap();
    bytes.push(0); // past the ELF's end: the library loads the same
    std::fs::write(other.path().join("libproj.so"), bytes).unwrap();
    install(home.path(), other.path());
    let second = installed(home.path());
    assert_ne!(first, second, "the second build has a folder of its own");
    assert!(
        first.join("packhost").is_file(),
        "the running host's folder was removed"
    );
    let check = Command::new(home.path().join(".local/bin/packhost"))
        .args(["check", "--config"])
        .arg(repository().join("packs.toml"))
        .env("HOME", home.path())
        .output()
        .expect("packhost check");
    assert!(
        check.status.success(),
        "the second install does not load its packs:\n{}",
        String::from_utf8_lossy(&check.stderr)
    );

    assert!(
        running.try_wait().unwrap().is_none(),
        "the first host stopped"
    );

    // Once nothing runs the first, the next install removes it.
    running.kill().unwrap();
    running.wait().unwrap();
    install(home.path(), other.path());
    assert!(!first.exists(), "{} is left behind", first.display());
}
