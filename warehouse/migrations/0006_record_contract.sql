-- The schema contract (resources/contract.py). A record that breaks a rule strict in every mode (a
-- non-empty string id, tenantId, the created/updated timestamps, nested ids) is kept out of the tables and
-- written here with its evidence: where it was (endpoint, page, position), which field broke which rule,
-- the value received (truncated) and the record's JSON. Tolerated deviations are counted per run in
-- sync_runs.deviations: [{"endpoint", "field", "kind", "records", "sample_ids"}].
ALTER TABLE sync_runs ADD COLUMN deviations JSON;
ALTER TABLE sync_runs ADD COLUMN rejected_records INTEGER;

CREATE TABLE rejected_records (
    run_id VARCHAR NOT NULL,
    tenant_id VARCHAR NOT NULL,
    endpoint VARCHAR NOT NULL,
    page INTEGER NOT NULL,
    position INTEGER NOT NULL,
    record_id VARCHAR,
    field VARCHAR NOT NULL,
    rule VARCHAR NOT NULL,
    value_received VARCHAR,
    record VARCHAR NOT NULL,
    rejected_at TIMESTAMPTZ NOT NULL
);
