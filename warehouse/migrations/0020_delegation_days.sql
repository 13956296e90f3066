-- One rule for dates (issue 21): a column named *_date is a calendar DATE (the UTC day), as users'
-- start_date and termination_date are since migration 0008; an instant is a TIMESTAMPTZ named *_at or *_on.
-- A delegation's start and end keep both: the day (start_date, end_date) and the instant the service sent
-- (starts_at, ends_at), which decides whether it is in force at a given moment.
ALTER TABLE delegations RENAME COLUMN start_date TO starts_at;
ALTER TABLE delegations RENAME COLUMN end_date TO ends_at;
ALTER TABLE delegations ADD COLUMN start_date DATE;
ALTER TABLE delegations ADD COLUMN end_date DATE;
UPDATE delegations SET start_date = CAST(timezone('UTC', starts_at) AS DATE),
                       end_date = CAST(timezone('UTC', ends_at) AS DATE);

ALTER TABLE delegations_history RENAME COLUMN start_date TO starts_at;
ALTER TABLE delegations_history RENAME COLUMN end_date TO ends_at;
ALTER TABLE delegations_history ADD COLUMN start_date DATE;
ALTER TABLE delegations_history ADD COLUMN end_date DATE;
UPDATE delegations_history SET start_date = CAST(timezone('UTC', starts_at) AS DATE),
                               end_date = CAST(timezone('UTC', ends_at) AS DATE);
