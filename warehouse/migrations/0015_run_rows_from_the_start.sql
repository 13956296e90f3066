-- A run's row is written when the run starts (issue 18): status running, with the process (pid) and the
-- machine (host) running it, and finished_at NULL until it ends. A run whose process was killed keeps
-- that row until the tenant's next run finds it (holding the tenant's lock, it knows no run of the
-- tenant is alive) and marks it killed, with the API calls its last progress report counted.
ALTER TABLE sync_runs ALTER COLUMN finished_at DROP NOT NULL;
ALTER TABLE sync_runs ADD COLUMN pid INTEGER;
ALTER TABLE sync_runs ADD COLUMN host VARCHAR;
