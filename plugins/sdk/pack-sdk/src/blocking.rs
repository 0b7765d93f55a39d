//! Work that blocks a thread, kept off the pack's async workers.

use crate::PackError;

/// Runs `work`, which blocks (file system calls, a synchronous library), on
/// the pack runtime's blocking threads, so its async workers keep serving
/// other calls. A panic in `work` is an `INTERNAL` error saying
/// "`{pack}` worker thread failed: …" (`pack` is the pack's name).
pub async fn blocking<T: Send + 'static>(
    pack: &str,
    work: impl FnOnce() -> Result<T, PackError> + Send + 'static,
) -> Result<T, PackError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| PackError::internal(format!("{pack} worker thread failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_and_panics_come_back() {
        assert_eq!(blocking("p", || Ok(42)).await.unwrap(), 42);
        let refused = blocking::<()>("p", || Err(PackError::not_found("gone"))).await;
        assert_eq!(refused.unwrap_err().code(), "NOT_FOUND");
        let panicked = blocking::<()>("p", || panic!("boom")).await.unwrap_err();
        assert_eq!(panicked.code(), "INTERNAL");
        assert!(
            panicked.message().starts_with("p worker thread failed: ")
                && panicked.message().contains("boom"),
            "{}",
            panicked.message()
        );
    }
}
