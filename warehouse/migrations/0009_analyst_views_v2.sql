-- Analyst views that hold on real data (issue 11): manager cycles, self-managed users, groups with two
-- parents, soft-deleted records (migration 0008), names that are not unique, sessions outside UTC.
--
-- One rule for deleted records in every view:
-- * views of what holds now (v_authority_limits, v_org_chart, v_group_tree, v_user_profile,
--   v_user_authorities) show live records only. A soft-deleted record is left out with its child rows, and
--   so is what rests on it: a membership of a deleted group or position, a delegation of a deleted decision
--   or to a deleted user. A live user's manager who is deleted is kept and flagged (manager_is_deleted,
--   chain_end): that is what the live user's record says, and someone should fix it;
-- * views of what happened (v_delegation_activity, v_delegation_activity_daily) keep deleted records: a
--   delegation deleted since was still created and revised. v_delegation_activity flags them.
-- Names are not unique (two people can be called Sam Lee), so a list of names always has a list of ids
-- beside it, in the same order. A name a record copies from another (a delegation's recipient_name, a
-- membership's group_name) can be stale: the current record's name is shown where the warehouse holds it.

-- Authority limits per decision and authority type, the limit parsed to a number and unit. Deleted
-- decisions are left out (their authority rows stay in decision_authorities as last seen).
CREATE OR REPLACE VIEW v_authority_limits AS
SELECT
    d.tenant_id, d.id AS decision_id, d.decision_display_id, d.name AS decision_name, d.status,
    d.section_name, d.category_name, d.delegable, a.id AS authority_id, a.authority_type_id,
    a.authority_type, a.authority_type_order, a.value_type, a.operator, a.limit_value, a.limit_number,
    a.limit_unit, a.is_unlimited, a.authority_limit
FROM decisions d
JOIN decision_authorities a ON a.tenant_id = d.tenant_id AND a.decision_id = d.id
WHERE d.is_deleted IS NOT TRUE;

-- The org chart: one row per live user, with the chain of managers above them, top first.
--
-- The chain climbs manager by manager and stops before it would repeat a user, enter a deleted user or
-- leave the warehouse, so it always ends; chain_end says why it ended:
-- * 'top': the last user has no manager. A user whose manager is themself (the service's way of saying
--   "top": its manager object is never null) or null is a top, with manager_id NULL. Only then are top_id
--   (the chain's first user) and levels_below_top (managers above the user) set: one root per real top;
-- * 'cycle': the next manager is already in the chain (A reports to B, B to C, C to A). in_cycle marks the
--   users on the cycle: each one's chain goes round it once and stops before coming back to them (A's
--   chain is C > B > A). under_cycle marks users off the cycle whose chain runs into it: it stops before
--   the cycle's entry would come twice (D under A: C > B > A > D). Neither has a top: top_id and
--   levels_below_top are NULL, where the view of 0003 put them at level 50 with 51-name chains;
-- * 'manager_deleted': the next manager is a soft-deleted user. The chain stops below them: a deleted user
--   manages nobody now, and whoever managed them is not the live user's manager either;
-- * 'manager_missing': the next manager id is not in the warehouse (a record the schema contract
--   rejected). The chain stops there too.
-- stopped_at_id is the manager the chain did not climb to (NULL at a top): the repeated user, the deleted
-- manager or the missing id. manager_id and manager_name are the user's own manager as the record says,
-- deleted or not (manager_is_deleted flags it); manager_name is NULL when the manager is missing.
CREATE OR REPLACE VIEW v_org_chart AS
WITH RECURSIVE people AS (
    SELECT tenant_id, id, name, is_deleted IS TRUE AS is_deleted,
           CASE WHEN manager_id <> id THEN manager_id END AS manager_id
    FROM users
),
climb(tenant_id, user_id, chain_ids, chain_names) AS (
    SELECT tenant_id, id, [id], [name] FROM people WHERE NOT is_deleted
    UNION ALL
    SELECT c.tenant_id, c.user_id, list_prepend(boss.id, c.chain_ids),
           list_prepend(boss.name, c.chain_names)
    FROM climb c
    JOIN people head ON head.tenant_id = c.tenant_id AND head.id = c.chain_ids[1]
    JOIN people boss ON boss.tenant_id = head.tenant_id AND boss.id = head.manager_id
    WHERE NOT boss.is_deleted AND NOT list_contains(c.chain_ids, boss.id)
),
chains AS (
    -- Each step adds one manager, so the longest chain of a user is where the climb stopped.
    SELECT tenant_id, user_id, arg_max(chain_ids, len(chain_ids)) AS chain_ids,
           arg_max(chain_names, len(chain_ids)) AS chain_names
    FROM climb GROUP BY tenant_id, user_id
),
ended AS (
    SELECT c.*, head.manager_id AS next_id,
           CASE
               WHEN head.manager_id IS NULL THEN 'top'
               WHEN list_contains(c.chain_ids, head.manager_id) THEN 'cycle'
               WHEN next.is_deleted THEN 'manager_deleted'
               ELSE 'manager_missing'
           END AS chain_end
    FROM chains c
    JOIN people head ON head.tenant_id = c.tenant_id AND head.id = c.chain_ids[1]
    LEFT JOIN people next ON next.tenant_id = head.tenant_id AND next.id = head.manager_id
)
SELECT
    u.tenant_id, u.id AS user_id, u.name, u.email, u.status,
    p.manager_id, m.name AS manager_name, m.is_deleted IS TRUE AS manager_is_deleted,
    CASE WHEN e.chain_end = 'top' THEN e.chain_ids[1] END AS top_id,
    CASE WHEN e.chain_end = 'top' THEN len(e.chain_ids) - 1 END AS levels_below_top,
    e.chain_names AS management_chain, e.chain_ids AS management_chain_ids,
    e.chain_end,
    e.chain_end = 'cycle' AND e.next_id = u.id AS in_cycle,
    e.chain_end = 'cycle' AND e.next_id <> u.id AS under_cycle,
    e.next_id AS stopped_at_id
FROM ended e
JOIN users u ON u.tenant_id = e.tenant_id AND u.id = e.user_id
JOIN people p ON p.tenant_id = u.tenant_id AND p.id = u.id
LEFT JOIN users m ON m.tenant_id = p.tenant_id AND m.id = p.manager_id;

-- The group tree: every path from a root down to each live group, one row per path (a group with two
-- parents has a row under each). path_names and path_ids run root first, the group last.
--
-- Deleted groups are left out of the tree, not shown as if active: no row of their own and no path through
-- them. A live group whose parent links all lead to deleted or unknown groups (or back to itself) is not
-- dropped: it starts a path of its own, and that path and those below it are detached (a group with one
-- live and one deleted parent keeps only its live path, not detached). A live group no path reaches at all
-- (a parent cycle, which the service refuses) gets a detached one-group path, so every live group has a
-- row.
-- status is the service's (ACTIVE, INACTIVE): an inactive group stays in the tree, saying so.
CREATE OR REPLACE VIEW v_group_tree AS
WITH RECURSIVE live AS (
    SELECT * FROM groups WHERE is_deleted IS NOT TRUE
),
edges AS (
    -- Parent links between two live groups; a group listed as its own parent is no edge.
    SELECT DISTINCT p.tenant_id, p.group_id, p.parent_id
    FROM group_parents p
    JOIN live child ON child.tenant_id = p.tenant_id AND child.id = p.group_id
    JOIN live parent ON parent.tenant_id = p.tenant_id AND parent.id = p.parent_id
    WHERE p.parent_id <> p.group_id
),
tree(tenant_id, group_id, path_ids, path_names, detached) AS (
    SELECT g.tenant_id, g.id, [g.id], [g.group_name],
           EXISTS (SELECT 1 FROM group_parents p WHERE p.tenant_id = g.tenant_id AND p.group_id = g.id)
    FROM live g
    WHERE NOT EXISTS (SELECT 1 FROM edges e WHERE e.tenant_id = g.tenant_id AND e.group_id = g.id)
    UNION ALL
    SELECT t.tenant_id, child.id, list_append(t.path_ids, child.id),
           list_append(t.path_names, child.group_name), t.detached
    FROM tree t
    JOIN edges e ON e.tenant_id = t.tenant_id AND e.parent_id = t.group_id
    JOIN live child ON child.tenant_id = e.tenant_id AND child.id = e.group_id
    WHERE NOT list_contains(t.path_ids, child.id)
),
paths AS (
    SELECT * FROM tree
    UNION ALL
    SELECT g.tenant_id, g.id, [g.id], [g.group_name], TRUE
    FROM live g
    WHERE NOT EXISTS (SELECT 1 FROM tree t WHERE t.tenant_id = g.tenant_id AND t.group_id = g.id)
)
SELECT
    p.tenant_id, p.group_id, g.group_name, g.display_name, g.group_type_name, g.status,
    len(p.path_ids) - 1 AS depth, array_to_string(p.path_names, ' > ') AS path,
    p.path_names, p.path_ids, p.path_ids[1] AS root_id,
    CASE WHEN len(p.path_ids) > 1 THEN p.path_ids[-2] END AS parent_id, p.detached
FROM paths p
JOIN live g ON g.tenant_id = p.tenant_id AND g.id = p.group_id;

-- Delegation activity per delegation: revision count and latest revision. Every delegation, deleted ones
-- included and flagged (is_deleted, deleted_at): their revisions happened. Decision and recipient names are
-- the current records' where the warehouse holds them (the delegation's copies can be stale).
CREATE OR REPLACE VIEW v_delegation_activity AS
WITH revisions AS (
    SELECT tenant_id, delegation_id, count(*) AS revisions, max(revision_order) AS latest_revision_order,
           max(first_seen_at) AS latest_revision_seen_at
    FROM delegation_revisions GROUP BY ALL
)
SELECT
    l.tenant_id, l.id AS delegation_id, l.delegation_display_id, l.decision_id,
    coalesce(d.name, l.decision_name) AS decision_name, l.status, l.recipient_id,
    coalesce(u.name, l.recipient_name) AS recipient_name, l.is_deleted IS TRUE AS is_deleted, l.deleted_at,
    coalesce(r.revisions, 0) AS revisions, r.latest_revision_order, r.latest_revision_seen_at
FROM delegations l
LEFT JOIN revisions r ON r.tenant_id = l.tenant_id AND r.delegation_id = l.id
LEFT JOIN decisions d ON d.tenant_id = l.tenant_id AND d.id = l.decision_id
LEFT JOIN users u ON u.tenant_id = l.tenant_id AND u.id = l.recipient_id;

-- Delegation activity per day: revisions first seen that day, and delegations created that day, deleted
-- ones included (they were created). Days are UTC days, written out with timezone('UTC', ...): a plain
-- CAST of a TIMESTAMPTZ to DATE takes the session's time zone, so a Los Angeles session would move every
-- evening's activity to the day before and split one day's counts across two.
CREATE OR REPLACE VIEW v_delegation_activity_daily AS
WITH revisions AS (
    SELECT tenant_id, CAST(timezone('UTC', first_seen_at) AS DATE) AS day, count(*) AS revisions_seen
    FROM delegation_revisions GROUP BY ALL
), created AS (
    SELECT tenant_id, CAST(timezone('UTC', created_at) AS DATE) AS day, count(*) AS delegations_created
    FROM delegations WHERE created_at IS NOT NULL GROUP BY ALL
)
SELECT coalesce(r.tenant_id, c.tenant_id) AS tenant_id, coalesce(r.day, c.day) AS day,
       coalesce(r.revisions_seen, 0) AS revisions_seen,
       coalesce(c.delegations_created, 0) AS delegations_created
FROM revisions r FULL OUTER JOIN created c ON c.tenant_id = r.tenant_id AND c.day = r.day;

-- Live users with their groups, positions and roles in one row (deleted users are left out).
--
-- groups and group_ids list the user's memberships in the service's order, so the primary organisation
-- (the first, is_primary) comes first; primary_group_id/_name name it. A group's name is the groups
-- table's current one: the copy in user_groups is only refreshed when the user record is re-read, so a
-- renamed group would show its old name. A membership of a deleted group is left out (a deleted primary
-- group leaves primary_group_* NULL); one of a group the warehouse does not hold keeps the copied name.
-- Positions follow the same rule with the positions table, by name; roles have no table of their own and
-- keep the names the user record carries. manager_id is NULL for a top (a user who manages themself);
-- manager_is_deleted flags a manager who is deleted. start_date and termination_date are DATEs: the same
-- in every session time zone.
CREATE OR REPLACE VIEW v_user_profile AS
WITH memberships AS (
    SELECT ug.tenant_id, ug.user_id,
           any_value(ug.group_id) FILTER (WHERE ug.is_primary) AS primary_group_id,
           any_value(ug.name) FILTER (WHERE ug.is_primary) AS primary_group_name,
           list(ug.name ORDER BY ug.group_order, ug.group_id) AS groups,
           list(ug.group_id ORDER BY ug.group_order, ug.group_id) AS group_ids
    FROM (
        SELECT ug.*, coalesce(g.group_name, ug.group_name) AS name
        FROM user_groups ug
        LEFT JOIN groups g ON g.tenant_id = ug.tenant_id AND g.id = ug.group_id
        WHERE g.is_deleted IS NOT TRUE
    ) ug
    GROUP BY ALL
), held_positions AS (
    SELECT up.tenant_id, up.user_id, list(up.name ORDER BY up.name, up.position_id) AS positions,
           list(up.position_id ORDER BY up.name, up.position_id) AS position_ids
    FROM (
        SELECT up.*, coalesce(p.position_name, up.position_name) AS name
        FROM user_positions up
        LEFT JOIN positions p ON p.tenant_id = up.tenant_id AND p.id = up.position_id
        WHERE p.is_deleted IS NOT TRUE
    ) up
    GROUP BY ALL
), roles AS (
    SELECT tenant_id, user_id, list(role_name ORDER BY role_name, tenant_role_id) AS roles
    FROM user_roles GROUP BY ALL
)
SELECT
    u.tenant_id, u.id AS user_id, u.name, u.email, u.status, u.employee_id, u.start_date, u.termination_date,
    CASE WHEN u.manager_id <> u.id THEN u.manager_id END AS manager_id, m.name AS manager_name,
    m.is_deleted IS TRUE AS manager_is_deleted, g.primary_group_id, g.primary_group_name,
    coalesce(g.groups, []) AS groups, coalesce(g.group_ids, []) AS group_ids,
    coalesce(p.positions, []) AS positions, coalesce(p.position_ids, []) AS position_ids,
    coalesce(r.roles, []) AS roles
FROM users u
LEFT JOIN users m ON m.tenant_id = u.tenant_id AND m.id = u.manager_id AND u.manager_id <> u.id
LEFT JOIN memberships g ON g.tenant_id = u.tenant_id AND g.user_id = u.id
LEFT JOIN held_positions p ON p.tenant_id = u.tenant_id AND p.user_id = u.id
LEFT JOIN roles r ON r.tenant_id = u.tenant_id AND r.user_id = u.id
WHERE u.is_deleted IS NOT TRUE;

-- Who can exercise which authority, up to which limit, and through which delegation: one row per user,
-- delegation and authority limit of the delegated decision.
--
-- The assumption (neither the spec nor the public reference defines who holds a decision): a user holds a
-- decision's authority limits through a delegation in force whose recipient they are:
-- * the delegation is not deleted and its status is ISSUED or ACCEPTED (of the reference's statuses, DRAFT
--   and PENDING are not in force yet; REJECTED, SUSPENDED, REVOKED, EXPIRED, ARCHIVED and DELETED no
--   longer are; an issued delegation is taken to be in force before the recipient accepts it);
-- * now is within its dates: start_date <= now < end_date, a missing date leaving that side open. Both are
--   instants, compared with the current instant, so the session's time zone does not matter;
-- * the decision is PUBLISHED and not deleted (a draft is not in force yet, an archived one no longer);
-- * the recipient is a live user of the warehouse (recipient_id names a user; a deleted user exercises
--   nothing). Their status is shown, not filtered: an INACTIVE user's delegation is still issued.
-- Every row is through a delegation (delegation_id is never NULL): the decision record names no holder of
-- its own. Its owner maintains the record, and its groups (group_ids, group_names) are the organisations
-- the authority applies to, not people who hold it. Decision and group names are the current records'.
CREATE OR REPLACE VIEW v_user_authorities AS
WITH in_force AS (
    SELECT *
    FROM delegations
    WHERE is_deleted IS NOT TRUE AND status IN ('ISSUED', 'ACCEPTED')
      AND (start_date IS NULL OR start_date <= current_timestamp)
      AND (end_date IS NULL OR current_timestamp < end_date)
), decision_scope AS (
    SELECT dg.tenant_id, dg.decision_id, list(dg.group_id ORDER BY dg.name, dg.group_id) AS group_ids,
           list(dg.name ORDER BY dg.name, dg.group_id) AS group_names
    FROM (
        SELECT dg.*, coalesce(g.group_name, dg.group_name) AS name
        FROM decision_groups dg
        LEFT JOIN groups g ON g.tenant_id = dg.tenant_id AND g.id = dg.group_id
        WHERE g.is_deleted IS NOT TRUE
    ) dg
    GROUP BY ALL
)
SELECT
    u.tenant_id, u.id AS user_id, u.name AS user_name, u.status AS user_status,
    d.id AS decision_id, d.decision_display_id, d.name AS decision_name,
    a.authority_type_id, a.authority_type, a.authority_type_order, a.value_type, a.operator, a.limit_value,
    a.limit_number, a.limit_unit, a.is_unlimited, a.authority_limit,
    l.id AS delegation_id, l.delegation_display_id, l.status AS delegation_status, l.issuer_type, l.issuer_id,
    l.start_date AS delegation_start, l.end_date AS delegation_end,
    coalesce(s.group_ids, []) AS group_ids, coalesce(s.group_names, []) AS group_names
FROM in_force l
JOIN users u ON u.tenant_id = l.tenant_id AND u.id = l.recipient_id AND u.is_deleted IS NOT TRUE
JOIN decisions d ON d.tenant_id = l.tenant_id AND d.id = l.decision_id
    AND d.status = 'PUBLISHED' AND d.is_deleted IS NOT TRUE
JOIN decision_authorities a ON a.tenant_id = d.tenant_id AND a.decision_id = d.id
LEFT JOIN decision_scope s ON s.tenant_id = d.tenant_id AND s.decision_id = d.id;
