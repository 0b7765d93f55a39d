//! The official MCP SDK clients' scripts (`tests/official-clients/`) run
//! against a host: each takes a JSON spec file and prints JSON lines.

use std::{
    process::Stdio,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use serde_json::Value;

use crate::http::HttpHost;

/// The JSON lines `script` (in tests/official-clients), run by `python`,
/// prints for `spec`; panics with its stderr and the host's when it fails.
pub async fn script_lines(python: &str, script: &str, spec: &Value, host: &HttpHost) -> Vec<Value> {
    // Several clients of one host may run at once.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = host.dir.path().join(format!("spec-{n}.json"));
    std::fs::write(&path, spec.to_string()).expect("write the client's spec");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("official-clients")
        .join(script);
    let output = tokio::process::Command::new(python)
        .arg(script)
        .arg(&path)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), output)
        .await
        .expect("the Python client finished within 2 minutes")
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "client failed: {}\n{stdout}\nhost: {}",
        String::from_utf8_lossy(&output.stderr),
        host.stderr()
    );
    // The SDK ends its HTTP session with a DELETE, and warns unless the
    // host answers it as ended (200 or 204).
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("Session termination failed"),
        "the client's session did not end cleanly: {stderr}"
    );
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}
