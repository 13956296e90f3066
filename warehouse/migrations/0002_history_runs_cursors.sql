-- SCD2 history: a new version only when content_hash changes; a disappeared record gets a version with
-- is_deleted. valid_to is NULL on the current version.
CREATE TABLE decisions_history (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    content_hash VARCHAR NOT NULL,
    valid_from TIMESTAMPTZ NOT NULL,
    valid_to TIMESTAMPTZ,
    is_current BOOLEAN NOT NULL,
    is_deleted BOOLEAN NOT NULL,
    run_id VARCHAR NOT NULL,
    raw JSON
);
CREATE TABLE users_history AS SELECT * FROM decisions_history WITH NO DATA;
CREATE TABLE groups_history AS SELECT * FROM decisions_history WITH NO DATA;
CREATE TABLE delegations_history AS SELECT * FROM decisions_history WITH NO DATA;

-- One row per committed run. api_calls and row_counts are JSON maps (endpoint -> calls, table -> counts).
CREATE TABLE sync_runs (
    run_id VARCHAR NOT NULL,
    tenant_id VARCHAR NOT NULL,
    mode VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    started_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ NOT NULL,
    api_calls_total INTEGER NOT NULL,
    api_calls JSON NOT NULL,
    rate_limited_429 INTEGER NOT NULL,
    retries INTEGER NOT NULL,
    row_counts JSON NOT NULL,
    warnings JSON NOT NULL,
    PRIMARY KEY (run_id, tenant_id)
);

-- Incremental extract cursors: the largest updated-at seen per entity, moved only by a committed run.
CREATE TABLE extract_cursors (
    tenant_id VARCHAR NOT NULL,
    entity VARCHAR NOT NULL,
    cursor_value TIMESTAMPTZ NOT NULL,
    run_id VARCHAR NOT NULL,
    PRIMARY KEY (tenant_id, entity)
);
