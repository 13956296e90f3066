-- Assume only what the spec promises (issue 16). An embedded record's id (a decision's group, authority or
-- document; a user's role, position or group; a group's parent link) is not promised unique across parents:
-- services send the referenced record's own id there, or one id under two parents. Child rows are keyed by
-- their parent and their place in the parent's list (item_order, 1 first; user_groups keeps group_order);
-- the service's id stays a column, and may be NULL where the service sent none. A revision list is keyed by
-- its parent and place too (a service may list one revision id twice). Rows written before this migration
-- get their place by id order; the next run that stages their parent rewrites them in the service's order.

CREATE TABLE decision_groups_v2 (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR,
    decision_id VARCHAR NOT NULL,
    item_order INTEGER NOT NULL,
    group_id VARCHAR,
    tenant_group_type_id VARCHAR,
    group_name VARCHAR,
    display_name VARCHAR,
    raw JSON NOT NULL,
    synced_at TIMESTAMPTZ,
    run_id VARCHAR,
    PRIMARY KEY (tenant_id, decision_id, item_order)
);
INSERT INTO decision_groups_v2 BY NAME
SELECT *, row_number() OVER (PARTITION BY tenant_id, decision_id ORDER BY id) AS item_order
FROM decision_groups;
DROP TABLE decision_groups;
ALTER TABLE decision_groups_v2 RENAME TO decision_groups;

CREATE TABLE decision_authorities_v2 (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR,
    decision_id VARCHAR NOT NULL,
    item_order INTEGER NOT NULL,
    authority_type_id VARCHAR,
    authority_type VARCHAR,
    authority_type_order INTEGER,
    authority_limit VARCHAR,
    value_type VARCHAR,
    operator VARCHAR,
    limit_value VARCHAR,
    limit_number DOUBLE,
    limit_unit VARCHAR,
    is_unlimited BOOLEAN NOT NULL,
    raw JSON NOT NULL,
    synced_at TIMESTAMPTZ,
    run_id VARCHAR,
    PRIMARY KEY (tenant_id, decision_id, item_order)
);
INSERT INTO decision_authorities_v2 BY NAME
SELECT *, row_number() OVER (PARTITION BY tenant_id, decision_id ORDER BY id) AS item_order
FROM decision_authorities;
DROP TABLE decision_authorities;
ALTER TABLE decision_authorities_v2 RENAME TO decision_authorities;

CREATE TABLE decision_documents_v2 (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR,
    decision_id VARCHAR NOT NULL,
    item_order INTEGER NOT NULL,
    document_id VARCHAR,
    document_display_id VARCHAR,
    document_name VARCHAR,
    document_type_name VARCHAR,
    document_status VARCHAR,
    document_file_type VARCHAR,
    document_url VARCHAR,
    is_pinned BOOLEAN,
    raw JSON NOT NULL,
    synced_at TIMESTAMPTZ,
    run_id VARCHAR,
    PRIMARY KEY (tenant_id, decision_id, item_order)
);
INSERT INTO decision_documents_v2 BY NAME
SELECT *, row_number() OVER (PARTITION BY tenant_id, decision_id ORDER BY id) AS item_order
FROM decision_documents;
DROP TABLE decision_documents;
ALTER TABLE decision_documents_v2 RENAME TO decision_documents;

CREATE TABLE user_roles_v2 (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR,
    user_id VARCHAR NOT NULL,
    item_order INTEGER NOT NULL,
    tenant_role_id VARCHAR,
    role_name VARCHAR,
    synced_at TIMESTAMPTZ,
    run_id VARCHAR,
    PRIMARY KEY (tenant_id, user_id, item_order)
);
INSERT INTO user_roles_v2 BY NAME
SELECT *, row_number() OVER (PARTITION BY tenant_id, user_id ORDER BY id) AS item_order
FROM user_roles;
DROP TABLE user_roles;
ALTER TABLE user_roles_v2 RENAME TO user_roles;

CREATE TABLE user_positions_v2 (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR,
    user_id VARCHAR NOT NULL,
    item_order INTEGER NOT NULL,
    position_id VARCHAR,
    position_name VARCHAR,
    synced_at TIMESTAMPTZ,
    run_id VARCHAR,
    PRIMARY KEY (tenant_id, user_id, item_order)
);
INSERT INTO user_positions_v2 BY NAME
SELECT *, row_number() OVER (PARTITION BY tenant_id, user_id ORDER BY id) AS item_order
FROM user_positions;
DROP TABLE user_positions;
ALTER TABLE user_positions_v2 RENAME TO user_positions;

CREATE TABLE user_groups_v2 (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR,
    user_id VARCHAR NOT NULL,
    group_id VARCHAR,
    group_name VARCHAR,
    group_type_name VARCHAR,
    display_name VARCHAR,
    group_order INTEGER NOT NULL,
    is_primary BOOLEAN,
    synced_at TIMESTAMPTZ,
    run_id VARCHAR,
    PRIMARY KEY (tenant_id, user_id, group_order)
);
-- Rows from before migration 0007 have no group_order: their place is read from the user's own record
-- (raw keeps the service's userGroups list, the primary organisation first), so an upgraded warehouse
-- knows every user's primary group at once instead of after a full refresh.
INSERT INTO user_groups_v2 BY NAME
SELECT * EXCLUDE (listed) REPLACE (row_number() OVER (
    PARTITION BY tenant_id, user_id ORDER BY coalesce(group_order, listed) NULLS LAST, id
) AS group_order)
FROM (
    SELECT ug.*, list_position(json_extract_string(u.raw, '$.userGroups[*].groupId'), ug.group_id) AS listed
    FROM user_groups ug LEFT JOIN users u ON u.tenant_id = ug.tenant_id AND u.id = ug.user_id
);
UPDATE user_groups_v2 SET is_primary = group_order = 1;
DROP TABLE user_groups;
ALTER TABLE user_groups_v2 RENAME TO user_groups;

CREATE TABLE group_parents_v2 (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR,
    group_id VARCHAR NOT NULL,
    item_order INTEGER NOT NULL,
    parent_id VARCHAR,
    created_at TIMESTAMPTZ,
    synced_at TIMESTAMPTZ,
    run_id VARCHAR,
    PRIMARY KEY (tenant_id, group_id, item_order)
);
INSERT INTO group_parents_v2 BY NAME
SELECT *, row_number() OVER (PARTITION BY tenant_id, group_id ORDER BY id) AS item_order
FROM group_parents;
DROP TABLE group_parents;
ALTER TABLE group_parents_v2 RENAME TO group_parents;

CREATE TABLE delegation_revisions_v2 (
    tenant_id VARCHAR NOT NULL,
    delegation_id VARCHAR NOT NULL,
    revision_id VARCHAR NOT NULL,
    revision_order INTEGER NOT NULL,
    first_seen_at TIMESTAMPTZ NOT NULL,
    synced_at TIMESTAMPTZ,
    run_id VARCHAR,
    PRIMARY KEY (tenant_id, delegation_id, revision_order)
);
INSERT INTO delegation_revisions_v2 BY NAME SELECT * FROM delegation_revisions;
DROP TABLE delegation_revisions;
ALTER TABLE delegation_revisions_v2 RENAME TO delegation_revisions;

CREATE TABLE document_revisions_v2 (
    tenant_id VARCHAR NOT NULL,
    document_id VARCHAR NOT NULL,
    revision_id VARCHAR NOT NULL,
    revision_order INTEGER NOT NULL,
    first_seen_at TIMESTAMPTZ NOT NULL,
    synced_at TIMESTAMPTZ,
    run_id VARCHAR,
    PRIMARY KEY (tenant_id, document_id, revision_order)
);
INSERT INTO document_revisions_v2 BY NAME SELECT * FROM document_revisions;
DROP TABLE document_revisions;
ALTER TABLE document_revisions_v2 RENAME TO document_revisions;

-- The last check of each delegation's and document's revision list (E11, E12): a list the service
-- answered empty, or a record it no longer found (404: deleted since it was listed), is a checked list
-- with no revisions, not a missing one. Parents checked before this migration are those with revisions.
CREATE TABLE revision_checks (
    tenant_id VARCHAR NOT NULL,
    parent_kind VARCHAR NOT NULL,
    parent_id VARCHAR NOT NULL,
    outcome VARCHAR NOT NULL,
    revisions INTEGER NOT NULL,
    synced_at TIMESTAMPTZ,
    run_id VARCHAR,
    PRIMARY KEY (tenant_id, parent_kind, parent_id)
);
INSERT INTO revision_checks
SELECT tenant_id, 'delegation', delegation_id, 'listed', count(*), max(synced_at), arg_max(run_id, synced_at)
FROM delegation_revisions GROUP BY tenant_id, delegation_id;
INSERT INTO revision_checks
SELECT tenant_id, 'document', document_id, 'listed', count(*), max(synced_at), arg_max(run_id, synced_at)
FROM document_revisions GROUP BY tenant_id, document_id;
