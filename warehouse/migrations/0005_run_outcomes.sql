-- Every run leaves a row in sync_runs, not only the committed ones: status is succeeded, failed or
-- blocked_by_check, with the error of a run that did not commit. monthly_quota is the plan's API calls a
-- month when the run started, so that v_api_budget can say how much of it the month has used.
-- phase_seconds says where the run's time went: {"extract": s, "checks": s, "commit": s}.
ALTER TABLE sync_runs ADD COLUMN error VARCHAR;
ALTER TABLE sync_runs ADD COLUMN job_name VARCHAR;
ALTER TABLE sync_runs ADD COLUMN checks JSON;
ALTER TABLE sync_runs ADD COLUMN monthly_quota INTEGER;
ALTER TABLE sync_runs ADD COLUMN phase_seconds JSON;

-- API calls per tenant and calendar month (UTC), every run counted (a failed run spent its calls too),
-- against the quota of the tenant's plan.
CREATE VIEW v_api_budget AS
SELECT
    tenant_id,
    CAST(date_trunc('month', timezone('UTC', started_at)) AS DATE) AS month,
    count(*) AS runs,
    count(*) FILTER (WHERE status = 'succeeded') AS succeeded_runs,
    sum(api_calls_total) AS api_calls,
    max(monthly_quota) AS monthly_quota,
    round(sum(api_calls_total) / nullif(max(monthly_quota), 0), 4) AS quota_share
FROM sync_runs
GROUP BY ALL;
