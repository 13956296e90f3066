-- A revert closes the incomplete plan it undoes (issue 26): the plan's status becomes superseded and
-- superseded_by names the revert plan, so the original's unapplied half is never written later.

ALTER TABLE hr_plans ADD COLUMN superseded_by VARCHAR;
