-- Approvals a user asked to have remembered for any session: the call of
-- `tool` is not asked about again for them until `until` (milliseconds,
-- the database's clock). Approvals for one session stay in the instance
-- that holds the session.
CREATE TABLE remembered_approvals (
    organization_id TEXT   NOT NULL,
    user_id         TEXT   NOT NULL,
    tool            TEXT   NOT NULL,
    until           BIGINT NOT NULL,
    PRIMARY KEY (organization_id, user_id, tool)
);
CREATE INDEX remembered_approvals_org ON remembered_approvals (organization_id, until);
