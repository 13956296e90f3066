"""Positions: the record of the position-list extension, ``GET /settings/v1/positions``."""

from __future__ import annotations

from models.base import ServiceModel, Timestamp


class Position(ServiceModel):
    """One item of the position list (public-reference.md extension).

    The record is not shown anywhere, so only ``id`` is required: the other fields are those of a matrix's
    ``positionDetails`` (spec 2.11) and ``createdOn``/``updatedOn``, stored when the service sends them.
    Any other field is kept as an extra.
    """

    id: str
    tenant_id: str | None = None
    position_name: str | None = None
    is_scim_provisioned: bool | None = None
    status: str | None = None
    group_ids: list[str] | None = None
    created_on: Timestamp | None = None
    updated_on: Timestamp | None = None
