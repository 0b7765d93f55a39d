//! Real processes under the shared rules: capture, caps, timeouts, process
//! groups, environment, pools.

use std::{
    collections::BTreeMap,
    os::unix::process::ExitStatusExt,
    process::Stdio,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use pack_process::{
    Adopted, Confined, Demand, EnvAllowList, Exit, Mode, Pidfd, Policy, ProcessGroup, Sandbox,
    TRUNCATED_MARKER, Wanted, WarmPool, live_members,
};

#[path = "../../../../tests/support/bystander.rs"]
mod bystander;
use bystander::Bystander;

/// Unconfined: these tests are about process groups, and a test binary is
/// not the sandbox's helper (tests/e2e/sandbox.rs confines for real).
fn sh(script: &str) -> Confined {
    let policy = Policy::new([], std::path::Path::new("/tmp"));
    let mut confined = Sandbox::new(Mode::Off)
        .command(&policy, std::path::Path::new("sh"))
        .unwrap();
    confined
        .command
        .args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    confined
}

fn group_alive(pgid: u32) -> bool {
    !live_members(pgid).is_empty()
}

async fn wait_until_gone(pgid: u32) {
    for _ in 0..100 {
        if !group_alive(pgid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "process group {pgid} still has live processes: {:?}",
        live_members(pgid)
    );
}

#[tokio::test]
async fn captures_both_streams_and_the_exit_code() {
    let group = ProcessGroup::spawn(sh("echo out; echo err >&2; exit 3")).unwrap();
    let finished = group.finish(Duration::from_secs(10), 1024).await;
    assert_eq!(finished.stdout.text, "out\n");
    assert_eq!(finished.stderr.text, "err\n");
    assert_eq!(finished.exit, Exit::Code(3));
    assert_eq!(finished.exit.code(), 3);
}

#[tokio::test]
async fn a_timeout_kills_the_whole_group_and_keeps_the_output() {
    let group = ProcessGroup::spawn(sh("echo before; sleep 30 & sleep 30; echo after")).unwrap();
    let pgid = group.id();
    let started = Instant::now();
    let finished = group.finish(Duration::from_millis(300), 1024).await;
    assert_eq!(finished.exit, Exit::TimedOut);
    assert_eq!(finished.exit.code(), 124);
    assert_eq!(finished.stdout.text, "before\n");
    // The background `sleep` holds the pipes; it dies with the group.
    assert!(
        started.elapsed() < Duration::from_millis(1300),
        "{:?}",
        started.elapsed()
    );
    wait_until_gone(pgid).await;
}

#[tokio::test]
async fn grandchildren_do_not_outlive_a_normal_exit() {
    let group = ProcessGroup::spawn(sh("sleep 30 & echo done")).unwrap();
    let pgid = group.id();
    let finished = group.finish(Duration::from_secs(10), 1024).await;
    assert_eq!(finished.exit, Exit::Code(0));
    assert_eq!(finished.stdout.text, "done\n");
    wait_until_gone(pgid).await;
}

#[tokio::test]
async fn an_answer_ends_the_wait_and_the_group() {
    // The child closes its output and "answers" (its file appears), then
    // would go on for a minute.
    let folder = tempfile::tempdir().unwrap();
    let answer = folder.path().join("answer");
    let script = format!(
        "echo said; exec >&- 2>&-; touch {}; sleep 60",
        answer.display()
    );
    let group = ProcessGroup::spawn(sh(&script)).unwrap();
    let pgid = group.id();
    let answered = async {
        while !answer.exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let finished = group
        .finish_on_answer(Duration::from_secs(60), 1024, answered)
        .await;
    assert_eq!(finished.exit, Exit::Answered);
    assert_eq!(finished.exit.code(), 0);
    assert_eq!(finished.stdout.text, "said\n");
    wait_until_gone(pgid).await;
}

#[tokio::test]
async fn output_is_capped_while_streaming() {
    // 50 MB through a 1 KiB cap: the reader keeps 1 KiB and drains the rest.
    let group = ProcessGroup::spawn(sh("head -c 50000000 /dev/zero | tr '\\0' a")).unwrap();
    let finished = group.finish(Duration::from_secs(60), 1024).await;
    assert_eq!(finished.exit, Exit::Code(0));
    assert!(finished.stdout.truncated);
    assert_eq!(
        finished.stdout.text,
        format!("{}{TRUNCATED_MARKER}", "a".repeat(1024))
    );
}

#[tokio::test]
async fn a_cut_never_splits_a_character() {
    // "é" is two bytes: a 3-byte cap falls inside the second one.
    let group = ProcessGroup::spawn(sh("printf 'ééé'")).unwrap();
    let finished = group.finish(Duration::from_secs(10), 3).await;
    assert_eq!(finished.stdout.text, format!("é{TRUNCATED_MARKER}"));
}

#[tokio::test]
async fn dropping_the_guard_kills_the_group() {
    let group = ProcessGroup::spawn(sh("sleep 30 & sleep 30")).unwrap();
    let pgid = group.id();
    assert!(group.is_running());
    drop(group);
    wait_until_gone(pgid).await;
}

#[tokio::test]
async fn the_environment_is_the_allow_list_only() {
    // cargo sets CARGO_MANIFEST_DIR for this test process; the child must not see it.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let mut command = sh("env");
    let extra = BTreeMap::from([("TMPDIR".to_owned(), "/tmp/x".to_owned())]);
    EnvAllowList::default().apply(&mut command.command, &extra);
    let finished = ProcessGroup::spawn(command)
        .unwrap()
        .finish(Duration::from_secs(10), 1 << 20)
        .await;
    let names: Vec<&str> = finished
        .stdout
        .text
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    assert!(names.contains(&"PATH"), "{names:?}");
    assert!(names.contains(&"TMPDIR"), "{names:?}");
    assert!(!names.contains(&"CARGO_MANIFEST_DIR"), "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| ["PATH", "HOME", "LANG", "TMPDIR", "PWD", "SHLVL", "_"].contains(n)),
        "{names:?}"
    );
}

#[tokio::test]
async fn a_pool_hands_out_fresh_children_and_refills() {
    let fixed = Demand {
        initial: 2,
        max: 2,
        idle: Duration::MAX,
    };
    let pool = WarmPool::following(
        fixed,
        |_| async { ProcessGroup::spawn(sh("sleep 30")) },
        |group: &mut ProcessGroup| group.is_running(),
        || {},
    );
    let (first, _) = pool.take().await.unwrap();
    let (second, _) = pool.take().await.unwrap();
    let (a, b) = (first.id(), second.id());
    assert!(group_alive(a) && group_alive(b));
    assert_ne!(a, b);
    assert!(first.is_running() && second.is_running());
    pool.clear();
    drop((first, second));
    wait_until_gone(a).await;
    wait_until_gone(b).await;
}

/// A pool of `sleep 30` children following `demand`, and why each start
/// began, in order.
fn recording_pool(demand: Demand) -> (WarmPool<ProcessGroup>, Arc<Mutex<Vec<Wanted>>>) {
    let wanted = Arc::new(Mutex::new(Vec::new()));
    let told = Arc::clone(&wanted);
    let pool = WarmPool::following(
        demand,
        move |why| {
            told.lock().unwrap().push(why);
            async { ProcessGroup::spawn(sh("sleep 30")) }
        },
        |group: &mut ProcessGroup| group.is_running(),
        || {},
    );
    (pool, wanted)
}

#[tokio::test]
async fn a_child_started_for_a_waiting_take_is_wanted_now_and_one_kept_ready_ahead() {
    let (pool, wanted) = recording_pool(Demand {
        initial: 0,
        max: 1,
        idle: Duration::MAX,
    });
    let (taken, _) = pool.take().await.unwrap();
    eventually("no child was kept ready after the take", || {
        pool.ready() == 1
    })
    .await;
    assert_eq!(*wanted.lock().unwrap(), [Wanted::Now, Wanted::Ahead]);
    pool.clear();
    drop(taken);
}

/// A taken child's replacement starts once its call is done with it (the
/// replacement dropped), not at the take: it would take the CPU from the call.
#[tokio::test]
async fn a_replacement_starts_when_the_call_is_done_with_the_child() {
    let (pool, starts) = recording_pool(Demand {
        initial: 1,
        max: 1,
        idle: Duration::MAX,
    });
    eventually("the initial child never got ready", || pool.ready() == 1).await;
    let (taken, replacement) = pool.take().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(starts.lock().unwrap().len(), 1, "replaced during the call");
    assert_eq!(pool.ready(), 0);
    drop(replacement);
    eventually("no replacement once the call was done", || {
        pool.ready() == 1
    })
    .await;
    assert_eq!(*starts.lock().unwrap(), [Wanted::Ahead, Wanted::Ahead]);
    pool.clear();
    drop(taken);
}

/// Until `done` holds (up to 10 s).
async fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_pool_following_demand_grows_when_a_call_waits_and_empties_when_idle() {
    let emptied = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&emptied);
    let demand = Demand {
        initial: 1,
        max: 3,
        idle: Duration::from_millis(500),
    };
    let pool = WarmPool::following(
        demand,
        |_| async { ProcessGroup::spawn(sh("sleep 30")) },
        |group: &mut ProcessGroup| group.is_running(),
        move || {
            counted.fetch_add(1, Ordering::SeqCst);
        },
    );
    eventually("the initial child never got ready", || pool.ready() == 1).await;
    // The first take finds one ready, the second none: from then on two are kept.
    let (first, _) = pool.take().await.unwrap();
    let (second, _) = pool.take().await.unwrap();
    eventually("the pool did not grow to 2 after a wait", || {
        pool.ready() == 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(pool.ready(), 2, "grew past what calls waited for");
    assert_eq!(emptied.load(Ordering::SeqCst), 0);
    // Idle: nothing kept, and the ready children are ended.
    drop((first, second));
    eventually("the idle pool kept children", || {
        pool.ready() == 0 && emptied.load(Ordering::SeqCst) == 1
    })
    .await;
    // The next call starts its own, and one is kept again.
    let (next, _) = pool.take().await.unwrap();
    assert!(next.is_running());
    eventually("no child kept after the next call", || pool.ready() == 1).await;
    pool.clear();
}

/// A take that finds none ready is served by the first child to start, here
/// the warm-up's, already under way: it does not wait for a start of its own.
#[tokio::test]
async fn a_take_gets_the_child_already_starting() {
    let starts = Arc::new(AtomicUsize::new(0));
    let permits = Arc::new(tokio::sync::Semaphore::new(0));
    let (counted, gate) = (Arc::clone(&starts), Arc::clone(&permits));
    let demand = Demand {
        initial: 1,
        max: 1,
        idle: Duration::MAX,
    };
    let pool = Arc::new(WarmPool::following(
        demand,
        move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            let gate = Arc::clone(&gate);
            async move {
                // Starts finish one per permit, in the order they began.
                gate.acquire().await.expect("gate open").forget();
                ProcessGroup::spawn(sh("sleep 30"))
            }
        },
        |group: &mut ProcessGroup| group.is_running(),
        || {},
    ));
    eventually("the warm-up never began a start", || {
        starts.load(Ordering::SeqCst) == 1
    })
    .await;
    let taker = Arc::clone(&pool);
    let take = tokio::spawn(async move { taker.take().await });
    eventually("the waiting take began no start to keep one ready", || {
        starts.load(Ordering::SeqCst) == 2
    })
    .await;
    permits.add_permits(1);
    let child = tokio::time::timeout(Duration::from_secs(10), take)
        .await
        .expect("the take waited for a start of its own")
        .unwrap()
        .unwrap()
        .0;
    assert!(child.is_running());
    assert_eq!(
        pool.ready(),
        0,
        "the first child went to the pool, not the take"
    );
    permits.add_permits(1);
    eventually("the second start was not kept ready", || pool.ready() == 1).await;
    assert_eq!(starts.load(Ordering::SeqCst), 2, "started more than needed");
    pool.clear();
}

/// Issue 23: once a leader is reaped its pid (and group number) may go to
/// any process; nothing the guard does after may reach that process.
#[tokio::test]
async fn a_reaped_leader_is_never_signalled_again() {
    let mut group = ProcessGroup::spawn(sh("exit 0")).unwrap();
    let pid = group.id();
    assert_eq!(group.wait().await.unwrap().code(), Some(0));
    let bystander = Bystander::spawn(pid);
    assert_eq!(
        group.interrupt().unwrap_err().raw_os_error(),
        Some(libc::ESRCH)
    );
    group.kill();
    drop(group);
    bystander.assert_untouched("interrupt, kill and drop");
}

/// The same for a process its parent reaps (a fork server's child): the
/// pack has its pidfd from the parent, opened before it could be reaped.
#[tokio::test]
async fn an_adopted_leader_its_parent_reaped_is_never_signalled_again() {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    let pidfd = Pidfd::open(pid).unwrap();
    // Its parent (this test) reaps it and reports its end.
    let status = child.wait().unwrap();
    let (report, exit) = tokio::sync::oneshot::channel();
    report.send(status.into_raw()).unwrap();
    let (_out, stdout) = tokio::net::unix::pipe::pipe().unwrap();
    let (_err, stderr) = tokio::net::unix::pipe::pipe().unwrap();
    let bystander = Bystander::spawn(pid);
    let mut group = ProcessGroup::adopt(
        Adopted {
            pidfd,
            exit,
            stdout,
            stderr,
        },
        None,
    );
    assert!(!group.is_running());
    assert_eq!(group.wait().await.unwrap().code(), Some(0));
    assert!(group.interrupt().is_err());
    group.kill();
    drop(group);
    bystander.assert_untouched("interrupt, kill and drop");
}
