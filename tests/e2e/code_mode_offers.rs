//! Prompts and resources from code mode, through the real binary: Python
//! and TypeScript render the fixture pack's prompt and read its resources
//! and a kept result of their caller's, as that caller's MCP client would;
//! the declarations and `packhost.describe` show the prompts; and a caller
//! whose allow-list hides the pack reaches none of it from code; a pack
//! with `prefix = false` names its prompts bare.

use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::http::token;
use packhost_tests::{TestHost, call, http::HttpHost, ok, typescript_package};

/// Results past 40,000 characters kept; exec_py, exec_ts (type checked)
/// and the conformance fixture pack.
fn config(notebooks: &TempDir) -> String {
    format!(
        "[results]\nmax_result_chars = 40000\n[packs.exec_py]\n[packs.exec_ts]\n\
         config = {{ notebooks_dir = {:?}, typescript = {:?} }}\n[packs.conformance]\n",
        notebooks.path().display().to_string(),
        typescript_package().display().to_string(),
    )
}

/// A call's result too large to send whole: kept, under this handle.
fn kept_handle(result: &CallToolResult) -> String {
    let meta = result.meta.as_ref().expect("a kept result has _meta");
    let kept = meta
        .get("packhost/result")
        .expect("packhost/result in _meta");
    kept["handle"].as_str().expect("a handle").to_owned()
}

const LARGE: &str = "'x' * 50000";

#[tokio::test]
async fn python_and_typescript_render_prompts_and_read_resources_and_kept_results() {
    let notebooks = TempDir::new().unwrap();
    let host = TestHost::start(&config(&notebooks)).await;
    let handle = kept_handle(&host.call("exec_py.run", json!({ "code": LARGE })).await);

    let code = format!(
        "r = conformance.prompts.test_prompt_with_embedded_resource(resourceUri='test://mine')\n\
         by_name = packhost.get_prompt('conformance.test_prompt_with_image')\n\
         s = packhost.read_resource('test://static-text')\n\
         t = packhost.read_resource('test://template/7/data')\n\
         b = packhost.read_resource('test://static-binary')\n\
         k = packhost.read_resource('packhost://results/{handle}')\n\
         try:\n    conformance.prompts.test_prompt_with_embedded_resource()\n    missing = None\n\
         except TypeError as e:\n    missing = str(e)\n\
         try:\n    packhost.get_prompt('conformance.test_prompt_with_imag')\n    unknown = None\n\
         except PackError as e:\n    unknown = [e.code, e.message]\n\
         listed = packhost.resources()\n\
         {{'embedded': r['messages'][0]['content']['resource']['uri'],\n\
          'said': r['messages'][1]['content']['text'],\n\
          'image': by_name['messages'][0]['content']['type'],\n\
          'static': s['contents'][0]['text'],\n\
          'template': t['contents'][0]['text'],\n\
          'blob': b['contents'][0]['mimeType'],\n\
          'kept': len(k['contents'][0]['text']),\n\
          'missing': missing, 'unknown': unknown,\n\
          'prompts': [p['name'] for p in packhost.prompts()],\n\
          'resources': [x['uri'] for x in listed['resources']],\n\
          'templates': [x['uriTemplate'] for x in listed['resourceTemplates']]}}"
    );
    let out = ok(&host.call("exec_py.run", json!({ "code": code })).await);
    let got = &out["result"];
    assert_eq!(got["embedded"], "test://mine", "{out}");
    assert_eq!(got["said"], "Please process the embedded resource above.");
    assert_eq!(got["image"], "image");
    assert_eq!(
        got["static"],
        "This is the content of the static text resource."
    );
    let data: Value = serde_json::from_str(got["template"].as_str().unwrap()).unwrap();
    assert_eq!(data["id"], "7");
    assert_eq!(got["blob"], "image/png");
    assert!(got["kept"].as_u64().unwrap() > 50000, "{out}");
    assert!(
        got["missing"].as_str().unwrap().contains("`resourceUri`"),
        "{out}"
    );
    assert_eq!(got["unknown"][0], "NOT_FOUND", "{out}");
    assert!(
        got["unknown"][1]
            .as_str()
            .unwrap()
            .contains("did you mean `conformance.test_prompt_with_image`?"),
        "{out}"
    );
    let prompts = got["prompts"].as_array().unwrap();
    for prompt in [
        "conformance.test_prompt_with_embedded_resource",
        "conformance.test_prompt_with_image",
    ] {
        assert!(prompts.contains(&json!(prompt)), "{out}");
    }
    let resources = got["resources"].as_array().unwrap();
    assert!(resources.contains(&json!(format!("packhost://results/{handle}"))));
    assert!(resources.contains(&json!("test://static-text")));
    assert!(
        got["templates"]
            .as_array()
            .unwrap()
            .contains(&json!("test://template/{id}/data"))
    );

    // A wrong argument is a TypeError that says what was wrong and what is taken.
    let code = "try:\n    packhost.read_resource(5)\nexcept TypeError as e:\n    m = str(e)\nm";
    let bad = ok(&host.call("exec_py.run", json!({ "code": code })).await);
    let message = bad["result"].as_str().unwrap();
    assert!(
        message.contains("`resources/read`: `uri` is not a string")
            && message.contains("{uri: string}"),
        "{bad}"
    );

    // TypeScript, type checked against its declarations before it runs.
    let code = format!(
        "const r = await conformance.prompts.test_prompt_with_embedded_resource({{ resourceUri: 'test://mine' }});\n\
         const s = await packhost.read_resource('test://static-text');\n\
         const k = await packhost.read_resource('packhost://results/{handle}');\n\
         let unknown = '';\n\
         try {{ await packhost.read_resource('test://nope'); }} catch (e) {{ unknown = (e as PackError).code; }}\n\
         ({{ embedded: r.messages[0].content.type, said: r.messages[1].content.text, static: s.contents[0].text,\n\
            kept: (k.contents[0].text ?? '').length, unknown, prompts: packhost.prompts().map((p) => p.name) }})"
    );
    let out = ok(&host
        .call(
            "exec_ts.execute",
            json!({ "code": code, "typecheck": true }),
        )
        .await);
    let got = &out["result"];
    assert_eq!(got["embedded"], "resource", "{out}");
    assert_eq!(got["said"], "Please process the embedded resource above.");
    assert_eq!(
        got["static"],
        "This is the content of the static text resource."
    );
    assert!(got["kept"].as_u64().unwrap() > 50000, "{out}");
    assert_eq!(got["unknown"], "NOT_FOUND", "{out}");
    assert_eq!(
        got["prompts"][1], "conformance.test_prompt_with_image",
        "{out}"
    );

    // The declarations and `packhost.describe` show the prompts.
    let python = ok(&host
        .call("exec_py.declarations", json!({"pack": "conformance"}))
        .await);
    let python = python["declarations"].as_str().unwrap();
    assert!(
        python.contains(
            "    class prompts:\n        \"\"\"Its MCP prompts: each renders with its arguments \
             (strings) to a PromptResult.\"\"\"\n\n        @staticmethod\n        def \
             test_prompt_with_embedded_resource(*, resourceUri: str) -> PromptResult:"
        ),
        "{python}"
    );
    let typescript = ok(&host
        .call("exec_ts.declarations", json!({"pack": "conformance"}))
        .await);
    let typescript = typescript["declarations"].as_str().unwrap();
    assert!(
        typescript.contains("  readonly prompts: {\n")
            && typescript
                .contains("    test_prompt_with_image(args?: {}): Promise<PromptResult>;\n")
            && typescript.contains("  read_resource(uri: string): Promise<ResourceResult>;\n"),
        "{typescript}"
    );
    let described = ok(&host
        .call("packhost.describe", json!({"name": "conformance"}))
        .await);
    assert_eq!(
        described["prompts"][0]["name"], "conformance.test_prompt_with_embedded_resource",
        "{described}"
    );
    assert_eq!(
        described["prompts"][0]["arguments"][0]["name"],
        "resourceUri"
    );
}

/// What eve's code reaches: every read and render, each as its error code
/// (or `READ`), and what it lists.
fn probe(handle: &str) -> String {
    format!(
        "out = {{}}\n\
         for name, reach in [('prompt', lambda: packhost.get_prompt('conformance.test_prompt_with_image')),\n\
                             ('static', lambda: packhost.read_resource('test://static-text')),\n\
                             ('template', lambda: packhost.read_resource('test://template/7/data')),\n\
                             ('kept', lambda: packhost.read_resource('packhost://results/{handle}'))]:\n\
         \x20   try:\n\
         \x20       reach()\n\
         \x20       out[name] = 'READ'\n\
         \x20   except PackError as e:\n\
         \x20       out[name] = e.code\n\
         out['prompts'] = [p['name'] for p in packhost.prompts()]\n\
         out['resources'] = [r['uri'] for r in packhost.resources()['resources']]\n\
         out['pack'] = 'conformance' in globals()\n\
         out"
    )
}

#[tokio::test]
async fn code_of_a_caller_whose_allow_list_hides_the_pack_reaches_none_of_it() {
    let notebooks = TempDir::new().unwrap();
    let (ada, ada_entry) = token("ada", "acme", &[]);
    // eve may run code, and nothing else.
    let (eve, eve_entry) = token("eve", "acme", &["exec_py.run", "exec_ts.execute"]);
    let host = HttpHost::start(
        &format!("{}\n{ada_entry}\n{eve_entry}\n", config(&notebooks)),
        &[],
    )
    .await;
    let ada = host.client(Some(&ada)).await.expect("connect");
    let eve = host.client(Some(&eve)).await.expect("connect");
    let kept = call(&ada, "exec_py.run", json!({ "code": LARGE }))
        .await
        .unwrap();
    let handle = kept_handle(&kept);

    // ada's code reaches all of it: the probe can tell.
    let reached = call(&ada, "exec_py.run", json!({ "code": probe(&handle) }))
        .await
        .unwrap();
    let reached = &ok(&reached)["result"];
    for name in ["prompt", "static", "template", "kept"] {
        assert_eq!(reached[name], "READ", "{name}: {reached}");
    }

    let refused = call(&eve, "exec_py.run", json!({ "code": probe(&handle) }))
        .await
        .unwrap();
    let refused = &ok(&refused)["result"];
    for name in ["prompt", "static", "template", "kept"] {
        assert_eq!(refused[name], "NOT_FOUND", "{name}: {refused}");
    }
    assert_eq!(refused["prompts"], json!([]), "{refused}");
    assert_eq!(refused["pack"], false, "{refused}");
    let resources = refused["resources"].as_array().unwrap();
    assert!(
        resources
            .iter()
            .all(|uri| !uri.as_str().unwrap().starts_with("test://")
                && !uri.as_str().unwrap().contains(&handle)),
        "{refused}"
    );

    // From TypeScript alike.
    let code = "const out: Record<string, string> = {};\n\
                try { await packhost.read_resource('test://static-text'); out.read = 'READ'; }\n\
                catch (e) { out.read = (e as PackError).code; }\n\
                try { await packhost.get_prompt('conformance.test_prompt_with_image'); out.prompt = 'READ'; }\n\
                catch (e) { out.prompt = `${(e as PackError).code}: ${(e as PackError).message}`; }\n\
                out";
    let out = call(&eve, "exec_ts.execute", json!({ "code": code }))
        .await
        .unwrap();
    let out = &ok(&out)["result"];
    assert_eq!(out["read"], "NOT_FOUND", "{out}");
    let prompt = out["prompt"].as_str().unwrap();
    assert!(prompt.starts_with("NOT_FOUND: no prompt"), "{out}");
    assert!(prompt.contains("there are none"), "{out}");
}

#[tokio::test]
async fn a_prompt_of_a_pack_without_prefix_renders_by_its_own_name() {
    let host = TestHost::start("[packs.exec_py]\n[packs.conformance]\nprefix = false\n").await;
    let code = "r = conformance.prompts.test_prompt_with_image()\n\
                [r['messages'][0]['content']['type'], [p['name'] for p in packhost.prompts()]]";
    let out = ok(&host.call("exec_py.run", json!({ "code": code })).await);
    assert_eq!(out["result"][0], "image", "{out}");
    let names = out["result"][1].as_array().unwrap();
    assert!(names.contains(&json!("test_prompt_with_image")), "{out}");
}
