//! The pack as a whole: its schemas, and its sessions as callers of two
//! organisations see them.

mod schemas {
    use crate::{
        cell_execute::CellExecuteArgs,
        cells::{CellArgs, CellCreateArgs, CellList, CellUpdateArgs},
        execute::ExecuteArgs,
        export_import::SessionImportArgs,
        npm_install::NpmInstallArgs,
        sessions::{SessionArgs, SessionCreateArgs},
    };

    /// Models read these schemas: every argument needs a description, and
    /// unknown keys must be refused.
    #[test]
    fn argument_schemas_describe_every_field() {
        use pack_sdk::Value;
        use schemars::schema_for;
        let schemas: [(&str, Value); 10] = [
            ("execute", schema_for!(ExecuteArgs).to_value()),
            ("session_create", schema_for!(SessionCreateArgs).to_value()),
            ("session", schema_for!(SessionArgs).to_value()),
            ("cell_create", schema_for!(CellCreateArgs).to_value()),
            ("cell_update", schema_for!(CellUpdateArgs).to_value()),
            ("cell", schema_for!(CellArgs).to_value()),
            ("cell_execute", schema_for!(CellExecuteArgs).to_value()),
            ("session_import", schema_for!(SessionImportArgs).to_value()),
            ("npm_install", schema_for!(NpmInstallArgs).to_value()),
            ("cell_list", schema_for!(CellList).to_value()),
        ];
        for (function, schema) in schemas {
            let properties = schema["properties"].as_object().unwrap();
            for (arg, prop) in properties {
                assert!(
                    prop["description"].is_string() || prop["$ref"].is_string(),
                    "{function}.{arg}: {prop}"
                );
            }
            if function != "cell_list" {
                assert_eq!(schema["additionalProperties"], false, "{function}");
            }
        }
    }
}

mod result_schemas {
    use pack_sdk::testing::{check_failure, check_manifest, check_result};

    use crate::node::ExecOutput;

    #[test]
    fn results_and_failures_fit_the_schemas() {
        check_manifest(crate::pack).unwrap();
        let refused = ExecOutput::refused("no node");
        check_result(&refused).unwrap();
        check_failure::<ExecOutput>(&refused.into_result("node").unwrap_err()).unwrap();
    }
}

/// Notebook sessions belong to their creator: the pack called in-process as
/// callers of two organisations.
mod ownership {
    use pack_sdk::{
        Value, codes, json,
        owned::Owner,
        testing::{
            PackTest,
            callers::{ada, bob, eve},
        },
    };

    use crate::pack;

    /// Unconfined: the test binary is not the host's sandbox helper. With
    /// a `database`, sessions are kept there (as with several instances).
    pub(super) fn start(root: &std::path::Path, share: &str, database: Option<&str>) -> PackTest {
        let mut pack = PackTest::build(pack)
            .config(json!({
                "notebooks_dir": root, "pool_size": 0, "share": share, "sandbox": "off"
            }))
            .identity(Owner::new("local", "root"));
        if let Some(url) = database {
            pack = pack.state_database(url);
        }
        pack.start().unwrap()
    }

    /// The examples, run by a real node (unconfined, as everything here).
    #[tokio::test]
    async fn examples_hold() {
        let root = tempfile::tempdir().unwrap();
        let pack = start(root.path(), "user", None);
        let checked = pack.check_examples().await;
        pack.shutdown().await;
        if let Err(failed) = checked {
            panic!("{failed}");
        }
    }

    pub(super) async fn ids(pack: &PackTest, caller: &Owner) -> Vec<String> {
        let out = pack.call(caller, "session_list", json!({})).await.unwrap();
        let sessions = out["sessions"].as_array().unwrap().iter();
        sessions
            .map(|s| s["sessionId"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Every function that takes a session id, called on `id`.
    fn calls(id: &str, cell: &str) -> Vec<(&'static str, Value)> {
        vec![
            ("cell_list", json!({"sessionId": id})),
            ("cell_create", json!({"sessionId": id, "source": "1"})),
            (
                "cell_update",
                json!({"sessionId": id, "cellId": cell, "source": "2"}),
            ),
            ("cell_delete", json!({"sessionId": id, "cellId": cell})),
            ("cell_execute", json!({"sessionId": id, "cellId": cell})),
            ("session_export", json!({"sessionId": id})),
            ("npm_install", json!({"sessionId": id})),
            ("session_delete", json!({"sessionId": id})),
        ]
    }

    #[tokio::test]
    async fn another_caller_gets_what_an_unknown_id_gets() {
        unknown_to_others(None).await;
    }

    #[tokio::test]
    async fn another_caller_gets_what_an_unknown_id_gets_on_postgres() {
        integrations_store::testing::on_postgres(|url| unknown_to_others(Some(url))).await;
    }

    async fn unknown_to_others(database: Option<String>) {
        // Long enough never to occur in a random id or a message by chance.
        const UNKNOWN: &str = "unknown-session-3f9c";
        let root = tempfile::tempdir().unwrap();
        let pack = start(root.path(), "user", database.as_deref());
        let created = pack
            .call(&ada(), "session_create", json!({"title": "acme secrets"}))
            .await
            .unwrap();
        let session = created["sessionId"].as_str().unwrap().to_owned();
        let cell = pack
            .call(
                &ada(),
                "cell_create",
                json!({"sessionId": session, "source": "console.log('acme')"}),
            )
            .await
            .unwrap()["cellId"]
            .as_str()
            .unwrap()
            .to_owned();
        let imported = pack
            .call(&ada(), "session_import", json!({"markdown": "# Two\n"}))
            .await
            .unwrap();
        let other = imported["sessionId"].as_str().unwrap().to_owned();
        let mine = pack
            .call(&eve(), "session_create", json!({}))
            .await
            .unwrap();
        let mine = mine["sessionId"].as_str().unwrap().to_owned();
        let mut own = vec![session.clone(), other.clone()];
        own.sort();
        assert_eq!(ids(&pack, &ada()).await, own);
        assert_eq!(ids(&pack, &eve()).await, [mine.as_str()]);
        assert!(ids(&pack, &bob()).await.is_empty(), "share = user");
        for caller in [eve(), bob()] {
            for ((function, args), (_, unknown)) in calls(&session, &cell)
                .into_iter()
                .zip(calls(UNKNOWN, &cell))
            {
                let err = pack.call(&caller, function, args).await.unwrap_err();
                let expected = pack.call(&caller, function, unknown).await.unwrap_err();
                assert_eq!(err.code(), codes::SESSION_NOT_FOUND, "{function}: {err}");
                let message = err.message().replace(&session, UNKNOWN);
                assert_eq!(message, expected.message(), "{function}");
                assert!(
                    !message.contains(&session) && !message.contains(&other),
                    "{function}: {err}"
                );
                // cell_execute and npm_install keep their run shape.
                assert_eq!(
                    err.clone().into_wire().result,
                    expected.into_wire().result.map(|r| {
                        let text = r.to_string().replace(UNKNOWN, &session);
                        serde_json::from_str::<Value>(&text).unwrap()
                    }),
                    "{function}"
                );
            }
        }
        // Nothing of ada's changed.
        let cells = pack
            .call(&ada(), "cell_list", json!({"sessionId": session}))
            .await
            .unwrap();
        assert_eq!(cells["cells"][0]["source"], "console.log('acme')");
        assert_eq!(cells["cells"].as_array().unwrap().len(), 1);
        let out = pack
            .call(
                &ada(),
                "cell_execute",
                json!({"sessionId": session, "cellId": cell}),
            )
            .await
            .unwrap();
        assert_eq!(out["stdout"], "acme\n");
        assert_eq!(ids(&pack, &ada()).await, own);
    }

    #[tokio::test]
    async fn owners_survive_a_restart() {
        let root = tempfile::tempdir().unwrap();
        let pack = start(root.path(), "user", None);
        let created = pack
            .call(&ada(), "session_create", json!({}))
            .await
            .unwrap();
        let session = created["sessionId"].as_str().unwrap().to_owned();
        pack.shutdown().await;
        drop(pack);
        // A new pack over the same directory: the owner is on disk.
        let pack = start(root.path(), "user", None);
        assert_eq!(ids(&pack, &ada()).await, [session.as_str()]);
        assert!(ids(&pack, &eve()).await.is_empty());
    }

    #[tokio::test]
    async fn sessions_are_limited_per_owner_and_for_the_host() {
        let root = tempfile::tempdir().unwrap();
        let pack = PackTest::build(pack)
            .config(json!({
                "notebooks_dir": root.path(), "pool_size": 0,
                "max_sessions": 3, "max_sessions_per_owner": 2
            }))
            .start()
            .unwrap();
        let create = |caller: Owner| {
            let pack = &pack;
            async move { pack.call(&caller, "session_create", json!({})).await }
        };
        create(ada()).await.unwrap();
        create(ada()).await.unwrap();
        let full = create(ada()).await.unwrap_err();
        assert_eq!(full.code(), "LIMIT_EXCEEDED");
        assert!(
            full.to_string().contains("`max_sessions_per_owner`"),
            "{full}"
        );
        let mine = ids(&pack, &ada()).await;
        assert!(
            mine.iter().all(|id| full.to_string().contains(id)),
            "{full}"
        );
        create(bob()).await.unwrap();
        let host_full = create(eve()).await.unwrap_err();
        assert_eq!(host_full.code(), "LIMIT_EXCEEDED");
        assert!(
            host_full.to_string().contains("`max_sessions`"),
            "{host_full}"
        );
        // Nobody else's ids.
        for id in mine.iter().chain(&ids(&pack, &bob()).await) {
            assert!(!host_full.to_string().contains(id.as_str()), "{host_full}");
        }
        pack.shutdown().await;
    }

    #[tokio::test]
    async fn a_limit_of_zero_is_refused_at_start() {
        let root = tempfile::tempdir().unwrap();
        let started = PackTest::build(pack)
            .config(json!({"notebooks_dir": root.path(), "pool_size": 0, "max_sessions": 0}))
            .start();
        let error = started.err().expect("a limit of 0 is refused");
        assert!(error.to_string().contains("`max_sessions` is 0"), "{error}");
        let started = PackTest::build(pack)
            .config(json!({"notebooks_dir": root.path(), "limits": {"memory_mb": 0}}))
            .start();
        let error = started.err().expect("a bound of 0 is refused");
        assert!(
            error.to_string().contains("`limits.memory_mb` is 0"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn share_org_lets_the_organisation_share_and_nobody_else() {
        let root = tempfile::tempdir().unwrap();
        let pack = start(root.path(), "org", None);
        let created = pack
            .call(&ada(), "session_create", json!({}))
            .await
            .unwrap();
        let session = created["sessionId"].as_str().unwrap().to_owned();
        let args = json!({"sessionId": session, "source": "export const x = 1"});
        pack.call(&bob(), "cell_create", args).await.unwrap();
        assert_eq!(ids(&pack, &bob()).await, [session.as_str()]);
        let args = json!({"sessionId": session});
        let err = pack.call(&eve(), "cell_list", args).await.unwrap_err();
        assert_eq!(err.code(), codes::SESSION_NOT_FOUND);
        assert!(ids(&pack, &eve()).await.is_empty());
    }
}

/// Sessions in PostgreSQL as two instances see them: two packs on one
/// database, each with a notebooks folder of its own.
mod shared {
    use std::{fs, future::Future, os::unix::fs::symlink, path::Path};

    use pack_sdk::{
        Value, codes, json,
        owned::Owner,
        testing::{
            PackTest,
            callers::{ada, eve},
        },
    };
    use state_store::{Counted, State};

    use super::ownership::{ids, start};
    use crate::notebook;

    /// `case` on two instances (and their folders) sharing a fresh database.
    async fn on_two<Case, Fut>(case: Case)
    where
        Case: FnOnce([PackTest; 2], [std::path::PathBuf; 2], String) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        integrations_store::testing::on_postgres(|url| async move {
            let folders = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
            let packs = folders
                .each_ref()
                .map(|dir| start(dir.path(), "user", Some(&url)));
            let roots = folders.each_ref().map(|dir| dir.path().to_owned());
            case(packs, roots, url).await;
            drop(folders);
        })
        .await;
    }

    async fn call(pack: &PackTest, function: &str, args: Value) -> Value {
        let done = pack.call(&ada(), function, args).await;
        done.unwrap_or_else(|e| panic!("{function}: {e}"))
    }

    async fn cell(pack: &PackTest, session: &str, filename: &str, source: &str) -> String {
        let args = json!({"sessionId": session, "filename": filename, "source": source});
        let made = call(pack, "cell_create", args).await;
        made["cellId"].as_str().unwrap().to_owned()
    }

    async fn run(pack: &PackTest, session: &str, cell: &str) -> Value {
        let args = json!({"sessionId": session, "cellId": cell});
        call(pack, "cell_execute", args).await["stdout"].clone()
    }

    async fn sources(pack: &PackTest, session: &str) -> Vec<Value> {
        let listed = call(pack, "cell_list", json!({"sessionId": session})).await;
        let cells = listed["cells"].as_array().unwrap().iter();
        cells.map(|c| c["source"].clone()).collect()
    }

    #[tokio::test]
    async fn a_session_made_through_one_instance_is_used_through_the_other() {
        on_two(|[one, two], [root_one, root_two], _| async move {
            let made = call(&one, "session_create", json!({"title": "shared"})).await;
            let session = made["sessionId"].as_str().unwrap().to_owned();
            let utils = cell(&one, &session, "utils.ts", "export const x: number = 41;").await;
            let main_source = "import { x } from './utils.ts';\nconsole.log(x + 1);";
            let main = cell(&one, &session, "main.ts", main_source).await;
            assert_eq!(run(&two, &session, &main).await, "42\n");
            // Each instance its own folder: the other's files came from the row.
            assert!(root_two.join(&session).join("src/utils.ts").is_file());
            let args =
                json!({"sessionId": session, "cellId": utils, "source": "export const x = 1;"});
            call(&two, "cell_update", args).await;
            assert_eq!(run(&one, &session, &main).await, "2\n");
            assert_eq!(ids(&one, &ada()).await, [session.as_str()]);
            assert_eq!(ids(&two, &ada()).await, [session.as_str()]);
            assert!(ids(&two, &eve()).await.is_empty());
            let args = json!({"sessionId": session, "cellId": utils});
            call(&two, "cell_delete", args).await;
            assert_eq!(sources(&one, &session).await.len(), 1);
            // An export through one imports through the other.
            let doc = call(&one, "session_export", json!({"sessionId": session})).await;
            let imported = call(&two, "session_import", json!({"markdown": doc["markdown"]})).await;
            let copy = imported["sessionId"].as_str().unwrap();
            let imported = sources(&one, copy).await;
            assert_eq!(imported.len(), 1);
            // The document ends each block with a line break.
            assert_eq!(imported[0].as_str().unwrap().trim_end(), main_source);
            call(&two, "session_delete", json!({"sessionId": session})).await;
            assert!(!root_two.join(&session).exists());
            let gone = one
                .call(&ada(), "cell_list", json!({"sessionId": session}))
                .await;
            assert_eq!(gone.unwrap_err().code(), codes::SESSION_NOT_FOUND);
            assert_eq!(ids(&one, &ada()).await, [copy]);
            drop(root_one);
        })
        .await;
    }

    #[tokio::test]
    async fn what_code_writes_in_its_folder_is_never_the_record() {
        on_two(|[one, two], [root_one, _], _| async move {
            let made = call(&one, "session_create", json!({})).await;
            let session = made["sessionId"].as_str().unwrap().to_owned();
            cell(&one, &session, "utils.ts", "export const x = 41;").await;
            let main = cell(
                &one,
                &session,
                "main.ts",
                "import { x } from './utils.ts';\nconsole.log(x + 1);",
            )
            .await;
            let rewrite = "import { writeFileSync } from 'node:fs';\n\
                 writeFileSync('src/utils.ts', 'export const x = 665;');\n\
                 writeFileSync('package.json', '{\"dependencies\": {\"left-pad\": \"1\"}}');";
            let rewrite = cell(&two, &session, "rewrite.ts", rewrite).await;
            run(&two, &session, &rewrite).await;
            // A link in place of a cell's file, leading outside.
            let outside = tempfile::NamedTempFile::new().unwrap();
            fs::write(outside.path(), "outside").unwrap();
            let planted = root_one.join(&session).join("src/utils.ts");
            fs::remove_file(&planted).unwrap();
            symlink(outside.path(), &planted).unwrap();
            for pack in [&one, &two] {
                let recorded = sources(pack, &session).await;
                assert_eq!(recorded[0], "export const x = 41;");
                assert_eq!(run(pack, &session, &main).await, "42\n");
            }
            assert_eq!(fs::read_to_string(outside.path()).unwrap(), "outside");
            assert!(!planted.is_symlink());
            let doc = call(&two, "session_export", json!({"sessionId": session})).await;
            let markdown = doc["markdown"].as_str().unwrap();
            assert!(
                markdown.contains(notebook::PACKAGE_JSON.trim_end()),
                "{markdown}"
            );
        })
        .await;
    }

    #[tokio::test]
    async fn limits_count_every_instances_sessions() {
        integrations_store::testing::on_postgres(|url| async move {
            let folders = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
            let [one, two] = folders.each_ref().map(|dir| {
                PackTest::build(crate::pack)
                    .config(json!({"notebooks_dir": dir.path(), "pool_size": 0, "max_sessions_per_owner": 2}))
                    .state_database(&url)
                    .start()
                    .unwrap()
            });
            call(&one, "session_create", json!({})).await;
            call(&two, "session_create", json!({})).await;
            let full = one.call(&ada(), "session_create", json!({})).await.unwrap_err();
            assert_eq!(full.code(), "LIMIT_EXCEEDED", "{full}");
            for id in ids(&two, &ada()).await {
                assert!(full.message().contains(&id), "{full}");
            }
            two.call(&eve(), "session_create", json!({})).await.unwrap();
        })
        .await;
    }

    #[tokio::test]
    async fn changes_made_at_once_through_both_instances_are_all_kept() {
        on_two(|[one, two], _, _| async move {
            let made = call(&one, "session_create", json!({})).await;
            let session = made["sessionId"].as_str().unwrap().to_owned();
            let creates = (0..6).map(|n| {
                let pack = if n % 2 == 0 { &one } else { &two };
                let source = format!("export const n = {n};");
                let session = session.clone();
                async move { cell(pack, &session, &format!("c{n}.ts"), &source).await }
            });
            futures_util::future::join_all(creates).await;
            let mut kept = sources(&two, &session).await;
            kept.sort_by_key(|s| s.to_string());
            let expected: Vec<Value> = (0..6)
                .map(|n| json!(format!("export const n = {n};")))
                .collect();
            assert_eq!(kept, expected);
        })
        .await;
    }

    /// npm through one instance; a cell run through the other installs
    /// the same first (a local package both folders reach alike: npm
    /// records its path relative to the session's folder).
    #[tokio::test]
    async fn an_instance_installs_what_npm_install_added_elsewhere_before_a_cell_runs() {
        integrations_store::testing::on_postgres(|url| async move {
            let package = tempfile::tempdir().unwrap();
            fs::write(
                package.path().join("package.json"),
                r#"{"name": "local-greet", "version": "1.0.0", "type": "module", "main": "index.js"}"#,
            )
            .unwrap();
            let greet = "export const greet = (name) => `hi ${name}`;\n";
            fs::write(package.path().join("index.js"), greet).unwrap();
            let folders = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
            let [one, two] = folders.each_ref().map(|dir| {
                PackTest::build(crate::pack)
                    .config(json!({
                        "notebooks_dir": dir.path(), "pool_size": 0, "sandbox": "off",
                        "npm_network": false, "cwd_roots": [package.path()],
                    }))
                    .state_database(&url)
                    .start()
                    .unwrap()
            });
            let made = call(&one, "session_create", json!({})).await;
            let session = made["sessionId"].as_str().unwrap().to_owned();
            let local = package.path().display().to_string();
            let args = json!({"sessionId": session, "packages": [local]});
            assert_eq!(call(&one, "npm_install", args).await["exitCode"], 0);
            let source = "import { greet } from 'local-greet';\nconsole.log(greet('two'));";
            let main = cell(&two, &session, "main.ts", source).await;
            let modules = folders[1].path().join(&session).join("node_modules");
            assert!(!modules.exists());
            assert_eq!(run(&two, &session, &main).await, "hi two\n");
            assert!(modules.join("local-greet").exists());
            // Installed once: the next run finds it done.
            fs::remove_dir_all(modules.join("local-greet")).unwrap();
            let args = json!({"sessionId": session, "cellId": main});
            let again = two.call(&ada(), "cell_execute", args).await.unwrap_err();
            assert!(again.message().contains("local-greet"), "{again}");
        })
        .await;
    }

    #[tokio::test]
    async fn a_record_naming_a_file_outside_its_folder_is_refused() {
        on_two(|[one, _], [root_one, _], url| async move {
            let sessions = State::open(Some(url)).pack_sessions("exec_ts").unwrap();
            let forged = json!({
                "owner": {"org": "acme", "user": "ada"}, "title": "t", "language": "typescript",
                "cells": [{"id": "c1", "type": "code", "filename": "../../escape.ts"}],
                "files": {"package.json": "{}", "src/../../escape.ts": "pwned"},
            });
            let owner = Owner::new(&ada().org, &ada().user);
            let body = forged.to_string().into_bytes();
            let made = sessions.create("sforged", &owner, &body, Counted::PerUser, |_, _| {
                Ok::<_, ()>(())
            });
            made.await.unwrap().unwrap();
            let refused = one
                .call(&ada(), "cell_list", json!({"sessionId": "sforged"}))
                .await;
            assert_eq!(refused.unwrap_err().code(), codes::INVALID_ARGUMENT);
            let parent = root_one.parent().unwrap();
            assert!(!parent.join("escape.ts").exists() && !Path::new("/escape.ts").exists());
        })
        .await;
    }
}
