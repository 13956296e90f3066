-- "As of any time" on every table (issue 21): table macros over the history tables, the views of what holds
-- now written as those macros at the current instant (one definition of each rule), a field-level change
-- log, audit-grade authority views and the reach of a decision down the group tree.
--
-- ts, the instant asked about, is anything that casts to TIMESTAMPTZ: a TIMESTAMPTZ, or a text such as
-- '2026-03-01 00:00:00+00' (a text without an offset is read in the session's time zone). A version holds
-- from its valid_from (included) to its valid_to (excluded), so at the commit time of a run a macro shows
-- what that run committed.

-- The rows of a history table as they were at ts: the current table as it was then (deleted records
-- included and flagged, as in the current tables), with the version's valid_from and valid_to.
CREATE MACRO history_as_of(history_table, ts) AS TABLE
SELECT * EXCLUDE (is_current, ended_run_id)
FROM query_table(history_table)
WHERE valid_from <= CAST(ts AS TIMESTAMPTZ) AND (valid_to IS NULL OR CAST(ts AS TIMESTAMPTZ) < valid_to);

CREATE MACRO decisions_as_of(ts) AS TABLE SELECT * FROM history_as_of('decisions_history', ts);
CREATE MACRO decision_groups_as_of(ts) AS TABLE SELECT * FROM history_as_of('decision_groups_history', ts);
CREATE MACRO decision_authorities_as_of(ts) AS TABLE
SELECT * FROM history_as_of('decision_authorities_history', ts);
CREATE MACRO decision_documents_as_of(ts) AS TABLE
SELECT * FROM history_as_of('decision_documents_history', ts);
CREATE MACRO delegations_as_of(ts) AS TABLE SELECT * FROM history_as_of('delegations_history', ts);
CREATE MACRO users_as_of(ts) AS TABLE SELECT * FROM history_as_of('users_history', ts);
CREATE MACRO user_roles_as_of(ts) AS TABLE SELECT * FROM history_as_of('user_roles_history', ts);
CREATE MACRO user_positions_as_of(ts) AS TABLE SELECT * FROM history_as_of('user_positions_history', ts);
CREATE MACRO user_groups_as_of(ts) AS TABLE SELECT * FROM history_as_of('user_groups_history', ts);
CREATE MACRO groups_as_of(ts) AS TABLE SELECT * FROM history_as_of('groups_history', ts);
CREATE MACRO group_parents_as_of(ts) AS TABLE SELECT * FROM history_as_of('group_parents_history', ts);
CREATE MACRO positions_as_of(ts) AS TABLE SELECT * FROM history_as_of('positions_history', ts);
CREATE MACRO current_user_positions_as_of(ts) AS TABLE
SELECT * FROM history_as_of('current_user_positions_history', ts);

-- The group tree at ts: the rules of v_group_tree (migration 0009), which is now this macro at the current
-- instant. Display ids stand beside the names (two groups can share a name under one parent).
CREATE MACRO group_tree_as_of(ts) AS TABLE
WITH RECURSIVE live AS (
    SELECT * FROM groups_as_of(ts) WHERE is_deleted IS NOT TRUE
),
links AS (
    SELECT * FROM group_parents_as_of(ts)
),
edges AS (
    -- Parent links between two live groups; a group listed as its own parent is no edge.
    SELECT DISTINCT p.tenant_id, p.group_id, p.parent_id
    FROM links p
    JOIN live child ON child.tenant_id = p.tenant_id AND child.id = p.group_id
    JOIN live parent ON parent.tenant_id = p.tenant_id AND parent.id = p.parent_id
    WHERE p.parent_id <> p.group_id
),
tree(tenant_id, group_id, path_ids, path_names, path_display_ids, detached) AS (
    SELECT g.tenant_id, g.id, [g.id], [g.group_name], [g.group_display_id],
           EXISTS (SELECT 1 FROM links p WHERE p.tenant_id = g.tenant_id AND p.group_id = g.id)
    FROM live g
    WHERE NOT EXISTS (SELECT 1 FROM edges e WHERE e.tenant_id = g.tenant_id AND e.group_id = g.id)
    UNION ALL
    SELECT t.tenant_id, child.id, list_append(t.path_ids, child.id), list_append(t.path_names, child.group_name),
           list_append(t.path_display_ids, child.group_display_id), t.detached
    FROM tree t
    JOIN edges e ON e.tenant_id = t.tenant_id AND e.parent_id = t.group_id
    JOIN live child ON child.tenant_id = e.tenant_id AND child.id = e.group_id
    WHERE NOT list_contains(t.path_ids, child.id)
),
paths AS (
    SELECT * FROM tree
    UNION ALL
    SELECT g.tenant_id, g.id, [g.id], [g.group_name], [g.group_display_id], TRUE
    FROM live g
    WHERE NOT EXISTS (SELECT 1 FROM tree t WHERE t.tenant_id = g.tenant_id AND t.group_id = g.id)
)
SELECT
    p.tenant_id, p.group_id, g.group_display_id, g.group_name, g.display_name, g.group_type_name, g.status,
    len(p.path_ids) - 1 AS depth, array_to_string(p.path_names, ' > ') AS path,
    p.path_names, p.path_ids, p.path_display_ids, p.path_ids[1] AS root_id,
    CASE WHEN len(p.path_ids) > 1 THEN p.path_ids[-2] END AS parent_id, p.detached
FROM paths p
JOIN live g ON g.tenant_id = p.tenant_id AND g.id = p.group_id;

CREATE OR REPLACE VIEW v_group_tree AS SELECT * FROM group_tree_as_of(current_timestamp);

-- Where a decision applies at ts. The spec does not say whether a decision attached to a group also applies
-- to the groups below it; this takes no side and shows both: one row per live decision, live group it
-- reaches and group it names that leads there. A group the decision names is reached directly
-- (levels_below 0, through_ancestor false); every live group below it in the tree is reached through that
-- ancestor (through_ancestor true). Filter on NOT through_ancestor to read decisions as applying only where
-- they are attached.
CREATE MACRO decision_scope_as_of(ts) AS TABLE
WITH named AS (
    SELECT DISTINCT dg.tenant_id, dg.decision_id, dg.group_id
    FROM decision_groups_as_of(ts) dg
    JOIN decisions_as_of(ts) d ON d.tenant_id = dg.tenant_id AND d.id = dg.decision_id
    WHERE d.is_deleted IS NOT TRUE
), reached AS (
    SELECT n.tenant_id, n.decision_id, t.group_id, n.group_id AS via_group_id,
           min(len(t.path_ids) - list_position(t.path_ids, n.group_id)) AS levels_below
    FROM named n
    JOIN group_tree_as_of(ts) t ON t.tenant_id = n.tenant_id AND list_contains(t.path_ids, n.group_id)
    GROUP BY ALL
)
SELECT r.tenant_id, r.decision_id, d.decision_display_id, d.name AS decision_name, r.group_id,
       g.group_display_id, g.group_name, r.via_group_id, v.group_name AS via_group_name, r.levels_below,
       r.levels_below > 0 AS through_ancestor
FROM reached r
JOIN decisions_as_of(ts) d ON d.tenant_id = r.tenant_id AND d.id = r.decision_id
JOIN groups_as_of(ts) g ON g.tenant_id = r.tenant_id AND g.id = r.group_id
JOIN groups_as_of(ts) v ON v.tenant_id = r.tenant_id AND v.id = r.via_group_id;

CREATE VIEW v_decision_scope AS SELECT * FROM decision_scope_as_of(current_timestamp);

-- Who holds which authority at ts, up to which limit, through which delegation. The assumption of
-- migration 0009 (neither the spec nor the public reference defines who holds a decision): a user holds a
-- decision's authority limits through a delegation in force whose recipient they are. In force at ts: not
-- deleted, ISSUED or ACCEPTED, ts within its instants (starts_at <= ts < ends_at, a missing one leaving
-- that side open), of a PUBLISHED decision that is not deleted.
-- Audit-grade: every recipient is kept, whatever their state, and flagged: deleted, INACTIVE, terminated
-- (termination_date on or before ts's UTC day) or not in the warehouse at all; user_can_act is true only
-- for a recipient with none of these. Decision and group names are those of ts.
CREATE MACRO user_authorities_as_of(ts) AS TABLE
WITH moment AS (
    SELECT CAST(ts AS TIMESTAMPTZ) AS instant, CAST(timezone('UTC', CAST(ts AS TIMESTAMPTZ)) AS DATE) AS day
), in_force AS (
    SELECT l.*
    FROM delegations_as_of(ts) l, moment m
    WHERE l.is_deleted IS NOT TRUE AND l.status IN ('ISSUED', 'ACCEPTED')
      AND (l.starts_at IS NULL OR l.starts_at <= m.instant)
      AND (l.ends_at IS NULL OR m.instant < l.ends_at)
), recipients AS (
    SELECT l.tenant_id, l.id AS delegation_id, u.name, u.status,
           coalesce(u.is_deleted, FALSE) AS user_is_deleted,
           coalesce(u.status = 'INACTIVE', FALSE) AS user_is_inactive,
           coalesce(u.termination_date <= m.day, FALSE) AS user_is_terminated,
           u.id IS NULL AS user_is_unknown
    FROM in_force l
    CROSS JOIN moment m
    LEFT JOIN users_as_of(ts) u ON u.tenant_id = l.tenant_id AND u.id = l.recipient_id
), decision_groups_named AS (
    SELECT dg.tenant_id, dg.decision_id, list(dg.group_id ORDER BY dg.name, dg.group_id) AS group_ids,
           list(dg.name ORDER BY dg.name, dg.group_id) AS group_names
    FROM (
        SELECT dg.*, coalesce(g.group_name, dg.group_name) AS name
        FROM decision_groups_as_of(ts) dg
        LEFT JOIN groups_as_of(ts) g ON g.tenant_id = dg.tenant_id AND g.id = dg.group_id
        WHERE g.is_deleted IS NOT TRUE
    ) dg
    GROUP BY ALL
)
SELECT
    l.tenant_id, l.recipient_id AS user_id, r.name AS user_name, r.status AS user_status,
    r.user_is_deleted, r.user_is_inactive, r.user_is_terminated, r.user_is_unknown,
    NOT (r.user_is_deleted OR r.user_is_inactive OR r.user_is_terminated OR r.user_is_unknown) AS user_can_act,
    d.id AS decision_id, d.decision_display_id, d.name AS decision_name,
    a.authority_type_id, a.authority_type, a.authority_type_order, a.value_type, a.operator, a.limit_value,
    a.limit_number, a.limit_unit, a.is_unlimited, a.authority_limit,
    l.id AS delegation_id, l.delegation_display_id, l.status AS delegation_status, l.issuer_type, l.issuer_id,
    l.starts_at AS delegation_start, l.ends_at AS delegation_end,
    coalesce(s.group_ids, []) AS group_ids, coalesce(s.group_names, []) AS group_names
FROM in_force l
JOIN recipients r ON r.tenant_id = l.tenant_id AND r.delegation_id = l.id
JOIN decisions_as_of(ts) d ON d.tenant_id = l.tenant_id AND d.id = l.decision_id
    AND d.status = 'PUBLISHED' AND d.is_deleted IS NOT TRUE
JOIN decision_authorities_as_of(ts) a ON a.tenant_id = d.tenant_id AND a.decision_id = d.id
LEFT JOIN decision_groups_named s ON s.tenant_id = d.tenant_id AND s.decision_id = d.id;

CREATE OR REPLACE VIEW v_user_authorities AS SELECT * FROM user_authorities_as_of(current_timestamp);

-- The field-level change log. The versions of the records that changed at least once, as (field, value)
-- cells: every column a run writes, as text, bookkeeping left out (a record seen in one version only has no
-- change, and leaving it out keeps the log cheap as the tables grow); typed is false on versions recorded
-- before migration 0008, which hold only raw (no field of theirs can be compared).
CREATE MACRO record_cells(history_table) AS TABLE
SELECT * FROM (
    SELECT tenant_id, id AS record_id, valid_from, run_id, synced_at IS NOT NULL AS typed,
           COLUMNS(lambda c: c NOT IN (
               'tenant_id', 'id', 'valid_from', 'valid_to', 'is_current', 'run_id', 'ended_run_id',
               'synced_at', 'content_hash', 'raw', 'deleted_at'
           ))::VARCHAR
    FROM query_table(history_table)
    QUALIFY count(*) OVER (PARTITION BY tenant_id, id) > 1
) UNPIVOT INCLUDE NULLS (value FOR field IN (COLUMNS(lambda c: c NOT IN (
    'tenant_id', 'record_id', 'valid_from', 'run_id', 'typed'
))));

-- The versions of items that changed, as cells: the record whose list holds the item (parent_column), the
-- record it cites (item_column, as text) and its occurrence, then its other fields. An item changed when it
-- has several versions, ended, or was added after its record was first seen (record_first_seen, from the
-- record history named record_history) by a run (an upgrade's versions have no run).
CREATE MACRO item_cells(history_table, parent_column, item_column, record_history) AS TABLE
SELECT * FROM (
    SELECT i.* EXCLUDE (versions), f.first_seen AS record_first_seen
    FROM (
        SELECT *, count(*) OVER (PARTITION BY tenant_id, record_id, item, occurrence) AS versions
        FROM (
            SELECT tenant_id, COLUMNS(parent_column) AS record_id,
                   CAST(COLUMNS(item_column) AS VARCHAR) AS item, item_column AS item_field, occurrence,
                   valid_from, valid_to, run_id, ended_run_id,
                   COLUMNS(lambda c: c NOT IN (
                       'tenant_id', parent_column, item_column, 'id', 'occurrence', 'item_order',
                       'group_order', 'valid_from', 'valid_to', 'is_current', 'run_id', 'ended_run_id',
                       'synced_at', 'raw'
                   ))::VARCHAR
            FROM query_table(history_table)
        )
    ) i
    LEFT JOIN (
        SELECT tenant_id, id, min(valid_from) AS first_seen FROM query_table(record_history) GROUP BY ALL
    ) f ON f.tenant_id = i.tenant_id AND f.id = i.record_id
    WHERE i.versions > 1 OR i.valid_to IS NOT NULL OR (i.run_id IS NOT NULL AND i.valid_from > f.first_seen)
) UNPIVOT INCLUDE NULLS (value FOR field IN (COLUMNS(lambda c: c NOT IN (
    'tenant_id', 'record_id', 'item', 'item_field', 'occurrence', 'valid_from', 'valid_to', 'run_id',
    'ended_run_id', 'record_first_seen'
))));

-- One row per change the warehouse recorded after a record was first seen:
-- * a field of a record (entity a record table: decisions, users, ...) that differs between two of its
--   consecutive versions (item NULL);
-- * an item of a record's list (entity a child table: user_groups, decision_authorities, ...): added (field
--   the item's reference column, before NULL, after the cited id), removed (before the cited id, after
--   NULL), or one of its fields changed. id is the record the list belongs to, item the record it cites.
-- Items that came with a record's first version, and those an upgrade found already there (run_id NULL),
-- were not added by a change.
CREATE VIEW v_changes AS
WITH records AS (
    SELECT 'decisions' AS entity, * FROM record_cells('decisions_history')
    UNION ALL SELECT 'delegations', * FROM record_cells('delegations_history')
    UNION ALL SELECT 'users', * FROM record_cells('users_history')
    UNION ALL SELECT 'groups', * FROM record_cells('groups_history')
    UNION ALL SELECT 'positions', * FROM record_cells('positions_history')
    UNION ALL SELECT 'current_user_positions', * FROM record_cells('current_user_positions_history')
), items AS (
    SELECT 'decision_groups' AS entity, *
    FROM item_cells('decision_groups_history', 'decision_id', 'group_id', 'decisions_history')
    UNION ALL SELECT 'decision_authorities', *
    FROM item_cells('decision_authorities_history', 'decision_id', 'authority_type_id', 'decisions_history')
    UNION ALL SELECT 'decision_documents', *
    FROM item_cells('decision_documents_history', 'decision_id', 'document_id', 'decisions_history')
    UNION ALL SELECT 'user_roles', *
    FROM item_cells('user_roles_history', 'user_id', 'tenant_role_id', 'users_history')
    UNION ALL SELECT 'user_positions', *
    FROM item_cells('user_positions_history', 'user_id', 'position_id', 'users_history')
    UNION ALL SELECT 'user_groups', *
    FROM item_cells('user_groups_history', 'user_id', 'group_id', 'users_history')
    UNION ALL SELECT 'group_parents', *
    FROM item_cells('group_parents_history', 'group_id', 'parent_id', 'groups_history')
), record_steps AS (
    SELECT *, lag(value) OVER w AS before, lag(typed) OVER w AS before_typed
    FROM records
    WINDOW w AS (PARTITION BY entity, tenant_id, record_id, field ORDER BY valid_from)
), item_steps AS (
    SELECT *, lag(value) OVER w AS before, lag(valid_to) OVER w AS before_to
    FROM items
    WINDOW w AS (PARTITION BY entity, tenant_id, record_id, item, occurrence, field ORDER BY valid_from)
), item_versions AS (
    SELECT DISTINCT entity, tenant_id, record_id, item, item_field, occurrence, valid_from, valid_to, run_id,
           ended_run_id, record_first_seen
    FROM items
), item_spans AS (
    SELECT *, lag(valid_to) OVER w AS before_to, lead(valid_from) OVER w AS next_from
    FROM item_versions
    WINDOW w AS (PARTITION BY entity, tenant_id, record_id, item, occurrence ORDER BY valid_from)
)
SELECT entity, tenant_id, record_id AS id, CAST(NULL AS VARCHAR) AS item, field, before, value AS after,
       valid_from AS changed_at, run_id
FROM record_steps
WHERE typed AND before_typed AND before IS DISTINCT FROM value
UNION ALL
SELECT entity, tenant_id, record_id, item, field, before, value, valid_from, run_id
FROM item_steps
WHERE before_to = valid_from AND before IS DISTINCT FROM value
UNION ALL
SELECT entity, tenant_id, record_id, item, item_field, NULL, item, valid_from, run_id
FROM item_spans
WHERE before_to IS DISTINCT FROM valid_from AND run_id IS NOT NULL AND valid_from > record_first_seen
UNION ALL
SELECT entity, tenant_id, record_id, item, item_field, item, NULL, valid_to, ended_run_id
FROM item_spans
WHERE valid_to IS NOT NULL AND next_from IS DISTINCT FROM valid_to;
