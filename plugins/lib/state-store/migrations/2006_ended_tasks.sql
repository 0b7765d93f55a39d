-- How a task ended (MCP's `tasks/get` answer, JSON), recorded by its
-- instance once it ends: any instance answers it from here, even after
-- the task's own instance is gone.
ALTER TABLE task_holders ADD COLUMN ended BYTEA;
