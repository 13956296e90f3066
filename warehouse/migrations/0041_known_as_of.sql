-- "Known as of" (issue 29). The warehouse knows the service only through its commits: an answer "as of ts"
-- is the state the tenant's last commit at or before ts recorded, not the service at ts (a change made
-- after that commit is not in it). Every as-of macro and audit view now says which commit that was
-- (known_as_of, known_as_of_run_id). Nothing is known of a tenant before its first commit (where its
-- history starts, v_sync_status.first_commit_at): an instant before it is refused with an error naming
-- the tenant and the start, instead of an empty answer that reads as "nobody".

-- An instant as text in UTC ISO 8601 with microseconds (2026-03-01T09:00:00.000000Z), whatever the
-- session's time zone; other values as DuckDB casts them to text.
CREATE MACRO utc_text(value) AS
CASE WHEN typeof(value) = 'TIMESTAMP WITH TIME ZONE'
    THEN strftime(timezone('UTC', CAST(CAST(value AS VARCHAR) AS TIMESTAMPTZ)), '%Y-%m-%dT%H:%M:%S.%fZ')
    ELSE CAST(value AS VARCHAR)
END;

-- The error of an as-of query about an instant ts before the history of a tenant starts (at starts).
CREATE MACRO before_history(ts, tenant, starts) AS error(format(
    'nothing is known as of {}: the history of tenant {} starts at its first commit, {} '
    '(first_commit_at of its sync status); before it the warehouse holds no answer, not an empty one: ask about '
    'an instant at or after it',
    utc_text(CAST(ts AS TIMESTAMPTZ)), tenant, utc_text(starts)
));

-- Per tenant with a commit: where its history starts, and the commit an answer as of ts comes from (its
-- last commit at or before ts). checked is TRUE, or an error when ts is before the history starts.
CREATE MACRO known_as_of(ts) AS TABLE
SELECT tenant_id, history_starts_at, known_as_of, known_as_of_run_id,
       CASE WHEN CAST(ts AS TIMESTAMPTZ) < history_starts_at THEN before_history(ts, tenant_id, history_starts_at)
            ELSE TRUE END AS checked
FROM (
    SELECT tenant_id, min(finished_at) AS history_starts_at,
           max(finished_at) FILTER (WHERE finished_at <= CAST(ts AS TIMESTAMPTZ)) AS known_as_of,
           arg_max(run_id, finished_at) FILTER (WHERE finished_at <= CAST(ts AS TIMESTAMPTZ)) AS known_as_of_run_id
    FROM sync_runs
    WHERE status = 'succeeded'
    GROUP BY ALL
);

-- The macros join the check on its own (so that no query of theirs, a count(*) included, can skip it): an
-- instant before both the tenant's first commit and the table's first version of it is refused (a version
-- older than the first commit recorded, kept by an upgrade, still answers, known_as_of NULL). A left join:
-- versions of a tenant with no commit recorded (made outside a run) keep showing, known_as_of NULL.
CREATE OR REPLACE MACRO history_as_of(history_table, ts) AS TABLE
SELECT h.* EXCLUDE (is_current, ended_run_id), k.known_as_of, k.known_as_of_run_id
FROM query_table(history_table) h
LEFT JOIN (
    SELECT k.tenant_id, k.known_as_of, k.known_as_of_run_id,
           CASE WHEN CAST(ts AS TIMESTAMPTZ) < least(k.history_starts_at, e.first_version)
                THEN before_history(ts, k.tenant_id, least(k.history_starts_at, e.first_version))
                ELSE TRUE END AS checked
    FROM known_as_of(ts) k
    LEFT JOIN (
        SELECT tenant_id, min(valid_from) AS first_version FROM query_table(history_table) GROUP BY ALL
    ) e ON e.tenant_id = k.tenant_id
) k ON k.tenant_id = h.tenant_id AND k.checked
WHERE h.valid_from <= CAST(ts AS TIMESTAMPTZ) AND (h.valid_to IS NULL OR CAST(ts AS TIMESTAMPTZ) < h.valid_to);

-- The three macros applying the views' rules, as in migration 0022, with the commit their answer is known
-- as of; their views again (a view keeps the columns it was created with).
CREATE OR REPLACE MACRO group_tree_as_of(ts) AS TABLE
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
    CASE WHEN len(p.path_ids) > 1 THEN p.path_ids[-2] END AS parent_id, p.detached,
    g.known_as_of, g.known_as_of_run_id
FROM paths p
JOIN live g ON g.tenant_id = p.tenant_id AND g.id = p.group_id;

CREATE OR REPLACE VIEW v_group_tree AS SELECT * FROM group_tree_as_of(current_timestamp);

CREATE OR REPLACE MACRO decision_scope_as_of(ts) AS TABLE
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
       r.levels_below > 0 AS through_ancestor, d.known_as_of, d.known_as_of_run_id
FROM reached r
JOIN decisions_as_of(ts) d ON d.tenant_id = r.tenant_id AND d.id = r.decision_id
JOIN groups_as_of(ts) g ON g.tenant_id = r.tenant_id AND g.id = r.group_id
JOIN groups_as_of(ts) v ON v.tenant_id = r.tenant_id AND v.id = r.via_group_id;

CREATE OR REPLACE VIEW v_decision_scope AS SELECT * FROM decision_scope_as_of(current_timestamp);

CREATE OR REPLACE MACRO user_authorities_as_of(ts) AS TABLE
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
    coalesce(s.group_ids, []) AS group_ids, coalesce(s.group_names, []) AS group_names,
    d.known_as_of, d.known_as_of_run_id
FROM in_force l
JOIN recipients r ON r.tenant_id = l.tenant_id AND r.delegation_id = l.id
JOIN decisions_as_of(ts) d ON d.tenant_id = l.tenant_id AND d.id = l.decision_id
    AND d.status = 'PUBLISHED' AND d.is_deleted IS NOT TRUE
JOIN decision_authorities_as_of(ts) a ON a.tenant_id = d.tenant_id AND a.decision_id = d.id
LEFT JOIN decision_groups_named s ON s.tenant_id = d.tenant_id AND s.decision_id = d.id;

CREATE OR REPLACE VIEW v_user_authorities AS SELECT * FROM user_authorities_as_of(current_timestamp);
