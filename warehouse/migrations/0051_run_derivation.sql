-- A record read again unchanged is no longer turned into rows again when the warehouse can prove its stored
-- rows are what this release would derive from the same text (warehouse/unchanged.py). The proof is the run
-- that last wrote or compared them: each run now records what derived its rows (a digest of the code, the
-- schema and the schema contract's modes). Runs before this migration have none, so their rows are derived
-- again once, by the next read of each list. records_reused says per list how many records a run staged that
-- way.
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS derivation VARCHAR;
ALTER TABLE sync_runs ADD COLUMN IF NOT EXISTS records_reused JSON;
