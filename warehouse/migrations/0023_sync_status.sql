-- How fresh the copy is, per tenant, and what a tenant is called (issue 21).

-- A tenant's label: the service names no tenant, so an operator gives each one a name
-- (`authority-sync tenant-label <tenant> <label>`).
CREATE TABLE tenants (
    tenant_id VARCHAR NOT NULL PRIMARY KEY,
    label VARCHAR NOT NULL,
    labelled_at TIMESTAMPTZ NOT NULL
);

-- Counts are BIGINT: a sum of INTEGERs is a HUGEINT in DuckDB, which pandas reads as float64 and Polars as
-- a 38-digit decimal.
CREATE OR REPLACE VIEW v_api_budget AS
SELECT
    tenant_id,
    CAST(date_trunc('month', timezone('UTC', started_at)) AS DATE) AS month,
    count(*) AS runs,
    count(*) FILTER (WHERE status = 'succeeded') AS succeeded_runs,
    CAST(sum(api_calls_total) AS BIGINT) AS api_calls,
    max(monthly_quota) AS monthly_quota,
    round(sum(api_calls_total) / nullif(max(monthly_quota), 0), 4) AS quota_share
FROM sync_runs
GROUP BY ALL;

-- One row per tenant the warehouse has run for: its label, its last commit, its last full refresh (the
-- deletion horizon: a record the service deleted without saying so stays live here until a full refresh
-- no longer finds it), its last run whatever the outcome, and this month's API calls (UTC).
CREATE VIEW v_sync_status AS
WITH last_commit AS (
    SELECT tenant_id, arg_max(run_id, finished_at) AS run_id, arg_max(mode, finished_at) AS mode,
           max(finished_at) AS finished_at
    FROM sync_runs WHERE status = 'succeeded' GROUP BY ALL
), last_full AS (
    SELECT tenant_id, arg_max(run_id, finished_at) AS run_id, max(finished_at) AS finished_at
    FROM sync_runs WHERE status = 'succeeded' AND mode = 'full' GROUP BY ALL
), last_run AS (
    SELECT tenant_id, arg_max(run_id, started_at) AS run_id, arg_max(status, started_at) AS status,
           arg_max(error, started_at) AS error, max(started_at) AS started_at
    FROM sync_runs GROUP BY ALL
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
    coalesce(m.api_calls, 0) AS api_calls_this_month, m.monthly_quota
FROM last_run r
LEFT JOIN tenants t ON t.tenant_id = r.tenant_id
LEFT JOIN last_commit c ON c.tenant_id = r.tenant_id
LEFT JOIN last_full f ON f.tenant_id = r.tenant_id
LEFT JOIN this_month m ON m.tenant_id = r.tenant_id;
