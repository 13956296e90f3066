-- A nightly run of a tenant of 100,000 decisions (about 1,000 of them changed) ran out of the commit's 128 MB
-- buffer in raw_changes, twice, and committed on its third try (256 MB on one thread), each try a warning
-- of the run: comparing the members of two raws needs about 35 times their size in DuckDB's buffer (each
-- member row of json_each carries its whole document to the join that decorrelates it), so the comparison
-- grew with the number of changed records. It now reads the versions it compares from a table
-- (raw_step_changes: the steps of raw_steps, named by steps_table), so that a commit hands them over in
-- batches of bounded size (warehouse/changes.py). raw_changes is that comparison over raw_steps, as before:
-- the rows are the same (tests/test_change_paths.py).
CREATE OR REPLACE MACRO raw_step_changes(entity_name, steps_table) AS TABLE
WITH steps AS (
    SELECT entity_name AS entity, * FROM query_table(steps_table)
), sides AS (
    SELECT entity, tenant_id, record_id, valid_from, run_id, 'before' AS side, before_raw AS doc FROM steps
    UNION ALL
    SELECT entity, tenant_id, record_id, valid_from, run_id, 'after', raw FROM steps
), members AS (
    SELECT s.* EXCLUDE (doc), m.fullkey AS member, m.value
    FROM sides s, json_each(s.doc) m
    UNION ALL
    SELECT s.* EXCLUDE (doc), '$', s.doc FROM sides s WHERE CAST(s.doc AS VARCHAR) IN ('{}', '[]')
), differing AS (
    SELECT tenant_id, record_id, valid_from, member
    FROM members
    GROUP BY tenant_id, record_id, valid_from, member
    HAVING list_sort(list(CAST(value AS VARCHAR)) FILTER (WHERE side = 'before'))
        IS DISTINCT FROM list_sort(list(CAST(value AS VARCHAR)) FILTER (WHERE side = 'after'))
), walked AS (
    SELECT m.* FROM members m SEMI JOIN differing d USING (tenant_id, record_id, valid_from, member)
), raw_leaves AS (
    SELECT w.entity, w.tenant_id, w.record_id, w.valid_from, w.run_id, w.side,
           w.member || substr(t.fullkey, 2) AS path, CAST(t.value AS VARCHAR) AS value
    FROM walked w, json_tree(w.value) t
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

CREATE OR REPLACE MACRO raw_changes(entity_name, history_table, tenant, at_instant) AS TABLE
WITH found_steps AS (
    -- at an instant, raw_steps gives only the versions that start then
    SELECT * FROM raw_steps(history_table, tenant, at_instant)
)
SELECT * FROM raw_step_changes(entity_name, 'found_steps');
