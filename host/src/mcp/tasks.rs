//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a call
//! of a function that supports tasks, from a client that negotiated the
//! extension (for its session or in the request's `_meta`), answers at once
//! with a task; the client polls `tasks/get` for its status and, once it
//! ends, its result; `tasks/update` answers the questions the call asks
//! meanwhile; `tasks/cancel` stops it. rmcp's `TaskManager` keeps the
//! tasks; this module decides which calls become tasks, runs them, and
//! keeps each task to its caller: for anyone else a task id reads exactly
//! like an unknown one.
//!
//! rmcp already refuses `tasks/*` with -32021 to a client that did not
//! negotiate the extension, and a task result to a `tools/call` that did not.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use pack_api::{Owner, TaskSupport, codes};
use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities,
        CreateTaskResult, ErrorCode, GetTaskResult, InputRequest, TASKS_EXTENSION_ID, Tool,
    },
    service::RequestContext,
    task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions},
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    PackhostServer,
    ask::{check, read_question},
    notices::Notices,
    rounds::Escalated,
    wire::capabilities_of,
};
use crate::{
    executor::{Answers, Ask, Caller, Output, Questions, ToolInfo},
    failure::Failure,
    identity::Identity,
};

/// How long a task's id stays valid: from its start, and again after it
/// ends (rmcp keeps an ended task one more TTL so pollers see how it
/// ended). Longer than any call's time limit, which ends a task first; a
/// task still running at its TTL is stopped and reads `failed`.
const TTL_MS: u64 = 60 * 60 * 1000;

/// How long a task's instance is recorded for the others: as long as rmcp
/// keeps the task (its TTL from the start, and one more after it ends).
pub(super) const KEPT: Duration = Duration::from_millis(2 * TTL_MS);

/// How often a client is asked to poll `tasks/get`.
const POLL_INTERVAL_MS: u64 = 500;

/// How soon after its future returned a task's instance looks again
/// whether rmcp marked it ended.
const ENDED_POLL_MS: u64 = 5;

/// How many times it looks, at most (a second in all).
const ENDED_LOOKS: u32 = 200;

/// A call of a function that asks first (`FunctionSpec::asks_first`), from
/// a 2026-07-28 client that negotiated tasks, runs as a plain request
/// while it asks: its questions go back by rounds (`input_required`), and
/// it becomes a task once it has run this long without asking, or once
/// its questions are answered (the suite's `tasks-mrtr-composition`).
pub(super) const ASKS_FIRST_WITHIN: Duration = Duration::from_millis(500);

/// How many tasks one caller may have running at once on an instance. A
/// task does not hold a request open, so nothing else bounds how much work
/// a client leaves running.
const RUNNING_PER_CALLER: usize = 32;

/// How many one organisation's callers may have running at once on an
/// instance: one organisation's flood leaves room for the others'.
const RUNNING_PER_ORG: usize = 128;

/// The tasks of one server, every session's.
#[derive(Default)]
pub(super) struct Tasks {
    manager: TaskManager,
    /// Who started each task that rmcp may still hold.
    owners: Mutex<HashMap<String, Owner>>,
}

/// The tools whose calls may run as tasks (the rest never do).
pub(super) fn support_of(tools: &[ToolInfo]) -> HashMap<String, TaskSupport> {
    tools
        .iter()
        .filter(|tool| !tool.task_support.is_forbidden())
        .map(|tool| (tool.name.clone(), tool.task_support))
        .collect()
}

/// Say in `tools/list` whether a tool's calls run as tasks, the way
/// SEP-2663 has clients read it (`execution.taskSupport`). rmcp's `Tool`
/// has no `execution` member, so it is said in `_meta` under the
/// extension's id.
pub(super) fn declare(tool: &mut Tool, support: TaskSupport) {
    if support.is_forbidden() {
        return;
    }
    let mut meta = tool.meta.take().unwrap_or_default();
    meta.insert(
        TASKS_EXTENSION_ID.to_owned(),
        json!({ "taskSupport": support }),
    );
    tool.meta = Some(meta);
}

/// Whether a call of `tool` (whose functions say `support`) runs as a
/// task for this request; a tool that runs only as a task, called by a
/// client that did not negotiate tasks, is refused with -32021.
pub(super) fn runs_as_task(
    tool: &str,
    support: TaskSupport,
    context: &RequestContext<RoleServer>,
) -> Result<bool, ErrorData> {
    // Most calls are of functions that never run as tasks: they need not
    // read the client's capabilities.
    if support.is_forbidden() {
        return Ok(false);
    }
    let negotiated = capabilities_of(context).supports_tasks();
    match (support, negotiated) {
        (_, true) => Ok(true),
        (TaskSupport::Forbidden | TaskSupport::Optional, false) => Ok(false),
        (TaskSupport::Required, false) => Err(ErrorData::new(
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!(
                "`{tool}` runs only as a task: declare the `{TASKS_EXTENSION_ID}` extension in \
                 the client's capabilities (for the session, or in this request's `_meta`)"
            ),
            Some(json!({
                "requiredCapabilities": ClientCapabilities::builder().enable_tasks().build(),
            })),
        )),
    }
}

impl PackhostServer {
    /// Whether calls of `tool` may run as tasks, as `identity` sees it (a
    /// tool it may not call is none).
    pub(super) fn task_support(&self, tool: &str, identity: &Identity) -> TaskSupport {
        let support = self.listing().task_support.get(tool).copied();
        support
            .filter(|_| identity.may_call(tool))
            .unwrap_or_default()
    }
}

impl Tasks {
    /// Start `request` as a task of `server`'s, for the caller of
    /// `context` (a 2025-11-25 session: its call is a task from the
    /// start); the task can be read as soon as this returns. A caller with
    /// too many tasks running gets a failed call instead.
    pub(super) fn start(
        &self,
        server: &PackhostServer,
        request: CallToolRequestParams,
        identity: Identity,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let caller = Caller {
            log: server
                .log
                .forwarder(&Notices::to(&context.peer), &context.meta),
            ..Caller::new(identity.clone(), context.id.to_string())
        };
        let cancel = caller.cancel.clone();
        let (executor, tool) = (Arc::clone(&server.executor), request.name.to_string());
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let name = tool.clone();
        let work = move |ask| async move {
            let caller = Caller {
                ask: Some(ask),
                ..caller
            };
            executor.call_tool(&name, args, &caller).await
        };
        let capabilities = capabilities_of(context);
        self.spawn(server, identity, tool, capabilities, cancel, work)
    }

    /// Go on with a call that ran as a plain request first (2026-07-28:
    /// it may ask by rounds before it becomes a task) as a task.
    pub(super) fn adopt(
        &self,
        server: &PackhostServer,
        identity: Identity,
        tool: String,
        call: Escalated<Result<Output, Failure>>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let cancel = call.cancel();
        let work = move |ask| async move {
            let ended = call.finish(ask).await;
            ended.unwrap_or_else(|e| Err(Failure::internal(format!("the call's task failed: {e}"))))
        };
        let capabilities = capabilities_of(context);
        self.spawn(server, identity, tool, capabilities, cancel, work)
    }

    /// A call that ended while it ran as a plain request, as the task it
    /// would have been.
    pub(super) fn ended(
        &self,
        server: &PackhostServer,
        identity: Identity,
        tool: String,
        outcome: Result<Output, Failure>,
    ) -> CallToolResponse {
        let capabilities = ClientCapabilities::default();
        let work = move |_| async move { outcome };
        self.spawn(
            server,
            identity,
            tool,
            capabilities,
            CancellationToken::new(),
            work,
        )
    }

    /// A task running `work` (given how the task asks), which `cancel`
    /// stops, for the caller of `server`; its result is what a call of
    /// `tool` answers.
    fn spawn<F, Fut>(
        &self,
        server: &PackhostServer,
        identity: Identity,
        tool: String,
        capabilities: ClientCapabilities,
        cancel: CancellationToken,
        work: F,
    ) -> CallToolResponse
    where
        F: FnOnce(Arc<dyn Ask>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Output, Failure>> + Send + 'static,
    {
        let owner = Owner::new(&identity.org, &identity.user);
        if let Err(failure) = self.admit(&owner) {
            cancel.cancel();
            return server.failure(&tool, &failure, &identity).into();
        }
        let server = server.clone();
        let options = TaskOptions::new()
            .with_ttl_ms(TTL_MS)
            .with_poll_interval_ms(POLL_INTERVAL_MS);
        let task = self.manager.spawn(options, move |task| {
            let ask = Arc::new(TaskAsk::new(task.clone(), capabilities));
            Box::pin(run(server, tool, identity, cancel, work(ask), task))
        });
        let mut owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        // Forget the owners of tasks rmcp let go of (ended more than a TTL
        // ago), so the map holds no more than rmcp does.
        owners.retain(|id, _| self.manager.get_task(id).is_ok());
        owners.insert(task.task_id.clone(), owner);
        CreateTaskResult::new(task).into()
    }

    /// Whether `owner` may start one more task: within its own bound and
    /// its organisation's.
    fn admit(&self, owner: &Owner) -> Result<(), Failure> {
        let owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        let running: Vec<&Owner> = owners
            .iter()
            .filter(|(id, started_by)| {
                let task = self.manager.get_task(id);
                started_by.org == owner.org && task.is_ok_and(|task| !task.status().is_terminal())
            })
            .map(|(_, started_by)| started_by)
            .collect();
        let mine = running
            .iter()
            .filter(|started_by| **started_by == owner)
            .count();
        let refused = if mine >= RUNNING_PER_CALLER {
            format!("you have {mine} tasks running, the most one caller may have")
        } else if running.len() >= RUNNING_PER_ORG {
            format!(
                "your organisation has {} tasks running, the most one organisation may have",
                running.len()
            )
        } else {
            return Ok(());
        };
        Err(Failure::new(codes::LIMIT_EXCEEDED, refused)
            .with_help("wait for one to end (`tasks/get`), or cancel one (`tasks/cancel`)"))
    }

    /// `tasks/get`: the caller's task as it is now.
    pub(super) fn get(&self, id: &str, owner: &Owner) -> Result<GetTaskResult, ErrorData> {
        self.owned(id, owner)?;
        let task = self.manager.get_task(id).map_err(|_| unknown(id))?;
        Ok(GetTaskResult::new(task))
    }

    /// `tasks/update`: the client's answers to the task's questions; keys
    /// that are no open question of it are ignored.
    pub(super) fn update(
        &self,
        id: &str,
        answers: Answers,
        owner: &Owner,
    ) -> Result<(), ErrorData> {
        self.owned(id, owner)?;
        self.manager
            .update_task(id, answers)
            .map_err(|_| unknown(id))
    }

    /// `tasks/cancel`: stop the caller's task; an ended one stays as it
    /// ended.
    pub(super) fn cancel(&self, id: &str, owner: &Owner) -> Result<(), ErrorData> {
        self.owned(id, owner)?;
        self.manager.cancel_task(id).map_err(|_| unknown(id))
    }

    fn owned(&self, id: &str, owner: &Owner) -> Result<(), ErrorData> {
        let owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        match owners.get(id) {
            Some(started_by) if started_by == owner => Ok(()),
            _ => Err(unknown(id)),
        }
    }
}

/// The one answer for a task id that is not the caller's, whether another
/// caller's, ended too long ago, or never made.
fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "no task `{id}`: a task is kept for the caller that started it, until {} minutes \
             after it ends",
            TTL_MS / 60_000
        ),
        None,
    )
}

/// One task: the call until it ends, or until the client cancels it (the
/// call is then cancelled and dropped, which stops the pack's work). A
/// failure of the call is a `completed` task whose result says so, as a
/// direct call would answer; only the host's or the pack's internal
/// failures (a panic) are a `failed` task, with the error inlined. With
/// named instances, how it ended is then recorded for the others.
async fn run(
    server: PackhostServer,
    tool: String,
    identity: Identity,
    cancel: CancellationToken,
    work: impl Future<Output = Result<Output, Failure>>,
    task: TaskContext,
) -> Result<CallToolResult, TaskExit> {
    let ended = tokio::select! {
        biased;
        () = task.cancelled() => {
            cancel.cancel();
            Err(TaskExit::Cancelled)
        }
        outcome = work => match outcome {
            Err(failure) if failure.code() == codes::INTERNAL => Err(TaskExit::Error(
                ErrorData::internal_error(failure.text(), Some(failure.error_object())),
            )),
            outcome => Ok(server.answer(&tool, outcome, &identity).await),
        },
    };
    if server.peers.is_some() {
        tokio::spawn(record_end(server.clone(), task.task_id().to_owned()));
    }
    ended
}

/// Once task `id` ended (rmcp marks it right after its future returns),
/// record how (what `tasks/get` answers) in the database, so that every
/// instance answers it, even once this one is gone.
async fn record_end(server: PackhostServer, id: String) {
    let mut looks = 0;
    let ended = loop {
        match server.tasks.manager.get_task(&id) {
            Ok(task) if task.status().is_terminal() => break GetTaskResult::new(task),
            Ok(_) if looks < ENDED_LOOKS => looks += 1,
            _ => return,
        }
        tokio::time::sleep(Duration::from_millis(ENDED_POLL_MS)).await;
    };
    let json = serde_json::to_vec(&ended).expect("a task is JSON");
    let holders = server.executor.state().task_holders();
    if let Err(e) = holders.ended(&id, &json).await {
        tracing::warn!(task = %id, error = %e, "only this instance knows how the task ended");
    }
}

/// The questions of a call that runs as a task: the task reads
/// `input_required` with them as its `inputRequests` until `tasks/update`
/// answers every one.
struct TaskAsk {
    task: TaskContext,
    /// What the client declared it can answer.
    capabilities: ClientCapabilities,
    /// Rounds of questions so far: a key is used once in a task's life, so
    /// each round's keys are prefixed with its number.
    rounds: AtomicU64,
}

impl TaskAsk {
    fn new(task: TaskContext, capabilities: ClientCapabilities) -> Self {
        Self {
            task,
            capabilities,
            rounds: AtomicU64::new(0),
        }
    }
}

impl Ask for TaskAsk {
    fn ask(
        &self,
        questions: Questions,
    ) -> Pin<Box<dyn Future<Output = Result<Answers, Failure>> + Send>> {
        let round = self.rounds.fetch_add(1, Ordering::Relaxed);
        let asked: Result<Vec<(String, InputRequest)>, Failure> =
            check(&questions, &self.capabilities).and_then(|_| {
                questions
                    .into_iter()
                    .map(|(key, question)| Ok((key.clone(), read_question(&key, question)?)))
                    .collect()
            });
        let task = self.task.clone();
        Box::pin(async move {
            let waits = asked?.into_iter().map(|(key, question)| {
                let task = task.clone();
                async move {
                    let answer = task.request_input(format!("{round}-{key}"), question).await;
                    answer
                        .map(|answer| (key, answer))
                        .map_err(|exit| match exit {
                            TaskExit::Cancelled => {
                                Failure::new(codes::CANCELLED, "the task was cancelled")
                            }
                            TaskExit::Error(e) => Failure::internal(e.message.to_string()),
                        })
                }
            });
            futures_util::future::try_join_all(waits)
                .await
                .map(|answers| answers.into_iter().collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::JsonObject;

    use super::*;

    fn tool(support: TaskSupport) -> Tool {
        let mut tool = Tool::new("p.f", "f", JsonObject::new());
        declare(&mut tool, support);
        tool
    }

    #[test]
    fn only_tools_that_run_as_tasks_say_so() {
        assert_eq!(tool(TaskSupport::Forbidden).meta, None);
        let meta = tool(TaskSupport::Optional).meta.unwrap_or_default();
        assert_eq!(
            meta.get(TASKS_EXTENSION_ID),
            Some(&json!({"taskSupport": "optional"}))
        );
    }

    #[test]
    fn a_task_of_another_caller_reads_as_unknown() {
        let tasks = Tasks::default();
        let ada = Owner::new("acme", "ada");
        tasks
            .owners
            .lock()
            .unwrap()
            .insert("t1".to_owned(), ada.clone());
        // The same user name in another organisation is someone else.
        let other = Owner::new("other", "ada");
        assert_eq!(tasks.get("t1", &other).unwrap_err(), unknown("t1"));
        assert_eq!(tasks.cancel("t1", &other).unwrap_err(), unknown("t1"));
        let update = tasks.update("t1", Answers::new(), &other);
        assert_eq!(update.unwrap_err(), unknown("t1"));
        // The owner gets past the check, to rmcp (which never saw `t1`).
        assert_eq!(tasks.get("t1", &ada).unwrap_err(), unknown("t1"));
    }

    #[test]
    fn a_caller_has_so_many_tasks_running_at_most() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let _entered = runtime.enter();
        let tasks = Tasks::default();
        let (ada, bob) = (Owner::new("acme", "ada"), Owner::new("acme", "bob"));
        // Work that ends only when cancelled.
        let endless = |task: TaskContext| -> rmcp::task_manager::TaskFuture {
            Box::pin(async move {
                task.cancelled().await;
                Err(TaskExit::Cancelled)
            })
        };
        for _ in 0..RUNNING_PER_CALLER {
            assert_eq!(tasks.admit(&ada), Ok(()));
            let task = tasks.manager.spawn(TaskOptions::new(), endless);
            let mut owners = tasks.owners.lock().unwrap();
            owners.insert(task.task_id, ada.clone());
        }
        let refused = tasks.admit(&ada).unwrap_err();
        assert_eq!(refused.code(), codes::LIMIT_EXCEEDED);
        assert_eq!(tasks.admit(&bob), Ok(()));
        // One ended (cancelled here) makes room again.
        let one = tasks.owners.lock().unwrap().keys().next().unwrap().clone();
        tasks.manager.cancel_task(&one).unwrap();
        runtime.block_on(async {
            while tasks.admit(&ada).is_err() {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        });
        // Bob's organisation fills up; another's callers still start tasks.
        for n in RUNNING_PER_CALLER - 1..RUNNING_PER_ORG {
            let task = tasks.manager.spawn(TaskOptions::new(), endless);
            let colleague = Owner::new("acme", format!("user{}", n % 7));
            tasks.owners.lock().unwrap().insert(task.task_id, colleague);
        }
        let full = tasks.admit(&bob).unwrap_err();
        assert!(
            full.text()
                .contains("your organisation has 128 tasks running"),
            "{full:?}"
        );
        assert_eq!(tasks.admit(&Owner::new("other", "eve")), Ok(()));
    }
}
