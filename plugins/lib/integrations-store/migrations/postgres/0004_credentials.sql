-- Per-user credentials to integrations (`auth = per_user`) and the
-- sign-ins under way. The same tables as ../sqlite/0004_credentials.sql.
-- `sealed` is encrypted by its writer with a key the database never holds,
-- bound to its row's keys: a row copied under another user does not open.
CREATE TABLE credentials (
    organization_id TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    integration_id  TEXT NOT NULL,
    sealed          TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    PRIMARY KEY (organization_id, user_id, integration_id)
);
-- A sign-in sent to a user's browser: found once by the digest of its
-- `state`, never by the state itself, and only until `expires_at`.
CREATE TABLE authorizations (
    state_digest    TEXT   NOT NULL PRIMARY KEY,
    organization_id TEXT   NOT NULL,
    user_id         TEXT   NOT NULL,
    integration_id  TEXT   NOT NULL,
    sealed          TEXT   NOT NULL,
    expires_at      BIGINT NOT NULL
);
