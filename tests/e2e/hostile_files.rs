//! What sandboxed code leaves behind is hostile input to the host (#23).
//! The packs run with the host's rights outside the sandbox, so every file
//! code can write — a notebook session's folder and what is in it, a folder
//! it can rename — is tried here as an attacker would, through the real
//! binary over HTTP with two organisations. The host's HOME is a fake one
//! holding a fake key that must never appear, and nothing may be written
//! outside the attacker's own session folder.

use std::path::{Path, PathBuf};

use packhost_tests::{Recorder, error_code, http::HttpHost, is_error, ok, text};
use rmcp::{RoleClient, model::CallToolResult, service::RunningService};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::http::{call, token};

type Client = RunningService<RoleClient, Recorder>;

/// The fake key's content: in no answer, ever.
const MARKER: &str = "PACKHOST-FAKE-PRIVATE-KEY-7f3a9c";

/// A host whose HOME is a fake one, with ada of `acme` and eve of `evil`.
struct Attack {
    host: HttpHost,
    ada: Client,
    eve: Client,
    home: TempDir,
}

impl Attack {
    /// `config` may name `{home}` and `{notebooks}`.
    async fn start(config: &str) -> Self {
        let home = TempDir::new().unwrap();
        std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join(".ssh/id_ed25519"), MARKER).unwrap();
        let notebooks = home.path().join(".packhost/notebooks");
        let config = config
            .replace("{home}", &home.path().display().to_string())
            .replace("{notebooks}", &notebooks.display().to_string());
        let (ada, ada_entry) = token("ada", "acme", &[]);
        let (eve, eve_entry) = token("eve", "evil", &[]);
        let dir = TempDir::new().unwrap();
        std::fs::write(
            dir.path().join("packs.toml"),
            format!("{config}\n{ada_entry}\n{eve_entry}\n"),
        )
        .unwrap();
        let home_var = home.path().display().to_string();
        let host = HttpHost::start_in(dir, &[], &[("HOME", &home_var)]).await;
        Self {
            ada: host.client(Some(&ada)).await.expect("connect"),
            eve: host.client(Some(&eve)).await.expect("connect"),
            host,
            home,
        }
    }

    fn notebooks(&self) -> PathBuf {
        self.home.path().join(".packhost/notebooks")
    }

    /// The fake HOME holds what it held, and nothing else but the
    /// notebooks' own folder and the host's catalog cache.
    fn home_untouched(&self) {
        let mut top: Vec<String> = std::fs::read_dir(self.home.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        top.retain(|name| name != ".packhost" && name != ".cache");
        assert_eq!(top, [".ssh"], "the host's HOME gained files");
        let cache = self.home.path().join(".cache");
        if cache.exists() {
            let names = |dir: &Path| -> Vec<String> {
                let entries = std::fs::read_dir(dir).unwrap();
                entries
                    .map(|e| e.unwrap().file_name().into_string().unwrap())
                    .collect()
            };
            assert_eq!(
                names(&cache),
                ["packhost"],
                "the host's HOME/.cache gained files"
            );
            let packhost = cache.join("packhost");
            assert_eq!(
                names(&packhost),
                ["catalogs"],
                "HOME/.cache/packhost gained files"
            );
            for entry in std::fs::read_dir(packhost.join("catalogs")).unwrap() {
                let kind = entry.unwrap().file_type().unwrap();
                assert!(kind.is_file(), "the catalog cache holds only its own files");
            }
        }
        let ssh: Vec<_> = std::fs::read_dir(self.home.path().join(".ssh"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(ssh, ["id_ed25519"]);
        assert_eq!(
            std::fs::read_to_string(self.home.path().join(".ssh/id_ed25519")).unwrap(),
            MARKER
        );
        // Only exec_ts's notebooks, where it is configured.
        if let Ok(entries) = std::fs::read_dir(self.home.path().join(".packhost")) {
            let names: Vec<_> = entries.map(|e| e.unwrap().file_name()).collect();
            assert_eq!(names, ["notebooks"]);
        }
    }
}

fn exec_ts_config() -> String {
    "[packs.exec_ts]\ntimeout_ms = 600000\nconfig = { notebooks_dir = \"{notebooks}\", pool_size = 0 }\n"
        .to_owned()
}

/// The answer, checked to hold no trace of the fake key.
#[track_caller]
fn clean(result: CallToolResult) -> CallToolResult {
    let all = serde_json::to_string(&result).unwrap();
    assert!(!all.contains(MARKER), "the host's key leaked: {all}");
    result
}

async fn call_clean(client: &Client, name: &str, args: Value) -> CallToolResult {
    clean(call(client, name, args).await)
}

fn id(value: &Value, key: &str) -> String {
    value[key].as_str().expect(key).to_owned()
}

/// A new cell `filename` of `source` in `session`, run once: its id and
/// what the run answered.
async fn run_new_cell(
    client: &Client,
    session: &str,
    filename: &str,
    source: &str,
) -> (String, CallToolResult) {
    let created = ok(&call_clean(
        client,
        "exec_ts.cell_create",
        json!({"sessionId": session, "filename": filename, "source": source}),
    )
    .await);
    let cell = id(&created, "cellId");
    let ran = call_clean(
        client,
        "exec_ts.cell_execute",
        json!({"sessionId": session, "cellId": cell}),
    )
    .await;
    (cell, ran)
}

/// A cell that rewrites its session's `session.json` (as the host wrote it
/// before #23, or from nothing) to name `target` as its id and a cell
/// `cpwn` of file `x.js`.
fn rewrite_cell(target: &str, home: &str) -> String {
    format!(
        r#"import fs from 'node:fs';
let meta = {{ owner: {{ org: 'evil', user: 'eve' }}, title: 'x', language: 'typescript', cells: [] }};
try {{ meta = JSON.parse(fs.readFileSync('./session.json', 'utf8')); }} catch {{}}
meta.id = {target:?};
meta.cells = [{{ id: 'cpwn', type: 'code', filename: 'x.js' }}];
fs.writeFileSync('./session.json', JSON.stringify(meta));
try {{ fs.symlinkSync({home:?}, './escape'); }} catch {{}}
console.log('rewritten');
"#
    )
}

/// What the stolen cell would run: the host's key, read from where the
/// session's folder would be if the host obeyed the rewritten file.
const STEAL: &str = "import fs from 'node:fs';\
    for (const p of ['.ssh/id_ed25519', '../.ssh/id_ed25519', '../../.ssh/id_ed25519']) \
    { try { console.log(fs.readFileSync(p, 'utf8')); } catch {} }\
    try { fs.writeFileSync('pwned.txt', 'x'); } catch {}";

#[tokio::test]
async fn a_rewritten_session_file_steers_the_host_nowhere() {
    let a = Attack::start(&exec_ts_config()).await;
    // Ada (acme) has a session with a cell; eve (evil) attacks.
    let theirs = ok(&call_clean(&a.ada, "exec_ts.session_create", json!({"title": "acme"})).await);
    let theirs = id(&theirs, "sessionId");
    let their_cell = ok(&call_clean(
        &a.ada,
        "exec_ts.cell_create",
        json!({"sessionId": theirs, "filename": "books.ts", "source": "console.log('acme-ledger')"}),
    )
    .await);
    let their_cell = id(&their_cell, "cellId");
    let mine = ok(&call_clean(&a.eve, "exec_ts.session_create", json!({"title": "x"})).await);
    let mine = id(&mine, "sessionId");
    let home = a.home.path().display().to_string();
    let targets = [
        "../..".to_owned(),
        home.clone(),
        format!("{mine}/escape"),
        theirs.clone(),
    ];
    for (n, target) in targets.iter().enumerate() {
        let name = format!("rewrite-{n}.ts");
        let (_, ran) = run_new_cell(&a.eve, &mine, &name, &rewrite_cell(target, &home)).await;
        assert!(text(&ran).contains("rewritten"), "{target}: {}", text(&ran));
        // The host follows its own table: there is no cell `cpwn`.
        for (function, args) in [
            (
                "exec_ts.cell_update",
                json!({"sessionId": mine, "cellId": "cpwn", "source": STEAL}),
            ),
            (
                "exec_ts.cell_execute",
                json!({"sessionId": mine, "cellId": "cpwn"}),
            ),
        ] {
            let refused = call_clean(&a.eve, function, args).await;
            assert!(
                is_error(&refused),
                "{target}: {function}: {}",
                text(&refused)
            );
            assert_eq!(
                error_code(&refused),
                "CELL_NOT_FOUND",
                "{target}: {}",
                text(&refused)
            );
        }
        // Eve's own session is hers, as she made it; ada's is not in it.
        let listed = ok(&call_clean(&a.eve, "exec_ts.cell_list", json!({"sessionId": mine})).await);
        let listed = listed.to_string();
        assert!(
            !listed.contains("acme-ledger") && !listed.contains(&their_cell),
            "{listed}"
        );
        let exported =
            ok(&call_clean(&a.eve, "exec_ts.session_export", json!({"sessionId": mine})).await);
        assert!(!exported.to_string().contains("acme-ledger"), "{exported}");
        let sessions = ok(&call_clean(&a.eve, "exec_ts.session_list", json!({})).await);
        assert_eq!(
            sessions["sessions"].as_array().unwrap().len(),
            1,
            "{sessions}"
        );
        assert_eq!(sessions["sessions"][0]["sessionId"], mine.as_str());
    }
    a.home_untouched();
    assert!(!a.notebooks().join(&theirs).join("src/x.js").exists());
    // Ada's session as she left it.
    let cells = ok(&call_clean(&a.ada, "exec_ts.cell_list", json!({"sessionId": theirs})).await);
    assert_eq!(cells["cells"].as_array().unwrap().len(), 1, "{cells}");
    assert_eq!(cells["cells"][0]["source"], "console.log('acme-ledger')");
    let out = ok(&call_clean(
        &a.ada,
        "exec_ts.cell_execute",
        json!({"sessionId": theirs, "cellId": their_cell}),
    )
    .await);
    assert_eq!(out["stdout"], "acme-ledger\n");
}

#[tokio::test]
async fn a_crafted_export_is_refused_before_anything_is_written() {
    let a = Attack::start(&exec_ts_config()).await;
    for filename in ["../../x.ts", "../escape.ts", ".hidden.ts", "a/b.ts", "x.sh"] {
        let markdown = format!(
            "<!-- srcbook:{{\"language\":\"typescript\"}} -->\n\n# t\n\n###### {filename}\n\n```typescript\nconsole.log(1)\n```\n"
        );
        let refused = call_clean(
            &a.eve,
            "exec_ts.session_import",
            json!({"markdown": markdown}),
        )
        .await;
        assert_eq!(
            error_code(&refused),
            "INVALID_ARGUMENT",
            "{filename}: {}",
            text(&refused)
        );
    }
    let sessions = ok(&call_clean(&a.eve, "exec_ts.session_list", json!({})).await);
    assert_eq!(sessions["sessions"], json!([]), "{sessions}");
    // An import's package.json is data in the session's own folder: a link
    // is no more followed there than anywhere else.
    let markdown = "<!-- srcbook:{\"language\":\"typescript\"} -->\n\n# t\n\n###### package.json\n\n```json\n{\"type\": \"module\", \"name\": \"../../etc\"}\n```\n";
    let imported = ok(&call_clean(
        &a.eve,
        "exec_ts.session_import",
        json!({"markdown": markdown}),
    )
    .await);
    let session = id(&imported, "sessionId");
    assert_eq!(
        PathBuf::from(id(&imported, "dir")),
        a.notebooks().join(&session)
    );
    a.home_untouched();
}

#[tokio::test]
async fn links_code_leaves_in_its_session_are_never_followed() {
    let a = Attack::start(&exec_ts_config()).await;
    let session = ok(&call_clean(&a.eve, "exec_ts.session_create", json!({})).await);
    let session = id(&session, "sessionId");
    let other = ok(&call_clean(
        &a.eve,
        "exec_ts.cell_create",
        json!({"sessionId": session, "filename": "other.ts", "source": "console.log(1)"}),
    )
    .await);
    let other = id(&other, "cellId");
    let key = a.home.path().join(".ssh/id_ed25519");
    let ssh = a.home.path().join(".ssh");
    let plant = format!(
        "import fs from 'node:fs';\n\
         for (const [target, link] of [[{key:?}, 'package.json'], [{key:?}, 'src/other.ts'], [{ssh:?}, '.packhost'], [{key:?}, {export:?}]]) {{\n\
           fs.rmSync(link, {{ recursive: true, force: true }});\n\
           fs.symlinkSync(target, link);\n\
         }}\n\
         console.log('planted');\n",
        key = key.display().to_string(),
        ssh = ssh.display().to_string(),
        export = format!("{session}.src.md"),
    );
    let (cell, ran) = run_new_cell(&a.eve, &session, "plant.ts", &plant).await;
    assert!(text(&ran).contains("planted"), "{}", text(&ran));
    // Each function that reads or writes the session refuses the link.
    for (function, args) in [
        ("exec_ts.cell_list", json!({"sessionId": session})),
        ("exec_ts.session_export", json!({"sessionId": session})),
        (
            "exec_ts.cell_execute",
            json!({"sessionId": session, "cellId": cell}),
        ),
        (
            "exec_ts.cell_update",
            json!({"sessionId": session, "cellId": other, "source": "overwritten"}),
        ),
        (
            "exec_ts.cell_create",
            json!({"sessionId": session, "filename": "new.ts", "source": "x"}),
        ),
        ("exec_ts.npm_install", json!({"sessionId": session})),
    ] {
        call_clean(&a.eve, function, args).await;
    }
    a.home_untouched();
    // Deleting the session removes the links, not what they point to.
    ok(&call_clean(
        &a.eve,
        "exec_ts.session_delete",
        json!({"sessionId": session}),
    )
    .await);
    a.home_untouched();
    assert!(!a.notebooks().join(&session).exists());
    let _ = &a.host;
}

/// Swaps `a` and `b` (a folder and a link to the host's HOME) again and
/// again with `renameat2(RENAME_EXCHANGE)`, as code that may write the
/// folder can, until dropped.
struct Swapper {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Swapper {
    fn start(a: &Path, b: &Path) -> Self {
        use std::{ffi::CString, os::unix::ffi::OsStrExt, sync::atomic::Ordering};
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (a, b) = (
            CString::new(a.as_os_str().as_bytes()).unwrap(),
            CString::new(b.as_os_str().as_bytes()).unwrap(),
        );
        let flag = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut swaps = 0;
            while !flag.load(Ordering::Relaxed) {
                // SAFETY: renameat2 reads the two names.
                let done = unsafe {
                    libc::renameat2(
                        libc::AT_FDCWD,
                        a.as_ptr(),
                        libc::AT_FDCWD,
                        b.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                assert_eq!(done, 0, "{}", std::io::Error::last_os_error());
                swaps += 1;
            }
            swaps
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }

    fn stop(mut self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

/// The swap race of #23 against every function that takes a path code can
/// rename: `W` is a project, the `cwd` root of both code packs (writable)
/// and where local npm packages come from; `W/d` (a folder) and `W/l` (a
/// link to the host's HOME) trade places all the while.
#[tokio::test]
async fn a_folder_swapped_with_a_link_to_home_never_leads_there() {
    let work = TempDir::new().unwrap();
    let w = work.path().display().to_string();
    let config = format!(
        "[projects]\nwork = {w:?}\n\
         [packs.proj]\n\
         [packs.exec_py]\ntimeout_ms = 600000\nconfig = {{ cwd_roots = [{w:?}], cwd_writable = true, pool_size = 0 }}\n\
         [packs.exec_ts]\ntimeout_ms = 600000\nconfig = {{ notebooks_dir = \"{{notebooks}}\", cwd_roots = [{w:?}], cwd_writable = true, pool_size = 0 }}\n"
    );
    let a = Attack::start(&config).await;
    // HOME looks like the folder and like a package, so a leak would show:
    // its entries HOME_ONLY never appear, nor the key's content.
    let home_only = ["package.json", "leak.txt", ".ssh/HOME_ONLY"];
    std::fs::write(
        a.home.path().join("package.json"),
        r#"{"name": "d", "version": "1.0.0", "description": "HOME_ONLY"}"#,
    )
    .unwrap();
    std::fs::write(a.home.path().join("leak.txt"), MARKER).unwrap();
    std::fs::write(a.home.path().join(".ssh/HOME_ONLY"), "").unwrap();
    let d = work.path().join("d");
    std::fs::create_dir_all(d.join(".ssh")).unwrap();
    std::fs::write(d.join(".ssh/inside.txt"), "inside").unwrap();
    std::fs::write(
        d.join("package.json"),
        r#"{"name": "d", "version": "1.0.0"}"#,
    )
    .unwrap();
    std::os::unix::fs::symlink(a.home.path(), work.path().join("l")).unwrap();
    let session = ok(&call_clean(&a.eve, "exec_ts.session_create", json!({})).await);
    let session = id(&session, "sessionId");
    let dir = d.display().to_string();
    let tries: usize = std::env::var("PACKHOST_SWAP_TRIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let calls: Vec<(&str, Value)> = vec![
        (
            "proj.read",
            json!({"name": "work", "path": "d/.ssh/id_ed25519"}),
        ),
        ("proj.ls", json!({"name": "work", "path": "d/.ssh"})),
        (
            "proj.grep",
            json!({"name": "work", "pattern": "FAKE-PRIVATE|HOME_ONLY"}),
        ),
        (
            "exec_py.run",
            json!({"cwd": dir, "code": "import os\nprint(open('.ssh/id_ed25519').read() if os.path.exists('.ssh/id_ed25519') else '', os.listdir('.ssh'))"}),
        ),
        (
            "exec_ts.execute",
            json!({"cwd": dir, "language": "javascript", "code": "const fs = await import('node:fs'); try { console.log(fs.readFileSync('.ssh/id_ed25519', 'utf8')) } catch {} console.log(fs.readdirSync('.ssh'))"}),
        ),
    ];
    let swapper = Swapper::start(&d, &work.path().join("l"));
    let mut answered = 0;
    for (function, args) in &calls {
        for _ in 0..tries {
            let result = call_clean(&a.eve, function, args.clone()).await;
            // Whichever way the race went, HOME's own entries never show.
            let all = serde_json::to_string(&result).unwrap();
            assert!(!all.contains("HOME_ONLY"), "{function}: {all}");
            answered += usize::from(!is_error(&result));
        }
    }
    // A local package: npm copies it into the session; a leak would copy
    // HOME (and its key) instead.
    for _ in 0..tries {
        call_clean(
            &a.eve,
            "exec_ts.npm_install",
            json!({"sessionId": session, "packages": [dir]}),
        )
        .await;
    }
    let swaps = swapper.stop();
    assert!(swaps > 100, "the swapper hardly ran ({swaps} swaps)");
    assert!(
        answered > 0,
        "every call was refused: the race was never run through"
    );
    let installed = a.notebooks().join(&session).join("node_modules");
    for entry in walk(&installed) {
        assert!(
            !entry.to_string_lossy().contains("HOME_ONLY"),
            "{}",
            entry.display()
        );
        let content = std::fs::read(&entry).unwrap_or_default();
        assert!(
            ![MARKER, "HOME_ONLY"]
                .iter()
                .any(|leak| String::from_utf8_lossy(&content).contains(leak)),
            "npm copied the host's key into {}",
            entry.display()
        );
    }
    // Put back as it was for the HOME check (the swapper stopped anywhere).
    if std::fs::symlink_metadata(&d)
        .unwrap()
        .file_type()
        .is_symlink()
    {
        std::fs::rename(&d, work.path().join("tmp")).unwrap();
        std::fs::rename(work.path().join("l"), &d).unwrap();
    }
    for planted in home_only {
        std::fs::remove_file(a.home.path().join(planted)).unwrap();
    }
    a.home_untouched();
}

/// Every file under `dir`, following no link.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files
}

/// What code leaves in its own folder when the call or kernel ends: links
/// to HOME and a tree deeper than anything should be. The pack removes the
/// folder following no link.
const LITTER: &str = "import os\n\
    home = os.environ['PACKHOST_FAKE_HOME']\n\
    os.symlink(home, 'home')\n\
    os.symlink(home + '/.ssh/id_ed25519', 'key')\n\
    os.makedirs('/'.join(['d'] * 150))\n\
    os.symlink(home, '/'.join(['d'] * 150) + '/deep-home')\n\
    print('littered')";

#[tokio::test]
async fn a_call_folder_full_of_links_is_removed_without_following_them() {
    let config = "[packs.exec_py]\ntimeout_ms = 600000\nconfig = { pool_size = 0 }\n";
    let a = Attack::start(config).await;
    let code = LITTER.replace(
        "os.environ['PACKHOST_FAKE_HOME']",
        &format!("{:?}", a.home.path().display().to_string()),
    );
    let out = ok(&call_clean(&a.eve, "exec_py.run", json!({"code": code})).await);
    assert!(
        out["stdout"].as_str().unwrap().contains("littered"),
        "{out}"
    );
    a.home_untouched();
}

#[tokio::test]
async fn a_kernel_that_rewrites_its_connection_file_and_log_steers_nothing() {
    let python = packhost_tests::venv_python();
    let config =
        format!("[packs.jupyter]\ntimeout_ms = 600000\nconfig = {{ python = {python:?} }}\n");
    let a = Attack::start(&config).await;
    let session = ok(&call_clean(&a.eve, "jupyter.session_create", json!({})).await);
    let session = id(&session, "session_id");
    let home = a.home.path().display().to_string();
    // The kernel's folder is its working folder: the host wrote its
    // connection file and reads its stderr there.
    let code = format!(
        "import json, os\n\
         info = json.load(open('connection.json'))\n\
         info.update(shell_port=1, iopub_port=2, key='forged')\n\
         json.dump(info, open('connection.json', 'w'))\n\
         os.remove('stderr.log')\n\
         os.symlink({home:?} + '/.ssh/id_ed25519', 'stderr.log')\n\
         print('rewritten')"
    );
    let out = ok(&call_clean(
        &a.eve,
        "jupyter.execute_code",
        json!({"session_id": session, "code": code}),
    )
    .await);
    assert_eq!(out["stdout"], "rewritten\n", "{out}");
    // The host keeps the ports and key it chose: the kernel still answers.
    let out = ok(&call_clean(
        &a.eve,
        "jupyter.execute_code",
        json!({"session_id": session, "code": "1 + 1"}),
    )
    .await);
    assert_eq!(out["result"], "2", "{out}");
    // A crash, a restart and a close read nothing through the planted link.
    call_clean(
        &a.eve,
        "jupyter.execute_code",
        json!({"session_id": session, "code": "import os; os._exit(1)"}),
    )
    .await;
    call_clean(&a.eve, "jupyter.restart", json!({"session_id": session})).await;
    let litter = LITTER.replace("os.environ['PACKHOST_FAKE_HOME']", &format!("{home:?}"));
    call_clean(
        &a.eve,
        "jupyter.execute_code",
        json!({"session_id": session, "code": litter}),
    )
    .await;
    call_clean(
        &a.eve,
        "jupyter.session_close",
        json!({"session_id": session}),
    )
    .await;
    a.home_untouched();
}

/// What an `npm_install` leaves: a package whose install script (allowed to
/// run) rewrites the session's files and plants links where the host reads.
#[tokio::test]
async fn what_an_install_script_leaves_steers_the_host_nowhere() {
    let packages = TempDir::new().unwrap();
    let dir = packages.path().join("planter");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("package.json"),
        json!({"name": "planter", "version": "1.0.0", "scripts": {"postinstall": "node plant.js"}})
            .to_string(),
    )
    .unwrap();
    let config = format!(
        "[packs.exec_ts]\ntimeout_ms = 600000\nconfig = {{ notebooks_dir = \"{{notebooks}}\", pool_size = 0, \
         cwd_roots = [{:?}], npm_scripts_allow = [\"planter\"] }}\n",
        packages.path().display().to_string()
    );
    let a = Attack::start(&config).await;
    let key = a.home.path().join(".ssh/id_ed25519").display().to_string();
    // npm runs the script in node_modules/planter: the session is two up.
    std::fs::write(
        dir.join("plant.js"),
        format!(
            "const fs = require('node:fs');\n\
             fs.writeFileSync('../../session.json', JSON.stringify({{ id: '../..', title: 'x', language: 'typescript',\n\
               owner: {{ org: 'acme', user: 'ada' }}, cells: [{{ id: 'cpwn', type: 'code', filename: 'x.js' }}] }}));\n\
             for (const link of ['../../src/mine.ts', '../../package.json']) {{ fs.rmSync(link, {{ force: true }}); fs.symlinkSync({key:?}, link); }}\n\
             fs.writeFileSync('planted', 'yes');\n"
        ),
    )
    .unwrap();
    let session = ok(&call_clean(&a.eve, "exec_ts.session_create", json!({})).await);
    let session = id(&session, "sessionId");
    let mine = ok(&call_clean(
        &a.eve,
        "exec_ts.cell_create",
        json!({"sessionId": session, "filename": "mine.ts", "source": "console.log(1)"}),
    )
    .await);
    let mine = id(&mine, "cellId");
    ok(&call_clean(
        &a.eve,
        "exec_ts.npm_install",
        json!({"sessionId": session, "packages": [dir.display().to_string()]}),
    )
    .await);
    let installed = a
        .notebooks()
        .join(&session)
        .join("node_modules/planter/planted");
    assert!(installed.exists(), "the install script did not run");
    let refused = call_clean(
        &a.eve,
        "exec_ts.cell_update",
        json!({"sessionId": session, "cellId": "cpwn", "source": STEAL}),
    )
    .await;
    assert_eq!(error_code(&refused), "CELL_NOT_FOUND", "{}", text(&refused));
    for (function, args) in [
        ("exec_ts.cell_list", json!({"sessionId": session})),
        ("exec_ts.session_export", json!({"sessionId": session})),
        (
            "exec_ts.cell_execute",
            json!({"sessionId": session, "cellId": mine}),
        ),
        ("exec_ts.session_list", json!({})),
    ] {
        call_clean(&a.eve, function, args).await;
    }
    // Ada of acme, named as owner in the planted file, sees nothing of it.
    let listed = ok(&call_clean(&a.ada, "exec_ts.session_list", json!({})).await);
    assert_eq!(listed["sessions"], json!([]), "{listed}");
    a.home_untouched();
}
