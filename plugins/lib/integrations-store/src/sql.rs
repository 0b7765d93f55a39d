//! The two backends. Both run the same SQL text (`$1`-style parameters,
//! which both drivers accept) against the same table; the `repository!`
//! macro writes the one implementation once for each pool type.

use std::{
    borrow::Cow, collections::BTreeMap, future::Future, path::Path, pin::Pin, str::FromStr,
    time::Duration,
};

use sqlx::{
    Connection as _,
    error::BoxDynError,
    migrate::{Migration, MigrationSource, MigrationType, Migrator},
    postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions},
    sqlite::{
        SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
        SqliteSynchronous,
    },
};

use crate::{
    Auth, Integration, IntegrationRepository, NewIntegration, Sandbox, StoreError, Transport,
    clock, validate,
};

/// Connections per pool: the store sees a few requests at a time.
const MAX_CONNECTIONS: u32 = 4;
/// How long a query waits for a pooled connection.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a SQLite statement waits for another connection's write lock.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// `(version, description, sql)` of each migration, oldest first.
pub type Migrations = &'static [(i64, &'static str, &'static str)];

const SQLITE_MIGRATIONS: Migrations = &[
    (
        1,
        "integrations",
        include_str!("../migrations/sqlite/0001_integrations.sql"),
    ),
    (
        2,
        "sandbox",
        include_str!("../migrations/sqlite/0002_sandbox.sql"),
    ),
    (
        4,
        "credentials",
        include_str!("../migrations/sqlite/0004_credentials.sql"),
    ),
];
const POSTGRES_MIGRATIONS: Migrations = &[
    (
        1,
        "integrations",
        include_str!("../migrations/postgres/0001_integrations.sql"),
    ),
    (
        2,
        "sandbox",
        include_str!("../migrations/postgres/0002_sandbox.sql"),
    ),
    (
        4,
        "credentials",
        include_str!("../migrations/postgres/0004_credentials.sql"),
    ),
];

macro_rules! columns {
    () => {
        "id, organization_id, name, enabled, transport, command, args, env, url, headers, \
         auth, timeout_ms, created_at, updated_at, sandbox"
    };
}
const INSERT: &str = concat!(
    "INSERT INTO integrations (",
    columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
);
const GET: &str = concat!("SELECT ", columns!(), " FROM integrations WHERE id = $1");
const LIST: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM integrations WHERE organization_id = $1 ORDER BY name, id"
);
const SET_ENABLED: &str = concat!(
    "UPDATE integrations SET enabled = $1, updated_at = $2 \
     WHERE organization_id = $3 AND id = $4 RETURNING ",
    columns!()
);
const REMOVE: &str = "DELETE FROM integrations WHERE organization_id = $1 AND id = $2";
const REMOVE_CREDENTIALS: &str =
    "DELETE FROM credentials WHERE organization_id = $1 AND integration_id = $2";

/// One row of `integrations`, as stored.
struct Columns {
    id: String,
    organization_id: String,
    name: String,
    enabled: bool,
    transport: String,
    command: Option<String>,
    args: Option<String>,
    env: Option<String>,
    url: Option<String>,
    headers: Option<String>,
    auth: Option<String>,
    timeout_ms: Option<i64>,
    created_at: String,
    updated_at: String,
    sandbox: Option<String>,
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("strings, maps of strings and `Auth` serialize")
}

impl Columns {
    fn of(integration: &Integration) -> Columns {
        let (command, args, env, sandbox, url, headers) = match &integration.transport {
            Transport::Stdio {
                command,
                args,
                env,
                sandbox,
            } => (
                Some(command.clone()),
                Some(to_json(args)),
                Some(to_json(env)),
                (*sandbox != Sandbox::default()).then(|| to_json(sandbox)),
                None,
                None,
            ),
            Transport::Http { url, headers } => (
                None,
                None,
                None,
                None,
                Some(url.clone()),
                Some(to_json(headers)),
            ),
        };
        Columns {
            id: integration.id.clone(),
            organization_id: integration.organization_id.clone(),
            name: integration.name.clone(),
            enabled: integration.enabled,
            transport: integration.transport.kind().to_owned(),
            command,
            args,
            env,
            url,
            headers,
            auth: integration.auth.as_ref().map(to_json),
            // Validated to fit before it gets here.
            timeout_ms: integration.timeout_ms.map(|ms| ms as i64),
            created_at: integration.created_at.clone(),
            updated_at: integration.updated_at.clone(),
            sandbox,
        }
    }

    fn into_integration(self) -> Result<Integration, StoreError> {
        let id = self.id;
        let corrupt = |column: &str, why: &dyn std::fmt::Display| {
            StoreError::Database(format!(
                "integration `{id}` has a corrupt `{column}` column ({why}); fix or remove that row"
            ))
        };
        // Where the JSON is wrong, not serde_json's message: that may quote
        // the (secret) text.
        let bad_json = |column: &str, e: serde_json::Error| {
            let why = format!(
                "not the JSON expected: {:?} error at column {}",
                e.classify(),
                e.column()
            );
            corrupt(column, &why)
        };
        let json_map = |column: &str, text: Option<String>| {
            serde_json::from_str::<BTreeMap<String, String>>(text.as_deref().unwrap_or("{}"))
                .map_err(|e| bad_json(column, e))
        };
        let transport = match self.transport.as_str() {
            "stdio" => Transport::Stdio {
                command: self
                    .command
                    .ok_or_else(|| corrupt("command", &"NULL for a stdio integration"))?,
                args: serde_json::from_str(self.args.as_deref().unwrap_or("[]"))
                    .map_err(|e| bad_json("args", e))?,
                env: json_map("env", self.env)?,
                sandbox: match self.sandbox {
                    Some(text) => {
                        serde_json::from_str(&text).map_err(|e| bad_json("sandbox", e))?
                    }
                    None => Sandbox::default(),
                },
            },
            "http" => Transport::Http {
                url: self
                    .url
                    .ok_or_else(|| corrupt("url", &"NULL for an http integration"))?,
                headers: json_map("headers", self.headers)?,
            },
            other => return Err(corrupt("transport", &format!("`{other}`"))),
        };
        let auth = match self.auth {
            Some(text) => Some(
                serde_json::from_str::<Auth>(&text)
                    .map_err(|_| corrupt("auth", &"not a bearer, header or per-user auth"))?,
            ),
            None => None,
        };
        let timeout_ms = match self.timeout_ms {
            Some(ms) => Some(u64::try_from(ms).map_err(|_| corrupt("timeout_ms", &ms))?),
            None => None,
        };
        Ok(Integration {
            id: id.clone(),
            organization_id: self.organization_id,
            name: self.name,
            enabled: self.enabled,
            transport,
            auth,
            timeout_ms,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

fn not_found(organization_id: &str, id: &str) -> StoreError {
    StoreError::NotFound(format!(
        "organization `{organization_id}` has no integration `{id}`"
    ))
}

fn failed(what: &str, e: sqlx::Error) -> StoreError {
    StoreError::Database(format!("cannot {what}: {e}"))
}

/// The one implementation of [`IntegrationRepository`], for `$name` over a
/// `$pool` of `$db` connections.
macro_rules! repository {
    ($(#[$doc:meta])* $name:ident, $pool:ty, $db:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            pub(crate) pool: $pool,
        }

        impl $name {
            fn decode(row: &<$db as sqlx::Database>::Row) -> Result<Integration, StoreError> {
                use sqlx::Row as _;
                let columns = (|| {
                    Ok::<_, sqlx::Error>(Columns {
                        id: row.try_get("id")?,
                        organization_id: row.try_get("organization_id")?,
                        name: row.try_get("name")?,
                        enabled: row.try_get("enabled")?,
                        transport: row.try_get("transport")?,
                        command: row.try_get("command")?,
                        args: row.try_get("args")?,
                        env: row.try_get("env")?,
                        url: row.try_get("url")?,
                        headers: row.try_get("headers")?,
                        auth: row.try_get("auth")?,
                        timeout_ms: row.try_get("timeout_ms")?,
                        created_at: row.try_get("created_at")?,
                        updated_at: row.try_get("updated_at")?,
                        sandbox: row.try_get("sandbox")?,
                    })
                })()
                .map_err(|e| failed("read an integration", e))?;
                columns.into_integration()
            }
        }

        #[async_trait::async_trait]
        impl IntegrationRepository for $name {
            async fn add(&self, new: NewIntegration) -> Result<Integration, StoreError> {
                validate::new_integration(&new)?;
                let now = clock::now();
                let integration = Integration {
                    id: clock::new_id()?,
                    organization_id: new.organization_id,
                    name: new.name,
                    enabled: true,
                    transport: new.transport,
                    auth: new.auth,
                    timeout_ms: new.timeout_ms,
                    created_at: now.clone(),
                    updated_at: now,
                };
                let columns = Columns::of(&integration);
                sqlx::query(INSERT)
                    .bind(columns.id)
                    .bind(columns.organization_id)
                    .bind(columns.name)
                    .bind(columns.enabled)
                    .bind(columns.transport)
                    .bind(columns.command)
                    .bind(columns.args)
                    .bind(columns.env)
                    .bind(columns.url)
                    .bind(columns.headers)
                    .bind(columns.auth)
                    .bind(columns.timeout_ms)
                    .bind(columns.created_at)
                    .bind(columns.updated_at)
                    .bind(columns.sandbox)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| match e.as_database_error() {
                        Some(db) if db.is_unique_violation() => StoreError::Conflict(format!(
                            "organization `{}` already has an integration named `{}`; \
                             choose another name or remove that one first",
                            integration.organization_id, integration.name
                        )),
                        _ => failed(&format!("add integration `{}`", integration.name), e),
                    })?;
                Ok(integration)
            }

            async fn get(&self, id: &str) -> Result<Option<Integration>, StoreError> {
                sqlx::query(GET)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| failed(&format!("get integration `{id}`"), e))?
                    .map(|row| Self::decode(&row))
                    .transpose()
            }

            async fn list(&self, organization_id: &str) -> Result<Vec<Integration>, StoreError> {
                sqlx::query(LIST)
                    .bind(organization_id)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| {
                        failed(&format!("list the integrations of `{organization_id}`"), e)
                    })?
                    .iter()
                    .map(Self::decode)
                    .collect()
            }

            async fn set_enabled(
                &self,
                organization_id: &str,
                id: &str,
                enabled: bool,
            ) -> Result<Integration, StoreError> {
                let row = sqlx::query(SET_ENABLED)
                    .bind(enabled)
                    .bind(clock::now())
                    .bind(organization_id)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| failed(&format!("update integration `{id}`"), e))?
                    .ok_or_else(|| not_found(organization_id, id))?;
                Self::decode(&row)
            }

            async fn remove(&self, organization_id: &str, id: &str) -> Result<(), StoreError> {
                let removed = sqlx::query(REMOVE)
                    .bind(organization_id)
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| failed(&format!("remove integration `{id}`"), e))?
                    .rows_affected();
                if removed == 0 {
                    return Err(not_found(organization_id, id));
                }
                // Its users' tokens go with it: a later integration of the
                // same id (ids are random) must never find them.
                sqlx::query(REMOVE_CREDENTIALS)
                    .bind(organization_id)
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| failed(&format!("remove the credentials of `{id}`"), e))?;
                Ok(())
            }
        }
    };
}

repository!(
    /// Integrations in a SQLite file (WAL mode), through a small pool.
    SqliteRepository,
    SqlitePool,
    sqlx::Sqlite
);

repository!(
    /// Integrations in a PostgreSQL database, through a small pool.
    PostgresRepository,
    PgPool,
    sqlx::Postgres
);

impl SqliteRepository {
    /// Opens the SQLite file at `path`, creating it and its parent
    /// directories when missing, and migrates it.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        let pool = sqlite_pool(
            path,
            MAX_CONNECTIONS,
            SqliteSynchronous::Full,
            SQLITE_MIGRATIONS,
        );
        Ok(Self { pool: pool.await? })
    }
}

impl PostgresRepository {
    /// Connects to the PostgreSQL database at `url` (`postgres://…`) and
    /// migrates it. Errors show the URL without its password.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = postgres_pool(url, MAX_CONNECTIONS, POSTGRES_MIGRATIONS);
        Ok(Self { pool: pool.await? })
    }
}

/// A pool of `max_connections` on the SQLite file at `path` (created
/// private, with its folders, when missing; WAL mode), migrated with
/// `migrations`; `synchronous` says how often commits reach the disk.
pub async fn sqlite_pool(
    path: &Path,
    max_connections: u32,
    synchronous: SqliteSynchronous,
    migrations: Migrations,
) -> Result<SqlitePool, StoreError> {
    let shown = path.display();
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            StoreError::Database(format!(
                "cannot create directory `{}` for SQLite database `{shown}`: {e}",
                parent.display()
            ))
        })?;
    }
    create_private(path).map_err(|e| {
        StoreError::Database(format!("cannot create SQLite database `{shown}`: {e}"))
    })?;
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(synchronous)
        .busy_timeout(SQLITE_BUSY_TIMEOUT);
    // One connection first: it fails at once with the real error, where
    // a pool would retry until its timeout.
    let first = SqliteConnection::connect_with(&options)
        .await
        .map_err(|e| failed(&format!("open SQLite database `{shown}`"), e))?;
    let _ = first.close().await;
    // A SQLite connection is a file handle that does not go stale: the
    // ping sqlx sends before handing one out would be a wasted trip to
    // its worker thread on every lookup.
    let pool = SqlitePoolOptions::new()
        .max_connections(max_connections)
        .test_before_acquire(false)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_lazy_with(options);
    migrator(migrations).await?.run(&pool).await.map_err(|e| {
        StoreError::Database(format!("cannot migrate SQLite database `{shown}`: {e}"))
    })?;
    Ok(pool)
}

/// A pool of `max_connections` on the PostgreSQL database at `url`,
/// migrated with `migrations`. Errors show the URL without its password.
pub async fn postgres_pool(
    url: &str,
    max_connections: u32,
    migrations: Migrations,
) -> Result<PgPool, StoreError> {
    postgres_pool_waiting(url, max_connections, ACQUIRE_TIMEOUT, migrations).await
}

/// [`postgres_pool`] whose queries wait for a connection at most `wait`
/// (the database down or restarting), then fail with `PoolTimedOut`.
pub async fn postgres_pool_waiting(
    url: &str,
    max_connections: u32,
    wait: Duration,
    migrations: Migrations,
) -> Result<PgPool, StoreError> {
    let shown = redact(url);
    let options = PgConnectOptions::from_str(url).map_err(|e| {
        StoreError::Invalid(format!(
            "database `{shown}` is not a PostgreSQL URL ({e}); \
             give `postgres://user:password@host:port/database`"
        ))
    })?;
    // One connection first, to fail fast (as for SQLite).
    let first = PgConnection::connect_with(&options)
        .await
        .map_err(|e| failed(&format!("connect to PostgreSQL database `{shown}`"), e))?;
    let _ = first.close().await;
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(wait)
        .connect_lazy_with(options);
    migrator(migrations).await?.run(&pool).await.map_err(|e| {
        StoreError::Database(format!("cannot migrate PostgreSQL database `{shown}`: {e}"))
    })?;
    Ok(pool)
}

/// Creates `path`, empty (which SQLite takes for a new database), readable
/// by its owner only: it holds secrets. SQLite gives the `-wal` and `-shm`
/// files the same mode. An existing file is left as it is.
pub fn create_private(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other.map(drop),
    }
}

/// Migrations compiled into the library (no files needed at run time).
#[derive(Debug)]
struct Embedded(Migrations);

impl MigrationSource<'static> for Embedded {
    fn resolve(
        self,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<Migration>, BoxDynError>> + Send + 'static>> {
        let migrations = self
            .0
            .iter()
            .map(|&(version, description, sql)| {
                Migration::new(
                    version,
                    Cow::Borrowed(description),
                    MigrationType::Simple,
                    Cow::Borrowed(sql),
                    false,
                )
            })
            .collect();
        Box::pin(std::future::ready(Ok(migrations)))
    }
}

/// A migrator of `migrations`, compiled in. Other tables in the same
/// database (the audit trail's) keep their versions in the same
/// `_sqlx_migrations` table, in a range of their own: each migrator leaves
/// the other's versions alone.
pub async fn migrator(migrations: Migrations) -> Result<Migrator, StoreError> {
    let mut migrator = Migrator::new(Embedded(migrations))
        .await
        .map_err(|e| StoreError::Database(format!("cannot load the embedded migrations: {e}")))?;
    migrator.set_ignore_missing(true);
    Ok(migrator)
}

/// `url` as it may be shown: the password (in the userinfo or a
/// `password=` parameter) replaced by `***`.
pub fn redact(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        // Unparsable: keep the scheme and what follows the last `@`.
        return match (url.split_once("://"), url.rsplit_once('@')) {
            (Some((scheme, _)), Some((_, host))) => {
                let host = host.split_once('?').map_or(host, |(host, _)| host);
                format!("{scheme}://***@{host}")
            }
            _ => url.split_once('?').map_or(url, |(url, _)| url).to_owned(),
        };
    };
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some("***"));
    }
    if parsed.query_pairs().any(|(key, _)| key == "password") {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(key, value)| {
                let value = if key == "password" {
                    "***".into()
                } else {
                    value
                };
                (key.into_owned(), value.into_owned())
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}
