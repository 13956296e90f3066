-- HR audit (issue 17): who made each plan and who ran its latest apply, beside who lifted which threshold
-- (hr_plan_allowances.approved_by): an OS user for the command line, the launching user, sensor or
-- schedule for a Dagster run.

ALTER TABLE hr_plans ADD COLUMN planned_by VARCHAR;

ALTER TABLE hr_plans ADD COLUMN applied_by VARCHAR;
