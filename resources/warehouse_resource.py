"""The DuckDB warehouse as a Dagster resource: where the file and the per-run staging live."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

DEFAULT_WAREHOUSE = "data/warehouse.duckdb"
DEFAULT_STAGING = "data/staging"


class WarehouseResource(dg.ConfigurableResource["WarehouseResource"]):
    """The warehouse file (``ADM_WAREHOUSE``) and the folder where runs stage their extracts."""

    path: str = DEFAULT_WAREHOUSE
    staging_root: str = DEFAULT_STAGING

    @property
    def file(self) -> Path:
        """The DuckDB file (also before Dagster resolves an ``ADM_WAREHOUSE`` binding: the CLI reads it)."""
        if isinstance(self.path, dg.EnvVar):
            return Path(self.path.get_value() or DEFAULT_WAREHOUSE)
        return Path(self.path)

    def staging(self, run_id: str, tenant_id: str) -> Path:
        """The staging folder of one run and tenant."""
        return Path(self.staging_root) / run_id / tenant_id
