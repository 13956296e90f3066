-- Lists keyed by name (issue 30). Two lists can read one endpoint (groups and group_directory both read
-- GET /settings/v1/groups), so a rejected record says which list rejected it, not only the endpoint that
-- served it; sync_runs.deviations rows carry the list too ("list"). Rows of earlier runs came from the one
-- list of their endpoint then: E8 was the decisions list, E9 the caller's positions, and every other list
-- was named after its endpoint.
ALTER TABLE rejected_records ADD COLUMN list_name VARCHAR;
UPDATE rejected_records
SET list_name = CASE endpoint WHEN 'E8' THEN 'decisions' WHEN 'E9' THEN 'current_user_positions' ELSE endpoint END;
ALTER TABLE rejected_records ALTER COLUMN list_name SET NOT NULL;

-- The tables whose changes change_log holds from their first version: those of migration 0042's back-fill,
-- the only tables with a history when this migration runs besides the revision lists' (whose versions the
-- log does not take). A table of the catalog missing here has its changes back-filled from its history by
-- the catalog step of every migrate (warehouse/catalog_sql.py), then is recorded here.
CREATE TABLE change_log_tables (
    table_name VARCHAR PRIMARY KEY,
    logged_since TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO change_log_tables (table_name)
SELECT regexp_replace(table_name, '_history$', '')
FROM duckdb_tables()
WHERE table_name LIKE '%\_history' ESCAPE '\'
  AND table_name NOT IN ('delegation_revisions_history', 'document_revisions_history');
