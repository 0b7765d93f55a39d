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
    model::{InputRequests, InputRequiredResult, InputResponses, RequestStateCodec, SealOptions},
};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use tokio_util::{sync::CancellationToken, task::AbortOnDropHandle};

use super::ask::{check, fits};
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
/// The variable holding the key states are signed with (32 bytes or
/// more), shared by instances that resume each other's requests.
pub const STATE_KEY_VARIABLE: &str = "PACKHOST_STATE_KEY";

/// What the client's request carries for the rounds.
pub(super) struct Retry {
    pub(super) state: Option<String>,
    pub(super) responses: Option<InputResponses>,
}

/// What one request of a call comes to.
pub(super) enum Step<T> {
    Done(T),
    Asked(InputRequiredResult),
}

/// The calls of one kind (tool calls, prompt renders) held between rounds.
pub(super) struct Rounds<T> {
    codec: Arc<RequestStateCodec>,
    held: Mutex<HashMap<String, Held<T>>>,
}

/// What a state says: which held call, and the answers given so far.
#[derive(Serialize, Deserialize)]
struct State {
    id: String,
    #[serde(default)]
    answers: Answers,
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
    answer: oneshot::Sender<Answers>,
}

/// The signing key: from [`STATE_KEY_VARIABLE`], else made for this process
/// (states then resume only here).
pub(super) fn state_codec() -> Result<Arc<RequestStateCodec>, String> {
    let key = match std::env::var(STATE_KEY_VARIABLE) {
        Ok(key) => key.into_bytes(),
        Err(_) => {
            let mut key = vec![0; 32];
            getrandom::fill(&mut key).map_err(|e| format!("no random key: {e}"))?;
            key
        }
    };
    RequestStateCodec::try_new(key)
        .map(Arc::new)
        .map_err(|e| format!("`{STATE_KEY_VARIABLE}`: {e}"))
}

impl<T: Send + 'static> Rounds<T> {
    pub(super) fn new(codec: Arc<RequestStateCodec>) -> Self {
        Self {
            codec,
            held: Mutex::default(),
        }
    }

    /// One request of a call: `start` runs it (given how it asks and the
    /// token that cancels it) unless the state names a call held here;
    /// `binding` names the request (caller, method, name, arguments), so a
    /// state answers only the request it was given for.
    pub(super) async fn run<F, Fut>(
        &self,
        owner: &Owner,
        binding: &str,
        retry: Retry,
        capabilities: rmcp::model::ClientCapabilities,
        request_cancelled: CancellationToken,
        start: F,
    ) -> Result<Step<T>, ErrorData>
    where
        F: FnOnce(Arc<dyn Ask>, CancellationToken) -> Fut,
        Fut: Future<Output = T> + Send + 'static,
    {
        let binding = format!("{}\n{}\n{binding}", owner.org, owner.user);
        let state = retry
            .state
            .as_deref()
            .map(|state| self.open(state, &binding))
            .transpose()?;
        let responses = retry.responses.unwrap_or_default();
        let held = state.as_ref().and_then(|state| self.take(&state.id));
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
                let _ = pending.answer.send(given);
                (new_id(), call, answers)
            }
            (None, state) => {
                let mut given = state.map(|s| s.answers).unwrap_or_default();
                given.extend(responses);
                let (sender, questions) = mpsc::unbounded_channel();
                let ask = RetryAsk {
                    given: Mutex::new(given.clone()),
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
        self.drive(id, owner, call, answers, &binding, request_cancelled)
            .await
    }

    /// Runs the call until it ends or asks.
    async fn drive(
        &self,
        id: String,
        owner: &Owner,
        mut call: Running<T>,
        answers: Answers,
        binding: &str,
        request_cancelled: CancellationToken,
    ) -> Result<Step<T>, ErrorData> {
        tokio::select! {
            result = &mut call.result => result.map(Step::Done).map_err(|e| {
                ErrorData::internal_error(format!("the call's task failed: {e}"), None)
            }),
            Some(pending) = call.questions.recv() => {
                let asked = self.asked(&id, &pending, &answers, binding);
                self.hold(id, owner, call, pending, answers);
                Ok(Step::Asked(asked))
            }
            () = request_cancelled.cancelled() => {
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
            answers: if carried <= CARRIED_ANSWERS_MAX {
                answers.clone()
            } else {
                Answers::new()
            },
        };
        let options = SealOptions::new()
            .associated_data(binding.as_bytes())
            .ttl(HELD_FOR);
        let sealed = self
            .codec
            .seal_json_with(&state, &options)
            .expect("a state of strings and JSON serialises");
        let requests: InputRequests = pending
            .questions
            .iter()
            .filter_map(|(key, q)| Some((key.clone(), serde_json::from_value(q.clone()).ok()?)))
            .collect();
        InputRequiredResult::new(Some(requests), Some(sealed))
    }

    fn open(&self, state: &str, binding: &str) -> Result<State, ErrorData> {
        self.codec
            .open_json_with(state, binding.as_bytes())
            .map_err(|e| {
                ErrorData::invalid_params(
                    format!(
                        "requestState refused ({e}): it was changed, has expired, or belongs to \
                         another request or caller; send the request again without it"
                    ),
                    None,
                )
            })
    }

    fn take(&self, id: &str) -> Option<Held<T>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.remove(id).filter(|h| h.expires > Instant::now())
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
    given: Mutex<Answers>,
    capabilities: rmcp::model::ClientCapabilities,
    sender: mpsc::UnboundedSender<Asked>,
}

impl Ask for RetryAsk {
    fn ask(
        &self,
        questions: Questions,
    ) -> Pin<Box<dyn Future<Output = Result<Answers, Failure>> + Send>> {
        let methods = match check(&questions, &self.capabilities) {
            Ok(methods) => methods,
            Err(failure) => return Box::pin(async { Err(failure) }),
        };
        let known: Option<Answers> = {
            let given = self.given.lock().unwrap_or_else(|e| e.into_inner());
            questions
                .keys()
                .zip(&methods)
                .map(|(key, method)| {
                    let answer = given.get(key).filter(|a| fits(method, a))?;
                    Some((key.clone(), answer.clone()))
                })
                .collect()
        };
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
            answered.await.map_err(|_| cancelled())
        })
    }
}

fn cancelled() -> Failure {
    Failure::new(
        codes::CANCELLED,
        "the client's answer never came: the request ended or its state expired",
    )
}
