-- A stdio integration's own sandbox rules beyond its pack's (`packhost
-- integrations add --read/--write/--limits/--sandbox`): JSON in TEXT, NULL
-- for none. The same column as ../sqlite/0002_sandbox.sql.
ALTER TABLE integrations ADD COLUMN sandbox TEXT;
