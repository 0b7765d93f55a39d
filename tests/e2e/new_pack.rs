//! `packhost new pack`: the crate it writes builds outside the workspace,
//! its test passes, and the unchanged host serves it; bad names and
//! existing folders are refused without writing anything.

use std::{path::Path, process::Output};

use packhost_tests::{TestHost, build_dir, cargo_outside, ok, packhost_command};
use serde_json::json;
use tempfile::TempDir;

fn new_pack(dir: &Path, args: &[&str]) -> Output {
    packhost_command(dir)
        .args(["new", "pack"])
        .args(args)
        .output()
        .expect("run packhost")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
fn succeeded(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed:\nstdout:\n{}\nstderr:\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
}

#[tokio::test]
async fn a_new_pack_builds_passes_its_test_and_is_served() {
    let dir = TempDir::new().expect("temp dir");
    let output = new_pack(dir.path(), &["demo"]);
    succeeded("packhost new pack demo", &output);
    let crate_dir = dir.path().join("demo");
    let stdout = text(&output.stdout);
    assert!(stdout.contains("[packs.demo]\npath = "), "{stdout}");
    // It names the SDK it depends on (this packhost's own) and the next commands.
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/sdk/pack-sdk");
    let sdk = sdk.canonicalize().expect("the SDK folder");
    let says = format!("depends on the pack-sdk at {} (the SDK of", sdk.display());
    assert!(stdout.contains(&says), "{stdout}");
    for next in [
        "cargo build",
        "packhost check --config",
        "packhost call 'demo.greet(",
    ] {
        assert!(stdout.contains(next), "no `{next}`:\n{stdout}");
    }
    for file in ["Cargo.toml", "src/lib.rs", "README.md"] {
        assert!(crate_dir.join(file).is_file(), "no {file}:\n{stdout}");
    }
    let readme = std::fs::read_to_string(crate_dir.join("README.md")).unwrap();
    assert!(
        readme.contains("[packs.demo]") && readme.contains("cargo test"),
        "{readme}"
    );
    // The workspace's versions of the dependencies, so they are not rebuilt.
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock");
    std::fs::copy(lock, crate_dir.join("Cargo.lock")).expect("copy Cargo.lock");
    let manifest = crate_dir.join("Cargo.toml");
    succeeded("cargo build", &cargo_outside("build", &manifest));
    succeeded("cargo test", &cargo_outside("test", &manifest));

    let library = build_dir().join("libdemo.so");
    let host = TestHost::start(&format!("[packs.demo]\npath = \"{}\"\n", library.display())).await;
    let result = host.run("demo.greet(name='Ada')").await;
    assert_eq!(ok(&result), json!({"text": "hello, Ada"}));
    let result = host.call("demo.greet", json!({"name": "Bob"})).await;
    assert_eq!(ok(&result), json!({"text": "hello, Bob"}));
}

#[test]
fn bad_names_and_existing_folders_are_refused() {
    let dir = TempDir::new().expect("temp dir");
    for (name, says) in [
        ("my-pack", "`my-pack` cannot name a pack"),
        ("fn", "`fn` is a Rust keyword"),
        ("packhost", "`packhost` is the host's own pack"),
    ] {
        let output = new_pack(dir.path(), &[name]);
        assert_eq!(output.status.code(), Some(2), "{name}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(says), "{name}: {stderr}");
        assert!(!dir.path().join(name).exists(), "{name} was written");
    }

    std::fs::create_dir(dir.path().join("demo")).unwrap();
    std::fs::write(dir.path().join("demo/notes.txt"), "mine").unwrap();
    let output = new_pack(dir.path(), &["demo"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("demo already exists; nothing was written"),
        "{stderr}"
    );
    let kept: Vec<_> = std::fs::read_dir(dir.path().join("demo"))
        .unwrap()
        .collect();
    assert_eq!(kept.len(), 1, "the folder was written to");

    let output = new_pack(dir.path(), &["other", "--sdk", "/nowhere"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("/nowhere holds no crate") && stderr.contains("--sdk PATH"),
        "{stderr}"
    );
    assert!(!dir.path().join("other").exists());

    // --sdk names another SDK, and the output says it came from there.
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/sdk/pack-sdk");
    let output = new_pack(dir.path(), &["other", "--sdk", sdk.to_str().unwrap()]);
    succeeded("packhost new pack other --sdk", &output);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("(--sdk; --sdk PATH names another)"),
        "{stdout}"
    );
}
