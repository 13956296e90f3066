-- History for revision ids (issue 29). delegation_revisions and document_revisions held only the lists as
-- last read: a full refresh that no longer finds a delegation or document drops its list, and a list that
-- loses an id forgets it. Each now has a history like the items of a record's list: a version per revision
-- id a list holds (occurrence tells apart an id listed twice), from the commit that first found it there to
-- the commit that found it gone (ended_run_id), whatever removed it: the service's list, or a full refresh
-- that pruned the list of a vanished owner. Its place in the list is not its content (a new revision moves
-- the others). Each commit brings the histories up to the current lists (warehouse/changes.py).
--
-- A warehouse upgraded here gets one version of each id it holds, from when the id was first seen
-- (first_seen_at: it was in the list since then at least), with run_id NULL (no run recorded that version).
CREATE TEMP MACRO upgrade_revisions(revision_table, parent_column) AS TABLE
SELECT tenant_id, COLUMNS(parent_column), revision_id,
       CAST(row_number() OVER (PARTITION BY tenant_id, COLUMNS(parent_column), revision_id ORDER BY revision_order)
           AS INTEGER) AS occurrence,
       first_seen_at, first_seen_at AS valid_from, CAST(NULL AS TIMESTAMPTZ) AS valid_to,
       CAST(NULL AS VARCHAR) AS run_id, CAST(NULL AS VARCHAR) AS ended_run_id, TRUE AS is_current
FROM query_table(revision_table);

CREATE TABLE delegation_revisions_history AS
SELECT * FROM upgrade_revisions('delegation_revisions', 'delegation_id');
CREATE TABLE document_revisions_history AS
SELECT * FROM upgrade_revisions('document_revisions', 'document_id');
DROP MACRO TABLE upgrade_revisions;

CREATE MACRO delegation_revisions_as_of(ts) AS TABLE
SELECT * FROM history_as_of('delegation_revisions_history', ts);
CREATE MACRO document_revisions_as_of(ts) AS TABLE
SELECT * FROM history_as_of('document_revisions_history', ts);
