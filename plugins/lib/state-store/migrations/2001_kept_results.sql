-- Results kept for their owner, shared by every instance on this database.
-- `body` is bytes: a tool's text may hold NUL, which TEXT refuses. Times are
-- the database's milliseconds, so instances' clocks never disagree on them.
CREATE TABLE kept_results (
    handle          TEXT   NOT NULL PRIMARY KEY,
    seq             BIGSERIAL,
    organization_id TEXT   NOT NULL,
    user_id         TEXT   NOT NULL,
    tool            TEXT   NOT NULL,
    body            BYTEA  NOT NULL,
    bytes           BIGINT NOT NULL,
    chars           BIGINT NOT NULL,
    expires_at      BIGINT NOT NULL
);
CREATE INDEX kept_results_owner ON kept_results (organization_id, user_id, seq);
CREATE INDEX kept_results_expiry ON kept_results (expires_at);
