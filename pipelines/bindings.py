"""Bind the resources to the environment. Secrets reach Dagster only as ``dg.EnvVar`` references, so
their values never appear in definitions, config displays or logs."""

from __future__ import annotations

import os
from typing import Any

import dagster as dg

from emulator.scale import DEMO_TOKEN
from resources.dagster_resource import AdmClientResource
from resources.warehouse_resource import DEFAULT_WAREHOUSE, WarehouseResource

CLIENT_VARIABLES = {
    "environment": "ADM_ENVIRONMENT",
    "base_url": "ADM_BASE_URL",
    "token": "ADM_TOKEN",
    "access_key": "ADM_ACCESS_KEY",
    "tenant_id": "ADM_TENANT_ID",
    "rate_plan": "ADM_RATE_PLAN",
}
INT_VARIABLES = {"concurrency": "ADM_CONCURRENCY", "burst": "ADM_BURST"}
FLOAT_VARIABLES = {"rate_per_minute": "ADM_RATE_PER_MINUTE"}
"""Dagster config has no float source for ``dg.EnvVar``: these (not secret) values are read at binding."""
LOCAL_EMULATOR = "http://127.0.0.1:8080"
"""Where ``authority-sync emulator`` listens by default: the address used when none is configured."""
UNLIMITED_RATE = 60_000.0
"""Rate budget against a local emulator, which enforces none unless told to."""


def address_configured() -> bool:
    """Whether a service address (``ADM_BASE_URL`` or ``ADM_ENVIRONMENT``) is configured."""
    return bool(os.environ.get("ADM_BASE_URL") or os.environ.get("ADM_ENVIRONMENT"))


def client_resource(**overrides: Any) -> AdmClientResource:
    """The client resource from the ``ADM_*`` variables that are set; ``overrides`` win. With no address
    configured it points at a local emulator with the demo token (a public, emulator-only credential)."""
    fields: dict[str, Any] = {
        name: dg.EnvVar(var) for name, var in CLIENT_VARIABLES.items() if var in os.environ
    }
    fields |= {name: dg.EnvVar.int(var) for name, var in INT_VARIABLES.items() if var in os.environ}
    fields |= {name: float(os.environ[var]) for name, var in FLOAT_VARIABLES.items() if var in os.environ}
    if not address_configured():
        fields |= {"base_url": LOCAL_EMULATOR, "token": DEMO_TOKEN, "rate_per_minute": UNLIMITED_RATE}
    return AdmClientResource(**(fields | overrides))


def warehouse_resource(path: str | None = None) -> WarehouseResource:
    """The warehouse at ``path``, else ``ADM_WAREHOUSE``, else ``data/warehouse.duckdb``."""
    if path is not None:
        return WarehouseResource(path=path)
    if "ADM_WAREHOUSE" in os.environ:
        return WarehouseResource(path=dg.EnvVar("ADM_WAREHOUSE"))
    return WarehouseResource(path=DEFAULT_WAREHOUSE)
