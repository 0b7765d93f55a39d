-- A pack's sessions that any instance must find (a Jupyter session and its
-- kernel on the shared Jupyter Server, a notebook session and its cells):
-- who owns each, and what the pack records of it (`body`, the pack's own
-- JSON). `version` grows with each change, so two instances never both
-- write over the same state; `last_used` (milliseconds, the database's
-- clock) is when any instance last used it, for idle expiry.
CREATE TABLE pack_sessions (
    pack            TEXT   NOT NULL,
    session_id      TEXT   NOT NULL,
    organization_id TEXT   NOT NULL,
    user_id         TEXT   NOT NULL,
    body            BYTEA  NOT NULL,
    version         BIGINT NOT NULL,
    last_used       BIGINT NOT NULL,
    PRIMARY KEY (pack, session_id)
);
CREATE INDEX pack_sessions_owner ON pack_sessions (pack, organization_id, user_id);
