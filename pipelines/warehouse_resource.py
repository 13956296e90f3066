"""The DuckDB warehouse and the tenant sync's policy as Dagster resources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from pipelines.settings import MONTHLY_QUOTAS, SyncSettings
from warehouse.files import default_publish_path
from warehouse.locks import DEFAULT_LOCK_WAIT_S
from warehouse.publish import DEFAULT_STORAGE_VERSION, PublishTarget


def _setting(name: str) -> Any:
    """The default of one setting (`pipelines.settings.SyncSettings`), declared there only."""
    return SyncSettings.model_fields[name].default


class WarehouseResource(dg.ConfigurableResource["WarehouseResource"]):
    """The warehouse file (``ADM_WAREHOUSE``), the folder where runs stage their extracts and the copy
    each commit publishes for readers."""

    path: str = Field(default=str(_setting("warehouse")), description="The DuckDB file.")
    staging_root: str = Field(description="Where runs stage their extracts (personal data: keep it private).")
    publish_path: str | None = Field(
        default=None,
        description="The copy readers open, published after each commit; default <stem>.analytics.duckdb "
        "beside the warehouse.",
    )
    publish_storage_version: str = Field(
        default=DEFAULT_STORAGE_VERSION,
        description="The DuckDB storage format of the copy (readers need that DuckDB version or newer).",
    )
    publish_parquet: bool = Field(
        default=False, description="Also publish one Parquet file per table and view."
    )
    readers_group: str | None = Field(
        default=None, description="The group that may read the copy for readers (else it is private)."
    )
    lock_wait_s: float = Field(
        default=DEFAULT_LOCK_WAIT_S,
        description="How long an open of the warehouse waits for its writer (a commit, an HR step).",
    )

    @property
    def file(self) -> Path:
        """The DuckDB file."""
        return Path(self.path)

    @property
    def publish_target(self) -> PublishTarget:
        """Where and how each commit publishes the reader copy."""
        path = Path(self.publish_path) if self.publish_path else default_publish_path(self.file)
        return PublishTarget(path, self.publish_storage_version, self.publish_parquet, self.readers_group)

    def staging(self, run_id: str, tenant_id: str) -> Path:
        """The staging folder of one run and tenant."""
        return Path(self.staging_root) / run_id / tenant_id


class SyncPolicyResource(dg.ConfigurableResource["SyncPolicyResource"]):
    """How a tenant sync behaves: its incremental overlap, its API budget, its schema contract, retries and
    re-verification. Every field is bound from the settings (`pipelines.bindings`); the default of a field
    a run config leaves out is the setting's own, declared there only."""

    overlap_minutes: int = Field(
        default=_setting("overlap_minutes"),
        description="An incremental read starts this long before the cursor.",
    )
    monthly_quota: int = Field(
        default=MONTHLY_QUOTAS[_setting("rate_plan")],
        description="API calls a month of the plan of tenants without their own.",
    )
    tenant_quotas: dict[str, int] = Field(
        default_factory=dict, description="Tenant id -> its own monthly quota (ADM_MONTHLY_QUOTA__<TENANT>)."
    )
    quota_max_share: float = Field(
        default=_setting("quota_max_share"),
        description="A run projected to push the month's calls past this share is refused.",
    )
    allow_over_quota: bool = Field(
        default=_setting("allow_over_quota"), description="Run even when over the quota share."
    )
    schema_contract: str = Field(
        default=_setting("schema_contract"),
        description="strict: any record off the spec fails the run; tolerant: deviations are recorded.",
    )
    reject_max_count: int = Field(
        default=_setting("reject_max_count"),
        description="A list with more rejected records than this fails the run.",
    )
    reject_max_share: float = Field(
        default=_setting("reject_max_share"),
        description="A list whose rejected records exceed this share of its total fails.",
    )
    max_retries: int = Field(
        default=_setting("max_retries"),
        description="Times a step that failed for a passing reason (5xx, connection) runs again.",
    )
    retry_wait_s: float = Field(
        default=_setting("retry_wait_s"), description="Seconds before the first retry, doubled after."
    )
    resume_hours: float = Field(
        default=_setting("resume_hours"),
        description="A run reuses the revision lists an uncommitted run fetched this recently (0: never).",
    )
    run_budget_s: float | None = Field(
        default=_setting("run_budget_s"),
        description="Seconds a run may take before it is stopped (default: from its calls and rate).",
    )
    warn_only_checks: str = Field(
        default="", description="Comma-separated blocking checks that only warn (an operator's override)."
    )
    revision_recheck_days: int = Field(
        default=_setting("revision_recheck_days"),
        description="Each run re-verifies about 1/N of the revision lists whose owner did not change, so "
        "each is verified within N runs.",
    )
    nightly_cron: str = Field(
        default=_setting("nightly_cron"),
        description="When the nightly incremental runs (UTC): the month's projection.",
    )
    full_refresh_cron: str = Field(
        default=_setting("full_refresh_cron"),
        description="When the full refresh runs (UTC): the month's projection.",
    )

    def quota_of(self, tenant_id: str) -> int:
        """The tenant's monthly quota: its own, else the shared one."""
        return self.tenant_quotas.get(tenant_id, self.monthly_quota)
