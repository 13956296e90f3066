"""How the HR reverse sync behaves (``ADM_HR_*``), as the resource its ops, its drop-folder sensor and the
CLI use: a view of the settings (`pipelines.settings` declares each value once), so none of them reads the
environment and a Dagster run has nothing to configure here."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from pipelines.settings import SyncSettings


@dataclass(frozen=True)
class HrPolicyResource:
    """The drop folder, how old a plan may be applied, how much of an upload may be invalid, whether a
    plan's thresholds need a second person to be lifted, and the tenants a drop folder may name."""

    settings: SyncSettings = field(default_factory=SyncSettings.model_construct)
    """Default: every setting's default, no tenant (a drop folder's tenant is then not checked)."""

    @property
    def drop_folder(self) -> Path:
        """The drop folder the sensor watches."""
        return self.settings.hr_drop_dir

    @property
    def plan_max_age(self) -> timedelta:
        """How old a plan may be applied."""
        return self.settings.plan_max_age

    @property
    def max_invalid_share(self) -> float:
        """An upload with a larger share of invalid rows is refused."""
        return self.settings.hr_max_invalid_share

    @property
    def four_eyes(self) -> bool:
        """Whether a threshold lift by the plan's own planner is refused."""
        return self.settings.hr_four_eyes

    @property
    def tenants(self) -> list[str]:
        """The configured tenants: a drop folder naming another is refused (empty: not checked)."""
        return self.settings.sync_tenants

    @property
    def tenant_names(self) -> dict[str, str]:
        """Tenant id -> its name in ``ADM_TENANTS`` (a folder may name either)."""
        return self.settings.tenant_names
