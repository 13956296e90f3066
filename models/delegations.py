"""Delegations: the record of the delegation-list extension, ``GET /decision/v1/delegations``."""

from __future__ import annotations

from models.base import ServiceModel, Timestamp
from models.queries import DelegationStatus


class Delegation(ServiceModel):
    """One item of the delegation list (public-reference.md extension).

    Neither the spec nor the reference shows this record's fields, so only ``id`` is required: these are
    the fields the sync stores when the service sends them, each optional. ``issuerType`` is free text
    because its allowed values are not shown (spec E8). Any other field the service sends is kept as an
    extra.
    """

    id: str
    tenant_id: str | None = None
    delegation_display_id: str | None = None
    decision_id: str | None = None
    decision_name: str | None = None
    status: DelegationStatus | None = None
    issuer_type: str | None = None
    issuer_id: str | None = None
    recipient_id: str | None = None
    recipient_name: str | None = None
    start_date: Timestamp | None = None
    end_date: Timestamp | None = None
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None
