"""How the HR reverse sync behaves (``ADM_HR_*``), as one Dagster resource that the CLI uses as well.

Its defaults are the settings' defaults (`pipelines.settings` takes them from here); the code location
binds it from the settings (`pipelines.bindings`), so the ops, the drop-folder sensor and the CLI read
the same values and none of them reads the environment.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dagster as dg
from pydantic import Field

DEFAULT_DROP_DIR = "data/hr/inbox"
DEFAULT_PLAN_MAX_AGE_HOURS = 72.0
DEFAULT_MAX_INVALID_SHARE = 0.10


class HrPolicyResource(dg.ConfigurableResource["HrPolicyResource"]):
    """The drop folder, how old a plan may be applied, how much of an upload may be invalid, and whether
    a plan's thresholds need a second person to be lifted."""

    drop_dir: str = Field(
        default=DEFAULT_DROP_DIR, description="The drop folder the sensor watches (ADM_HR_DROP_DIR)."
    )
    plan_max_age_hours: float = Field(
        default=DEFAULT_PLAN_MAX_AGE_HOURS,
        description="A plan older than this is not applied (ADM_HR_PLAN_MAX_AGE_HOURS).",
    )
    max_invalid_share: float = Field(
        default=DEFAULT_MAX_INVALID_SHARE,
        description="An upload with a larger share of invalid rows is refused (ADM_HR_MAX_INVALID_SHARE).",
    )
    four_eyes: bool = Field(
        default=False,
        description="Refuse a threshold lift by the plan's own planner (ADM_HR_FOUR_EYES).",
    )
    tenants: list[str] = Field(
        default_factory=list,
        description="The configured tenants (ADM_TENANTS): a drop folder naming another is refused; "
        "empty: not checked.",
    )
    tenant_names: dict[str, str] = Field(
        default_factory=dict, description="Tenant id -> its name in ADM_TENANTS (a folder may name either)."
    )

    @property
    def drop_folder(self) -> Path:
        """The drop folder."""
        return Path(self.drop_dir)

    @property
    def plan_max_age(self) -> timedelta:
        """How old a plan may be applied."""
        return timedelta(hours=self.plan_max_age_hours)
