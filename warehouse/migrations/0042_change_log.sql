-- A change log written at commit time (issue 29). v_changes used to compute every change from the whole
-- history on each query (over a second on a 20k-decision tenant, growing every night); now each commit
-- appends the changes it made to change_log, in its own transaction (warehouse/changes.py), and v_changes
-- reads the table: a query for one record or one month reads only those rows. Every change is named: a
-- version of a record lists the paths of raw that changed, with their JSON text before and after, so that
-- a field the tables have no column for (a user's customAttributes) says what changed.
-- Instants are written as UTC ISO 8601 text (utc_text), the same for every reader. An item's occurrence
-- tells apart two items of one list citing the same record.
--
-- One table's changes are record_changes, item_changes and raw_changes (each of one history table, one
-- definition of a change): with tenant and at_instant NULL every change the history holds (what this
-- migration fills the log with), with a tenant and a commit instant the changes that commit made, reading
-- only the histories of the records it touched. A commit runs them table by table (warehouse/changes.py,
-- from the catalog): one query of every table ran out of a commit's bounded memory.
DROP VIEW v_changes;
DROP MACRO TABLE record_cells;
DROP MACRO TABLE item_cells;

-- The versions of the records that have more than one, as (field, value) cells; restricted to the tenant's
-- records with a version starting at at_instant when it is given.
CREATE MACRO record_cells(history_table, tenant, at_instant) AS TABLE
SELECT * FROM (
    SELECT tenant_id, id AS record_id, valid_from, run_id, synced_at IS NOT NULL AS typed,
           utc_text(COLUMNS(lambda c: c NOT IN (
               'tenant_id', 'id', 'valid_from', 'valid_to', 'is_current', 'run_id', 'ended_run_id',
               'synced_at', 'content_hash', 'raw', 'deleted_at'
           )))
    FROM query_table(history_table)
    WHERE (tenant IS NULL OR tenant_id = tenant)
      AND (at_instant IS NULL OR id IN (
          SELECT id FROM query_table(history_table) WHERE tenant_id = tenant AND valid_from = at_instant
      ))
    QUALIFY count(*) OVER (PARTITION BY tenant_id, id) > 1
) UNPIVOT INCLUDE NULLS (value FOR field IN (COLUMNS(lambda c: c NOT IN (
    'tenant_id', 'record_id', 'valid_from', 'run_id', 'typed'
))));

-- Each version of a record that follows another, with both raws (the same restriction).
CREATE MACRO raw_steps(history_table, tenant, at_instant) AS TABLE
SELECT tenant_id, id AS record_id, valid_from, run_id, before_raw, raw
FROM (
    SELECT tenant_id, id, valid_from, run_id, raw,
           lag(raw) OVER (PARTITION BY tenant_id, id ORDER BY valid_from) AS before_raw
    FROM query_table(history_table)
    WHERE (tenant IS NULL OR tenant_id = tenant)
      AND (at_instant IS NULL OR id IN (
          SELECT id FROM query_table(history_table) WHERE tenant_id = tenant AND valid_from = at_instant
      ))
)
WHERE before_raw IS NOT NULL;

-- The versions of items that changed, as cells (migration 0022's rule), restricted to the tenant's records
-- whose items gained or ended a version at at_instant when it is given.
CREATE MACRO item_cells(history_table, parent_column, item_column, record_history, tenant, at_instant) AS TABLE
SELECT * FROM (
    SELECT i.* EXCLUDE (versions), f.first_seen AS record_first_seen
    FROM (
        SELECT *, count(*) OVER (PARTITION BY tenant_id, record_id, item, occurrence) AS versions
        FROM (
            SELECT tenant_id, COLUMNS(parent_column) AS record_id,
                   CAST(COLUMNS(item_column) AS VARCHAR) AS item, item_column AS item_field, occurrence,
                   valid_from, valid_to, run_id, ended_run_id,
                   utc_text(COLUMNS(lambda c: c NOT IN (
                       'tenant_id', parent_column, item_column, 'id', 'occurrence', 'item_order',
                       'group_order', 'valid_from', 'valid_to', 'is_current', 'run_id', 'ended_run_id',
                       'synced_at', 'raw'
                   )))
            FROM query_table(history_table)
            WHERE (tenant IS NULL OR tenant_id = tenant)
        )
        WHERE at_instant IS NULL OR record_id IN (
            SELECT COLUMNS(parent_column) FROM query_table(history_table)
            WHERE tenant_id = tenant AND (valid_from = at_instant OR valid_to = at_instant)
        )
    ) i
    LEFT JOIN (
        SELECT tenant_id, id, min(valid_from) AS first_seen FROM query_table(record_history)
        WHERE tenant IS NULL OR tenant_id = tenant
        GROUP BY ALL
    ) f ON f.tenant_id = i.tenant_id AND f.id = i.record_id
    WHERE i.versions > 1 OR i.valid_to IS NOT NULL OR (i.run_id IS NOT NULL AND i.valid_from > f.first_seen)
) UNPIVOT INCLUDE NULLS (value FOR field IN (COLUMNS(lambda c: c NOT IN (
    'tenant_id', 'record_id', 'item', 'item_field', 'occurrence', 'valid_from', 'valid_to', 'run_id',
    'ended_run_id', 'record_first_seen'
))));

-- A record's fields that differ between two consecutive versions (the rule of migration 0022's v_changes).
CREATE MACRO record_changes(entity_name, history_table, tenant, at_instant) AS TABLE
WITH steps AS (
    SELECT *, lag(value) OVER w AS before, lag(typed) OVER w AS before_typed
    FROM record_cells(history_table, tenant, at_instant)
    WINDOW w AS (PARTITION BY tenant_id, record_id, field ORDER BY valid_from)
)
SELECT entity_name AS entity, tenant_id, record_id AS id, CAST(NULL AS VARCHAR) AS item,
       CAST(NULL AS INTEGER) AS occurrence, field, before, value AS after, valid_from AS changed_at, run_id
FROM steps
WHERE typed AND before_typed AND before IS DISTINCT FROM value AND (at_instant IS NULL OR valid_from = at_instant);

-- Items of a record's list added, removed or changed (the rules of migration 0022's v_changes): added
-- (field the item's reference column, before NULL, after the cited id), removed (before the cited id,
-- after NULL), or one of its fields changed. Items that came with a record's first version, and those an
-- upgrade found already there (run_id NULL), were not added by a change.
CREATE MACRO item_changes(entity_name, history_table, parent_column, item_column, record_history, tenant, at_instant)
AS TABLE
WITH items AS (
    SELECT * FROM item_cells(history_table, parent_column, item_column, record_history, tenant, at_instant)
), item_steps AS (
    SELECT *, lag(value) OVER w AS before, lag(valid_to) OVER w AS before_to
    FROM items
    WINDOW w AS (PARTITION BY tenant_id, record_id, item, occurrence, field ORDER BY valid_from)
), item_versions AS (
    SELECT DISTINCT tenant_id, record_id, item, item_field, occurrence, valid_from, valid_to, run_id,
           ended_run_id, record_first_seen
    FROM items
), item_spans AS (
    SELECT *, lag(valid_to) OVER w AS before_to, lead(valid_from) OVER w AS next_from
    FROM item_versions
    WINDOW w AS (PARTITION BY tenant_id, record_id, item, occurrence ORDER BY valid_from)
), every_change AS (
    SELECT tenant_id, record_id, item, occurrence, field, before, value AS after, valid_from AS changed_at, run_id
    FROM item_steps
    WHERE before_to = valid_from AND before IS DISTINCT FROM value
    UNION ALL
    SELECT tenant_id, record_id, item, occurrence, item_field, NULL, item, valid_from, run_id
    FROM item_spans
    WHERE before_to IS DISTINCT FROM valid_from AND run_id IS NOT NULL AND valid_from > record_first_seen
    UNION ALL
    SELECT tenant_id, record_id, item, occurrence, item_field, item, NULL, valid_to, ended_run_id
    FROM item_spans
    WHERE valid_to IS NOT NULL AND next_from IS DISTINCT FROM valid_to
)
SELECT entity_name AS entity, tenant_id, record_id AS id, item, CAST(occurrence AS INTEGER) AS occurrence, field,
       before, after, changed_at, run_id
FROM every_change
WHERE at_instant IS NULL OR changed_at = at_instant;

CREATE TABLE change_log (
    entity VARCHAR NOT NULL,
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    item VARCHAR,
    occurrence INTEGER,
    field VARCHAR NOT NULL,
    before VARCHAR,
    after VARCHAR,
    changed_at TIMESTAMPTZ NOT NULL,
    run_id VARCHAR
);

-- The changed paths of raw of each record version that follows another: the leaves of both raws (values
-- that are no object or array, or empty ones) by JSON path, with their JSON text before and after. A change
-- no column shows (a user's customAttributes, a field the tables lack) is named this way. A top-level path
-- whose key, in snake case, is a column already logged as changed in the same version ($.displayName beside
-- display_name) is left out: the column's row says it. Run after record_changes' rows of the same versions
-- are in change_log.
CREATE MACRO raw_changes(entity_name, history_table, tenant, at_instant) AS TABLE
WITH steps AS (
    SELECT entity_name AS entity, * FROM raw_steps(history_table, tenant, at_instant)
    WHERE at_instant IS NULL OR valid_from = at_instant
), raw_leaves AS (
    SELECT u.entity, u.tenant_id, u.record_id, u.valid_from, u.run_id, 'before' AS side, t.fullkey AS path,
           CAST(t.value AS VARCHAR) AS value
    FROM steps u, json_tree(u.before_raw) t
    WHERE t.type NOT IN ('OBJECT', 'ARRAY') OR CAST(t.value AS VARCHAR) IN ('{}', '[]')
    UNION ALL
    SELECT u.entity, u.tenant_id, u.record_id, u.valid_from, u.run_id, 'after', t.fullkey, CAST(t.value AS VARCHAR)
    FROM steps u, json_tree(u.raw) t
    WHERE t.type NOT IN ('OBJECT', 'ARRAY') OR CAST(t.value AS VARCHAR) IN ('{}', '[]')
), paths AS (
    SELECT entity, tenant_id, record_id AS id, CAST(NULL AS VARCHAR) AS item, CAST(NULL AS INTEGER) AS occurrence,
           path AS field, max(value) FILTER (WHERE side = 'before') AS before,
           max(value) FILTER (WHERE side = 'after') AS after, valid_from AS changed_at, run_id
    FROM raw_leaves
    GROUP BY entity, tenant_id, record_id, path, valid_from, run_id
    HAVING before IS DISTINCT FROM after
)
SELECT p.* FROM paths p
WHERE NOT EXISTS (
    SELECT 1 FROM change_log c
    WHERE c.entity = p.entity AND c.tenant_id = p.tenant_id AND c.id = p.id AND c.changed_at = p.changed_at
      AND c.item IS NULL
      AND c.field = lower(regexp_replace(regexp_extract(p.field, '^\$\.([A-Za-z0-9_]+)$', 1), '([A-Z])', '_\1', 'g'))
);

-- Every change the histories hold, table by table, in the order a commit appends them.
INSERT INTO change_log SELECT * FROM record_changes('decisions', 'decisions_history', NULL, NULL);
INSERT INTO change_log
SELECT * FROM item_changes('decision_groups', 'decision_groups_history', 'decision_id', 'group_id', 'decisions_history', NULL, NULL);
INSERT INTO change_log
SELECT * FROM item_changes('decision_authorities', 'decision_authorities_history', 'decision_id', 'authority_type_id', 'decisions_history', NULL, NULL);
INSERT INTO change_log
SELECT * FROM item_changes('decision_documents', 'decision_documents_history', 'decision_id', 'document_id', 'decisions_history', NULL, NULL);
INSERT INTO change_log SELECT * FROM raw_changes('decisions', 'decisions_history', NULL, NULL);
INSERT INTO change_log SELECT * FROM record_changes('delegations', 'delegations_history', NULL, NULL);
INSERT INTO change_log SELECT * FROM raw_changes('delegations', 'delegations_history', NULL, NULL);
INSERT INTO change_log SELECT * FROM record_changes('users', 'users_history', NULL, NULL);
INSERT INTO change_log
SELECT * FROM item_changes('user_roles', 'user_roles_history', 'user_id', 'tenant_role_id', 'users_history', NULL, NULL);
INSERT INTO change_log
SELECT * FROM item_changes('user_positions', 'user_positions_history', 'user_id', 'position_id', 'users_history', NULL, NULL);
INSERT INTO change_log
SELECT * FROM item_changes('user_groups', 'user_groups_history', 'user_id', 'group_id', 'users_history', NULL, NULL);
INSERT INTO change_log SELECT * FROM raw_changes('users', 'users_history', NULL, NULL);
INSERT INTO change_log SELECT * FROM record_changes('groups', 'groups_history', NULL, NULL);
INSERT INTO change_log
SELECT * FROM item_changes('group_parents', 'group_parents_history', 'group_id', 'parent_id', 'groups_history', NULL, NULL);
INSERT INTO change_log SELECT * FROM raw_changes('groups', 'groups_history', NULL, NULL);
INSERT INTO change_log SELECT * FROM record_changes('positions', 'positions_history', NULL, NULL);
INSERT INTO change_log SELECT * FROM raw_changes('positions', 'positions_history', NULL, NULL);
INSERT INTO change_log SELECT * FROM record_changes('current_user_positions', 'current_user_positions_history', NULL, NULL);
INSERT INTO change_log SELECT * FROM raw_changes('current_user_positions', 'current_user_positions_history', NULL, NULL);

CREATE VIEW v_changes AS
SELECT entity, tenant_id, id, item, occurrence, field, before, after, changed_at, run_id FROM change_log;
