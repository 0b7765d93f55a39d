-- The audit trail: one row per event. The same table as
-- ../sqlite/1001_audit_events.sql. organization_id NULL: a host-level event
-- (a sign-in refused before any organisation was known), read only by the
-- host's CLI. `at` is RFC 3339 UTC with microseconds, fixed width, so the
-- text sorts as the time does (bytewise: COLLATE "C"). detail is JSON in
-- TEXT, secrets masked.
CREATE TABLE audit_events (
    id              BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at              TEXT    COLLATE "C" NOT NULL,
    organization_id TEXT,
    user_id         TEXT,
    kind            TEXT    NOT NULL,
    tool            TEXT,
    outcome         TEXT    NOT NULL,
    duration_ms     DOUBLE PRECISION,
    request_id      TEXT,
    detail          TEXT    NOT NULL
);
CREATE INDEX audit_events_by_organization ON audit_events (organization_id, at);
CREATE INDEX audit_events_by_time ON audit_events (at);
