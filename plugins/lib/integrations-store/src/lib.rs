//! An organisation's integrations: the MCP servers it uses, each reached over
//! stdio (a command) or HTTP (a URL), with optional auth kept server-side.
//!
//! Who it is for: the `remote_mcp` pack, which connects to an organisation's
//! enabled integrations, and the CLI (`packhost integrations
//! add|list|enable|disable|remove`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), integrations_store::StoreError> {
//! use integrations_store::{Auth, NewIntegration, Transport};
//!
//! let store = integrations_store::open("/tmp/integrations.db").await?;
//! let github = store
//!     .add(NewIntegration {
//!         organization_id: "acme".into(),
//!         name: "github".into(),
//!         transport: Transport::Http {
//!             url: "https://api.githubcopilot.com/mcp/".into(),
//!             headers: Default::default(),
//!         },
//!         auth: Some(Auth::Bearer { token: "ghp_…".into() }),
//!         timeout_ms: Some(30_000),
//!     })
//!     .await?;
//! for integration in store.list("acme").await? {
//!     println!("{}", integration.summary()); // no token in there
//! }
//! store.set_enabled("acme", &github.id, false).await?;
//! # Ok(()) }
//! ```
//!
//! The design:
//!
//! - Object-safe traits, [`IntegrationRepository`] and
//!   [`CredentialRepository`] (each user's credentials to the integrations
//!   that act per user), used together as `Arc<dyn Store>`; [`open`] picks
//!   the backend from the
//!   database string: a `postgres://` URL is PostgreSQL, anything else a
//!   SQLite file (created with its directories on first use; the default is
//!   [`default_database`]).
//! - Both backends run the same SQL text against the same table (migrations
//!   in `migrations/{sqlite,postgres}`, embedded in the library and run by
//!   [`open`]); `args`, `env`, `headers` and `auth` are JSON in TEXT columns.
//! - Everything is validated in [`IntegrationRepository::add`], before it
//!   reaches the database; errors are [`StoreError`] sentences saying what
//!   was wrong and what would be right.
//! - Secrets (the auth, env values of stdio servers, header values of HTTP
//!   servers) are stored, handed to the code that connects, and kept out of
//!   everything else: [`Integration::summary`] (listings) and every `Debug`
//!   show names only, error messages never quote them, and [`Integration`]
//!   has no `Serialize`.
#![deny(missing_docs)]

mod cache;
mod clock;
mod credentials;
mod error;
mod model;
mod sql;
mod validate;

#[cfg(any(test, feature = "test-support"))]
pub mod testing;
#[cfg(test)]
mod tests;

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    sync::Arc,
};

pub use clock::unix_now;
pub use credentials::{Authorization, CredentialKey, CredentialRepository};
pub use error::StoreError;
pub use model::{Auth, Integration, NewIntegration, Sandbox, Transport};
pub use pack_sandbox::Mode;
/// For stores of their own (the audit trail's): pools opened, made private
/// and migrated the same way, a URL shown without its password.
pub use sql::{Migrations, postgres_pool, postgres_pool_waiting, redact, sqlite_pool};
pub use sql::{PostgresRepository, SqliteRepository};

/// Where integrations are stored. Object safe: held as
/// `Arc<dyn IntegrationRepository>` (from [`open`]).
///
/// Methods that take an `organization_id` only see that organisation's
/// integrations: another organisation's id is [`StoreError::NotFound`].
#[async_trait::async_trait]
pub trait IntegrationRepository: Send + Sync {
    /// Validates and stores a new integration, enabled, with a fresh id.
    ///
    /// [`StoreError::Invalid`] when a field is wrong (name, organisation,
    /// URL, command, header or env names, auth, timeout);
    /// [`StoreError::Conflict`] when the organisation already has an
    /// integration of that name.
    async fn add(&self, new: NewIntegration) -> Result<Integration, StoreError>;

    /// The integration with this id, in any organisation (the caller checks
    /// the organisation).
    async fn get(&self, id: &str) -> Result<Option<Integration>, StoreError>;

    /// The organisation's integrations, by name.
    async fn list(&self, organization_id: &str) -> Result<Vec<Integration>, StoreError>;

    /// Enables or disables an integration of the organisation and bumps its
    /// `updated_at`; [`StoreError::NotFound`] when it has none with that id.
    async fn set_enabled(
        &self,
        organization_id: &str,
        id: &str,
        enabled: bool,
    ) -> Result<Integration, StoreError>;

    /// Deletes an integration of the organisation; [`StoreError::NotFound`]
    /// when it has none with that id.
    async fn remove(&self, organization_id: &str, id: &str) -> Result<(), StoreError>;
}

/// The integrations and their users' credentials, in one database:
/// what [`open`] gives.
pub trait Store: IntegrationRepository + CredentialRepository {}

impl<T: IntegrationRepository + CredentialRepository> Store for T {}

/// Opens (creating and migrating on first use) the integrations database.
///
/// `postgres://…` or `postgresql://…` is a PostgreSQL URL; anything else is
/// a SQLite file path (`sqlite://` prefix accepted; a leading `~` is the
/// home directory, as in every config path: `pack_api::paths`), whose file
/// and parent directories are created when missing. Migrations run every
/// time and are no-ops once applied. Errors name the database without a
/// URL's password. A SQLite file's lookups by id are answered from memory
/// while the file is unchanged (any process's write is seen at once); a
/// PostgreSQL database is asked every time.
pub async fn open(database: &str) -> Result<Arc<dyn Store>, StoreError> {
    if database.starts_with("postgres://") || database.starts_with("postgresql://") {
        return Ok(Arc::new(PostgresRepository::connect(database).await?));
    }
    let path = sqlite_path(database)?;
    let repository = SqliteRepository::open(&path).await?;
    Ok(Arc::new(cache::Cached::new(repository, &path)))
}

/// The SQLite file `database` (not a `postgres://` URL) names.
pub fn sqlite_path(database: &str) -> Result<PathBuf, StoreError> {
    let path = database.strip_prefix("sqlite://").unwrap_or(database);
    if path.is_empty() {
        return Err(StoreError::Invalid(format!(
            "database `{database}` names no file; give a SQLite file path or a `postgres://` URL"
        )));
    }
    pack_api::paths::expand_home(Path::new(path))
        .map_err(|e| StoreError::Invalid(format!("database {e}")))
}

/// The pack that serves the integrations, as `packs.toml` names it.
pub const PACK: &str = "remote_mcp";

/// The key of [`PACK`]'s config that names the database: the setting the
/// pack and `packhost integrations` share (`[packs.remote_mcp] config =
/// { database = "…" }`).
pub const DATABASE_KEY: &str = "database";

/// The database to open: `configured` (the value of [`DATABASE_KEY`]), else
/// [`default_database`].
pub fn database_or_default(configured: Option<String>) -> String {
    configured.unwrap_or_else(|| default_database().display().to_string())
}

/// The database [`PACK`]'s `config` table names (`None` when `packs.toml`
/// has no such pack; a [`DATABASE_KEY`] that is not a string names none),
/// else [`default_database`].
pub fn database_in(pack_config: Option<&serde_json::Value>) -> String {
    let configured = pack_config
        .and_then(|config| config.get(DATABASE_KEY))
        .and_then(serde_json::Value::as_str);
    database_or_default(configured.map(str::to_owned))
}

/// The default SQLite database: `$XDG_DATA_HOME/packhost/integrations.db`,
/// else `~/.local/share/packhost/integrations.db`.
pub fn default_database() -> PathBuf {
    default_database_in(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME"))
}

/// [`default_database`] from the values of `XDG_DATA_HOME` and `HOME`. A
/// relative `XDG_DATA_HOME` is ignored, as the XDG spec says.
fn default_database_in(xdg_data_home: Option<OsString>, home: Option<OsString>) -> PathBuf {
    let data = match xdg_data_home.map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        _ => PathBuf::from(home.unwrap_or_default()).join(".local/share"),
    };
    data.join("packhost").join("integrations.db")
}
