"""Decisions and delegations area (``/decision``): E8, E11 and the delegation list."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import orjson
from fastapi import APIRouter, Request, Response

from emulator import decision_search, render
from emulator.http import CallerDep, EmulatorDep, bare, page, parse_query, query_docs, sliced
from emulator.listing import Selection, serve
from emulator.state import Record
from models.base import Envelope, Page
from models.decisions import Decision
from models.delegations import Delegation
from models.queries import DecisionQuery, DelegationQuery, DelegationSortBy, RevisionQuery

router = APIRouter(prefix="/decision/v1", tags=["decisions"])

_DELEGATION_SORT_KEYS: dict[DelegationSortBy, Callable[[Record], Any]] = {
    DelegationSortBy.DELEGATION_DISPLAY_ID: lambda record: int(record["delegationDisplayId"]),
}


@router.get(
    "/decisions", name="E8", response_model=Envelope[Page[Decision]], openapi_extra=query_docs(DecisionQuery)
)
async def list_decisions(request: Request, caller: CallerDep, emulator: EmulatorDep) -> Response:
    """E8: a page of decisions, filtered, sorted and optionally projected (see emulator.decision_search)."""
    query = parse_query(request, DecisionQuery, emulator.faults.ignore_params)
    emulator.require_tenant(caller, query.tenant_id)
    state = caller.state
    signature = query.model_dump_json(exclude={"page", "limit", "fields"})
    ids = emulator.cached_ids(state, ("decisions", signature), lambda: decision_search.select(state, query))
    chosen = sliced(ids, query.page, query.limit)
    if query.fields:
        fields = query.fields
        items = [orjson.dumps(decision_search.project(state.decisions[key], fields)) for key in chosen]
    else:
        items = [
            emulator.encoded(state, "decisions", key, partial(render.decision, state, key)) for key in chosen
        ]
    return page(items, query.page, query.limit, len(ids) + emulator.faults.total_skew)


@router.get(
    "/delegations/{id}/changelog/revision-ids",
    name="E11",
    response_model=list[str],
    openapi_extra=query_docs(RevisionQuery),
)
async def delegation_revision_ids(
    id: str, request: Request, caller: CallerDep, emulator: EmulatorDep
) -> Response:
    """E11: a delegation's changelog revision ids, a bare JSON array (ascending by default)."""
    emulator.lookup(caller, "delegations", id, "Delegation")
    query = parse_query(request, RevisionQuery, emulator.faults.ignore_params)
    return bare(ordered(caller.state.delegation_revisions[id], query))


@router.get(
    "/delegations",
    name="delegations",
    response_model=Envelope[Page[Delegation]],
    openapi_extra=query_docs(DelegationQuery),
)
async def list_delegations(request: Request, caller: CallerDep, emulator: EmulatorDep) -> Response:
    """List delegations (extension): status, decision ids, updated range and sort."""
    query = parse_query(request, DelegationQuery, emulator.faults.ignore_params)
    emulator.require_tenant(caller, query.tenant_id)
    sort_by = query.sort_by or DelegationSortBy.CREATED_AT
    decisions = frozenset(query.decision_ids or [])
    selection = Selection(
        updated_key="updatedAt",
        sort=_DELEGATION_SORT_KEYS.get(sort_by, lambda r: r[sort_by.value]),
        descending=query.sort_order == "desc",
        statuses=frozenset(query.status or []),
        start=query.updated_at_start,
        end=query.updated_at_end,
        keep=(lambda r: r["decisionId"] in decisions) if decisions else None,
    )
    return serve(emulator, caller.state, "delegations", query, selection, render.delegation)


def ordered(revision_ids: list[str], query: RevisionQuery) -> list[str]:
    """Revision ids (increasing numbers) in the requested order."""
    ascending = sorted(revision_ids, key=int)
    return ascending[::-1] if query.sort_order == "desc" else ascending
