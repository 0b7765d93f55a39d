use super::*;
use crate::{Scope, Who};

fn recorder(database: &std::path::Path, queue: usize) -> Recorder {
    let options = Options {
        queue,
        retention: None,
    };
    Recorder::start(database.display().to_string(), options)
}

fn event(tool: &str) -> Event {
    let who = Who {
        org: "acme".into(),
        user: "ada".into(),
    };
    Event::call(&who, tool, "ok", Some(1.0), "1", 0, None)
}

/// On a runtime of one thread the writer cannot run while the test does:
/// the queue fills, and recording goes on without waiting.
#[tokio::test(flavor = "current_thread")]
async fn a_full_queue_drops_and_counts_and_never_waits() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = recorder(&dir.path().join("audit.db"), 2);
    for n in 0..5 {
        recorder.record(event(&format!("proj.f{n}")));
    }
    assert_eq!(recorder.dropped(), 3);
    recorder.flush().await;
    let events = recorder.query(&Filter::new(Scope::All)).await.unwrap();
    let tools: Vec<_> = events.iter().filter_map(|e| e.tool.as_deref()).collect();
    assert_eq!(tools, ["proj.f0", "proj.f1"], "the first two, written");
}

#[tokio::test(flavor = "current_thread")]
async fn what_anyone_can_cause_takes_half_the_queue_at_most() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = recorder(&dir.path().join("audit.db"), 4);
    for n in 0..4 {
        recorder.record_if_room(event(&format!("refused.{n}")));
    }
    assert_eq!(
        recorder.dropped(),
        2,
        "the third found half the queue taken"
    );
    recorder.record(event("proj.list"));
    recorder.record(event("proj.read"));
    assert_eq!(
        recorder.dropped(),
        2,
        "the other half is signed-in callers'"
    );
    recorder.flush().await;
    let events = recorder.query(&Filter::new(Scope::All)).await.unwrap();
    let tools: Vec<_> = events.iter().filter_map(|e| e.tool.as_deref()).collect();
    assert_eq!(tools, ["refused.0", "refused.1", "proj.list", "proj.read"]);
}

#[tokio::test]
async fn nothing_is_opened_before_the_first_event() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sub/audit.db");
    let recorder = recorder(&file, 16);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!file.exists(), "the start opened the database");
    recorder.record(event("proj.list"));
    recorder.flush().await;
    assert!(file.exists());
}

#[tokio::test]
async fn a_database_that_fails_drops_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the file should be: it cannot be opened.
    let file = dir.path().join("taken");
    std::fs::create_dir(&file).unwrap();
    let recorder = recorder(&file, 16);
    recorder.record(event("proj.list"));
    recorder.record(event("proj.read"));
    recorder.flush().await;
    assert_eq!(recorder.dropped(), 2);
}
