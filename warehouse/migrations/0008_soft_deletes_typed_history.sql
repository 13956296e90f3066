-- Soft deletes, row provenance and typed history (issue 11).
--
-- One meaning of "deleted" for every record table: is_deleted is true when the service says the record is
-- deleted (a DELETED status or its isDeleted flag) or a full refresh no longer finds it; deleted_at is the
-- commit time of the run that first saw it deleted. Deleted records stay in the current tables, with the
-- rows of their child tables as last seen.
-- synced_at and run_id: the commit time and run of the run that last wrote the row (NULL for rows last
-- written before this migration).

ALTER TABLE decisions ADD COLUMN is_deleted BOOLEAN;
UPDATE decisions SET is_deleted = FALSE;
ALTER TABLE decisions ADD COLUMN deleted_at TIMESTAMPTZ;
ALTER TABLE delegations ADD COLUMN is_deleted BOOLEAN;
UPDATE delegations SET is_deleted = FALSE;
ALTER TABLE delegations ADD COLUMN deleted_at TIMESTAMPTZ;
ALTER TABLE users ADD COLUMN deleted_at TIMESTAMPTZ;
ALTER TABLE groups ADD COLUMN deleted_at TIMESTAMPTZ;
ALTER TABLE positions ADD COLUMN is_deleted BOOLEAN;
UPDATE positions SET is_deleted = FALSE;
ALTER TABLE positions ADD COLUMN deleted_at TIMESTAMPTZ;
ALTER TABLE current_user_positions ADD COLUMN is_deleted BOOLEAN;
UPDATE current_user_positions SET is_deleted = FALSE;
ALTER TABLE current_user_positions ADD COLUMN deleted_at TIMESTAMPTZ;
ALTER TABLE decisions ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE decisions ADD COLUMN run_id VARCHAR;
ALTER TABLE delegations ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE delegations ADD COLUMN run_id VARCHAR;
ALTER TABLE users ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE users ADD COLUMN run_id VARCHAR;
ALTER TABLE groups ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE groups ADD COLUMN run_id VARCHAR;
ALTER TABLE positions ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE positions ADD COLUMN run_id VARCHAR;
ALTER TABLE current_user_positions ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE current_user_positions ADD COLUMN run_id VARCHAR;
ALTER TABLE decision_groups ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE decision_groups ADD COLUMN run_id VARCHAR;
ALTER TABLE decision_authorities ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE decision_authorities ADD COLUMN run_id VARCHAR;
ALTER TABLE decision_documents ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE decision_documents ADD COLUMN run_id VARCHAR;
ALTER TABLE user_roles ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE user_roles ADD COLUMN run_id VARCHAR;
ALTER TABLE user_positions ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE user_positions ADD COLUMN run_id VARCHAR;
ALTER TABLE user_groups ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE user_groups ADD COLUMN run_id VARCHAR;
ALTER TABLE group_parents ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE group_parents ADD COLUMN run_id VARCHAR;
ALTER TABLE delegation_revisions ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE delegation_revisions ADD COLUMN run_id VARCHAR;
ALTER TABLE document_revisions ADD COLUMN synced_at TIMESTAMPTZ;
ALTER TABLE document_revisions ADD COLUMN run_id VARCHAR;
UPDATE users SET is_deleted = TRUE WHERE status = 'DELETED';
UPDATE decisions SET is_deleted = TRUE WHERE status = 'DELETED';
UPDATE delegations SET is_deleted = TRUE WHERE status = 'DELETED';

-- Start and termination dates are calendar dates: as TIMESTAMPTZ at midnight UTC a reader west of UTC saw
-- the day before.
ALTER TABLE users ALTER start_date TYPE DATE USING CAST(timezone('UTC', start_date) AS DATE);
ALTER TABLE users ALTER termination_date TYPE DATE USING CAST(timezone('UTC', termination_date) AS DATE);

-- History tables carry the typed columns of their current table (a version is a copy of the current row
-- as it was from valid_from to valid_to) plus valid_from, valid_to and is_current. Versions recorded
-- before this migration keep only raw; the current one gets its typed columns from the current table.
-- The content hash now covers a record's own fields only (references count by id), so the first run after
-- this migration records one version per record whose hash is computed the new way.
CREATE TABLE decisions_history_v2 AS
SELECT c.*, CAST(NULL AS TIMESTAMPTZ) AS valid_from, CAST(NULL AS TIMESTAMPTZ) AS valid_to,
       CAST(NULL AS BOOLEAN) AS is_current
FROM decisions c WITH NO DATA;
INSERT INTO decisions_history_v2 BY NAME
SELECT c.* EXCLUDE (tenant_id, id, content_hash, raw, is_deleted, deleted_at, synced_at, run_id),
       h.tenant_id, h.id, h.content_hash, h.raw, h.is_deleted, h.run_id, h.valid_from, h.valid_to, h.is_current
FROM decisions_history h
LEFT JOIN decisions c ON c.tenant_id = h.tenant_id AND c.id = h.id AND h.is_current AND NOT h.is_deleted;
DROP TABLE decisions_history;
ALTER TABLE decisions_history_v2 RENAME TO decisions_history;
CREATE TABLE delegations_history_v2 AS
SELECT c.*, CAST(NULL AS TIMESTAMPTZ) AS valid_from, CAST(NULL AS TIMESTAMPTZ) AS valid_to,
       CAST(NULL AS BOOLEAN) AS is_current
FROM delegations c WITH NO DATA;
INSERT INTO delegations_history_v2 BY NAME
SELECT c.* EXCLUDE (tenant_id, id, content_hash, raw, is_deleted, deleted_at, synced_at, run_id),
       h.tenant_id, h.id, h.content_hash, h.raw, h.is_deleted, h.run_id, h.valid_from, h.valid_to, h.is_current
FROM delegations_history h
LEFT JOIN delegations c ON c.tenant_id = h.tenant_id AND c.id = h.id AND h.is_current AND NOT h.is_deleted;
DROP TABLE delegations_history;
ALTER TABLE delegations_history_v2 RENAME TO delegations_history;
CREATE TABLE users_history_v2 AS
SELECT c.*, CAST(NULL AS TIMESTAMPTZ) AS valid_from, CAST(NULL AS TIMESTAMPTZ) AS valid_to,
       CAST(NULL AS BOOLEAN) AS is_current
FROM users c WITH NO DATA;
INSERT INTO users_history_v2 BY NAME
SELECT c.* EXCLUDE (tenant_id, id, content_hash, raw, is_deleted, deleted_at, synced_at, run_id),
       h.tenant_id, h.id, h.content_hash, h.raw, h.is_deleted, h.run_id, h.valid_from, h.valid_to, h.is_current
FROM users_history h
LEFT JOIN users c ON c.tenant_id = h.tenant_id AND c.id = h.id AND h.is_current AND NOT h.is_deleted;
DROP TABLE users_history;
ALTER TABLE users_history_v2 RENAME TO users_history;
CREATE TABLE groups_history_v2 AS
SELECT c.*, CAST(NULL AS TIMESTAMPTZ) AS valid_from, CAST(NULL AS TIMESTAMPTZ) AS valid_to,
       CAST(NULL AS BOOLEAN) AS is_current
FROM groups c WITH NO DATA;
INSERT INTO groups_history_v2 BY NAME
SELECT c.* EXCLUDE (tenant_id, id, content_hash, raw, is_deleted, deleted_at, synced_at, run_id),
       h.tenant_id, h.id, h.content_hash, h.raw, h.is_deleted, h.run_id, h.valid_from, h.valid_to, h.is_current
FROM groups_history h
LEFT JOIN groups c ON c.tenant_id = h.tenant_id AND c.id = h.id AND h.is_current AND NOT h.is_deleted;
DROP TABLE groups_history;
ALTER TABLE groups_history_v2 RENAME TO groups_history;
