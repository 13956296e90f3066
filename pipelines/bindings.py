"""Bind the resources to the settings, once, when the code location loads (`pipelines.definitions`).

Each resource is a view of the one settings object (`pipelines.settings.SyncSettings`), handed to Dagster
as it is (Dagster wraps a plain object as a resource without config): a run's config has no resources
section, so the launchpad cannot pre-fill a copy of a value the operator may change later, and no secret
is ever written into a run's config, an event or the UI. Assets and sensors ask for them by name with
``dg.ResourceParam[...]``.
"""

from __future__ import annotations

from typing import Any

from pipelines.clients import AdmClientResource
from pipelines.hr.policy import HrPolicyResource
from pipelines.settings import SyncSettings
from pipelines.warehouse_resource import WarehouseResource


def resources(settings: SyncSettings) -> dict[str, Any]:
    """Every resource of the code location, by the name assets, ops, sensors and schedules ask for."""
    return {
        "adm": AdmClientResource(settings),
        "warehouse": WarehouseResource(settings),
        "sync_policy": settings,
        "hr_policy": HrPolicyResource(settings),
    }
