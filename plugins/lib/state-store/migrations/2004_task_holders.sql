-- Which instance runs each task, and for whom: `tasks/get`, `tasks/update`
-- and `tasks/cancel` that reach another instance are forwarded there.
-- Until `until` (milliseconds, the database's clock): as long as the task
-- can be read.
CREATE TABLE task_holders (
    task_id         TEXT   NOT NULL PRIMARY KEY,
    organization_id TEXT   NOT NULL,
    user_id         TEXT   NOT NULL,
    instance        TEXT   NOT NULL,
    until           BIGINT NOT NULL
);
CREATE INDEX task_holders_until ON task_holders (until);
