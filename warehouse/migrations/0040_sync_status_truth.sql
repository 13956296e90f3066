-- The copy tells the truth about runs (issue 29). A run that does not commit publishes the copy again (its
-- sync_runs row is then the only difference), so v_sync_status in the copy shows the last run whatever its
-- outcome. last_run_error is the last run's own error: arg_max skips NULL values, so it used to show an
-- older run's error beside a succeeded last run. first_commit_at says where the tenant's history starts:
-- nothing is known of the tenant before it.
CREATE OR REPLACE VIEW v_sync_status AS
WITH commits AS (
    SELECT tenant_id, arg_max(run_id, finished_at) AS run_id, arg_max(mode, finished_at) AS mode,
           max(finished_at) AS finished_at, min(finished_at) AS first_finished_at
    FROM sync_runs WHERE status = 'succeeded' GROUP BY ALL
), last_full AS (
    SELECT tenant_id, arg_max(run_id, finished_at) AS run_id, max(finished_at) AS finished_at
    FROM sync_runs WHERE status = 'succeeded' AND mode = 'full' GROUP BY ALL
), last_run AS (
    -- The whole row of the latest run: NULL columns of it stay NULL.
    SELECT tenant_id, run_id, status, error, started_at
    FROM sync_runs
    QUALIFY row_number() OVER (PARTITION BY tenant_id ORDER BY started_at DESC, run_id DESC) = 1
), this_month AS (
    SELECT tenant_id, CAST(sum(api_calls_total) AS BIGINT) AS api_calls, max(monthly_quota) AS monthly_quota
    FROM sync_runs
    WHERE date_trunc('month', timezone('UTC', started_at)) = date_trunc('month', timezone('UTC', now()))
    GROUP BY ALL
)
SELECT
    r.tenant_id, coalesce(t.label, r.tenant_id) AS tenant_label,
    c.finished_at AS last_commit_at, c.run_id AS last_commit_run_id, c.mode AS last_commit_mode,
    f.finished_at AS last_full_refresh_at, f.run_id AS last_full_refresh_run_id,
    r.started_at AS last_run_started_at, r.run_id AS last_run_id, r.status AS last_run_status,
    r.error AS last_run_error,
    coalesce(m.api_calls, 0) AS api_calls_this_month, m.monthly_quota,
    c.first_finished_at AS first_commit_at
FROM last_run r
LEFT JOIN tenants t ON t.tenant_id = r.tenant_id
LEFT JOIN commits c ON c.tenant_id = r.tenant_id
LEFT JOIN last_full f ON f.tenant_id = r.tenant_id
LEFT JOIN this_month m ON m.tenant_id = r.tenant_id;
