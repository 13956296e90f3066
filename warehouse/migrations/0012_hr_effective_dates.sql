-- HR effective dates (issue 12). A change dated in the future is planned now, stored with the day it takes
-- effect, and written by the first apply on or after that day. The journal keeps, per entity, the day
-- through which its changes were written, so a later apply writes only the changes that came due since.

ALTER TABLE hr_plan_items ADD COLUMN effective_on DATE;

ALTER TABLE hr_plan_entities ADD COLUMN written_through DATE;
