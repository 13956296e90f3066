-- The group directory (issue 30): a second list of GET /settings/v1/groups, read on its own cursor, of
-- which this table keeps the names, type and status of each group (the list catalog says which columns).
-- A group gains a directory version only when one of these changes: an address, a count or a parent link
-- adds none. As-of macro and change log: rendered from the catalog at migrate time (warehouse/catalog_sql.py).
CREATE TABLE group_directory (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    group_display_id VARCHAR,
    group_name VARCHAR,
    display_name VARCHAR,
    group_type_name VARCHAR,
    status VARCHAR,
    is_deleted BOOLEAN,
    content_hash VARCHAR,
    raw JSON NOT NULL,
    deleted_at TIMESTAMPTZ,
    synced_at TIMESTAMPTZ,
    run_id VARCHAR,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE group_directory_history AS
SELECT *, CAST(NULL AS TIMESTAMPTZ) AS valid_from, CAST(NULL AS TIMESTAMPTZ) AS valid_to,
       CAST(NULL AS VARCHAR) AS ended_run_id, CAST(NULL AS BOOLEAN) AS is_current
FROM group_directory WITH NO DATA;
