"""The run tags naming a run's tenant, which every run of a tenant carries however it is launched: the
instance's run queue (``pipelines/dagster.yaml``) runs one run per tenant at a time by them, and the runs
list finds a tenant's runs by them."""

from __future__ import annotations

from collections.abc import Mapping

TENANT_TAG = "adm/tenant"
"""Run tag: the tenant a run syncs, plans or applies for. The run queue (``pipelines/dagster.yaml``) runs one
run per value at a time, so a tenant's HR runs and syncs take turns; searchable in the runs list."""
TENANT_NAME_TAG = "adm/tenant_name"
"""Run tag: the tenant's name (``ADM_TENANTS=acme=<uuid>``), for people reading the runs list."""


def tenant_tags(tenant_id: str, names: Mapping[str, str]) -> dict[str, str]:
    """The tags of a run for one tenant (``names``: tenant id -> name): its id, and its name when it has
    one."""
    name = names.get(tenant_id)
    return {TENANT_TAG: tenant_id, **({TENANT_NAME_TAG: name} if name else {})}
