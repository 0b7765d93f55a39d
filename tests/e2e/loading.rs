//! Loading packs: a stranger's pack, and every way a library can be wrong.

use std::path::Path;

use packhost_tests::{
    TestHost, build_dir, cargo_outside, failed, fixture_pack, hello_pack, hello_section, ok,
    packhost_cli,
};
use serde_json::json;

/// A shared library that is a fine ELF object but not a pack.
fn not_a_pack(dir: &Path) -> std::path::PathBuf {
    let source = dir.join("plain.c");
    std::fs::write(&source, "int plain(void) { return 1; }\n").unwrap();
    let library = dir.join("libplain.so");
    let status = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
        .expect("run cc");
    assert!(status.success());
    library
}

/// Every function of the repo's packs and the host's lists a title and all
/// four MCP hints, and they are the truth: `proj` only reads, code runs in
/// an open world, deleting is destructive.
#[tokio::test]
async fn every_function_of_the_repos_packs_says_what_it_does() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("integrations.db").display().to_string();
    let host = TestHost::start(&format!(
        "[packs.proj]\n[packs.exec_py]\n[packs.exec_ts]\n[packs.jupyter]\n\
         [packs.remote_mcp]\nconfig = {{ database = {database:?} }}\n"
    ))
    .await;
    let tools = host.client.list_all_tools().await.expect("tools/list");
    let hints = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).expect(name);
        let a = tool.annotations.clone().unwrap_or_default();
        [
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        ]
    };
    for pack in [
        "proj",
        "exec_py",
        "exec_ts",
        "jupyter",
        "remote_mcp",
        "packhost",
    ] {
        let prefix = format!("{pack}.");
        assert!(
            tools.iter().any(|t| t.name.starts_with(&prefix)),
            "no function of {pack}"
        );
    }
    // The host's own `packhost` functions say their hints but no titles yet.
    let unsaid: Vec<&str> = tools
        .iter()
        .filter(|t| {
            let untitled = t.title.is_none() && !t.name.starts_with("packhost.");
            untitled || hints(&t.name).contains(&None)
        })
        .map(|t| t.name.as_ref())
        .collect();
    assert!(unsaid.is_empty(), "without a title or a hint: {unsaid:?}");
    for tool in tools.iter().filter(|t| t.name.starts_with("proj.")) {
        assert_eq!(
            hints(&tool.name),
            [Some(true), Some(false), Some(true), Some(false)]
        );
    }
    for code in [
        "run",
        "exec_py.run",
        "exec_ts.execute",
        "jupyter.execute_code",
    ] {
        let [read_only, _, _, open_world] = hints(code);
        assert_eq!((read_only, open_world), (Some(false), Some(true)), "{code}");
    }
    assert_eq!(hints("exec_ts.session_delete")[1], Some(true));
}

#[tokio::test]
async fn a_pack_built_outside_the_workspace_is_served() {
    // The host binary was built before this pack existed; only the pack is built here.
    let host = TestHost::start(&format!(
        "[packs.hello]\npath = \"{}\"\n",
        hello_pack().display()
    ))
    .await;
    let result = host.run("hello.greet(name='stranger')").await;
    assert_eq!(ok(&result), json!({"text": "hello, stranger"}));
}

/// The last commit whose SDK knew nothing of prompts, resources or
/// questions to the client (issue #25 made them cross the ABI as JSON
/// under reserved names, leaving its types as they were).
const SDK_BEFORE_PROMPTS: &str = "183b727";

#[tokio::test]
async fn a_pack_built_with_the_sdk_before_prompts_and_questions_still_loads_and_works() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let old = tempfile::tempdir().unwrap();
    let archive = std::process::Command::new("git")
        .current_dir(repo)
        .args(["archive", SDK_BEFORE_PROMPTS])
        .output()
        .expect("run git");
    assert!(
        archive.status.success(),
        "this test needs the repository's history (commit {SDK_BEFORE_PROMPTS}): {}",
        String::from_utf8_lossy(&archive.stderr)
    );
    let mut tar = std::process::Command::new("tar")
        .args(["-x", "-C"])
        .arg(old.path())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("run tar");
    std::io::Write::write_all(tar.stdin.as_mut().unwrap(), &archive.stdout).unwrap();
    assert!(tar.wait().unwrap().success());
    // Its own library name, so it does not replace today's `libhello.so`
    // in the shared target dir.
    let manifest = old.path().join("tests/fixtures/hello-pack/Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("name = \"hello\"", "name = \"hello_before\""),
    )
    .unwrap();
    let built = cargo_outside("build", &manifest);
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let library = build_dir().join("libhello_before.so");

    let host = TestHost::start(&format!(
        "[packs.hello]\npath = \"{}\"\n[packs.proj]\n",
        library.display()
    ))
    .await;
    let result = host.run("hello.greet(name='old friend')").await;
    assert_eq!(ok(&result), json!({"text": "hello, old friend"}));
    // The host asks it for no prompt or resource it did not declare.
    let prompts = host.client.list_all_prompts().await.expect("prompts/list");
    assert!(
        prompts.iter().all(|p| !p.name.starts_with("hello")),
        "{prompts:?}"
    );
    let resources = host
        .client
        .list_all_resources()
        .await
        .expect("resources/list");
    assert!(resources.is_empty(), "{resources:?}");
}

#[tokio::test]
async fn broken_packs_are_reported_and_the_others_keep_working() {
    let dir = tempfile::TempDir::new().unwrap();
    let plain = not_a_pack(dir.path());
    let garbage = dir.path().join("libgarbage.so");
    std::fs::write(&garbage, "this is not an ELF file").unwrap();
    let wrong_abi = fixture_pack("wrong-abi-pack", "wrong_abi");
    let hello = hello_pack();
    let config = format!(
        r#"
[packs.hello]
path = "{hello}"

[packs.plain]
path = "{plain}"

[packs.garbage]
path = "{garbage}"

[packs.wrong]
path = "{wrong_abi}"

[packs.missing]
path = "{missing}"

[packs.twice]
path = "{hello}"

[packs.refusing]
path = "{refusing}"
config = {{ refuse = true }}

[packs.nowhere]
"#,
        hello = hello.display(),
        plain = plain.display(),
        garbage = garbage.display(),
        wrong_abi = wrong_abi.display(),
        missing = dir.path().join("libmissing.so").display(),
        // The same library under another file name still counts as loaded twice;
        // a copy is a separate file, so it reaches the constructor.
        refusing = copy(&hello, dir.path()).display(),
    );
    let output = packhost_cli(&config, &["check"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let line = |pack: &str| -> String {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("error pack `{pack}`")))
            .unwrap_or_else(|| panic!("no error line for `{pack}`:\n{stdout}"))
            .to_owned()
    };
    assert!(stdout.contains("ok    hello (12 functions)"), "{stdout}");
    assert!(
        line("plain").contains("libplain.so): not a packhost pack"),
        "{}",
        line("plain")
    );
    assert!(
        line("garbage").contains("cannot load the library"),
        "{}",
        line("garbage")
    );
    assert!(
        line("wrong").contains("ABI layout differs"),
        "{}",
        line("wrong")
    );
    assert!(
        line("wrong").contains("Expected: pack-api Found: wrong-abi-pack"),
        "{}",
        line("wrong")
    );
    assert!(
        line("wrong").contains("libwrong_abi.so"),
        "{}",
        line("wrong")
    );
    assert!(
        line("missing").contains("file not found"),
        "{}",
        line("missing")
    );
    assert!(
        line("twice").contains("already loaded as pack `hello`"),
        "{}",
        line("twice")
    );
    assert!(
        line("refusing").contains("constructor failed"),
        "{}",
        line("refusing")
    );
    assert!(
        line("refusing").contains("refuses to start"),
        "{}",
        line("refusing")
    );
    assert!(
        line("nowhere").contains("`libnowhere.so` not found in the pack directories"),
        "{}",
        line("nowhere")
    );
    assert!(stdout.contains("7 pack(s) failed to load"), "{stdout}");
    // A layout report runs to thousands of lines; the user sees its head
    // (and the sandbox report's five lines).
    assert!(
        stdout.lines().count() < 20,
        "check output is too long:\n{stdout}"
    );

    // `serve` starts anyway and serves the pack that loaded.
    let host = TestHost::start(&config).await;
    let result = host.run("hello.greet(name='survivor')").await;
    assert_eq!(ok(&result)["text"], "hello, survivor");
    let log = host.stderr();
    for pack in [
        "plain", "garbage", "wrong", "missing", "twice", "refusing", "nowhere",
    ] {
        assert!(
            log.contains(&format!("pack `{pack}`")),
            "no log line for {pack}:\n{log}"
        );
    }
}

fn copy(library: &Path, dir: &Path) -> std::path::PathBuf {
    let target = dir.join("librefusing.so");
    std::fs::copy(library, &target).unwrap();
    target
}

/// A second start on the same library and config lists the pack from the
/// catalog cache and loads it in the background. When that load fails (here
/// the constructor refuses because of a file outside the config), its calls
/// answer why, the log says it as a start would, and the start after that
/// loads the pack before serving, so it is not listed.
#[tokio::test]
async fn a_pack_listed_from_the_catalog_cache_that_then_fails_to_load_answers_why() {
    let dir = tempfile::TempDir::new().unwrap();
    let flag = dir.path().join("refuse");
    let section = hello_section(&format!(
        "config = {{ refuse_if = {:?} }}",
        flag.display().to_string()
    ));
    std::fs::write(dir.path().join("packs.toml"), section).unwrap();
    let host = TestHost::start_in(dir).await;
    let result = host.run("hello.greet(name='first')").await;
    assert_eq!(ok(&result)["text"], "hello, first");

    let TestHost { client, dir, .. } = host;
    client.cancel().await.unwrap();
    std::fs::write(&flag, "").unwrap();
    let host = TestHost::start_in(dir).await;
    let tools = host.client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "hello.greet"), "{tools:?}");
    let result = host.run("hello.greet(name='second')").await;
    failed(
        &result,
        "PACK_CONSTRUCTOR_FAILED",
        &["pack `hello`", "refuses to start"],
    );
    assert!(
        host.stderr().contains("refuses to start"),
        "{}",
        host.stderr()
    );

    let TestHost { client, dir, .. } = host;
    client.cancel().await.unwrap();
    let host = TestHost::start_in(dir).await;
    let tools = host.client.list_all_tools().await.expect("tools/list");
    assert!(
        tools.iter().all(|t| !t.name.starts_with("hello.")),
        "{tools:?}"
    );
    assert!(
        host.stderr().contains("refuses to start"),
        "{}",
        host.stderr()
    );
}
