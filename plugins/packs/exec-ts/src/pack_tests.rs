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

    /// Unconfined: the test binary is not the host's sandbox helper.
    fn start(root: &std::path::Path, share: &str) -> PackTest {
        PackTest::build(pack)
            .config(json!({
                "notebooks_dir": root, "pool_size": 0, "share": share, "sandbox": "off"
            }))
            .identity(Owner::new("local", "root"))
            .start()
            .unwrap()
    }

    /// The examples, run by a real node (unconfined, as everything here).
    #[tokio::test]
    async fn examples_hold() {
        let root = tempfile::tempdir().unwrap();
        let pack = start(root.path(), "user");
        let checked = pack.check_examples().await;
        pack.shutdown().await;
        if let Err(failed) = checked {
            panic!("{failed}");
        }
    }

    async fn ids(pack: &PackTest, caller: &Owner) -> Vec<String> {
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
        // Long enough never to occur in a random id or a message by chance.
        const UNKNOWN: &str = "unknown-session-3f9c";
        let root = tempfile::tempdir().unwrap();
        let pack = start(root.path(), "user");
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
        let pack = start(root.path(), "user");
        let created = pack
            .call(&ada(), "session_create", json!({}))
            .await
            .unwrap();
        let session = created["sessionId"].as_str().unwrap().to_owned();
        pack.shutdown().await;
        drop(pack);
        // A new pack over the same directory: the owner is on disk.
        let pack = start(root.path(), "user");
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
        let pack = start(root.path(), "org");
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
