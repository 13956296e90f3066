"""The Dagster code location (``workspace.yaml``): the tenant sync and the HR reverse sync, with resources
bound in one place from the one settings object. A bad ``ADM_*`` value stops the load with one line
naming the variable and what it accepts."""

from __future__ import annotations

import dagster as dg

from pipelines.hr.dagster import hr_definitions
from pipelines.location import sync_definitions
from pipelines.settings import SyncSettings, load_settings


def code_location(settings: SyncSettings) -> dg.Definitions:
    """Everything the code location holds, built from ``settings``."""
    return dg.Definitions.merge(sync_definitions(settings), hr_definitions())


settings = load_settings()
defs = code_location(settings)
