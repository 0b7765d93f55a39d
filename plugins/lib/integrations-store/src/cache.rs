//! Lookups by id from memory while the SQLite file is unchanged.
//!
//! `remote_mcp.execute_tool` looks its integration up on every call, and a
//! query is a round trip to sqlx's worker thread. Other processes write the
//! same file (`packhost integrations disable` is the CLI), so what is kept
//! is tied to the file's state: the status of the database and of its
//! write-ahead log, where every commit lands (this process's own writes
//! through it too). Any change there drops everything kept. A file changed
//! too recently to be told apart from a change in the same clock tick (the
//! "racy clean" problem git knows) is not trusted, so a lookup then goes to
//! the database.

use std::{
    collections::HashMap,
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
    sync::Mutex,
    time::{Duration, SystemTime},
};

use crate::{
    Authorization, CredentialKey, CredentialRepository, Integration, IntegrationRepository,
    NewIntegration, StoreError,
};

/// How long the files must have been still before their status is trusted:
/// well above the coarsest timestamp granularity of Linux file systems.
const SETTLED: Duration = Duration::from_millis(100);

/// What the status of one file says: equal stamps mean no commit between.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    inode: u64,
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

/// The database's and its log's stamps; `None` when they cannot be read or
/// changed too recently to be trusted.
fn settled_stamps(files: &[PathBuf; 2]) -> Option<[Option<Stamp>; 2]> {
    let now = SystemTime::now();
    let stamp = |path: &Path| -> Result<Option<Stamp>, ()> {
        let metadata = match std::fs::metadata(path) {
            Ok(metadata) => metadata,
            // No log yet: its appearance is a change like any other.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(_) => return Err(()),
        };
        let settled = metadata
            .modified()
            .ok()
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age >= SETTLED);
        if !settled {
            return Err(());
        }
        Ok(Some(Stamp {
            inode: metadata.ino(),
            size: metadata.size(),
            modified: (metadata.mtime(), metadata.mtime_nsec()),
            changed: (metadata.ctime(), metadata.ctime_nsec()),
        }))
    };
    Some([stamp(&files[0]).ok()?, stamp(&files[1]).ok()?])
}

/// What was read while the files had these stamps.
#[derive(Default)]
struct Kept {
    stamps: Option<[Option<Stamp>; 2]>,
    by_id: HashMap<String, Integration>,
}

/// `inner` with [`IntegrationRepository::get`] answered from memory while
/// the SQLite file at `path` is unchanged.
pub(crate) struct Cached<R> {
    inner: R,
    files: [PathBuf; 2],
    kept: Mutex<Kept>,
}

impl<R> Cached<R> {
    pub(crate) fn new(inner: R, path: &Path) -> Self {
        let mut log = path.as_os_str().to_owned();
        log.push("-wal");
        Self {
            inner,
            files: [path.to_owned(), PathBuf::from(log)],
            kept: Mutex::default(),
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait::async_trait]
impl<R: IntegrationRepository> IntegrationRepository for Cached<R> {
    async fn add(&self, new: NewIntegration) -> Result<Integration, StoreError> {
        self.inner.add(new).await
    }

    async fn get(&self, id: &str) -> Result<Option<Integration>, StoreError> {
        // Taken before the query: a commit after this changes the stamps,
        // so what the query read is never kept past it.
        let stamps = settled_stamps(&self.files);
        if let Some(stamps) = &stamps {
            let kept = self.kept();
            if kept.stamps.as_ref() == Some(stamps)
                && let Some(integration) = kept.by_id.get(id)
            {
                return Ok(Some(integration.clone()));
            }
        }
        let found = self.inner.get(id).await?;
        // Only what exists is kept: ids that name nothing would grow it
        // without bound.
        if let (Some(stamps), Some(integration)) = (stamps, &found) {
            let mut kept = self.kept();
            if kept.stamps.as_ref() != Some(&stamps) {
                *kept = Kept {
                    stamps: Some(stamps),
                    by_id: HashMap::new(),
                };
            }
            kept.by_id.insert(id.to_owned(), integration.clone());
        }
        Ok(found)
    }

    async fn list(&self, organization_id: &str) -> Result<Vec<Integration>, StoreError> {
        self.inner.list(organization_id).await
    }

    async fn set_enabled(
        &self,
        organization_id: &str,
        id: &str,
        enabled: bool,
    ) -> Result<Integration, StoreError> {
        self.inner.set_enabled(organization_id, id, enabled).await
    }

    async fn remove(&self, organization_id: &str, id: &str) -> Result<(), StoreError> {
        self.inner.remove(organization_id, id).await
    }
}

/// Credentials are read once per call at most: never kept.
#[async_trait::async_trait]
impl<R: CredentialRepository> CredentialRepository for Cached<R> {
    async fn credential(&self, key: CredentialKey<'_>) -> Result<Option<String>, StoreError> {
        self.inner.credential(key).await
    }

    async fn put_credential(&self, key: CredentialKey<'_>, sealed: &str) -> Result<(), StoreError> {
        self.inner.put_credential(key, sealed).await
    }

    async fn remove_credentials(
        &self,
        organization_id: &str,
        integration_id: &str,
        user_id: Option<&str>,
    ) -> Result<u64, StoreError> {
        self.inner
            .remove_credentials(organization_id, integration_id, user_id)
            .await
    }

    async fn begin_authorization(&self, authorization: &Authorization) -> Result<(), StoreError> {
        self.inner.begin_authorization(authorization).await
    }

    async fn take_authorization(
        &self,
        state_digest: &str,
    ) -> Result<Option<Authorization>, StoreError> {
        self.inner.take_authorization(state_digest).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::{SqliteRepository, Transport};

    /// A repository that counts the lookups that reach the database.
    struct Counting {
        inner: SqliteRepository,
        gets: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl IntegrationRepository for Counting {
        async fn add(&self, new: NewIntegration) -> Result<Integration, StoreError> {
            self.inner.add(new).await
        }
        async fn get(&self, id: &str) -> Result<Option<Integration>, StoreError> {
            self.gets.fetch_add(1, Ordering::Relaxed);
            self.inner.get(id).await
        }
        async fn list(&self, organization_id: &str) -> Result<Vec<Integration>, StoreError> {
            self.inner.list(organization_id).await
        }
        async fn set_enabled(
            &self,
            organization_id: &str,
            id: &str,
            enabled: bool,
        ) -> Result<Integration, StoreError> {
            self.inner.set_enabled(organization_id, id, enabled).await
        }
        async fn remove(&self, organization_id: &str, id: &str) -> Result<(), StoreError> {
            self.inner.remove(organization_id, id).await
        }
    }

    #[tokio::test]
    async fn lookups_of_a_still_file_stay_in_memory_and_a_commit_ends_that() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("integrations.db");
        let cached = Cached::new(
            Counting {
                inner: SqliteRepository::open(&path).await.unwrap(),
                gets: AtomicUsize::new(0),
            },
            &path,
        );
        let writer = SqliteRepository::open(&path).await.unwrap();
        let id = writer
            .add(NewIntegration {
                organization_id: "acme".into(),
                name: "web".into(),
                transport: Transport::Http {
                    url: "https://mcp.example.com/mcp".into(),
                    headers: Default::default(),
                },
                auth: None,
                timeout_ms: None,
            })
            .await
            .unwrap()
            .id;
        let gets = || cached.inner.gets.load(Ordering::Relaxed);

        // Just written: too recent to trust, every lookup asks.
        cached.get(&id).await.unwrap().unwrap();
        cached.get(&id).await.unwrap().unwrap();
        assert_eq!(gets(), 2);

        tokio::time::sleep(SETTLED + Duration::from_millis(50)).await;
        cached.get(&id).await.unwrap().unwrap();
        for _ in 0..10 {
            assert!(cached.get(&id).await.unwrap().unwrap().enabled);
        }
        assert_eq!(gets(), 3, "a still file's lookups come from memory");
        // An id that names nothing is asked for each time, never kept.
        assert!(cached.get("nothing").await.unwrap().is_none());
        assert!(cached.get("nothing").await.unwrap().is_none());
        assert_eq!(gets(), 5);

        writer.set_enabled("acme", &id, false).await.unwrap();
        assert!(!cached.get(&id).await.unwrap().unwrap().enabled);
        assert_eq!(gets(), 6, "another connection's commit is seen");
    }
}
