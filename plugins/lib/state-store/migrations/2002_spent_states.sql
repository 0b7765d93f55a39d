-- Request states (2026-07-28 multi round-trip requests) already used, by
-- the SHA-256 of the sealed state, until the state would have expired
-- anyway (milliseconds, the database's clock).
CREATE TABLE spent_states (
    digest BYTEA  NOT NULL PRIMARY KEY,
    until  BIGINT NOT NULL
);
CREATE INDEX spent_states_until ON spent_states (until);
