-- HR apply (issue 12). A write whose request may still be running at the service (no answer came back: a
-- timeout, a cut connection, or the process died after sending) is not judged by reading it back before
-- its request's timeout has passed: a read-back too early misses it and would write it again. And a plan
-- whose apply stopped (a 401, a 403, the warehouse) ends incomplete with the reason, not applying.

ALTER TABLE hr_plan_entities ADD COLUMN settle_after TIMESTAMPTZ;

ALTER TABLE hr_plans ADD COLUMN apply_error VARCHAR;
