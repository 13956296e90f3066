"""Which tenants the pipelines sync: each is a partition, so tenants run and fail independently."""

from __future__ import annotations

import os

import dagster as dg

from emulator.scale import DEMO_TENANT_ID

TENANTS_VARIABLE = "ADM_TENANTS"


def configured_tenants() -> list[str]:
    """``ADM_TENANTS`` (comma-separated tenant ids), else ``ADM_TENANT_ID``, else the demo tenant."""
    listed = os.environ.get(TENANTS_VARIABLE) or os.environ.get("ADM_TENANT_ID") or DEMO_TENANT_ID
    return [tenant.strip() for tenant in listed.split(",") if tenant.strip()]


tenant_partitions = dg.StaticPartitionsDefinition(configured_tenants())
"""One partition per configured tenant."""
