//! What a test case of a table in this database runs on: a fresh SQLite
//! file and a fresh PostgreSQL database (through `PACKHOST_TEST_POSTGRES_URL`,
//! which `./dev test` sets; without it the PostgreSQL cases fail under `CI`
//! and are skipped, loudly, elsewhere). For this crate's tests and those of
//! stores that share its database (feature `test-support`).

use std::future::Future;

use sqlx::Connection as _;

use crate::{clock, sql};

const POSTGRES_URL_VAR: &str = "PACKHOST_TEST_POSTGRES_URL";

/// Runs each case (an `async fn(database: String)`, given the string to
/// open) on both backends, as tests `sqlite::<case>` and `postgres::<case>`.
#[macro_export]
macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test]
            async fn $case() {
                $crate::testing::on_sqlite(super::$case).await;
            })*
        }
        mod postgres {
            $(#[tokio::test]
            async fn $case() {
                $crate::testing::on_postgres(super::$case).await;
            })*
        }
    };
}

/// Runs `case` on a SQLite file, in directories that do not exist yet, in a
/// fresh temporary directory.
pub async fn on_sqlite<Case, Fut>(case: Case)
where
    Case: FnOnce(String) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data/packhost/integrations.db");
    run(case(file.to_str().unwrap().to_owned())).await;
}

/// Runs `case` on a fresh PostgreSQL database, dropped afterwards (whether
/// the case passed or not).
pub async fn on_postgres<Case, Fut>(case: Case)
where
    Case: FnOnce(String) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(server) = postgres_server() else {
        return;
    };
    let mut admin = sqlx::PgConnection::connect(&server)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "cannot connect to {POSTGRES_URL_VAR}={}: {e}",
                sql::redact(&server)
            )
        });
    let name = format!("test_{}", &clock::new_id().unwrap()[4..]);
    sqlx::raw_sql(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .unwrap();
    let mut url = url::Url::parse(&server).unwrap();
    url.set_path(&name);
    let outcome = tokio::spawn(case(url.to_string())).await;
    sqlx::raw_sql(&format!("DROP DATABASE {name} WITH (FORCE)"))
        .execute(&mut admin)
        .await
        .unwrap();
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// Runs a case as a task of its own, so a panic comes back here (and the
/// database is dropped first).
async fn run(case: impl Future<Output = ()> + Send + 'static) {
    if let Err(e) = tokio::spawn(case).await {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// The PostgreSQL server to test on; `None` (skip) outside CI when unset.
fn postgres_server() -> Option<String> {
    if let Ok(url) = std::env::var(POSTGRES_URL_VAR)
        && !url.is_empty()
    {
        return Some(url);
    }
    let help = format!(
        "{POSTGRES_URL_VAR} is not set: `./dev test` starts a PostgreSQL and sets it; \
         or set it to a server's URL whose user may create databases, e.g. \
         postgres://postgres@127.0.0.1:5432/postgres"
    );
    if std::env::var_os("CI").is_some_and(|ci| !ci.is_empty()) {
        panic!("CI is set, so the PostgreSQL tests must run, but {help}");
    }
    eprintln!("\n!!!!! SKIPPED: this PostgreSQL test did not run. {help} !!!!!\n");
    None
}
