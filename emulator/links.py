"""A user's links to roles, positions and groups (spec 2.3-2.5), built alike by seeding and by E1."""

from __future__ import annotations

from emulator.state import Record, TenantState


def role(state: TenantState, link_id: str, role_id: str, stamp: str) -> Record:
    """A UserRole for a tenant role."""
    return {
        "id": link_id,
        "tenantId": state.tenant_id,
        "tenantRoleId": role_id,
        "roleName": state.roles[role_id]["roleName"],
        "autoProvisioned": False,
        "instanceId": None,
        "createdOn": stamp,
        "deletedOn": None,
        "updatedOn": stamp,
    }


def position(state: TenantState, link_id: str, user_id: str, position_id: str, stamp: str) -> Record:
    """A UserPosition."""
    record = state.positions[position_id]
    return {
        "id": link_id,
        "userId": user_id,
        "tenantId": state.tenant_id,
        "positionsId": position_id,
        "autoProvisioned": False,
        "instanceId": None,
        "isEditable": True,
        "isDeleted": False,
        "deletedOn": None,
        "createdOn": stamp,
        "updatedOn": stamp,
        "positionName": record["positionName"],
        "isSCIMProvisioned": record["isScimProvisioned"],
        "externalId": None,
    }


def group(state: TenantState, link_id: str, user_id: str, group_id: str) -> Record:
    """A UserGroup."""
    record = state.groups[group_id]
    return {
        "id": link_id,
        "tenantId": state.tenant_id,
        "userId": user_id,
        "groupId": group_id,
        "groupTypeId": record["tenantGroupTypeId"],
        "groupName": record["groupName"],
        "groupTypeName": state.group_types[record["tenantGroupTypeId"]]["groupTypeName"],
        "displayName": record["displayName"],
    }
