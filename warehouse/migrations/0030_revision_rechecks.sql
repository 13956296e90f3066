-- Revision lists re-verified on a rolling window (issue 20). A run asks for a delegation's or document's
-- revision ids (E11, E12) only when the list is new, its owner record changed, or it falls in the run's
-- re-verification share (ADM_REVISION_RECHECK_DAYS = N: each run re-checks about 1/N of the lists, the
-- longest unverified first, so that a revision the service added without touching its owner is found within
-- N runs). revision_checks says why its latest check was made; revision_rechecks keeps one row per
-- re-verification with how many ids it found that the warehouse did not hold (evidence for a shorter N);
-- sync_runs counts both per run. Checks made before this migration have no reason.
ALTER TABLE revision_checks ADD COLUMN reason VARCHAR;

CREATE TABLE revision_rechecks (
    tenant_id VARCHAR NOT NULL,
    run_id VARCHAR NOT NULL,
    parent_kind VARCHAR NOT NULL,
    parent_id VARCHAR NOT NULL,
    outcome VARCHAR NOT NULL,
    revisions INTEGER NOT NULL,
    new_revisions INTEGER NOT NULL,
    synced_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, run_id, parent_kind, parent_id)
);

ALTER TABLE sync_runs ADD COLUMN recheck_days INTEGER;
ALTER TABLE sync_runs ADD COLUMN revisions_rechecked INTEGER;
ALTER TABLE sync_runs ADD COLUMN rechecks_found_new INTEGER;
