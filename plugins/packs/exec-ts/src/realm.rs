//! Blocks without a process start: each runs in a fresh JavaScript realm
//! (a `vm` context: its own globals and prototypes) inside a warm `node`
//! worker (`realm.mjs`), confined as every node process of the pack is
//! (`node.rs`: the sandbox, its own folder, the pack's network and bounds).
//! Which blocks come here is `route.rs`'s decision.
//!
//! - A worker runs one block at a time and serves one owner (organisation
//!   and user): a block that found a way out of its realm would reach only
//!   its own owner's later blocks, with the rights that block has anyway.
//! - A block past its time limit kills its worker (exit code 124); an
//!   uncaught error ends the worker as it ends node; a worker is retired
//!   after [`BLOCKS_PER_WORKER`] blocks.
//! - Workers start when blocks need them, never at the pack's start: at
//!   most `realm_workers` live at once, so at most that many blocks run side
//!   by side and the rest wait for one. A worker idle for `realm_idle_ms`
//!   ends (checked every `realm_idle_ms`, so it goes within twice that).

use std::{
    collections::HashMap,
    ffi::OsString,
    io,
    sync::{Arc, LazyLock, Mutex, Weak},
    time::{Duration, Instant},
};

use pack_process::{CaptureBuffer, Exit, Finished, ProcessGroup};
use pack_sdk::{Context, PackError, SharedCatalog, bridge, owned::Owner};
use serde::Deserialize;
use serde_json::json;
use tempfile::TempDir;
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines},
    net::unix::{OwnedReadHalf, OwnedWriteHalf},
    process::ChildStderr,
    sync::Semaphore,
    task::JoinSet,
};

use crate::{
    node::{Answer, ExecOutput, Launcher, Warm, data_url},
    route::NODE_ONLY,
};

/// The worker, loaded as node's `--import` (see `node.rs`'s prelude).
const WORKER: &str = include_str!("realm.mjs");

/// Blocks one worker runs before it is retired: what a block leaves behind
/// in node's own heap (compiled code, caches) does not grow without end.
pub const BLOCKS_PER_WORKER: usize = 500;

/// How long a dead worker's last words (its stderr) are waited for.
const LAST_WORDS: Duration = Duration::from_millis(500);

/// The warm workers of the pack, by owner.
pub struct Realms {
    inner: Arc<Inner>,
}

struct Inner {
    launcher: Launcher,
    limit: usize,
    idle_after: Duration,
    /// One permit per block running: at most `max` side by side.
    running: Semaphore,
    max: usize,
    workers: Mutex<Workers>,
}

#[derive(Default)]
struct Workers {
    idle: HashMap<Owner, Vec<Worker>>,
    /// Workers running a block.
    busy: usize,
    /// Whether a task ends the workers that idle too long.
    reaping: bool,
}

impl Workers {
    fn idle_count(&self) -> usize {
        self.idle.values().map(Vec::len).sum()
    }

    /// End the idle worker that waited longest, of any owner.
    fn end_oldest(&mut self) {
        let oldest = self
            .idle
            .iter()
            .flat_map(|(owner, workers)| {
                workers
                    .iter()
                    .enumerate()
                    .map(move |(i, w)| (w.idle_since, owner, i))
            })
            .min_by_key(|(since, ..)| *since)
            .map(|(_, owner, i)| (owner.clone(), i));
        if let Some((owner, i)) = oldest {
            let workers = self.idle.get_mut(&owner).expect("listed");
            workers.remove(i);
            if workers.is_empty() {
                self.idle.remove(&owner);
            }
        }
    }
}

/// A live worker between blocks; its drop kills it.
struct Worker {
    group: ProcessGroup,
    /// Its own folder, the only one it may write.
    _dir: TempDir,
    lines: Lines<BufReader<OwnedReadHalf>>,
    writer: OwnedWriteHalf,
    stderr: Option<ChildStderr>,
    blocks: usize,
    idle_since: Instant,
}

/// What the worker says of a block besides its tool calls.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Said {
    Out { fd: u8, text: String },
    Value(Answer),
    Error(Answer),
    Done { code: i32 },
}

/// How a block ended.
enum End {
    Done(i32),
    /// The worker is gone (a bound of its sandbox, or a crash).
    Died,
    TimedOut,
}

impl Realms {
    /// Workers started by `launcher` when blocks need them: at most `max`
    /// (at least 1), each ending after `idle_after` without a block; `limit`
    /// caps each output stream.
    pub fn new(launcher: Launcher, limit: usize, max: usize, idle_after: Duration) -> Self {
        let max = max.max(1);
        Self {
            inner: Arc::new(Inner {
                launcher,
                limit,
                idle_after,
                running: Semaphore::new(max),
                max,
                workers: Mutex::default(),
            }),
        }
    }

    /// End every idle worker (host shutdown).
    pub fn shutdown(&self) {
        self.inner.lock().idle.clear();
    }

    /// Run the instrumented block `js` in a fresh realm with the packs of
    /// `catalog` (the caller's), as node would run it: its output, its
    /// answer, its exit code.
    pub async fn run(
        &self,
        js: &str,
        catalog: &SharedCatalog,
        timeout: Duration,
        started: Instant,
        ctx: &Context,
    ) -> Result<ExecOutput, PackError> {
        let deadline = tokio::time::Instant::from_std(started) + timeout;
        let _running = tokio::time::timeout_at(deadline, self.inner.running.acquire())
            .await
            .ok()
            .and_then(Result::ok);
        let Some(_running) = _running else {
            let nothing = CaptureBuffer::default();
            return Ok(timed_out(&nothing, &nothing, started, timeout));
        };
        let owner = ctx.owner();
        let (taken, _busy) = self.take(&owner);
        let mut worker = match taken {
            Some(worker) => worker,
            None => self.start_worker().map_err(|e| {
                let message = format!("could not start a node worker: {e}");
                PackError::internal(message.clone()).with_result(&ExecOutput::refused(message))
            })?,
        };
        let setup = json!({
            "max_result_bytes": self.inner.limit,
            "answered": crate::instrument::answered_at(js)
                .map(|(line, column, width)| json!({"line": line, "column": column, "width": width})),
            "node_globals": NODE_ONLY,
        });
        let setup = bridge::object_with(&setup, "bindings", catalog.bindings());
        let run = bridge::object_with(&json!({"type": "run", "code": js}), "setup", &setup) + "\n";
        let mut output = Output::default();
        let end = match worker.writer.write_all(run.as_bytes()).await {
            Ok(()) => serve(&mut worker, ctx, deadline, self.inner.limit, &mut output).await,
            Err(_) => End::Died,
        };
        let Output {
            stdout,
            stderr,
            answers,
        } = output;
        let mut result = match end {
            End::Done(code) => {
                if code == 0 {
                    self.give_back(owner, worker);
                }
                // Else it ends itself, as node does: its drop makes sure.
                ExecOutput {
                    stdout: stdout.finish().text,
                    stderr: stderr.finish().text,
                    exit_code: code,
                    execution_time: started.elapsed().as_millis() as u64,
                    ..ExecOutput::default()
                }
            }
            End::TimedOut => {
                drop(worker);
                timed_out(&stdout, &stderr, started, timeout)
            }
            End::Died => self.died(worker, stdout, stderr, started, timeout).await,
        };
        for answer in answers {
            answer.fill(&mut result);
        }
        Ok(result)
    }

    /// A worker gone in the middle of a block: how it ended (a passed bound
    /// of its sandbox, as node's path says it), and what it printed.
    async fn died(
        &self,
        worker: Worker,
        stdout: CaptureBuffer,
        mut stderr: CaptureBuffer,
        started: Instant,
        timeout: Duration,
    ) -> ExecOutput {
        let Worker {
            mut group,
            stderr: own,
            ..
        } = worker;
        if let Some(own) = own {
            // Its stderr goes back to the group, read up to its end.
            let mut text = Vec::new();
            let _ = tokio::time::timeout(LAST_WORDS, async {
                let mut own = own;
                tokio::io::AsyncReadExt::read_to_end(&mut own, &mut text).await
            })
            .await;
            stderr.push(&text, self.inner.limit);
        }
        let status = tokio::time::timeout(LAST_WORDS, group.wait()).await;
        let exit = match status {
            Ok(Ok(status)) => exit_of(status),
            _ => Exit::Code(1),
        };
        let exit = group.exceeded(exit).map_or(exit, Exit::Exceeded);
        drop(group);
        let finished = Finished {
            stdout: stdout.finish(),
            stderr: stderr.finish(),
            exit,
            elapsed: started.elapsed(),
        };
        ExecOutput::from_finished(finished, started, timeout)
    }

    /// An idle worker of `owner`'s, if there is one, and the count of a
    /// busy worker (this one, or the one the caller starts).
    fn take(&self, owner: &Owner) -> (Option<Worker>, Busy) {
        let mut workers = self.inner.lock();
        let mut taken = None;
        if let Some(idle) = workers.idle.get_mut(owner) {
            while let Some(worker) = idle.pop() {
                if worker.group.is_running() {
                    taken = Some(worker);
                    break;
                }
            }
            if idle.is_empty() {
                workers.idle.remove(owner);
            }
        }
        if taken.is_none() && workers.busy + workers.idle_count() >= self.inner.max {
            // Room for this owner's worker: another's idle one goes.
            workers.end_oldest();
        }
        workers.busy += 1;
        (taken, Busy(Arc::clone(&self.inner)))
    }

    fn start_worker(&self) -> io::Result<Worker> {
        static IMPORT: LazyLock<String> = LazyLock::new(|| data_url(WORKER));
        let args: [OsString; 3] = [
            "--import".into(),
            IMPORT.as_str().into(),
            "--input-type=module".into(),
        ];
        let Warm {
            mut group,
            channel,
            dir,
        } = self
            .inner
            .launcher
            .start_node(None, &Default::default(), args)?;
        // An empty main module: the worker is all in its `--import`.
        drop(group.take_stdin());
        drop(group.take_stdout());
        let stderr = group.take_stderr();
        let (reader, writer) = channel.into_split();
        Ok(Worker {
            group,
            _dir: dir,
            lines: BufReader::new(reader).lines(),
            writer,
            stderr,
            blocks: 0,
            idle_since: Instant::now(),
        })
    }

    fn give_back(&self, owner: Owner, mut worker: Worker) {
        worker.blocks += 1;
        worker.idle_since = Instant::now();
        let mut workers = self.inner.lock();
        if worker.blocks < BLOCKS_PER_WORKER {
            workers.idle.entry(owner).or_default().push(worker);
        }
        if !workers.reaping && workers.idle_count() > 0 {
            workers.reaping = true;
            tokio::spawn(reap(Arc::downgrade(&self.inner)));
        }
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Workers> {
        self.workers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A block's count among the busy workers, until it ends (whether its
/// worker is given back, ended, or dropped by a cancelled call).
struct Busy(Arc<Inner>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.lock().busy -= 1;
    }
}

/// End the workers idle for `idle_after`, until none is left.
async fn reap(inner: Weak<Inner>) {
    loop {
        let Some(every) = inner.upgrade().map(|inner| inner.idle_after) else {
            return;
        };
        tokio::time::sleep(every).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let mut workers = inner.lock();
        for idle in workers.idle.values_mut() {
            idle.retain(|worker| worker.idle_since.elapsed() < every);
        }
        workers.idle.retain(|_, idle| !idle.is_empty());
        if workers.idle.is_empty() {
            workers.reaping = false;
            return;
        }
    }
}

/// What a block printed and answered.
#[derive(Default)]
struct Output {
    stdout: CaptureBuffer,
    stderr: CaptureBuffer,
    answers: Vec<Answer>,
}

/// Serve the block's tool calls with `ctx`'s identity and gather what it
/// says until it is done, its worker is gone, or `deadline`.
async fn serve(
    worker: &mut Worker,
    ctx: &Context,
    deadline: tokio::time::Instant,
    limit: usize,
    output: &mut Output,
) -> End {
    let mut calls = JoinSet::new();
    loop {
        tokio::select! {
            line = worker.lines.next_line() => {
                let Ok(Some(line)) = line else {
                    return End::Died;
                };
                if let Some(call) = bridge::served(&line, ctx) {
                    calls.spawn(call);
                    continue;
                }
                match serde_json::from_str::<Said>(&line) {
                    Ok(Said::Out { fd: 2, text }) => output.stderr.push(text.as_bytes(), limit),
                    Ok(Said::Out { text, .. }) => output.stdout.push(text.as_bytes(), limit),
                    Ok(Said::Value(answer) | Said::Error(answer)) => output.answers.push(answer),
                    Ok(Said::Done { code }) => return End::Done(code),
                    Err(_) => {}
                }
            }
            Some(Ok(reply)) = calls.join_next() => {
                if worker.writer.write_all(reply.as_bytes()).await.is_err() {
                    return End::Died;
                }
            }
            () = tokio::time::sleep_until(deadline) => return End::TimedOut,
        }
    }
}

/// What a block that ran out of time gets: its output and the note node's
/// path adds.
fn timed_out(
    stdout: &CaptureBuffer,
    stderr: &CaptureBuffer,
    started: Instant,
    timeout: Duration,
) -> ExecOutput {
    let finished = Finished {
        stdout: stdout.finish(),
        stderr: stderr.finish(),
        exit: Exit::TimedOut,
        elapsed: started.elapsed(),
    };
    ExecOutput::from_finished(finished, started, timeout)
}

fn exit_of(status: std::process::ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(signal)) => Exit::Signal(signal),
        (None, None) => Exit::Code(-1),
    }
}
