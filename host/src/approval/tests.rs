//! The executor with an approval policy, a pack served in-process through
//! the ABI's types, and a fake client that answers approval questions: the
//! call is made once when accepted, never when declined or when nobody can
//! be asked, from a client's call, `run` and code alike.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RResult, RStr},
};
use async_ffi::{FfiFuture, FutureExt as _};
use pack_api::{CallContextBox, CallResult, Pack, Pack_TO, codes};
use serde_json::{Value, json};

use super::{secrets::HIDDEN, spoken};
use crate::{
    backend::{Backend, Library, LoadedPack},
    config::{Approval, CallPattern, Config, Remember, Rule},
    executor::{Answers, Ask, Caller, Executor, Questions, SessionId},
    failure::Failure,
    identity::Identity,
};

/// Pack `fx`: `drop` (destructive, counts its runs), `read` (read-only),
/// and `code`, which calls `fx.drop` back through the host the way code
/// mode does and returns what that call returned.
struct Fx {
    drops: Arc<AtomicUsize>,
}

impl Pack for Fx {
    fn call(
        &self,
        function: RStr<'_>,
        args_json: RStr<'_>,
        ctx: CallContextBox,
    ) -> FfiFuture<CallResult> {
        let function = function.as_str().to_owned();
        let args = args_json.as_str().to_owned();
        let drops = Arc::clone(&self.drops);
        async move {
            match function.as_str() {
                "drop" => {
                    drops.fetch_add(1, Ordering::SeqCst);
                    RResult::ROk(json!({"dropped": true}).to_string().into())
                }
                "code" => {
                    ctx.call_tool(RStr::from_str("fx.drop"), RStr::from_str(&args))
                        .await
                }
                _ => RResult::ROk("{}".into()),
            }
        }
        .into_ffi()
    }

    fn shutdown(&self) -> FfiFuture<()> {
        async {}.into_ffi()
    }
}

fn fx(drops: &Arc<AtomicUsize>) -> LoadedPack {
    let function = |name: &str, hints: Value| {
        json!({
            "name": name,
            "description": name,
            "input_schema": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "token": {"type": "string"}},
            },
            "output_schema": {"type": "object"},
            "annotations": hints,
        })
    };
    let manifest = serde_json::from_value(json!({
        "name": "fx",
        "version": "1.0.0",
        "description": "approval fixture",
        "functions": [
            function("drop", json!({"destructiveHint": true})),
            function("read", json!({"readOnlyHint": true})),
            function("code", json!({"destructiveHint": false})),
        ],
    }))
    .expect("a manifest");
    let pack = Fx {
        drops: Arc::clone(drops),
    };
    LoadedPack {
        name: "fx".to_owned(),
        origin: "approval tests".to_owned(),
        manifest,
        backend: Backend::Library(Library::loaded("fx", Pack_TO::from_value(pack, TD_Opaque))),
        timeout: Duration::from_secs(10),
    }
}

/// A rule named `name` for `calls` (or destructive functions when empty).
fn rule(name: &str, calls: &[&str], remember: Remember) -> Rule {
    Rule {
        name: name.to_owned(),
        calls: calls
            .iter()
            .map(|c| CallPattern::parse(c).unwrap())
            .collect(),
        destructive: calls.is_empty(),
        except: Vec::new(),
        remember,
    }
}

/// A host with pack `fx` under `rules`, and the count of `fx.drop`'s runs.
fn host(rules: Vec<Rule>) -> (Arc<Executor>, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    let config = Config {
        approval: Approval { rules },
        ..Config::default()
    };
    let searcher = Arc::new(catalog_search::Searcher::new(None));
    (Executor::new(vec![fx(&drops)], &config, searcher), drops)
}

/// A client whose user always gives `answer` (or whose asking fails), and
/// who keeps every question put to it.
struct FakeClient {
    answer: Result<Value, Failure>,
    asked: Mutex<Vec<Questions>>,
}

impl FakeClient {
    fn answering(answer: Value) -> Arc<Self> {
        Arc::new(Self {
            answer: Ok(answer),
            asked: Mutex::new(Vec::new()),
        })
    }

    fn failing(failure: Failure) -> Arc<Self> {
        Arc::new(Self {
            answer: Err(failure),
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<Questions> {
        self.asked.lock().unwrap().clone()
    }
}

impl Ask for FakeClient {
    fn ask(
        &self,
        questions: Questions,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Answers, Failure>> + Send>> {
        self.asked.lock().unwrap().push(questions.clone());
        let answer = self.answer.clone().map(|answer| {
            questions
                .keys()
                .map(|key| (key.clone(), answer.clone()))
                .collect()
        });
        Box::pin(async move { answer })
    }
}

fn accept(remember: bool) -> Value {
    json!({"action": "accept", "content": {"decision": "accept", "remember": remember}})
}

/// A call from `user` of `org` in `session`, asking `client`.
fn caller(org: &str, user: &str, session: SessionId, client: Option<Arc<FakeClient>>) -> Caller {
    let identity = Identity {
        user: user.to_owned(),
        org: org.to_owned(),
        allowed: None,
        admin: false,
    };
    Caller {
        ask: client.map(|client| client as Arc<dyn Ask>),
        session: Some(session),
        ..Caller::new(identity, "test")
    }
}

/// The one question of `questions`.
#[track_caller]
fn only_question(questions: &Questions) -> &Value {
    assert_eq!(questions.len(), 1, "{questions:#?}");
    let (key, question) = questions.iter().next().unwrap();
    assert!(key.starts_with("approval-"), "{key}");
    question
}

/// The message of the one question `client` was asked so far.
#[track_caller]
fn only_message(client: &FakeClient) -> String {
    let asked = client.asked();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let question = only_question(&asked[0]);
    assert_eq!(question["method"], "elicitation/create");
    question["params"]["message"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn an_accepted_call_runs_once_and_the_question_hides_secrets() {
    let (executor, drops) = host(vec![rule("deletes", &["fx.drop"], Remember::No)]);
    let client = FakeClient::answering(accept(false));
    let alice = caller("acme", "alice", SessionId::unique(), Some(client.clone()));
    let args = json!({"name": "db", "token": "s3cret-value"});
    let output = executor.call_tool("fx.drop", args, &alice).await.unwrap();
    assert_eq!(output.value, json!({"dropped": true}));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    let message = only_message(&client);
    assert!(message.contains("`fx.drop`") && message.contains("[approval.deletes]"));
    assert!(
        message.contains("\"db\"") && message.contains(HIDDEN),
        "{message}"
    );
    assert!(!message.contains("s3cret-value"), "{message}");
    // Nothing was to be remembered: the next call asks again.
    executor
        .call_tool("fx.drop", json!({}), &alice)
        .await
        .unwrap();
    assert_eq!((client.asked().len(), drops.load(Ordering::SeqCst)), (2, 2));
}

#[tokio::test]
async fn a_declined_or_cancelled_call_is_not_made() {
    let (executor, drops) = host(vec![rule("deletes", &["fx.drop"], Remember::No)]);
    let answers = [
        json!({"action": "decline"}),
        json!({"action": "cancel"}),
        json!({"action": "accept", "content": {"decision": "decline"}}),
    ];
    for answer in answers {
        let client = FakeClient::answering(answer.clone());
        let alice = caller("acme", "alice", SessionId::unique(), Some(client));
        let failure = executor
            .call_tool("fx.drop", json!({}), &alice)
            .await
            .unwrap_err();
        assert_eq!(failure.code(), codes::DECLINED, "{answer}");
        assert!(failure.text().contains("[approval.deletes]"), "{failure}");
    }
    assert_eq!(drops.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn without_a_client_that_can_answer_the_call_is_refused_naming_the_rule() {
    let (executor, drops) = host(vec![rule("deletes", &["fx.drop"], Remember::No)]);
    let cannot = FakeClient::failing(Failure::new(
        codes::INPUT_UNAVAILABLE,
        "the client did not declare elicitation",
    ));
    for client in [None, Some(cannot)] {
        let alice = caller("acme", "alice", SessionId::unique(), client);
        let failure = executor
            .call_tool("fx.drop", json!({}), &alice)
            .await
            .unwrap_err();
        assert_eq!(failure.code(), codes::APPROVAL_UNAVAILABLE);
        let text = failure.text();
        assert!(
            text.contains("`[approval.deletes]` in packs.toml"),
            "{text}"
        );
        assert!(text.contains("help: call it from an MCP client"), "{text}");
    }
    assert_eq!(drops.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn calls_from_code_and_run_ask_the_same_and_code_sees_declined() {
    let (executor, drops) = host(vec![rule("destructive", &[], Remember::No)]);
    let session = SessionId::unique();
    // `fx.code` itself is not destructive; the `fx.drop` it makes is.
    let declining = FakeClient::answering(json!({"action": "decline"}));
    let alice = caller("acme", "alice", session, Some(declining.clone()));
    let failure = executor
        .call_tool("fx.code", json!({"name": "db"}), &alice)
        .await
        .unwrap_err();
    assert_eq!(failure.code(), codes::DECLINED);
    assert!(only_message(&declining).contains("`fx.drop`"));
    let accepting = FakeClient::answering(accept(false));
    let alice = caller("acme", "alice", session, Some(accepting.clone()));
    executor
        .call_tool("fx.code", json!({"name": "db"}), &alice)
        .await
        .unwrap();
    let run = json!({"command": "fx.drop(name='db')"});
    executor.call_tool("run", run, &alice).await.unwrap();
    assert_eq!(
        (accepting.asked().len(), drops.load(Ordering::SeqCst)),
        (2, 2)
    );
    // A function the rule does not match asks nothing.
    executor
        .call_tool("fx.read", json!({}), &alice)
        .await
        .unwrap();
    assert_eq!(accepting.asked().len(), 2);
}

#[tokio::test]
async fn a_session_approval_is_the_callers_in_that_session_only() {
    let (executor, drops) = host(vec![rule("deletes", &["fx.drop"], Remember::Session)]);
    let client = FakeClient::answering(accept(true));
    let session = SessionId::unique();
    let alice = caller("acme", "alice", session, Some(client.clone()));
    for _ in 0..3 {
        executor
            .call_tool("fx.drop", json!({}), &alice)
            .await
            .unwrap();
    }
    assert_eq!((client.asked().len(), drops.load(Ordering::SeqCst)), (1, 3));
    let asked = client.asked();
    let offer = &only_question(&asked[0])["params"]["requestedSchema"]["properties"];
    assert_eq!(
        offer["remember"]["title"],
        "Don't ask again about `fx.drop` in this session"
    );
    // Another session of alice, the same session id under another
    // organisation, and bob: each is asked.
    let others = [
        caller("acme", "alice", SessionId::unique(), Some(client.clone())),
        caller("globex", "alice", session, Some(client.clone())),
        caller("acme", "bob", session, Some(client.clone())),
    ];
    for (i, other) in others.iter().enumerate() {
        executor
            .call_tool("fx.drop", json!({}), other)
            .await
            .unwrap();
        assert_eq!(client.asked().len(), 2 + i);
    }
}

#[tokio::test]
async fn a_timed_approval_holds_across_sessions_but_never_across_organisations() {
    let thirty = Remember::For(Duration::from_secs(30 * 60));
    let (executor, _) = host(vec![rule("deletes", &["fx.drop"], thirty)]);
    let client = FakeClient::answering(accept(true));
    let acme = caller("acme", "alice", SessionId::unique(), Some(client.clone()));
    executor
        .call_tool("fx.drop", json!({}), &acme)
        .await
        .unwrap();
    let asked = client.asked();
    let offer = &only_question(&asked[0])["params"]["requestedSchema"]["properties"];
    assert_eq!(
        offer["remember"]["title"],
        "Don't ask again about `fx.drop` for 30 minutes"
    );
    let later = caller("acme", "alice", SessionId::unique(), Some(client.clone()));
    executor
        .call_tool("fx.drop", json!({}), &later)
        .await
        .unwrap();
    assert_eq!(client.asked().len(), 1);
    // Another organisation, with no client to ask: refused, not waved
    // through on acme's approval.
    let globex = caller("globex", "alice", SessionId::unique(), None);
    let failure = executor
        .call_tool("fx.drop", json!({}), &globex)
        .await
        .unwrap_err();
    assert_eq!(failure.code(), codes::APPROVAL_UNAVAILABLE);
}

#[tokio::test]
async fn a_user_who_does_not_tick_remember_is_asked_again() {
    let (executor, _) = host(vec![rule("deletes", &["fx.drop"], Remember::Session)]);
    let client = FakeClient::answering(accept(false));
    let alice = caller("acme", "alice", SessionId::unique(), Some(client.clone()));
    for _ in 0..2 {
        executor
            .call_tool("fx.drop", json!({}), &alice)
            .await
            .unwrap();
    }
    assert_eq!(client.asked().len(), 2);
}

#[test]
fn durations_are_spoken_in_their_largest_whole_unit() {
    let spoken = |secs| spoken(Duration::from_secs(secs));
    assert_eq!(spoken(90), "90 seconds");
    assert_eq!(spoken(60), "1 minute");
    assert_eq!(spoken(1800), "30 minutes");
    assert_eq!(spoken(7200), "2 hours");
}

/// Every question asked and its answer reach the audit trail, the
/// arguments masked as the question masks them; a call no rule matches
/// asks nothing and records no approval.
#[tokio::test]
async fn each_answer_is_recorded_with_its_arguments_masked() {
    use audit_store::{Filter, Kind, Scope};

    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        approval: Approval {
            rules: vec![rule("deletes", &["fx.drop"], Remember::No)],
        },
        audit: Some(crate::config::AuditConfig {
            database: Some(dir.path().join("audit.db").display().to_string()),
            ..Default::default()
        }),
        ..Config::default()
    };
    let drops = Arc::new(AtomicUsize::new(0));
    let searcher = Arc::new(catalog_search::Searcher::new(None));
    let executor = Executor::new(vec![fx(&drops)], &config, searcher);
    let args = json!({"name": "db", "token": "s3cret-value"});
    for answer in [accept(false), json!({"action": "decline"})] {
        let client = FakeClient::answering(answer);
        let alice = caller("acme", "alice", SessionId::unique(), Some(client));
        let _ = executor.call_tool("fx.drop", args.clone(), &alice).await;
    }
    let alice = caller("acme", "alice", SessionId::unique(), None);
    executor.call_tool("fx.read", args, &alice).await.unwrap();
    executor.audit().flush().await;
    let filter = Filter {
        kind: Some(Kind::Approval),
        ..Filter::new(Scope::Org("acme".into()))
    };
    let events = executor.audit().query(&filter).await.unwrap();
    let answers: Vec<&str> = events.iter().map(|e| e.outcome.as_str()).collect();
    assert_eq!(answers, ["accept", "decline"]);
    for event in &events {
        assert_eq!(event.tool.as_deref(), Some("fx.drop"));
        assert_eq!(event.user.as_deref(), Some("alice"));
        assert_eq!(event.detail["rule"], "deletes");
        let arguments = event.detail["arguments"].as_str().unwrap();
        assert!(
            arguments.contains(&format!("\"token\": \"{HIDDEN}\"")),
            "{arguments}"
        );
        assert!(!arguments.contains("s3cret-value"), "{arguments}");
    }
}
