//! Multi round-trip requests (MCP 2026-07-28): a call that asks its client
//! something is answered with `input_required` (the questions, and a
//! `requestState` this host signs), and the client's retry of the same
//! request, carrying the answers, continues it.
//!
//! The call is not run again: it waits, held here, where it stopped, so
//! nothing it did before its question happens twice (an approval asked in
//! the middle of code runs the code once). A held call belongs to its
//! caller (the state is bound to organisation, user, method, name and
//! arguments), is bounded in number, and is dropped (its work cancelled)
//! when unanswered for [`HELD_FOR`]. A retry whose call is not held here
//! (another instance with the same key, or after a restart) runs the call
//! again, answering its questions from the answers the state carries and
//! the retry gives, so only what it did before its first question repeats.
//!
//! A retry's `inputResponses` are read for the questions its state says
//! were pending; a request without a state may carry answers too (SEP-2322
//! lets a client send them up front), which answer a pack's own questions
//! but never the host's approvals ([`Ask::ask_anew`]); and a state opens
//! one retry, once ([`States`]).

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use pack_api::{Owner, codes};
use rmcp::{
    ErrorData,
    model::{ClientCapabilities, InputRequests, InputRequiredResult, InputResponses},
};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use tokio_util::{sync::CancellationToken, task::AbortOnDropHandle};

use super::{
    ask::{check, fits},
    states::States,
};
use crate::{
    executor::{Answers, Ask, Questions},
    failure::Failure,
};

/// How long a held call waits for its client's answer.
pub(super) const HELD_FOR: Duration = Duration::from_secs(600);
/// Held calls per caller; a further one drops that caller's oldest.
const HELD_PER_OWNER: usize = 16;
/// Held calls in all; a further one drops the oldest.
const HELD_IN_ALL: usize = 1024;
/// Answers larger than this are not carried in the state (a retry on
/// another instance then asks them again).
const CARRIED_ANSWERS_MAX: usize = 64 * 1024;

/// What the client's request carries for the rounds.
pub(super) struct Retry {
    pub(super) state: Option<String>,
    pub(super) responses: Option<InputResponses>,
}

/// One request of a call, as the rounds see it.
pub(super) struct Request<'a> {
    pub(super) owner: &'a Owner,
    /// Names the request (method, name, arguments), so a state answers
    /// only the request it was given for.
    pub(super) binding: &'a str,
    pub(super) retry: Retry,
    pub(super) capabilities: ClientCapabilities,
    pub(super) cancelled: CancellationToken,
    /// After this long without ending or asking, the call is handed back
    /// running ([`Step::Running`]), to go on as a task.
    pub(super) escalate_after: Option<Duration>,
}

/// What one request of a call comes to.
pub(super) enum Step<T> {
    Done(T),
    Asked(InputRequiredResult),
    Running(Escalated<T>),
}

/// What a state is sealed for: the caller and the request.
fn bound(owner: &Owner, binding: &str) -> String {
    format!("{}\n{}\n{binding}", owner.org, owner.user)
}

/// A call handed back running: it goes on elsewhere (as a task), its
/// further questions asked the way that place asks.
pub(super) struct Escalated<T>(Running<T>);

impl<T: Send + 'static> Escalated<T> {
    /// The token that cancels the call.
    pub(super) fn cancel(&self) -> CancellationToken {
        self.0.cancel.clone()
    }

    /// The call's end, its questions put through `ask`.
    pub(super) async fn finish(self, ask: Arc<dyn Ask>) -> Result<T, tokio::task::JoinError> {
        let Running {
            mut result,
            mut questions,
            ..
        } = self.0;
        loop {
            tokio::select! {
                ended = &mut result => return ended,
                Some(asked) = questions.recv() => {
                    // The call may have ended meanwhile; then the answer is moot.
                    let _ = asked.answer.send(ask.ask(asked.questions).await);
                }
            }
        }
    }
}

/// The calls of one kind (tool calls, prompt renders) held between rounds.
pub(super) struct Rounds<T> {
    states: Arc<States>,
    held: Mutex<HashMap<String, Held<T>>>,
    /// This instance's name (`[http] instance`), written in each state it
    /// seals so that a retry reaching another instance finds the holder.
    here: Option<String>,
}

/// What ends a request's wait besides the call: the client cancelling,
/// or the time after which the call goes on as a task.
struct Watch {
    cancelled: CancellationToken,
    escalate_after: Option<Duration>,
}

/// What a state says: which held call, the answers given so far, and the
/// keys of the questions it was given with (the only ones a retry with it
/// may answer).
#[derive(Serialize, Deserialize)]
struct State {
    id: String,
    /// The instance holding the call (`[http] instance`), when named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at: Option<String>,
    #[serde(default)]
    answers: Answers,
    #[serde(default)]
    asked: Vec<String>,
}

struct Held<T> {
    owner: Owner,
    call: Running<T>,
    pending: Asked,
    answers: Answers,
    expires: Instant,
}

struct Running<T> {
    result: AbortOnDropHandle<T>,
    questions: mpsc::UnboundedReceiver<Asked>,
    cancel: CancellationToken,
}

struct Asked {
    questions: Questions,
    methods: Vec<&'static str>,
    answer: oneshot::Sender<Result<Answers, Failure>>,
}

impl<T: Send + 'static> Rounds<T> {
    pub(super) fn new(states: Arc<States>, here: Option<String>) -> Self {
        Self {
            states,
            held: Mutex::default(),
            here,
        }
    }

    /// The instance that holds the call `sealed` (a retry's state of
    /// `owner`'s request `binding`) resumes, when its state names one; the
    /// state is checked, not used.
    pub(super) fn holder(&self, sealed: &str, owner: &Owner, binding: &str) -> Option<String> {
        let binding = bound(owner, binding);
        let state: State = self.states.verify(sealed, &binding).ok()?;
        state.at
    }

    /// One request of a call: `start` runs it (given how it asks and the
    /// token that cancels it) unless the state names a call held here.
    pub(super) async fn run<F, Fut>(
        &self,
        request: Request<'_>,
        start: F,
    ) -> Result<Step<T>, ErrorData>
    where
        F: FnOnce(Arc<dyn Ask>, CancellationToken) -> Fut,
        Fut: Future<Output = T> + Send + 'static,
    {
        let Request {
            owner,
            binding,
            retry,
            capabilities,
            cancelled,
            escalate_after,
        } = request;
        let binding = bound(owner, binding);
        let state = match retry.state.as_deref() {
            Some(state) => Some(self.states.open::<State>(state, &binding).await?),
            None => None,
        };
        let responses = retry.responses.unwrap_or_default();
        let held = state.as_ref().and_then(|state| self.take(&state.id, owner));
        let (id, call, answers) = match (held, state) {
            (Some(held), _) => {
                let Held {
                    call,
                    pending,
                    mut answers,
                    ..
                } = held;
                let Some(given) = answered(&pending, &responses) else {
                    // Not every pending question answered (or answered in
                    // a shape that does not fit): asked again.
                    let id = new_id();
                    let asked = self.asked(&id, &pending, &answers, &binding);
                    self.hold(id, owner, call, pending, answers);
                    return Ok(Step::Asked(asked));
                };
                answers.extend(given.clone());
                // The call may have ended meanwhile; then the answer is moot.
                let _ = pending.answer.send(Ok(given));
                (new_id(), call, answers)
            }
            (None, state) => {
                // Not held here: run again, answered by what the state
                // carries and the retry's answers to the questions it asked;
                // a first request's answers were given before any question.
                let (given, unasked) = match state {
                    Some(State {
                        mut answers, asked, ..
                    }) => {
                        let retried = responses.into_iter().filter(|(key, _)| asked.contains(key));
                        answers.extend(retried);
                        (answers, Answers::new())
                    }
                    None => (Answers::new(), responses.into_iter().collect()),
                };
                let (sender, questions) = mpsc::unbounded_channel();
                let ask = RetryAsk {
                    given: given.clone(),
                    unasked,
                    capabilities,
                    sender,
                };
                let cancel = CancellationToken::new();
                let result = tokio::spawn(start(Arc::new(ask), cancel.clone()));
                let call = Running {
                    result: AbortOnDropHandle::new(result),
                    questions,
                    cancel,
                };
                (new_id(), call, given)
            }
        };
        let watch = Watch {
            cancelled,
            escalate_after,
        };
        self.drive(id, owner, call, answers, &binding, watch).await
    }

    /// Runs the call until it ends or asks.
    async fn drive(
        &self,
        id: String,
        owner: &Owner,
        mut call: Running<T>,
        answers: Answers,
        binding: &str,
        watch: Watch,
    ) -> Result<Step<T>, ErrorData> {
        let escalate = async {
            match watch.escalate_after {
                Some(after) => tokio::time::sleep(after).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = &mut call.result => result.map(Step::Done).map_err(|e| {
                ErrorData::internal_error(format!("the call's task failed: {e}"), None)
            }),
            Some(pending) = call.questions.recv() => {
                let asked = self.asked(&id, &pending, &answers, binding);
                self.hold(id, owner, call, pending, answers);
                Ok(Step::Asked(asked))
            }
            () = escalate => Ok(Step::Running(Escalated(call))),
            () = watch.cancelled.cancelled() => {
                // The call ends as cancelled, and says so as its result.
                call.cancel.cancel();
                (&mut call.result).await.map(Step::Done).map_err(|e| {
                    ErrorData::internal_error(format!("the call's task failed: {e}"), None)
                })
            }
        }
    }

    fn asked(
        &self,
        id: &str,
        pending: &Asked,
        answers: &Answers,
        binding: &str,
    ) -> InputRequiredResult {
        let carried = serde_json::to_string(answers).map_or(0, |a| a.len());
        let state = State {
            id: id.to_owned(),
            at: self.here.clone(),
            answers: if carried <= CARRIED_ANSWERS_MAX {
                answers.clone()
            } else {
                Answers::new()
            },
            asked: pending.questions.keys().cloned().collect(),
        };
        let sealed = self.states.seal(&state, binding);
        let requests: InputRequests = pending
            .questions
            .iter()
            .filter_map(|(key, q)| Some((key.clone(), serde_json::from_value(q.clone()).ok()?)))
            .collect();
        InputRequiredResult::new(Some(requests), Some(sealed))
    }

    /// The call held under `id` for `owner` (the state's binding already
    /// says whose it is; the table says it again).
    fn take(&self, id: &str, owner: &Owner) -> Option<Held<T>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let theirs = held.get(id)?.owner == *owner;
        theirs
            .then(|| held.remove(id))
            .flatten()
            .filter(|h| h.expires > Instant::now())
    }

    fn hold(&self, id: String, owner: &Owner, call: Running<T>, pending: Asked, answers: Answers) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        held.retain(|_, h| h.expires > now);
        let oldest = |held: &HashMap<String, Held<T>>, of: Option<&Owner>| {
            held.iter()
                .filter(|(_, h)| of.is_none_or(|o| &h.owner == o))
                .min_by_key(|(_, h)| h.expires)
                .map(|(id, _)| id.clone())
        };
        if held.values().filter(|h| &h.owner == owner).count() >= HELD_PER_OWNER {
            oldest(&held, Some(owner)).and_then(|id| held.remove(&id));
        }
        if held.len() >= HELD_IN_ALL {
            oldest(&held, None).and_then(|id| held.remove(&id));
        }
        held.insert(
            id,
            Held {
                owner: owner.clone(),
                call,
                pending,
                answers,
                expires: now + HELD_FOR,
            },
        );
    }
}

/// The answers to every pending question, when the responses hold them
/// all in a shape that fits; what else they hold is ignored.
fn answered(pending: &Asked, responses: &InputResponses) -> Option<Answers> {
    pending
        .questions
        .keys()
        .zip(&pending.methods)
        .map(|(key, method)| {
            let answer = responses.get(key).filter(|a| fits(method, a))?;
            Some((key.clone(), answer.clone()))
        })
        .collect()
}

fn new_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS gives random bytes");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How a call asks on this wire: answers the request (or the state)
/// already gave are taken at once; other questions wait for a round.
struct RetryAsk {
    /// Answers given to questions once asked (carried by the state).
    given: Answers,
    /// Answers a first request carried before anything was asked.
    unasked: Answers,
    capabilities: ClientCapabilities,
    sender: mpsc::UnboundedSender<Asked>,
}

impl RetryAsk {
    /// `questions` answered from what is known (with `unasked` answers
    /// too, or not), else put to the client in a round.
    fn answer(
        &self,
        questions: Questions,
        unasked: bool,
    ) -> Pin<Box<dyn Future<Output = Result<Answers, Failure>> + Send>> {
        let methods = match check(&questions, &self.capabilities) {
            Ok(methods) => methods,
            Err(failure) => return Box::pin(async { Err(failure) }),
        };
        let known: Option<Answers> = questions
            .keys()
            .zip(&methods)
            .map(|(key, method)| {
                let given = self.given.get(key);
                let given = given.or_else(|| unasked.then(|| self.unasked.get(key)).flatten());
                let answer = given.filter(|a| fits(method, a))?;
                Some((key.clone(), answer.clone()))
            })
            .collect();
        if let Some(known) = known {
            return Box::pin(async { Ok(known) });
        }
        let (answer, answered) = oneshot::channel();
        let sent = self.sender.send(Asked {
            questions,
            methods,
            answer,
        });
        Box::pin(async move {
            sent.map_err(|_| cancelled())?;
            answered.await.map_err(|_| cancelled())?
        })
    }
}

impl Ask for RetryAsk {
    fn ask(
        &self,
        questions: Questions,
    ) -> Pin<Box<dyn Future<Output = Result<Answers, Failure>> + Send>> {
        self.answer(questions, true)
    }

    fn ask_anew(
        &self,
        questions: Questions,
    ) -> Pin<Box<dyn Future<Output = Result<Answers, Failure>> + Send>> {
        self.answer(questions, false)
    }
}

fn cancelled() -> Failure {
    Failure::new(
        codes::CANCELLED,
        "the client's answer never came: the request ended or its state expired",
    )
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rmcp::model::ClientCapabilities;
    use serde_json::{Value, json};

    use super::*;
    use state_store::SpentHere;

    /// States sealed with one test key, as instances sharing it have.
    fn states() -> Arc<States> {
        let spent = Arc::new(SpentHere::default());
        Arc::new(States::with_key(vec![7; 32], HELD_FOR, spent).unwrap())
    }

    fn rounds() -> Rounds<String> {
        Rounds::new(states(), None)
    }

    /// A request of `owner` to the test's tool, retrying with `retry`.
    fn request(owner: &Owner, retry: Retry) -> Request<'_> {
        Request {
            owner,
            binding: "tools/call\ngreet",
            retry,
            capabilities: elicitation(),
            cancelled: CancellationToken::new(),
            escalate_after: None,
        }
    }

    fn elicitation() -> ClientCapabilities {
        serde_json::from_value(json!({"elicitation": {}})).unwrap()
    }

    fn owner(user: &str) -> Owner {
        Owner::new("acme", user)
    }

    /// A call that counts its starts, asks the user's name, and returns it.
    fn greeter(
        starts: &Arc<AtomicUsize>,
    ) -> impl FnOnce(Arc<dyn Ask>, CancellationToken) -> Pin<Box<dyn Future<Output = String> + Send>>
    {
        asker(starts, &["name"], false)
    }

    /// A call that counts its starts, asks for a name under each of `keys`
    /// in turn (`anew`: as the host's approvals ask), and returns the names
    /// given.
    fn asker(
        starts: &Arc<AtomicUsize>,
        keys: &[&str],
        anew: bool,
    ) -> impl FnOnce(Arc<dyn Ask>, CancellationToken) -> Pin<Box<dyn Future<Output = String> + Send>>
    {
        let starts = Arc::clone(starts);
        let keys: Vec<String> = keys.iter().map(|key| (*key).to_owned()).collect();
        move |ask, _| {
            Box::pin(async move {
                starts.fetch_add(1, Ordering::SeqCst);
                let mut names = Vec::new();
                for key in keys {
                    let question = json!({"method": "elicitation/create",
                        "params": {"message": "name?", "requestedSchema": {"type": "object"}}});
                    let questions = Questions::from_iter([(key.clone(), question)]);
                    let asked = if anew {
                        ask.ask_anew(questions)
                    } else {
                        ask.ask(questions)
                    };
                    match asked.await {
                        Ok(answers) => names.push(answers[&key]["content"]["name"].to_string()),
                        Err(failure) => return failure.text(),
                    }
                }
                names.join(",")
            })
        }
    }

    fn answer(name: &str) -> InputResponses {
        answers(&[("name", name)])
    }

    fn answers(given: &[(&str, &str)]) -> InputResponses {
        given
            .iter()
            .map(|(key, name)| {
                let answer = json!({"action": "accept", "content": {"name": name}});
                ((*key).to_owned(), answer)
            })
            .collect()
    }

    async fn step(
        rounds: &Rounds<String>,
        user: &str,
        state: Option<String>,
        responses: Option<InputResponses>,
        starts: &Arc<AtomicUsize>,
    ) -> Result<Step<String>, ErrorData> {
        let owner = owner(user);
        let retry = Retry { state, responses };
        rounds.run(request(&owner, retry), greeter(starts)).await
    }

    fn state_of(step: Result<Step<String>, ErrorData>) -> String {
        match step {
            Ok(Step::Asked(asked)) => asked.request_state.expect("a state"),
            Ok(Step::Done(done)) => panic!("done without asking: {done}"),
            Ok(Step::Running(_)) => panic!("handed back running"),
            Err(e) => panic!("{e:?}"),
        }
    }

    fn done(step: Result<Step<String>, ErrorData>) -> String {
        match step {
            Ok(Step::Done(done)) => done,
            Ok(Step::Asked(_) | Step::Running(_)) => panic!("not done"),
            Err(e) => panic!("{e:?}"),
        }
    }

    #[tokio::test]
    async fn a_held_call_is_answered_without_starting_again() {
        let (rounds, starts) = (rounds(), Arc::new(AtomicUsize::new(0)));
        let state = state_of(step(&rounds, "ada", None, None, &starts).await);
        let answered = step(&rounds, "ada", Some(state), Some(answer("Ada")), &starts);
        assert_eq!(done(answered.await), "\"Ada\"");
        assert_eq!(starts.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_state_answers_only_its_own_caller_and_only_unchanged() {
        let (rounds, starts) = (rounds(), Arc::new(AtomicUsize::new(0)));
        let state = state_of(step(&rounds, "ada", None, None, &starts).await);
        for (who, state) in [("eve", state.clone()), ("ada", format!("{state}x"))] {
            let refused = step(&rounds, who, Some(state), Some(answer("Eve")), &starts).await;
            let error = refused.err().expect("refused");
            assert_eq!(error.code.0, -32602, "{error:?}");
        }
    }

    #[tokio::test]
    async fn past_its_bound_a_callers_oldest_call_is_dropped_and_runs_again_answered() {
        let (rounds, starts) = (rounds(), Arc::new(AtomicUsize::new(0)));
        let mut states = Vec::new();
        for _ in 0..=HELD_PER_OWNER {
            states.push(state_of(step(&rounds, "ada", None, None, &starts).await));
        }
        assert_eq!(rounds.held.lock().unwrap().len(), HELD_PER_OWNER);
        // The first was dropped: its retry starts it again, and the answer
        // the retry gives answers it.
        let first = states.remove(0);
        let again = step(&rounds, "ada", Some(first), Some(answer("Ada")), &starts);
        assert_eq!(done(again.await), "\"Ada\"");
        assert_eq!(starts.load(Ordering::SeqCst), HELD_PER_OWNER + 2);
        // Another caller's calls were never counted against ada's.
        let bob = state_of(step(&rounds, "bob", None, None, &starts).await);
        let answered = step(&rounds, "bob", Some(bob), Some(answer("Bob")), &starts);
        assert_eq!(done(answered.await), "\"Bob\"");
    }

    #[tokio::test]
    async fn answers_sent_up_front_answer_a_packs_questions_but_never_an_approval() {
        let (rounds, starts) = (rounds(), Arc::new(AtomicUsize::new(0)));
        let ada = owner("ada");
        let first = || {
            let up_front = Retry {
                state: None,
                responses: Some(answer("Ada")),
            };
            request(&ada, up_front)
        };
        let pack = rounds.run(first(), asker(&starts, &["name"], false));
        assert_eq!(done(pack.await), "\"Ada\"", "SEP-2322's answers up front");
        // The key is easy to guess: an approval is asked all the same.
        let approval = rounds.run(first(), asker(&starts, &["name"], true));
        let state = state_of(approval.await);
        let answered = step(&rounds, "ada", Some(state), Some(answer("Ada")), &starts);
        assert_eq!(done(answered.await), "\"Ada\"");
        assert_eq!(starts.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_state_opens_one_retry_and_its_replay_is_refused() {
        let (rounds, starts) = (rounds(), Arc::new(AtomicUsize::new(0)));
        let state = state_of(step(&rounds, "ada", None, None, &starts).await);
        let answered = step(
            &rounds,
            "ada",
            Some(state.clone()),
            Some(answer("Ada")),
            &starts,
        );
        assert_eq!(done(answered.await), "\"Ada\"");
        for _ in 0..2 {
            let replay = step(
                &rounds,
                "ada",
                Some(state.clone()),
                Some(answer("Ada")),
                &starts,
            );
            let error = replay.await.err().expect("a replay is refused");
            assert_eq!(error.code.0, -32602, "{error:?}");
            assert!(error.message.contains("used already"), "{error:?}");
        }
        assert_eq!(starts.load(Ordering::SeqCst), 1, "one answer, one call");
    }

    #[tokio::test]
    async fn a_call_run_again_takes_answers_only_to_the_questions_its_state_asked() {
        let starts = Arc::new(AtomicUsize::new(0));
        let states = states();
        // Two instances sharing a key: a call held on one is not held on
        // the other, which runs it again.
        let here = Rounds::<String>::new(Arc::clone(&states), None);
        let elsewhere = Rounds::<String>::new(states, None);
        let ada = owner("ada");
        let request = |retry| request(&ada, retry);
        let keys = ["first", "second"];
        let retry = |state, given: &[(&str, &str)]| Retry {
            state: Some(state),
            responses: Some(answers(given)),
        };
        let fresh = Retry {
            state: None,
            responses: None,
        };
        let first = here.run(request(fresh), asker(&starts, &keys, true)).await;
        // The answer to the question not asked yet is not taken: it is asked.
        let both = retry(state_of(first), &[("first", "Ada"), ("second", "Eve")]);
        let second = elsewhere
            .run(request(both), asker(&starts, &keys, true))
            .await;
        let last = retry(state_of(second), &[("second", "Bob")]);
        let third = elsewhere
            .run(request(last), asker(&starts, &keys, true))
            .await;
        assert_eq!(done(third), "\"Ada\",\"Bob\"");
    }

    #[test]
    fn only_answers_of_the_shape_their_question_asks_fit() {
        assert!(fits("elicitation/create", &json!({"action": "decline"})));
        assert!(!fits("elicitation/create", &json!(12345)));
        assert!(!fits("elicitation/create", &json!({"action": "maybe"})));
        assert!(fits("roots/list", &json!({"roots": []})));
        assert!(!fits("sampling/createMessage", &Value::Null));
    }
}
