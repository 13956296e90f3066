"""Users and authentication area (``/auth``): access-key exchange, E1, E9 and the user list."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response

from emulator import links, render
from emulator.body_rules import E1_BODY, checked, openapi_body
from emulator.http import (
    CallerDep,
    EmulatorDep,
    envelope,
    parse_query,
    query_docs,
)
from emulator.listing import Selection, serve
from emulator.service import Emulator, ServiceError
from emulator.state import Record, TenantState, now
from models.auth import AccessKeyExchange, AccessToken
from models.base import Envelope, Page, format_timestamp
from models.queries import UserQuery, UserSortBy
from models.users import User, UserPosition

router = APIRouter(prefix="/auth/v1", tags=["users"])

_USER_SORT_KEYS = {
    UserSortBy.UPDATED_ON: "updatedOn",
    UserSortBy.CREATED_ON: "createdOn",
    UserSortBy.NAME: "name",
    UserSortBy.EMAIL: "email",
}
_SCALARS = (
    "email",
    "name",
    "displayName",
    "firstName",
    "lastName",
    "accountType",
    "userType",
    "employeeId",
    "employeeNumber",
    "employeeType",
    "employmentType",
    "mobilePhone",
    "profileImageUrl",
    "currencyCode",
    "currencyName",
    "status",
    "dateFormat",
    "sourceId",
    "actorType",
    "aiAgentType",
    "customAttributes",
)


@router.post(
    "/tenants/access-key/exchange",
    name="exchange",
    status_code=201,
    response_model=Envelope[AccessToken],
    openapi_extra={"security": []},
)
async def exchange(body: AccessKeyExchange, emulator: EmulatorDep) -> Response:
    """Exchange a machine-to-machine access key for a bearer token (public-reference.md)."""
    return envelope({"token": emulator.exchange(body.access_key)}, 201)


@router.patch(
    "/user/update-entities/{id}",
    name="E1",
    response_model=Envelope[User],
    openapi_extra={"requestBody": openapi_body(E1_BODY)},
)
async def update_user_entities(
    id: str, caller: CallerDep, emulator: EmulatorDep, body: Annotated[Any, Body()] = None
) -> Response:
    """E1: update a user's fields and replace its roles, positions and groups where given. The body is
    checked against the spec's table by `emulator.body_rules`, not by the client's request model."""
    wire = checked(E1_BODY, body)
    emulator.require_tenant(caller, wire["tenantId"])
    state = caller.state
    user = emulator.lookup(caller, "users", id, "User")
    if "managerId" in wire:
        _require(state.users, wire["managerId"], "managerId", "user")
    _check_ids(state, wire)
    for key in _SCALARS:
        if key in wire:
            user[key] = wire[key]
    for key in ("startDate", "terminationDate"):
        if key in wire:
            user[key] = format_timestamp(datetime.fromisoformat(wire[key]))
    if ("firstName" in wire or "lastName" in wire) and "name" not in wire:
        user["name"] = f"{user['firstName'] or ''} {user['lastName'] or ''}".strip()
    _replace_links(emulator, state, user, wire)
    if "managerId" in wire:
        state.manager_of[id] = wire["managerId"]
    user["updatedOn"], user["updatedBy"] = now(), caller.user_id
    emulator.count_write("user", id)
    emulator.changed(state, "users")
    return envelope(render.user(state, id))


@router.get("/user/positions", name="E9", response_model=Envelope[list[UserPosition]])
async def current_user_positions(caller: CallerDep) -> Response:
    """E9: the positions of the user the token stands for."""
    return envelope(caller.state.users[caller.user_id]["userPositions"])


@router.get("/user", name="users", response_model=Envelope[Page[User]], openapi_extra=query_docs(UserQuery))
async def list_users(request: Request, caller: CallerDep, emulator: EmulatorDep) -> Response:
    """List users (extension of the 14): filters and sort are assumptions, see models.queries.UserQuery."""
    query = parse_query(request, UserQuery, emulator.faults.ignore_params)
    key = _USER_SORT_KEYS[query.sort_by or UserSortBy.CREATED_ON]
    selection = Selection(
        updated_key="updatedOn",
        sort=lambda user: user[key] or "",
        descending=query.sort_order == "desc",
        statuses=frozenset(query.status or []),
        start=query.updated_at_start,
        end=query.updated_at_end,
        search=query.search,
        search_keys=("name", "email", "employeeId"),
    )
    return serve(emulator, caller.state, "users", query, selection, render.user)


def _snake(camel: str) -> str:
    return "".join(f"_{char.lower()}" if char.isupper() else char for char in camel)


def _require(records: dict[str, Record], record_id: str, field: str, what: str) -> None:
    if record_id not in records:
        raise ServiceError(400, f"{field}: unknown {what} {record_id}", field)


def _check_ids(state: TenantState, wire: dict[str, Any]) -> None:
    for index, role_id in enumerate(wire.get("roleIds", [])):
        _require(state.roles, role_id, f"roleIds.{index}", "role")
    for index, position_id in enumerate(wire.get("positionIds", [])):
        _require(state.positions, position_id, f"positionIds.{index}", "position")
    for index, item in enumerate(wire.get("groups", [])):
        _require(state.groups, item["groupId"], f"groups.{index}.groupId", "group")


def _replace_links(emulator: Emulator, state: TenantState, user: Record, wire: dict[str, Any]) -> None:
    """E1's arrays replace the user's whole set (assumption); links that stay keep their ids."""
    stamp = now()
    new_id = emulator.new_id
    if "roleIds" in wire:
        kept = {item["tenantRoleId"]: item for item in user["userRoles"]}
        user["userRoles"] = [
            kept.get(role_id) or links.role(state, new_id(), role_id, stamp) for role_id in wire["roleIds"]
        ]
    if "positionIds" in wire:
        kept = {item["positionsId"]: item for item in user["userPositions"]}
        user["userPositions"] = [
            kept.get(position_id) or links.position(state, new_id(), user["id"], position_id, stamp)
            for position_id in wire["positionIds"]
        ]
    if "groups" in wire:
        kept = {item["groupId"]: item for item in user["userGroups"]}
        ordered = sorted(wire["groups"], key=lambda item: not item.get("isPrimaryOrg", False))
        user["userGroups"] = [
            kept.get(item["groupId"]) or links.group(state, new_id(), user["id"], item["groupId"])
            for item in ordered
        ]
