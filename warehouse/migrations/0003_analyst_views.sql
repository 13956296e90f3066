-- Analyst views over the current tables (documented with an example query each in the README).

-- Authority limits per decision and authority type, the limit parsed to a number and unit.
CREATE VIEW v_authority_limits AS
SELECT
    d.tenant_id, d.id AS decision_id, d.decision_display_id, d.name AS decision_name, d.status,
    d.section_name, d.category_name, a.authority_type, a.authority_type_order, a.value_type,
    a.operator, a.limit_value, a.limit_number, a.limit_unit, a.is_unlimited, a.authority_limit
FROM decisions d
JOIN decision_authorities a ON a.tenant_id = d.tenant_id AND a.decision_id = d.id;

-- The org chart: each user's manager chain up to the top (a user who manages themself is a root).
CREATE VIEW v_org_chart AS
WITH RECURSIVE chain(tenant_id, user_id, ancestor_id, depth, path) AS (
    SELECT tenant_id, id, id, 0, [name]
    FROM users
    UNION ALL
    SELECT c.tenant_id, c.user_id, m.manager_id, c.depth + 1, list_prepend(boss.name, c.path)
    FROM chain c
    JOIN users m ON m.tenant_id = c.tenant_id AND m.id = c.ancestor_id
    JOIN users boss ON boss.tenant_id = m.tenant_id AND boss.id = m.manager_id
    WHERE m.manager_id IS NOT NULL AND m.manager_id <> m.id AND c.depth < 50
)
SELECT
    u.tenant_id, u.id AS user_id, u.name, u.email, u.status,
    CASE WHEN u.manager_id = u.id THEN NULL ELSE u.manager_id END AS manager_id,
    top.depth AS levels_below_top, top.path AS management_chain
FROM users u
JOIN (
    SELECT tenant_id, user_id, max(depth) AS depth, arg_max(path, depth) AS path
    FROM chain GROUP BY tenant_id, user_id
) top ON top.tenant_id = u.tenant_id AND top.user_id = u.id;

-- The group tree: every path from a root group down to each group.
CREATE VIEW v_group_tree AS
WITH RECURSIVE tree(tenant_id, group_id, depth, path, path_ids) AS (
    SELECT g.tenant_id, g.id, 0, [g.group_name], [g.id]
    FROM groups g
    WHERE NOT EXISTS (SELECT 1 FROM group_parents p WHERE p.tenant_id = g.tenant_id AND p.group_id = g.id)
    UNION ALL
    SELECT t.tenant_id, child.id, t.depth + 1, list_append(t.path, child.group_name), list_append(t.path_ids, child.id)
    FROM tree t
    JOIN group_parents p ON p.tenant_id = t.tenant_id AND p.parent_id = t.group_id
    JOIN groups child ON child.tenant_id = p.tenant_id AND child.id = p.group_id
    WHERE NOT list_contains(t.path_ids, child.id) AND t.depth < 50
)
SELECT t.tenant_id, t.group_id, g.group_name, g.group_type_name, g.status, t.depth,
       array_to_string(t.path, ' > ') AS path
FROM tree t JOIN groups g ON g.tenant_id = t.tenant_id AND g.id = t.group_id;

-- Delegation activity per delegation: revision count and latest revision.
CREATE VIEW v_delegation_activity AS
SELECT
    d.tenant_id, d.id AS delegation_id, d.delegation_display_id, d.decision_name, d.status, d.recipient_name,
    count(r.revision_id) AS revisions, max(r.revision_order) AS latest_revision_order,
    max(r.first_seen_at) AS latest_revision_seen_at
FROM delegations d
LEFT JOIN delegation_revisions r ON r.tenant_id = d.tenant_id AND r.delegation_id = d.id
GROUP BY ALL;

-- Delegation activity per day: revisions first seen that day, and delegations created that day.
CREATE VIEW v_delegation_activity_daily AS
WITH revisions AS (
    SELECT tenant_id, CAST(first_seen_at AS DATE) AS day, count(*) AS revisions_seen
    FROM delegation_revisions GROUP BY ALL
), created AS (
    SELECT tenant_id, CAST(created_at AS DATE) AS day, count(*) AS delegations_created
    FROM delegations GROUP BY ALL
)
SELECT coalesce(r.tenant_id, c.tenant_id) AS tenant_id, coalesce(r.day, c.day) AS day,
       coalesce(r.revisions_seen, 0) AS revisions_seen, coalesce(c.delegations_created, 0) AS delegations_created
FROM revisions r FULL OUTER JOIN created c ON c.tenant_id = r.tenant_id AND c.day = r.day;

-- Users with their positions, groups and roles in one row.
CREATE VIEW v_user_profile AS
SELECT
    u.tenant_id, u.id AS user_id, u.name, u.email, u.status, u.employee_id, u.manager_id,
    m.name AS manager_name,
    (SELECT list(p.position_name ORDER BY p.position_name) FROM user_positions p
     WHERE p.tenant_id = u.tenant_id AND p.user_id = u.id) AS positions,
    (SELECT list(g.group_name ORDER BY g.group_name) FROM user_groups g
     WHERE g.tenant_id = u.tenant_id AND g.user_id = u.id) AS groups,
    (SELECT list(r.role_name ORDER BY r.role_name) FROM user_roles r
     WHERE r.tenant_id = u.tenant_id AND r.user_id = u.id) AS roles
FROM users u
LEFT JOIN users m ON m.tenant_id = u.tenant_id AND m.id = u.manager_id;
