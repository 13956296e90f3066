"""The ``tenants`` table: what each tenant is called. The service names no tenant, so an operator labels
each one (`authority-sync tenant-label`), and ``v_sync_status`` shows the label beside the tenant's id."""

from __future__ import annotations

import duckdb

from models.base import canonical_id, is_uuid
from models.errors import AuthoritySyncError


class TenantLabelError(AuthoritySyncError, ValueError):
    """A label that cannot be stored: not a tenant id, or an empty label."""


def set_label(con: duckdb.DuckDBPyConnection, tenant_id: str, label: str) -> str:
    """Store ``label`` as the tenant's name (replacing any earlier one); returns the tenant id as the
    warehouse keys it. Raises `TenantLabelError` for an id that is not a UUID or a blank label."""
    if not is_uuid(tenant_id):
        raise TenantLabelError(f"{tenant_id!r} is not a tenant id (a UUID)")
    if not label.strip():
        raise TenantLabelError("a tenant's label cannot be blank")
    key = canonical_id(tenant_id)
    con.execute("INSERT OR REPLACE INTO tenants VALUES (?, ?, now())", [key, label.strip()])
    return key


def tenant_label(con: duckdb.DuckDBPyConnection, tenant_id: str) -> str:
    """How people know a tenant: ``<label> (<id>)`` when it is labelled, else its id."""
    row = con.execute("SELECT label FROM tenants WHERE tenant_id = ?", [canonical_id(tenant_id)]).fetchone()
    return f"{row[0]} ({tenant_id})" if row else tenant_id
