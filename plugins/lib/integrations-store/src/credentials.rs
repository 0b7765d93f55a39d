//! Per-user credentials to integrations whose `auth` is
//! [`Auth::PerUser`](crate::Auth::PerUser), and the sign-ins under way.
//!
//! The store keeps them sealed: whoever writes encrypts first (the
//! `upstream-oauth` crate, with a key the database never holds), so this
//! crate never sees a token in the clear. A sign-in is found once, by the
//! digest of its `state`, and only until it expires.

use crate::{SqliteRepository, StoreError, clock, sql::PostgresRepository};

/// Whose credential: one user of one organisation, for one integration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CredentialKey<'a> {
    /// The organisation.
    pub organization_id: &'a str,
    /// The user.
    pub user_id: &'a str,
    /// The integration.
    pub integration_id: &'a str,
}

/// A sign-in sent to a user's browser, waiting for the authorization
/// server to send the browser back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    /// The SHA-256 of its `state`, in hex: the state itself is never stored.
    pub state_digest: String,
    /// The organisation of the user who was asked.
    pub organization_id: String,
    /// The user who was asked.
    pub user_id: String,
    /// The integration they sign in to.
    pub integration_id: String,
    /// What finishing it needs (PKCE verifier, token endpoint, client),
    /// sealed.
    pub sealed: String,
    /// Seconds since the Unix epoch after which it is refused.
    pub expires_at: i64,
}

/// Where per-user credentials and sign-ins are kept. Every method is scoped
/// by its keys: there is no way to list another user's.
#[async_trait::async_trait]
pub trait CredentialRepository: Send + Sync {
    /// The sealed credential of `key`, if the user has one.
    async fn credential(&self, key: CredentialKey<'_>) -> Result<Option<String>, StoreError>;

    /// Stores (or replaces) the sealed credential of `key`.
    async fn put_credential(&self, key: CredentialKey<'_>, sealed: &str) -> Result<(), StoreError>;

    /// Removes the credentials to `integration_id` of the organisation: of
    /// `user_id` only, or of every user; how many there were.
    async fn remove_credentials(
        &self,
        organization_id: &str,
        integration_id: &str,
        user_id: Option<&str>,
    ) -> Result<u64, StoreError>;

    /// Stores a sign-in under way, and forgets the expired ones.
    async fn begin_authorization(&self, authorization: &Authorization) -> Result<(), StoreError>;

    /// Takes the sign-in whose state has this digest: it is removed, so a
    /// second take (a replay) finds nothing, as does one after it expired.
    async fn take_authorization(
        &self,
        state_digest: &str,
    ) -> Result<Option<Authorization>, StoreError>;
}

const CREDENTIAL: &str = "SELECT sealed FROM credentials \
     WHERE organization_id = $1 AND user_id = $2 AND integration_id = $3";
const PUT_CREDENTIAL: &str = "INSERT INTO credentials \
     (organization_id, user_id, integration_id, sealed, updated_at) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (organization_id, user_id, integration_id) \
     DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at";
const REMOVE_USER: &str = "DELETE FROM credentials \
     WHERE organization_id = $1 AND integration_id = $2 AND user_id = $3";
const REMOVE_ALL: &str =
    "DELETE FROM credentials WHERE organization_id = $1 AND integration_id = $2";
const FORGET_EXPIRED: &str = "DELETE FROM authorizations WHERE expires_at < $1";
const BEGIN: &str = "INSERT INTO authorizations \
     (state_digest, organization_id, user_id, integration_id, sealed, expires_at) \
     VALUES ($1, $2, $3, $4, $5, $6)";
const TAKE: &str = "DELETE FROM authorizations WHERE state_digest = $1 \
     RETURNING organization_id, user_id, integration_id, sealed, expires_at";

fn failed(what: &str, e: sqlx::Error) -> StoreError {
    StoreError::Database(format!("cannot {what}: {e}"))
}

/// The one implementation of [`CredentialRepository`] for a repository of
/// `sql.rs` over `$db` connections.
macro_rules! credential_repository {
    ($name:ident, $db:ty) => {
        #[async_trait::async_trait]
        impl CredentialRepository for $name {
            async fn credential(
                &self,
                key: CredentialKey<'_>,
            ) -> Result<Option<String>, StoreError> {
                sqlx::query_scalar::<$db, String>(CREDENTIAL)
                    .bind(key.organization_id)
                    .bind(key.user_id)
                    .bind(key.integration_id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| failed("read a credential", e))
            }

            async fn put_credential(
                &self,
                key: CredentialKey<'_>,
                sealed: &str,
            ) -> Result<(), StoreError> {
                sqlx::query(PUT_CREDENTIAL)
                    .bind(key.organization_id)
                    .bind(key.user_id)
                    .bind(key.integration_id)
                    .bind(sealed)
                    .bind(clock::now())
                    .execute(&self.pool)
                    .await
                    .map_err(|e| failed("store a credential", e))?;
                Ok(())
            }

            async fn remove_credentials(
                &self,
                organization_id: &str,
                integration_id: &str,
                user_id: Option<&str>,
            ) -> Result<u64, StoreError> {
                let query = match user_id {
                    Some(user) => sqlx::query(REMOVE_USER)
                        .bind(organization_id)
                        .bind(integration_id)
                        .bind(user),
                    None => sqlx::query(REMOVE_ALL)
                        .bind(organization_id)
                        .bind(integration_id),
                };
                Ok(query
                    .execute(&self.pool)
                    .await
                    .map_err(|e| failed("remove credentials", e))?
                    .rows_affected())
            }

            async fn begin_authorization(
                &self,
                authorization: &Authorization,
            ) -> Result<(), StoreError> {
                sqlx::query(FORGET_EXPIRED)
                    .bind(clock::unix_now())
                    .execute(&self.pool)
                    .await
                    .map_err(|e| failed("forget expired sign-ins", e))?;
                sqlx::query(BEGIN)
                    .bind(&authorization.state_digest)
                    .bind(&authorization.organization_id)
                    .bind(&authorization.user_id)
                    .bind(&authorization.integration_id)
                    .bind(&authorization.sealed)
                    .bind(authorization.expires_at)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| failed("store a sign-in", e))?;
                Ok(())
            }

            async fn take_authorization(
                &self,
                state_digest: &str,
            ) -> Result<Option<Authorization>, StoreError> {
                let row: Option<(String, String, String, String, i64)> =
                    sqlx::query_as::<$db, _>(TAKE)
                        .bind(state_digest)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(|e| failed("take a sign-in", e))?;
                Ok(row.filter(|row| row.4 >= clock::unix_now()).map(
                    |(organization_id, user_id, integration_id, sealed, expires_at)| {
                        Authorization {
                            state_digest: state_digest.to_owned(),
                            organization_id,
                            user_id,
                            integration_id,
                            sealed,
                            expires_at,
                        }
                    },
                ))
            }
        }
    };
}

credential_repository!(SqliteRepository, sqlx::Sqlite);
credential_repository!(PostgresRepository, sqlx::Postgres);
