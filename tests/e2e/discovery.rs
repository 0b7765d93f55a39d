//! What a model sees and how it finds the rest: the `packhost` pack's
//! discovery functions (from tools/call, `run`, Python and TypeScript),
//! exposure modes, and a caller's allow-list applied to all of it.

use packhost_tests::{
    Recorder, TestHost, call, downstream::catalog_section, failed, hello_section, http::HttpHost,
    ok, structured, text,
};
use rmcp::{RoleClient, service::RunningService};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::http::token;

fn config(notebooks: &TempDir, server: &str, extra: &str) -> String {
    format!(
        "[server]\n{server}\n[packs.exec_py]\n[packs.exec_ts]\nconfig = {{ notebooks_dir = {:?} }}\n\
         [packs.proj]\n{extra}\n{}[aliases]\nprojects = \"proj.list\"\n[projects]\nhere = \".\"\n",
        notebooks.path().display().to_string(),
        hello_section(""),
    )
}

async fn names(host: &TestHost) -> Vec<String> {
    let tools = host.client.list_all_tools().await.expect("tools/list");
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn describe_and_packs_answer_from_every_door() {
    let notebooks = TempDir::new().unwrap();
    let host = TestHost::start(&config(&notebooks, "", "")).await;
    let described = ok(&host
        .call("packhost.describe", json!({"name": "proj.read"}))
        .await);
    assert_eq!(described["kind"], "function");
    assert!(
        described["signature"]
            .as_str()
            .unwrap()
            .starts_with("proj.read(name: string, path: string")
    );
    assert_eq!(
        described["example"],
        "proj.read(name=\"<name>\", path=\"<path>\")"
    );
    // The pack's own title and examples (run as tests of the pack).
    assert!(described["title"].is_string(), "{described}");
    assert!(described["examples"][0]["args"].is_object(), "{described}");
    let by_alias = ok(&host.run("packhost.describe(\"projects\")").await);
    assert_eq!(by_alias["name"], "proj.list");
    let pack = ok(&host.run("packhost.describe(name=\"hello\")").await);
    assert_eq!(pack["kind"], "pack");
    let listed = ok(&host.call("packhost.packs", json!({})).await);
    let packs: Vec<&str> = listed["packs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for pack in ["exec_py", "exec_ts", "hello", "packhost", "proj"] {
        assert!(packs.contains(&pack), "{pack} missing: {packs:?}");
    }
    assert_eq!(listed["aliases"]["projects"], "proj.list");
    // From code, in both languages.
    let python = ok(&host
        .call(
            "exec_py.run",
            json!({"code": "packhost.describe('proj.list')['kind']"}),
        )
        .await);
    assert_eq!(python["result"], "function");
    let typescript = ok(&host
        .call(
            "exec_ts.execute",
            json!({"code": "(await packhost.describe({ name: 'proj.list' })).kind"}),
        )
        .await);
    assert_eq!(typescript["result"], "function", "{typescript}");
    let missing = host
        .call("packhost.describe", json!({"name": "proj.raed"}))
        .await;
    failed(&missing, "NOT_FOUND", &["did you mean `proj.read`?"]);
}

#[tokio::test]
async fn run_mode_lists_run_and_discovery_and_keeps_everything_callable() {
    let notebooks = TempDir::new().unwrap();
    let host = TestHost::start(&config(&notebooks, "expose = \"run\"", "")).await;
    let mut listed = names(&host).await;
    listed.sort();
    assert_eq!(
        listed,
        [
            "packhost.describe",
            "packhost.packs",
            "packhost.search",
            "run"
        ]
    );
    // Unlisted is not unreachable.
    assert_eq!(
        ok(&host.call("hello.greet", json!({"name": "x"})).await)["text"],
        "hello, x"
    );
    assert_eq!(ok(&host.run("hello.greet('y')").await)["text"], "hello, y");
    // A pack can be listed on its own.
    let host = TestHost::start(&config(&notebooks, "expose = \"run\"", "expose = \"all\"")).await;
    let listed = names(&host).await;
    assert!(listed.iter().any(|n| n == "proj.read"), "{listed:?}");
    assert!(
        !listed.iter().any(|n| n.starts_with("hello.")),
        "{listed:?}"
    );
    // And hidden in `all` mode.
    let host = TestHost::start(&config(&notebooks, "", "expose = \"run\"")).await;
    let listed = names(&host).await;
    assert!(!listed.iter().any(|n| n.starts_with("proj.")), "{listed:?}");
    assert!(listed.iter().any(|n| n == "hello.greet"), "{listed:?}");
}

#[tokio::test]
async fn a_caller_sees_only_what_its_token_allows_in_every_description() {
    let notebooks = TempDir::new().unwrap();
    let (token, entry) = token("eve", "acme", &["hello.greet", "run"]);
    let host = HttpHost::start(&format!("{}\n{entry}\n", config(&notebooks, "", "")), &[]).await;
    let client = host.client(Some(&token)).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let run = tools
        .iter()
        .find(|t| t.name == "run")
        .expect("run is allowed");
    let description = run.description.as_deref().unwrap_or_default();
    assert!(description.contains("hello.greet("), "{description}");
    for hidden in ["proj.", "hello.echo", "exec_py.run(", "projects="] {
        assert!(
            !description.contains(hidden),
            "`run` mentions {hidden}: {description}"
        );
    }
    let listed = call(&client, "packhost.packs", json!({})).await.unwrap();
    let listed = structured(&listed);
    let packs: Vec<&Value> = listed["packs"].as_array().unwrap().iter().collect();
    let hello = packs
        .iter()
        .find(|p| p["name"] == "hello")
        .expect("hello is listed");
    assert_eq!(hello["functions"], json!(["greet"]));
    assert!(!packs.iter().any(|p| p["name"] == "proj"), "{listed}");
    assert_eq!(listed["aliases"], json!({}), "the alias goes to proj.list");
    let hidden = call(&client, "packhost.describe", json!({"name": "proj.read"}))
        .await
        .unwrap();
    let message = text(&hidden);
    assert!(
        message.starts_with("NOT_FOUND: nothing you can call is named `proj.read`"),
        "{message}"
    );
    assert!(message.contains("packs: hello, packhost"), "{message}");
    assert!(
        !message.contains("exec_py") && !message.contains("proj.list"),
        "{message}"
    );
}

#[tokio::test]
async fn the_run_description_stays_small_with_hundreds_of_tools() {
    let notebooks = TempDir::new().unwrap();
    let small = TestHost::start("[packs.proj]\n").await;
    let described = |tools: Vec<rmcp::model::Tool>| {
        let run = tools.into_iter().find(|t| t.name == "run").unwrap();
        run.description.unwrap().to_string()
    };
    let few = described(small.client.list_all_tools().await.unwrap());
    assert!(
        few.contains("- proj.read(name: string, path: string"),
        "{few}"
    );
    let big = config(&notebooks, "", "") + &catalog_section("saas", None);
    let host = TestHost::start(&big).await;
    let listed = names(&host).await;
    assert!(listed.len() > 250, "{} tools", listed.len());
    let many = described(host.client.list_all_tools().await.unwrap());
    assert!(many.len() <= 1800, "{} characters: {many}", many.len());
    assert!(many.contains("packhost.search"), "{many}");
    assert!(many.contains("- saas: "), "{many}");
    assert!(!many.contains("saas.github_create_issue("), "{many}");
}

#[tokio::test]
async fn a_summarised_run_description_keeps_the_aliases_the_caller_may_call() {
    let notebooks = TempDir::new().unwrap();
    let config = config(&notebooks, "", "").replace(
        "[aliases]\n",
        "[aliases]\nissue = \"saas.github_create_issue\"\n",
    ) + &catalog_section("saas", None);
    let (all, all_entry) = token("ada", "acme", &[]);
    let (some, some_entry) = token("eve", "acme", &["run", "saas.*"]);
    let host = HttpHost::start(&format!("{config}\n{all_entry}\n{some_entry}\n"), &[]).await;
    let mut described = Vec::new();
    for token in [&all, &some] {
        let client = host.client(Some(token)).await.unwrap();
        let tools = client.list_all_tools().await.unwrap();
        let run = tools.into_iter().find(|t| t.name == "run").unwrap();
        let description = run.description.unwrap().to_string();
        // Summarised, and still within the budget.
        assert!(description.contains("- saas: "), "{description}");
        assert!(
            description.len() <= 1800,
            "{} characters",
            description.len()
        );
        described.push(description);
    }
    let [all, some] = &described[..] else {
        unreachable!()
    };
    assert!(all.contains("issue=saas.github_create_issue"), "{all}");
    assert!(all.contains("projects=proj.list"), "{all}");
    assert!(some.contains("issue=saas.github_create_issue"), "{some}");
    // An alias to what eve may not call is not hers to know.
    assert!(
        !some.contains("projects") && !some.contains("proj."),
        "{some}"
    );
}

#[tokio::test]
async fn search_finds_a_function_among_hundreds_and_only_the_callers() {
    let notebooks = TempDir::new().unwrap();
    let config = config(&notebooks, "", "") + &catalog_section("saas", None);
    let host = TestHost::start(&config).await;
    let found = ok(&host
        .call(
            "packhost.search",
            json!({"query": "post a message to a Slack channel"}),
        )
        .await);
    let names: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(names[..3].contains(&"saas.slack_post_message"), "{names:?}");
    // From code too.
    let python = ok(&host
        .call("exec_py.run", json!({"code": "packhost.search('read a file in a project', limit=3)['results'][0]['name']"}))
        .await);
    assert_eq!(python["result"], "proj.read", "{python}");
    drop(host);

    // A token that allows only hello finds nothing of saas or proj.
    let (token, entry) = token("eve", "acme", &["hello.*"]);
    let http = HttpHost::start(&format!("{config}\n{entry}\n"), &[]).await;
    let client = http.client(Some(&token)).await.unwrap();
    for query in [
        "post a message to a channel",
        "read a file in a project",
        "greet someone",
    ] {
        search_allowed_hello(&client, query).await;
    }
}

/// `packhost.search` of `query` by a client whose token allows `hello.*`
/// alone, checked to find nothing but hello's and packhost's functions.
pub(crate) async fn search_allowed_hello(
    client: &RunningService<RoleClient, Recorder>,
    query: &str,
) -> Value {
    let found = call(
        client,
        "packhost.search",
        json!({"query": query, "limit": 50}),
    )
    .await
    .unwrap();
    let found = structured(&found);
    for result in found["results"].as_array().unwrap() {
        let name = result["name"].as_str().unwrap();
        assert!(
            name.starts_with("hello.") || name.starts_with("packhost."),
            "{query}: {name}"
        );
    }
    found
}
