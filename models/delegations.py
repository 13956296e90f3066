"""Delegations: the record of the delegation-list extension, ``GET /decision/v1/delegations``."""

from __future__ import annotations

from models.base import ServiceModel, Timestamp
from models.queries import DelegationStatus


class Delegation(ServiceModel):
    """One item of the delegation list (public-reference.md extension).

    Assumption: neither the spec nor the reference shows this record's fields; these are the ones the sync
    relies on. ``issuerType`` is free text because its allowed values are not shown (spec E8). Any other
    field the service sends is kept as an extra.
    """

    id: str
    tenant_id: str
    delegation_display_id: str
    decision_id: str
    decision_name: str
    status: DelegationStatus
    issuer_type: str
    issuer_id: str
    recipient_id: str
    recipient_name: str | None
    start_date: Timestamp | None
    end_date: Timestamp | None
    created_at: Timestamp
    updated_at: Timestamp
