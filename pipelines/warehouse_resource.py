"""The DuckDB warehouse as the resource assets, checks and the CLI use: a view of the settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipelines.settings import SyncSettings
from warehouse.publish_target import PublishTarget


@dataclass(frozen=True)
class WarehouseResource:
    """The warehouse file (``ADM_WAREHOUSE``), the folder where runs stage their extracts and the copy
    each commit publishes for readers. It holds the settings and nothing else: a Dagster run has nothing
    to configure here (`pipelines.bindings`)."""

    settings: SyncSettings

    @property
    def file(self) -> Path:
        """The DuckDB file."""
        return self.settings.warehouse

    @property
    def staging_root(self) -> Path:
        """Where runs stage their extracts (personal data: kept private)."""
        return self.settings.staging_root

    @property
    def publish_target(self) -> PublishTarget:
        """Where and how each commit publishes the reader copy."""
        return self.settings.publish_target

    @property
    def lock_wait_s(self) -> float:
        """How long an open of the warehouse waits for its writer (a commit, an HR step)."""
        return self.settings.lock_wait_s

    def staging(self, run_id: str, tenant_id: str) -> Path:
        """The staging folder of one run and tenant."""
        return self.staging_root / run_id / tenant_id
