//! The `proj` pack through the real host: project listing, path confinement,
//! reading, listing and searching files, and its errors.

use std::{
    os::unix::fs::symlink,
    path::{Path, PathBuf},
};

use packhost_tests::{TestHost, failed, ok};
use serde_json::{Value, json};
use tempfile::TempDir;

const A_TXT: &str = "alpha\nbeta\ngamma\ndelta\nepsilon\n";
const LIB_RS: &str = "pub fn needle() {}\n\nfn helper() {\n    needle();\n}\n";
const UTIL_PY: &str = "def needle():\n    pass\n";
const GITIGNORE: &str = "ignored.txt\nbuild/\n";
const IGNORED_TXT: &str = "needle in an ignored file\n";
const DATA_BIN: &[u8] = b"needle\0\x01\x02binary";

/// A project tree and, beside it, a directory it must not reach.
struct Tree {
    /// Holds `root/` and `outside/` side by side.
    base: TempDir,
}

impl Tree {
    fn new() -> Self {
        let base = TempDir::new().unwrap();
        let root = base.path().join("root");
        let outside = base.path().join("outside");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("build")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("a.txt"), A_TXT).unwrap();
        std::fs::write(root.join("src/lib.rs"), LIB_RS).unwrap();
        std::fs::write(root.join("src/util.py"), UTIL_PY).unwrap();
        std::fs::write(root.join(".gitignore"), GITIGNORE).unwrap();
        std::fs::write(root.join("ignored.txt"), IGNORED_TXT).unwrap();
        std::fs::write(root.join("build/out.rs"), "fn needle_built() {}\n").unwrap();
        std::fs::write(root.join("data.bin"), DATA_BIN).unwrap();
        std::fs::write(outside.join("secret.txt"), "needle secret\n").unwrap();
        // A relative symlink to the sibling directory, and one to /etc.
        symlink("../outside", root.join("escape")).unwrap();
        symlink("/etc", root.join("etc")).unwrap();
        Self { base }
    }

    fn root(&self) -> PathBuf {
        self.base.path().join("root")
    }

    fn config(&self) -> String {
        format!(
            "[packs.proj]\n\n[projects]\ndemo = {}\nmissing = {}\n",
            toml_path(&self.root()),
            toml_path(&self.base.path().join("not-there")),
        )
    }

    async fn host(&self) -> TestHost {
        TestHost::start(&self.config()).await
    }
}

fn toml_path(path: &Path) -> String {
    format!("{:?}", path.display().to_string())
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

#[tokio::test]
async fn list_names_projects_with_absolute_paths_and_existence() {
    let tree = Tree::new();
    let host = tree.host().await;
    let list = ok(&host.call("proj.list", json!({})).await);
    assert_eq!(
        list,
        json!({"projects": [
            {"name": "demo", "path": shown(&tree.root()), "exists": true},
            {"name": "missing", "path": shown(&tree.base.path().join("not-there")), "exists": false},
        ]})
    );
    // The same through `run`.
    assert_eq!(ok(&host.run("proj.list()").await), list);
}

#[tokio::test]
async fn path_joins_inside_the_root_and_refuses_every_way_out() {
    let tree = Tree::new();
    let host = tree.host().await;
    let result = host
        .call("proj.path", json!({"name": "demo", "sub": "src/new.rs"}))
        .await;
    assert_eq!(
        ok(&result),
        json!({"project": "demo", "path": shown(&tree.root().join("src/new.rs"))})
    );
    let result = host.call("proj.path", json!({"name": "demo"})).await;
    assert_eq!(ok(&result)["path"], shown(&tree.root()));

    let result = host
        .call(
            "proj.path",
            json!({"name": "demo", "sub": "src/../../outside"}),
        )
        .await;
    failed(
        &result,
        "ACCESS_DENIED",
        &["`src/../../outside`", "contains `..`"],
    );
    // Even a `..` that would stay inside is refused.
    let result = host
        .call("proj.path", json!({"name": "demo", "sub": "src/../a.txt"}))
        .await;
    failed(&result, "ACCESS_DENIED", &["contains `..`"]);
    let result = host
        .call("proj.path", json!({"name": "demo", "sub": "/etc/passwd"}))
        .await;
    failed(&result, "ACCESS_DENIED", &["`/etc/passwd`", "is absolute"]);
    for sub in [
        "escape",
        "escape/secret.txt",
        "escape/not-yet.txt",
        "etc/passwd",
    ] {
        let result = host
            .call("proj.path", json!({"name": "demo", "sub": sub}))
            .await;
        failed(
            &result,
            "ACCESS_DENIED",
            &[
                &format!("path `{sub}` leads through a symlink"),
                "outside the project root",
            ],
        );
    }
}

#[tokio::test]
async fn read_returns_lines_and_pages() {
    let tree = Tree::new();
    let host = tree.host().await;
    let result = host
        .call("proj.read", json!({"name": "demo", "path": "a.txt"}))
        .await;
    assert_eq!(
        ok(&result),
        json!({
            "project": "demo",
            "path": "a.txt",
            "content": A_TXT,
            "offset": 0,
            "lines": 5,
            "total_lines": 5,
            "truncated": false
        })
    );
    let result = host
        .call(
            "proj.read",
            json!({"name": "demo", "path": "a.txt", "offset": 1, "limit": 2}),
        )
        .await;
    let page = ok(&result);
    assert_eq!(page["content"], "beta\ngamma\n");
    assert_eq!(
        (&page["offset"], &page["lines"], &page["total_lines"]),
        (&json!(1), &json!(2), &json!(5))
    );
    assert_eq!(page["truncated"], true);
    // The last page is not truncated.
    let result = host
        .call(
            "proj.read",
            json!({"name": "demo", "path": "a.txt", "offset": 3, "limit": 2}),
        )
        .await;
    let page = ok(&result);
    assert_eq!(page["content"], "delta\nepsilon\n");
    assert_eq!(page["truncated"], false);
    // Positional and keyword arguments through `run`.
    let page = ok(&host
        .run("proj.read('demo', 'src/lib.rs', 3, limit=1)")
        .await);
    assert_eq!(page["content"], "    needle();\n");
    assert_eq!(page["path"], "src/lib.rs");
}

#[tokio::test]
async fn read_refuses_directories_binaries_missing_files_and_escapes() {
    let tree = Tree::new();
    let host = tree.host().await;
    let read = |path: &str| json!({"name": "demo", "path": path});
    let result = host.call("proj.read", read("src")).await;
    failed(
        &result,
        "INVALID_ARGUMENT",
        &["`src` is a directory", "use `proj.ls`"],
    );
    let result = host.call("proj.read", read("data.bin")).await;
    failed(
        &result,
        "INVALID_ARGUMENT",
        &["`data.bin` is not a UTF-8 text file", "NUL bytes"],
    );
    let result = host.call("proj.read", read("src/nope.rs")).await;
    failed(
        &result,
        "NOT_FOUND",
        &["`src/nope.rs` does not exist in project `demo`"],
    );
    let result = host.call("proj.read", read("escape/secret.txt")).await;
    failed(&result, "ACCESS_DENIED", &["outside the project root"]);
    let result = host.call("proj.read", read("../outside/secret.txt")).await;
    failed(&result, "ACCESS_DENIED", &["contains `..`"]);
    // The schema says at least one line; the host checks it before the pack runs.
    let result = host
        .call(
            "proj.read",
            json!({"name": "demo", "path": "a.txt", "limit": 0}),
        )
        .await;
    failed(
        &result,
        "INVALID_ARGUMENT",
        &["`limit`", "proj.read(name: string"],
    );
}

#[tokio::test]
async fn ls_lists_entries_with_kinds_directories_first() {
    let tree = Tree::new();
    let host = tree.host().await;
    let result = ok(&host.call("proj.ls", json!({"name": "demo"})).await);
    let entries: Vec<(String, String, u64)> = result["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["kind"].as_str().unwrap().to_owned(),
                e["size"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(String, String, u64)> = [
        ("build", "dir", 0),
        ("src", "dir", 0),
        (".gitignore", "file", GITIGNORE.len() as u64),
        ("a.txt", "file", A_TXT.len() as u64),
        ("data.bin", "file", DATA_BIN.len() as u64),
        ("escape", "symlink", 0),
        ("etc", "symlink", 0),
        ("ignored.txt", "file", IGNORED_TXT.len() as u64),
    ]
    .into_iter()
    .map(|(n, k, s)| (n.to_owned(), k.to_owned(), s))
    .collect();
    assert_eq!(entries, expected);
    assert_eq!(result["path"], "");
    assert_eq!(result["truncated"], false);

    let result = ok(&host.run("proj.ls('demo', 'src')").await);
    assert_eq!(
        result["entries"],
        json!([
            {"name": "lib.rs", "kind": "file", "size": LIB_RS.len()},
            {"name": "util.py", "kind": "file", "size": UTIL_PY.len()},
        ])
    );
    assert_eq!(result["path"], "src");

    let result = host
        .call("proj.ls", json!({"name": "demo", "path": "a.txt"}))
        .await;
    failed(
        &result,
        "INVALID_ARGUMENT",
        &["`a.txt` is not a directory", "use `proj.read`"],
    );
    let result = host
        .call("proj.ls", json!({"name": "demo", "path": "escape"}))
        .await;
    failed(&result, "ACCESS_DENIED", &["outside the project root"]);
    let result = host.call("proj.ls", json!({"name": "missing"})).await;
    failed(&result, "NOT_FOUND", &["project root", "does not exist"]);
}

fn matches(result: &Value) -> Vec<(String, u64, String)> {
    result["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap().to_owned(),
                m["line"].as_u64().unwrap(),
                m["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn hit(path: &str, line: u64, text: &str) -> (String, u64, String) {
    (path.to_owned(), line, text.to_owned())
}

#[tokio::test]
async fn grep_finds_lines_honouring_gitignore_and_globs() {
    let tree = Tree::new();
    let host = tree.host().await;
    let result = ok(&host
        .call("proj.grep", json!({"name": "demo", "pattern": "needle"}))
        .await);
    // Not: ignored.txt and build/ (.gitignore), data.bin (binary), the
    // symlinks (not followed), .gitignore (hidden).
    assert_eq!(
        matches(&result),
        [
            hit("src/lib.rs", 1, "pub fn needle() {}"),
            hit("src/lib.rs", 4, "    needle();"),
            hit("src/util.py", 1, "def needle():"),
        ]
    );
    assert_eq!(result["project"], "demo");
    assert_eq!(result["truncated"], false);

    let result = ok(&host.run("proj.grep('demo', 'needle', glob='*.py')").await);
    assert_eq!(matches(&result), [hit("src/util.py", 1, "def needle():")]);
    let result = ok(&host
        .run(r"proj.grep('demo', '^\s+needle\(', glob='src/**/*.rs')")
        .await);
    assert_eq!(matches(&result), [hit("src/lib.rs", 4, "    needle();")]);

    // The ignored file does hold a match: only .gitignore keeps it out.
    let read = ok(&host
        .call("proj.read", json!({"name": "demo", "path": "ignored.txt"}))
        .await);
    assert!(read["content"].as_str().unwrap().contains("needle"));
    let result = ok(&host
        .run("proj.grep('demo', 'needle', glob='ignored.txt')")
        .await);
    assert_eq!(matches(&result), []);

    let result = host
        .call("proj.grep", json!({"name": "demo", "pattern": "fn ("}))
        .await;
    failed(
        &result,
        "INVALID_ARGUMENT",
        &["`pattern` is not a valid regex"],
    );
    let result = host
        .call(
            "proj.grep",
            json!({"name": "demo", "pattern": "x", "glob": "src/[a"}),
        )
        .await;
    failed(&result, "INVALID_ARGUMENT", &["`glob` is not a valid glob"]);
}

#[tokio::test]
async fn an_unknown_project_lists_the_projects_and_functions() {
    let tree = Tree::new();
    let host = tree.host().await;
    let expected = [
        "unknown project `nope`",
        "projects: demo, missing",
        "functions: proj.list, proj.path, proj.read, proj.ls, proj.grep",
    ];
    for (function, args) in [
        ("proj.path", json!({"name": "nope", "sub": "x"})),
        ("proj.read", json!({"name": "nope", "path": "a.txt"})),
        ("proj.ls", json!({"name": "nope"})),
        ("proj.grep", json!({"name": "nope", "pattern": "x"})),
    ] {
        let result = host.call(function, args).await;
        failed(&result, "NOT_FOUND", &expected);
    }
}

#[tokio::test]
async fn run_binds_positional_arguments_of_proj_path() {
    let tree = Tree::new();
    let host = tree.host().await;
    let result = ok(&host.run("proj.path(\"demo\", \"src\")").await);
    assert_eq!(
        result,
        json!({"project": "demo", "path": shown(&tree.root().join("src"))})
    );
    let result = ok(&host.run("proj.path('demo', sub='src/lib.rs')").await);
    assert_eq!(result["path"], shown(&tree.root().join("src/lib.rs")));
    let result = host.run("proj.path('demo', '..')").await;
    failed(&result, "ACCESS_DENIED", &["contains `..`"]);
}

#[tokio::test]
async fn a_relative_project_path_is_relative_to_the_config_file() {
    let dir = TempDir::new().unwrap();
    std::fs::create_dir_all(dir.path().join("proj-root/src")).unwrap();
    std::fs::write(dir.path().join("proj-root/src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        dir.path().join("packs.toml"),
        "[packs.proj]\n\n[projects]\nhere = \"proj-root\"\n",
    )
    .unwrap();
    // The config file's directory, as the host sees it (symlinks resolved).
    let base = dir.path().canonicalize().unwrap();
    let host = TestHost::start_in(dir).await;
    let list = ok(&host.run("proj.list()").await);
    assert_eq!(
        list,
        json!({"projects": [
            {"name": "here", "path": shown(&base.join("proj-root")), "exists": true}
        ]})
    );
    let result = ok(&host.run("proj.path(\"here\", \"src\")").await);
    assert_eq!(result["path"], shown(&base.join("proj-root/src")));
    let read = ok(&host.run("proj.read('here', 'src/main.rs')").await);
    assert_eq!(read["content"], "fn main() {}\n");
}
