"""Settings area (``/settings``): E3 group update, E10 action template, group and position lists."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Body, Request, Response

from emulator import render
from emulator.body_rules import E3_BODY, checked, openapi_body
from emulator.http import CallerDep, EmulatorDep, envelope, page, parse_query, query_docs, sliced
from emulator.listing import Selection, serve
from emulator.service import Emulator, ServiceError
from emulator.state import ParentLink, Record, TenantState, now
from models.actions import ActionTemplate
from models.base import Envelope, Page
from models.groups import Group
from models.positions import Position
from models.queries import GroupQuery, GroupSortBy, PositionQuery

router = APIRouter(prefix="/settings/v1", tags=["settings"])

_GROUP_SORT_KEYS: dict[GroupSortBy, Callable[[Record], Any]] = {
    GroupSortBy.GROUP_ID: lambda g: int(g["groupId"]),
    GroupSortBy.GROUP_NAME: lambda g: g["groupName"],
    GroupSortBy.STATUS: lambda g: g["status"],
    GroupSortBy.CREATED_ON: lambda g: g["createdOn"],
    GroupSortBy.UPDATED_ON: lambda g: g["updatedOn"],
}


@router.patch(
    "/groups/{id}",
    name="E3",
    response_model=Envelope[Group],
    openapi_extra={"requestBody": openapi_body(E3_BODY)},
)
async def update_group(
    id: str, caller: CallerDep, emulator: EmulatorDep, body: Annotated[Any, Body()] = None
) -> Response:
    """E3: update a group's names, status and address, and add or remove parent links. The body is
    checked against the spec's table by `emulator.body_rules`, not by the client's request model."""
    wire = checked(E3_BODY, body)
    state = caller.state
    group = emulator.lookup(caller, "groups", id, "Group")
    _check_parents(state, id, wire.get("addParentGroupIds", []))
    for key in ("groupName", "displayName", "legalName", "status", "isDeleted", "disableOption"):
        if key in wire:
            group[key] = wire[key]
    stamp = now()
    if "address" in wire:
        group["address"] = {**group["address"], **wire["address"], "updatedOn": stamp}
    _relink(
        emulator, state, id, wire.get("addParentGroupIds", []), wire.get("removeParentGroupIds", []), stamp
    )
    if wire.get("status") == "INACTIVE" and wire.get("disableOption") == "REMOVE_ASSOCIATIONS":
        _remove_members(state, id)
    group["updatedOn"] = stamp
    emulator.count_write("group", id)
    emulator.changed(state, "groups")
    emulator.changed(state, "users")
    return envelope(render.group(state, id))


@router.get("/action-templates/{id}", name="E10", response_model=Envelope[ActionTemplate])
async def action_template(id: str, caller: CallerDep, emulator: EmulatorDep) -> Response:
    """E10: one action template. Assumption: a token is required (the spec's sample shows none)."""
    emulator.lookup(caller, "action_templates", id, "Action template")
    return envelope(render.action_template(caller.state, id))


@router.get(
    "/groups", name="groups", response_model=Envelope[Page[Group]], openapi_extra=query_docs(GroupQuery)
)
async def list_groups(request: Request, caller: CallerDep, emulator: EmulatorDep) -> Response:
    """List groups (extension): ``tenantId`` required; status, search, updated range and sort."""
    query = parse_query(request, GroupQuery, emulator.faults.ignore_params)
    emulator.require_tenant(caller, query.tenant_id)
    selection = Selection(
        updated_key="updatedOn",
        sort=_GROUP_SORT_KEYS[query.sort_by or GroupSortBy.GROUP_ID],
        descending=query.sort_order == "desc",
        statuses=frozenset(query.status or []),
        start=query.updated_at_start,
        end=query.updated_at_end,
        search=query.search,
        search_keys=("groupName", "displayName"),
    )
    return serve(emulator, caller.state, "groups", query, selection, render.group)


@router.get(
    "/positions",
    name="positions",
    response_model=Envelope[Page[Position]],
    openapi_extra=query_docs(PositionQuery),
)
async def list_positions(request: Request, caller: CallerDep, emulator: EmulatorDep) -> Response:
    """List positions (extension): ``tenantId`` required."""
    query = parse_query(request, PositionQuery, emulator.faults.ignore_params)
    emulator.require_tenant(caller, query.tenant_id)
    positions = caller.state.positions
    chosen = sliced(list(positions), query.page, query.limit)
    # The page helper, like the other lists: orjson refuses a page number beyond 64 bits (a 500).
    return page([orjson.dumps(positions[key]) for key in chosen], query.page, query.limit, len(positions))


def _check_parents(state: TenantState, group_id: str, added: list[str]) -> None:
    """400 for an unknown parent, a group made its own parent, or a cycle in the group tree."""
    for index, parent_id in enumerate(added):
        field = f"addParentGroupIds.{index}"
        if parent_id not in state.groups:
            raise ServiceError(400, f"{field}: unknown group {parent_id}", field)
        if parent_id == group_id or group_id in _ancestors(state, parent_id):
            raise ServiceError(400, f"{field}: group {parent_id} would make a cycle in the group tree", field)


def _ancestors(state: TenantState, group_id: str) -> set[str]:
    seen: set[str] = set()
    stack = [group_id]
    while stack:
        for link in state.group_parents[stack.pop()]:
            if link.parent_id not in seen:
                seen.add(link.parent_id)
                stack.append(link.parent_id)
    return seen


def _relink(
    emulator: Emulator, state: TenantState, group_id: str, added: list[str], removed: list[str], stamp: str
) -> None:
    links = [link for link in state.group_parents[group_id] if link.parent_id not in set(removed)]
    present = {link.parent_id for link in links}
    links += [
        ParentLink(emulator.new_id(), parent, stamp)
        for parent in dict.fromkeys(added)
        if parent not in present
    ]
    state.group_parents[group_id] = links


def _remove_members(state: TenantState, group_id: str) -> None:
    """A group disabled with REMOVE_ASSOCIATIONS loses its user memberships."""
    for user in state.users.values():
        user["userGroups"] = [item for item in user["userGroups"] if item["groupId"] != group_id]
