-- raw_changes (0042) walked every node of both raws of each changed version with json_tree: a decision's
-- raw has a few hundred, while a change touches a few top-level members (its name, status, updatedAt). It
-- now compares the top-level members of the two raws first (json_each; a member is named by its path, so
-- repeated keys are compared as one list) and walks only those that differ, on both sides. A member equal
-- on both sides has equal leaves, which the comparison by path would have dropped anyway, so the rows are
-- the same (tests/test_change_paths.py draws any two JSON texts against the 0042 macro). A raw that is an
-- empty object or array, or a scalar, is one member at $, as json_tree names it.
CREATE OR REPLACE MACRO raw_steps(history_table, tenant, at_instant) AS TABLE
SELECT tenant_id, id AS record_id, valid_from, run_id, before_raw, raw
FROM (
    SELECT tenant_id, id, valid_from, run_id, raw,
           lag(raw) OVER (PARTITION BY tenant_id, id ORDER BY valid_from) AS before_raw
    FROM query_table(history_table)
    WHERE (tenant IS NULL OR tenant_id = tenant)
      AND (at_instant IS NULL OR valid_from = at_instant OR valid_to = at_instant)
)
WHERE before_raw IS NOT NULL AND (at_instant IS NULL OR valid_from = at_instant);

CREATE OR REPLACE MACRO raw_changes(entity_name, history_table, tenant, at_instant) AS TABLE
WITH steps AS (
    -- at an instant, raw_steps gives only the versions that start then
    SELECT entity_name AS entity, * FROM raw_steps(history_table, tenant, at_instant)
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
