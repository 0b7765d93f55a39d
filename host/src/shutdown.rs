//! How the host stops: the signals that end a server, and giving every pack
//! the chance to release what it holds.

use std::time::Duration;

use crate::executor::Executor;

/// SIGTERM or SIGINT.
pub async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
    }
}

/// Let every pack release its child processes; a pack gets 5 s.
pub async fn shutdown_packs(executor: &Executor) {
    let all = executor.packs().into_iter().map(|(pack, _)| async move {
        let done = pack.backend.shutdown();
        if tokio::time::timeout(Duration::from_secs(5), done)
            .await
            .is_err()
        {
            tracing::warn!(pack = %pack.name, "pack did not shut down within 5 s");
        }
    });
    futures_util::future::join_all(all).await;
}
