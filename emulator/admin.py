"""Admin routes under the reserved prefix ``/_admin``: stats, faults, reset, mutations, token revocation
and raw record reads. They are left out of the OpenAPI document and need no token (loopback use only)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from emulator import render
from emulator.faults import FaultConfig
from emulator.http import EmulatorDep
from emulator.mutations import Mutation, apply_mutation
from emulator.service import ServiceError

router = APIRouter(prefix="/_admin", include_in_schema=False)

_RENDERED = {
    "users": render.user,
    "groups": render.group,
    "actions": render.action,
    "matrices": render.matrix,
}


@router.get("/stats")
def stats(emulator: EmulatorDep) -> dict[str, Any]:
    """Requests per endpoint, statuses, injected faults, writes per entity and peak requests in flight."""
    return emulator.stats.as_dict()


@router.post("/stats/reset")
def reset_stats(emulator: EmulatorDep) -> dict[str, Any]:
    """Zero the counters, keep the state."""
    emulator.reset_stats()
    return emulator.stats.as_dict()


@router.get("/faults")
def get_faults(emulator: EmulatorDep) -> FaultConfig:
    """The faults in force."""
    return emulator.faults


@router.put("/faults")
def put_faults(config: FaultConfig, request: Request, emulator: EmulatorDep) -> FaultConfig:
    """Replace the faults; the rate budget refills and the fault count starts over."""
    emulator.faults = config
    request.app.state.fault_middleware.reset()
    return config


@router.post("/reset")
def reset(request: Request, emulator: EmulatorDep) -> dict[str, Any]:
    """Back to the seeded state, zero counters, startup faults, no issued tokens."""
    emulator.reset()
    emulator.reset_stats()
    emulator.faults = emulator.options.faults
    request.app.state.fault_middleware.reset()
    return {"tenants": list(emulator.tenants)}


@router.post("/mutate")
def mutate(mutation: Mutation, emulator: EmulatorDep) -> dict[str, list[str]]:
    """Change records behind the clients' back (updates, inserts, deletions, new revisions)."""
    return apply_mutation(emulator, mutation)


@router.post("/tokens/revoke")
def revoke_tokens(emulator: EmulatorDep) -> dict[str, int]:
    """Expire every token issued by an access-key exchange."""
    return {"revoked": emulator.revoke_issued_tokens()}


@router.get("/records/{kind}/{record_id}")
def record(kind: str, record_id: str, emulator: EmulatorDep, tenant_id: str | None = None) -> dict[str, Any]:
    """A stored record as the service would render it (reports have no read endpoint among the 14)."""
    state = emulator.tenants.get(tenant_id or emulator.options.tenant_id)
    records = getattr(state, kind, None) if state else None
    if state is None or not isinstance(records, dict) or record_id not in records:
        raise ServiceError(404, f"{kind} {record_id} not found")
    renderer = _RENDERED.get(kind)
    return renderer(state, record_id) if renderer else dict(records[record_id])


@router.get("/revisions/{kind}/{record_id}")
def revisions(kind: str, record_id: str, emulator: EmulatorDep, tenant_id: str | None = None) -> list[str]:
    """Revision ids of a delegation or document, without auth (for checking an extract)."""
    state = emulator.tenants[tenant_id or emulator.options.tenant_id]
    store = state.delegation_revisions if kind == "delegations" else state.document_revisions
    if record_id not in store:
        raise ServiceError(404, f"{kind} {record_id} not found")
    return store[record_id]
