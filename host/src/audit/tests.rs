use audit_store::{Filter, Scope};

use super::*;
use crate::config::AuditConfig;

fn config(database: &std::path::Path, queue: usize) -> Config {
    Config {
        audit: Some(AuditConfig {
            database: Some(database.display().to_string()),
            queue,
            ..AuditConfig::default()
        }),
        ..Config::default()
    }
}

fn event(tool: &str) -> Event {
    let who = Who {
        org: "acme".into(),
        user: "ada".into(),
    };
    Event::call(&who, tool, "ok", 1.0, "1", 0, None)
}

/// On a runtime of one thread the writer cannot run while the test does:
/// the queue fills, and recording goes on without waiting.
#[tokio::test(flavor = "current_thread")]
async fn a_full_queue_drops_and_counts_and_never_waits() {
    let dir = tempfile::tempdir().unwrap();
    let audit = Audit::start(&config(&dir.path().join("audit.db"), 2));
    for n in 0..5 {
        audit.record(|| event(&format!("proj.f{n}")));
    }
    let on = audit.0.as_ref().unwrap();
    assert_eq!(on.dropped.load(Ordering::Relaxed), 3);
    audit.flush().await;
    let events = audit.query(&Filter::new(Scope::All)).await.unwrap();
    let tools: Vec<_> = events.iter().filter_map(|e| e.tool.as_deref()).collect();
    assert_eq!(tools, ["proj.f0", "proj.f1"], "the first two, written");
}

#[tokio::test]
async fn off_records_nothing_and_says_so_when_read() {
    let audit = Audit::start(&Config::default());
    assert!(!audit.is_on());
    audit.record(|| unreachable!("no event is made when the trail is off"));
    let error = audit.query(&Filter::new(Scope::All)).await.unwrap_err();
    assert!(error.contains("add an `[audit]` section"), "{error}");
}

#[tokio::test]
async fn nothing_is_opened_before_the_first_event() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sub/audit.db");
    let audit = Audit::start(&config(&file, 16));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!file.exists(), "the start opened the database");
    audit.record(|| event("proj.list"));
    audit.flush().await;
    assert!(file.exists());
}
