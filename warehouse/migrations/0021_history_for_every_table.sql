-- History for every table (issue 21). Versions of a record's items, and of positions.
--
-- A child table's history follows an item of its parent's list, not a place in it: the record the item
-- cites (the group of a membership, the role, the position, the authority type of a limit, the document, the
-- parent group) and, when the list cites it more than once, which of those it is (occurrence, 1 first). An
-- item gains a version when it is added, or when its own fields change (a limit's value, whether a
-- membership is the primary one, whether a document is pinned); it ends its version when it leaves the
-- list. Its place in the list and the names it copies from the cited record are not its content: a reorder
-- or a group's rename adds no version. The rule of references is the root tables': by id. The service's own
-- id of an item is not promised stable or unique, so it is neither the identity nor the content.
--
-- positions and current_user_positions gain a history of their own: their rows hold no content hash, so a
-- version is any change of a column a run writes (every field of theirs is their own content).
--
-- ended_run_id: the run whose commit ended a version (valid_to), so that a change log can name the run that
-- removed an item. NULL on versions ended before this migration.
--
-- A warehouse upgraded here has no earlier versions of items: each current item gets one version, from the
-- start of its parent's current version (the parent's content hash covers its items by id, so they have
-- been as they are since then at least), with run_id NULL (no run recorded it). A position gets one version
-- from its last write.

-- A version of each current item, from the start of its record's current version (or its own last write).
CREATE TEMP MACRO upgrade_items(item_table, parent_column, item_column, order_column, record_history) AS TABLE
SELECT i.* EXCLUDE (parent_key, item_key, place) REPLACE (CAST(NULL AS VARCHAR) AS run_id),
       CAST(row_number() OVER (PARTITION BY i.tenant_id, i.parent_key, i.item_key ORDER BY i.place) AS INTEGER)
           AS occurrence,
       coalesce(r.valid_from, i.synced_at, now()) AS valid_from, CAST(NULL AS TIMESTAMPTZ) AS valid_to,
       CAST(NULL AS VARCHAR) AS ended_run_id, TRUE AS is_current
FROM (
    SELECT *, COLUMNS(parent_column) AS parent_key, COLUMNS(item_column) AS item_key,
           COLUMNS(order_column) AS place
    FROM query_table(item_table)
) i
LEFT JOIN query_table(record_history) r ON r.tenant_id = i.tenant_id AND r.id = i.parent_key AND r.is_current;

CREATE TABLE decision_groups_history AS
SELECT * FROM upgrade_items('decision_groups', 'decision_id', 'group_id', 'item_order', 'decisions_history');
CREATE TABLE decision_authorities_history AS
SELECT * FROM upgrade_items(
    'decision_authorities', 'decision_id', 'authority_type_id', 'item_order', 'decisions_history'
);
CREATE TABLE decision_documents_history AS
SELECT * FROM upgrade_items('decision_documents', 'decision_id', 'document_id', 'item_order', 'decisions_history');
CREATE TABLE user_roles_history AS
SELECT * FROM upgrade_items('user_roles', 'user_id', 'tenant_role_id', 'item_order', 'users_history');
CREATE TABLE user_positions_history AS
SELECT * FROM upgrade_items('user_positions', 'user_id', 'position_id', 'item_order', 'users_history');
CREATE TABLE user_groups_history AS
SELECT * FROM upgrade_items('user_groups', 'user_id', 'group_id', 'group_order', 'users_history');
CREATE TABLE group_parents_history AS
SELECT * FROM upgrade_items('group_parents', 'group_id', 'parent_id', 'item_order', 'groups_history');
DROP MACRO TABLE upgrade_items;

CREATE TEMP MACRO upgrade_records(record_table) AS TABLE
SELECT * REPLACE (CAST(NULL AS VARCHAR) AS run_id), coalesce(synced_at, now()) AS valid_from,
       CAST(NULL AS TIMESTAMPTZ) AS valid_to, CAST(NULL AS VARCHAR) AS ended_run_id, TRUE AS is_current
FROM query_table(record_table);

CREATE TABLE positions_history AS SELECT * FROM upgrade_records('positions');
CREATE TABLE current_user_positions_history AS SELECT * FROM upgrade_records('current_user_positions');
DROP MACRO TABLE upgrade_records;

ALTER TABLE decisions_history ADD COLUMN ended_run_id VARCHAR;
ALTER TABLE delegations_history ADD COLUMN ended_run_id VARCHAR;
ALTER TABLE users_history ADD COLUMN ended_run_id VARCHAR;
ALTER TABLE groups_history ADD COLUMN ended_run_id VARCHAR;
