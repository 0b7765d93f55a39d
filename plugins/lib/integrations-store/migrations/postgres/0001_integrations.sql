-- The integrations (MCP servers) each organisation uses. The same table as
-- ../sqlite/0001_integrations.sql. args, env, headers and auth are JSON in
-- TEXT; env and header values and auth are secrets, never listed. Names sort
-- and compare bytewise (COLLATE "C"), as SQLite's do.
CREATE TABLE integrations (
    id              TEXT    NOT NULL PRIMARY KEY,
    organization_id TEXT    NOT NULL,
    name            TEXT    COLLATE "C" NOT NULL,
    enabled         BOOLEAN NOT NULL,
    transport       TEXT    NOT NULL CHECK (transport IN ('stdio', 'http')),
    command         TEXT,
    args            TEXT,
    env             TEXT,
    url             TEXT,
    headers         TEXT,
    auth            TEXT,
    timeout_ms      BIGINT  CHECK (timeout_ms > 0),
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL,
    UNIQUE (organization_id, name),
    CHECK ((transport = 'stdio' AND command IS NOT NULL AND url IS NULL)
        OR (transport = 'http' AND url IS NOT NULL AND command IS NULL))
);
