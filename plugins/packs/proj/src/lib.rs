//! `proj`: project paths and files, confined to project roots.
//!
//! The projects are the host's `[projects]` table in `packs.toml`
//! (`name = "path"`, or `name = { path = "path", orgs = ["acme"] }`); the
//! pack itself takes no config. A caller sees the projects its organisation
//! may see: those the host puts in the call's catalog (the one place the
//! rule, `pack_api::projects`, is applied; code mode shows the same list).
//! Any other name is an unknown project.
//! Functions:
//!
//! - `proj.list()`: the configured projects and whether their roots exist.
//! - `proj.path(name, sub)`: the absolute path of `sub` inside a project.
//! - `proj.read(name, path, offset, limit)`: lines of a text file.
//! - `proj.ls(name, path)`: the entries of a directory.
//! - `proj.grep(name, pattern, glob)`: regex search honouring `.gitignore`.
//!
//! Every caller-supplied path goes through [`confine::confine`]: relative
//! paths only, no `..`, no symlink leading outside the root. The logic lives
//! in plain functions taking [`State`], the projects one caller sees (tested
//! directly); the async functions registered with the SDK pick that view
//! for the caller and move the work onto a blocking thread.

pub mod confine;
pub mod files;
pub mod grep;

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use pack_sdk::{Context, Empty, Function, Host, PackDef, PackError, json};

use crate::{
    confine::Confined,
    files::{LsArgs, LsResult, PathArgs, PathResult, ProjectList, ReadArgs, ReadResult},
    grep::{GrepArgs, GrepResult},
};

/// Named in "unknown project" errors so a model sees what it can call.
const FUNCTIONS: &str = "proj.list, proj.path, proj.read, proj.ls, proj.grep";

/// The pack's state: the projects each organisation sees, as the host's
/// catalog says on the first call of the organisation (the host applies
/// `[projects]`' `orgs`; they do not change while it runs).
#[derive(Debug, Default)]
pub struct Projects {
    by_org: Mutex<HashMap<String, Arc<State>>>,
}

impl Projects {
    /// The projects the caller of `ctx` sees.
    pub fn for_caller(&self, ctx: &Context) -> Arc<State> {
        let org = ctx.org();
        let mut by_org = self.by_org.lock().unwrap_or_else(|e| e.into_inner());
        let state = by_org
            .entry(org)
            .or_insert_with(|| Arc::new(State::new(ctx.projects())));
        Arc::clone(state)
    }
}

/// The projects one caller sees.
#[derive(Debug, Clone, Default)]
pub struct State {
    projects: BTreeMap<String, PathBuf>,
}

impl State {
    /// State over `projects` (name -> absolute root path).
    pub fn new(projects: BTreeMap<String, PathBuf>) -> Self {
        Self { projects }
    }

    /// The projects, sorted by name.
    pub fn projects(&self) -> &BTreeMap<String, PathBuf> {
        &self.projects
    }

    /// The root of project `name`, or NOT_FOUND listing what exists.
    pub fn root(&self, name: &str) -> Result<&Path, PackError> {
        if let Some(root) = self.projects.get(name) {
            return Ok(root);
        }
        if self.projects.is_empty() {
            return Err(PackError::not_found(format!(
                "unknown project `{name}`; no projects are configured (functions: {FUNCTIONS})"
            ))
            .with_help(
                "add projects under `[projects]` in packs.toml, one per line: `name = \"path\"`",
            ));
        }
        let names: Vec<&str> = self.projects.keys().map(String::as_str).collect();
        Err(PackError::not_found(format!(
            "unknown project `{name}`; projects: {} (functions: {FUNCTIONS})",
            names.join(", ")
        ))
        .with_help("call `proj.list` to see the projects and their paths"))
    }

    /// `sub` inside project `name`, checked by the confinement rule.
    pub fn resolve(&self, name: &str, sub: &str) -> Result<Confined, PackError> {
        confine::confine(name, self.root(name)?, sub)
    }
}

/// Filesystem work blocks, so it runs off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, PackError> + Send + 'static,
) -> Result<T, PackError> {
    pack_sdk::blocking("proj", work).await
}

async fn list(all: Arc<Projects>, _: Empty, ctx: Context) -> Result<ProjectList, PackError> {
    let state = all.for_caller(&ctx);
    blocking(move || Ok(files::list(&state))).await
}

async fn path(all: Arc<Projects>, args: PathArgs, ctx: Context) -> Result<PathResult, PackError> {
    let state = all.for_caller(&ctx);
    blocking(move || files::path(&state, &args)).await
}

async fn read(all: Arc<Projects>, args: ReadArgs, ctx: Context) -> Result<ReadResult, PackError> {
    let state = all.for_caller(&ctx);
    blocking(move || files::read(&state, &args)).await
}

async fn ls(all: Arc<Projects>, args: LsArgs, ctx: Context) -> Result<LsResult, PackError> {
    let state = all.for_caller(&ctx);
    blocking(move || files::ls(&state, &args)).await
}

async fn grep(all: Arc<Projects>, args: GrepArgs, ctx: Context) -> Result<GrepResult, PackError> {
    let state = all.for_caller(&ctx);
    // A blocking task outlives a dropped call, so the walk polls for cancellation.
    blocking(move || grep::grep(&state, &args, &|| ctx.is_cancelled())).await
}

/// Every function only reads, and only inside project roots. The examples
/// read project `api`, which the unit test `examples_hold` makes: `README.md`
/// and `src/main.rs` (three lines, the second `    println!("hello");`).
fn pack() -> PackDef<Projects> {
    PackDef::new(
        "proj",
        "Project paths and files: list projects, resolve paths, read, list and search files inside a project root",
        |_: Empty, _: Host| Ok(Projects::default()),
    )
    .function_with(
        Function::new(
            "list",
            "List the projects you can see: name, absolute root path, and whether the root exists.",
            list,
        )
        .title("List projects")
        .read_only()
        .closed_world()
        .example(json!({}), json!({"projects": [{"name": "api", "exists": true}]})),
    )
    .function_with(
        Function::new(
            "path",
            "Absolute path of `sub` inside project `name` (need not exist yet). \
             Paths are relative to the project root; `..`, absolute paths and symlinks leading outside are refused.",
            path,
        )
        .title("Resolve a project path")
        .read_only()
        .closed_world()
        .example(json!({"name": "api", "sub": "src/main.rs"}), json!({"project": "api"})),
    )
    .function_with(
        Function::new(
            "read",
            "Read a UTF-8 text file in a project: `limit` lines from 0-based line `offset` \
             (at most 256 KiB of content). `truncated` says more remains; page on with offset + lines.",
            read,
        )
        .title("Read a file")
        .read_only()
        .closed_world()
        .example(
            json!({"name": "api", "path": "src/main.rs", "limit": 1}),
            json!({"content": "fn main() {\n", "offset": 0, "lines": 1, "total_lines": 3, "truncated": true}),
        ),
    )
    .function_with(
        Function::new(
            "ls",
            "List a directory in a project (default: its root): entries with kind and size, directories first.",
            ls,
        )
        .title("List a directory")
        .read_only()
        .closed_world()
        .example(
            json!({"name": "api"}),
            json!({"path": "", "entries": [{"name": "src", "kind": "dir"}, {"name": "README.md", "kind": "file", "size": 6}], "truncated": false}),
        ),
    )
    .function_with(
        Function::new(
            "grep",
            "Regex search over the text files of a project, honouring .gitignore and skipping hidden and binary files; \
             `glob` filters relative paths (e.g. `*.rs`, `src/**/*.py`). At most 1000 matches.",
            grep,
        )
        .title("Search files")
        .read_only()
        .closed_world()
        .example(
            json!({"name": "api", "pattern": "println", "glob": "*.rs"}),
            json!({"matches": [{"path": "src/main.rs", "line": 2, "text": "    println!(\"hello\");"}], "truncated": false}),
        ),
    )
}

pack_sdk::export_pack!(pack);

#[cfg(test)]
mod tests {
    use pack_sdk::codes;

    use super::*;

    #[test]
    fn unknown_project_lists_projects_and_functions() {
        let state = State::new(BTreeMap::from([
            ("a".to_owned(), PathBuf::from("/tmp/a")),
            ("b".to_owned(), PathBuf::from("/tmp/b")),
        ]));
        let err = state.root("foo").unwrap_err();
        assert_eq!(err.code(), codes::NOT_FOUND);
        assert_eq!(
            err.message(),
            "unknown project `foo`; projects: a, b (functions: proj.list, proj.path, proj.read, proj.ls, proj.grep)"
        );
    }

    #[test]
    fn unknown_project_without_projects_says_how_to_configure() {
        let err = State::default().resolve("foo", "x").unwrap_err();
        assert_eq!(err.code(), codes::NOT_FOUND);
        assert!(
            err.message().contains("no projects are configured"),
            "{err}"
        );
        assert!(err.help().unwrap().contains("[projects]"), "{err}");
    }

    /// Models read these schemas: every argument needs a description, and
    /// unknown keys must be refused.
    #[test]
    fn argument_schemas_describe_every_field() {
        use pack_sdk::Value;
        use schemars::schema_for;
        let schemas: [(&str, Value); 4] = [
            ("path", schema_for!(PathArgs).to_value()),
            ("read", schema_for!(ReadArgs).to_value()),
            ("ls", schema_for!(LsArgs).to_value()),
            ("grep", schema_for!(GrepArgs).to_value()),
        ];
        for (function, schema) in schemas {
            assert_eq!(schema["additionalProperties"], false, "{function}");
            let properties = schema["properties"].as_object().unwrap();
            assert!(properties.contains_key("name"), "{function}");
            for (arg, prop) in properties {
                assert!(prop["description"].is_string(), "{function}.{arg}");
            }
        }
    }
}

/// The pack called in-process as callers of two organisations.
#[cfg(test)]
mod visibility {
    use pack_sdk::{codes, json, owned::Owner, projects::Project, testing::PackTest};

    use super::*;

    #[tokio::test]
    async fn a_project_named_for_one_organisation_is_unknown_to_the_others() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret.txt"), "acme only\n").unwrap();
        let closed = Project {
            path: dir.path().to_path_buf(),
            orgs: Some(vec!["acme".to_owned()]),
        };
        let pack = PackTest::build(pack)
            .project("open", Project::everyone(dir.path()))
            .project("acme-books", closed)
            .start()
            .unwrap();
        let (ada, eve) = (Owner::new("acme", "ada"), Owner::new("evil", "eve"));
        let names = |list: pack_sdk::Value| -> Vec<String> {
            let projects = list["projects"].as_array().unwrap().iter();
            projects
                .map(|p| p["name"].as_str().unwrap().to_owned())
                .collect()
        };
        let listed = pack.call(&ada, "list", json!({})).await.unwrap();
        assert_eq!(names(listed), ["acme-books", "open"]);
        let listed = pack.call(&eve, "list", json!({})).await.unwrap();
        assert_eq!(names(listed), ["open"]);
        let read = json!({"name": "acme-books", "path": "secret.txt"});
        let out = pack.call(&ada, "read", read.clone()).await.unwrap();
        assert_eq!(out["content"], "acme only\n");
        let unknown = json!({"name": "nope", "path": "secret.txt"});
        let unknown = pack.call(&eve, "read", unknown).await.unwrap_err();
        for (function, args) in [
            ("read", read),
            ("path", json!({"name": "acme-books"})),
            ("ls", json!({"name": "acme-books"})),
            ("grep", json!({"name": "acme-books", "pattern": "acme"})),
        ] {
            let err = pack.call(&eve, function, args).await.unwrap_err();
            assert_eq!(err.code(), codes::NOT_FOUND, "{function}: {err}");
            assert_eq!(
                err.message().replace("acme-books", "nope"),
                unknown.message(),
                "{function}: an unknown project's error"
            );
        }
    }
}

#[cfg(test)]
mod result_schemas {
    use pack_sdk::{projects::Project, testing::PackTest};

    /// Every function's schemas as MCP clients take them (results of every
    /// function are checked against them end to end).
    #[test]
    fn the_manifest_follows_the_clients_rules() {
        pack_sdk::testing::check_manifest(super::pack).unwrap();
    }

    /// The examples, run in the world they describe: project `api`.
    #[tokio::test]
    async fn examples_hold() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("README.md"), "# api\n").unwrap();
        std::fs::write(
            dir.path().join("src/main.rs"),
            "fn main() {\n    println!(\"hello\");\n}\n",
        )
        .unwrap();
        let pack = PackTest::build(super::pack)
            .project("api", Project::everyone(dir.path()))
            .start()
            .unwrap();
        if let Err(failed) = pack.check_examples().await {
            panic!("{failed}");
        }
    }
}
