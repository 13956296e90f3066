-- HR reverse sync: plans, their field-level changes and the apply journal (pipelines/hr).
-- A plan is made once from HR files and applied at most once; every entity's outcome is journaled here
-- before and after its write, so an interrupted apply can be resumed without writing anything twice.

CREATE TABLE hr_plans (
    plan_id VARCHAR PRIMARY KEY,
    tenant_id VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    -- [{"file", "kind" (users|groups), "sha256", "rows", "invalid_rows"}]
    source_files JSON NOT NULL,
    -- the extract run the plan was diffed against, and when that run started reading the service
    snapshot_run_id VARCHAR NOT NULL,
    snapshot_at TIMESTAMPTZ NOT NULL,
    -- ready | blocked | applying | incomplete | applied
    status VARCHAR NOT NULL,
    -- {"<change kind>": "<reason>"}: thresholds lifted for this plan, and why
    allowed_kinds JSON NOT NULL,
    -- change kinds over their threshold and not allowed
    blocked_kinds JSON NOT NULL,
    -- {"changes": {kind: entities}, "entities": {user|group: n}, "needs_creation": n, "invalid_rows": n, ...}
    counts JSON NOT NULL,
    apply_run_id VARCHAR,
    apply_started_at TIMESTAMPTZ,
    applied_at TIMESTAMPTZ
);

-- One row per entity and field that changes; before/after are JSON values (ids for references), the
-- labels are what people read (names). needs_creation rows have no entity_id and field '*'.
CREATE TABLE hr_plan_items (
    plan_id VARCHAR NOT NULL,
    entity_kind VARCHAR NOT NULL,
    entity_id VARCHAR,
    hr_key VARCHAR NOT NULL,
    field VARCHAR NOT NULL,
    before JSON,
    after JSON,
    before_label VARCHAR,
    after_label VARCHAR,
    change_kind VARCHAR NOT NULL,
    source_file VARCHAR NOT NULL,
    source_line INTEGER NOT NULL
);

-- The apply journal: one row per entity to write, its outcome, and how many writes were sent for it.
CREATE TABLE hr_plan_entities (
    plan_id VARCHAR NOT NULL,
    entity_kind VARCHAR NOT NULL,
    entity_id VARCHAR NOT NULL,
    hr_key VARCHAR NOT NULL,
    apply_order INTEGER NOT NULL,
    -- planned | in_flight | applied | skipped_changed | failed | unknown | mismatch
    status VARCHAR NOT NULL,
    message VARCHAR,
    updated_at TIMESTAMPTZ NOT NULL,
    apply_run_id VARCHAR,
    write_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (plan_id, entity_kind, entity_id)
);
