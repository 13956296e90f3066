-- HR safety thresholds across plans (issue 12). A plan keeps the limits, window and tenant size it was
-- checked with, so that applying it later rechecks the same limits against the plans applied since (a
-- mass change split into small plans is still counted whole). A lifted threshold is a row of its own:
-- who lifted it, when and why; inserted once, never replaced, and refused once the plan began applying.

ALTER TABLE hr_plans ADD COLUMN thresholds JSON;

CREATE TABLE hr_plan_allowances (
    plan_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    reason VARCHAR NOT NULL,
    approved_by VARCHAR NOT NULL,
    approved_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (plan_id, kind)
);

-- Lifts recorded before this migration keep their reason; who lifted them was not recorded.
INSERT INTO hr_plan_allowances
SELECT p.plan_id, k.kind, json_extract_string(p.allowed_kinds, '$."' || k.kind || '"'), 'unknown', p.created_at
FROM hr_plans p, (SELECT plan_id, unnest(json_keys(allowed_kinds)) AS kind FROM hr_plans) k
WHERE p.plan_id = k.plan_id;
