"""Compose wire records from stored records and their links (manager, parents, people, types)."""

from __future__ import annotations

from emulator.state import Record, TenantState

_INTERNAL_ACTION_KEYS = ("assigneeIds",)
_INTERNAL_TEMPLATE_KEYS = ("typeId",)


def decision(state: TenantState, decision_id: str) -> Record:
    """A Decision (spec 2.10), stored as the service sends it."""
    return state.decisions[decision_id]


def delegation(state: TenantState, delegation_id: str) -> Record:
    """A Delegation (list extension), stored as the service sends it."""
    return state.delegations[delegation_id]


def user(state: TenantState, user_id: str) -> Record:
    """A User (spec 2.1) with its Manager object (2.2) composed from the manager's current record, and its
    memberships showing their groups' current names (assumption: the service denormalises at read, so a
    group rename shows in every member's record)."""
    record = dict(state.users[user_id])
    record["manager"] = manager(state, state.manager_of[user_id])
    record["userGroups"] = [{**item, **_group_names(state, item["groupId"])} for item in record["userGroups"]]
    return record


def _group_names(state: TenantState, group_id: str) -> Record:
    group = state.groups.get(group_id)
    return {"groupName": group["groupName"], "displayName": group["displayName"]} if group else {}


def manager(state: TenantState, manager_id: str) -> Record:
    """The Manager object (spec 2.2) of a user; ``managerName`` is the manager's own manager."""
    boss = state.users[manager_id]
    skip = state.users[state.manager_of[manager_id]]
    return {
        "id": boss["id"],
        "userId": boss["userId"],
        "idpUserId": boss["idpUserId"],
        "name": boss["name"],
        "email": boss["email"],
        "firstName": boss["firstName"],
        "lastName": boss["lastName"],
        "displayName": boss["displayName"],
        "mobilePhone": boss["mobilePhone"],
        "profileImageUrl": boss["profileImageUrl"],
        "createdOn": boss["createdOn"],
        "updatedOn": boss["updatedOn"],
        "userPositions": boss["userPositions"],
        "primaryOrganization": primary_organization(state, manager_id),
        "managerName": skip["name"],
        "managerProfileImageUrl": skip["profileImageUrl"],
    }


def primary_organization(state: TenantState, user_id: str) -> Record | None:
    """The user's first group as a name record, or None."""
    groups = state.users[user_id]["userGroups"]
    if not groups:
        return None
    group = state.groups[groups[0]["groupId"]]
    return {"id": group["id"], "groupName": group["groupName"], "displayName": group["displayName"]}


def group(state: TenantState, group_id: str) -> Record:
    """A Group (spec 2.8) with its group type and parent groups composed."""
    record = dict(state.groups[group_id])
    record["tenantGroupType"] = state.group_types[record.pop("tenantGroupTypeId")]
    record["parentGroups"] = [
        {
            "id": link.link_id,
            "parentId": link.parent_id,
            "createdAt": link.created_at,
            "parentGroup": parent_summary(state, link.parent_id),
        }
        for link in state.group_parents[group_id]
    ]
    return record


def parent_summary(state: TenantState, group_id: str) -> Record:
    """The nested parentGroup of a group's parent link."""
    parent = state.groups[group_id]
    kind = state.group_types[parent["tenantGroupTypeId"]]
    return {
        "id": parent["id"],
        "tenantId": parent["tenantId"],
        "groupId": parent["groupId"],
        "groupName": parent["groupName"],
        "displayName": parent["displayName"],
        "legalName": parent["legalName"],
        "tenantGroupType": {"id": kind["id"], "groupTypeName": kind["groupTypeName"]},
    }


def person(state: TenantState, user_id: str) -> Record:
    """A person summary (spec 2.6)."""
    record = state.users[user_id]
    boss = state.users[state.manager_of[user_id]]
    organization = primary_organization(state, user_id) or {"id": "", "groupName": "", "displayName": ""}
    group_record = state.groups.get(organization["id"])
    kind = (
        state.group_types[group_record["tenantGroupTypeId"]]
        if group_record
        else {"id": "", "groupTypeName": ""}
    )
    return {
        "id": record["id"],
        "email": record["email"] or "",
        "name": record["name"] or "",
        "displayName": record["displayName"] or "",
        "profileImageUrl": record["profileImageUrl"] or "",
        "mobilePhone": record["mobilePhone"] or "",
        "primaryOrganizationId": organization["id"],
        "positions": [
            {
                "id": item["positionsId"],
                "positionName": item["positionName"],
                "autoProvisioned": item["autoProvisioned"],
            }
            for item in record["userPositions"]
        ],
        "primaryOrganization": {
            "id": organization["id"],
            "groupName": organization["groupName"],
            "displayName": organization["displayName"],
            "tenantGroupTypeId": kind["id"],
            "tenantGroupTypeName": kind["groupTypeName"],
            "legalName": group_record["legalName"] if group_record else "",
            "baseCurrency": group_record["baseCurrency"] if group_record else "",
        },
        "manager": {
            "id": boss["id"],
            "name": boss["name"] or "",
            "displayName": boss["displayName"] or "",
            "profileImageUrl": boss["profileImageUrl"] or "",
        },
    }


def action(state: TenantState, action_id: str) -> Record:
    """An Action (spec 2.7) with its type, template, owner, assignees, priority and status composed."""
    record = {
        key: value for key, value in state.actions[action_id].items() if key not in _INTERNAL_ACTION_KEYS
    }
    status = state.action_statuses[record["actionStatusId"]]
    record["actionType"] = action_type(state, record["actionTypeId"])
    template = state.action_templates[record["actionTemplateId"]]
    record["actionTemplate"] = {
        "id": template["id"],
        "tenantId": template["tenantId"],
        "name": template["name"],
        "description": template["description"],
        "status": template["status"],
        "type": action_type(state, template["typeId"]),
    }
    record["owner"] = person(state, record["ownerId"])
    record["assignees"] = [
        {
            "id": f"{action_id[:24]}{index:012d}",
            "assigneeId": assignee,
            "assignee": person(state, assignee),
            "actionStatusId": status["id"],
            "actionStatusName": status["actionStatusName"],
            "actionTakenDate": record["updatedAt"],
        }
        for index, assignee in enumerate(state.actions[action_id]["assigneeIds"])
    ]
    record["priority"] = state.action_priorities[record["actionPriorityId"]]
    record["status"] = status
    return record


def action_type(state: TenantState, type_id: str) -> Record:
    """The actionType object nested in actions."""
    kind = state.action_types[type_id]
    return {key: kind[key] for key in ("id", "tenantId", "type", "name", "typeIcon", "status", "isCustom")}


def action_template(state: TenantState, template_id: str) -> Record:
    """An Action template (spec 2.12)."""
    record = {
        k: v for k, v in state.action_templates[template_id].items() if k not in _INTERNAL_TEMPLATE_KEYS
    }
    kind = state.action_types[state.action_templates[template_id]["typeId"]]
    record["type"] = {key: value for key, value in kind.items() if key != "name"}
    return record


def user_details(state: TenantState, user_id: str) -> Record:
    """The ``userDetails`` shape used inside matrices."""
    record = state.users[user_id]
    summary = person(state, user_id)
    return {
        "id": record["id"],
        "email": record["email"] or "",
        "name": record["name"] or "",
        "displayName": record["displayName"] or "",
        "firstName": record["firstName"] or "",
        "lastName": record["lastName"] or "",
        "mobilePhone": record["mobilePhone"] or "",
        "isActive": record["status"] == "ACTIVE",
        "profileImageUrl": record["profileImageUrl"] or "",
        "positions": summary["positions"],
        "primaryOrganization": {
            key: summary["primaryOrganization"][key]
            for key in ("groupName", "displayName", "tenantGroupTypeId", "tenantGroupTypeName")
        },
        "positionIds": [item["positionsId"] for item in record["userPositions"]],
        "primaryOrganizationId": summary["primaryOrganizationId"],
        "manager": summary["manager"],
        "roles": [
            {"tenantRoleId": r["tenantRoleId"], "roleName": r["roleName"]} for r in record["userRoles"]
        ],
        "groups": [{"groupId": g["groupId"], "groupTypeId": g["groupTypeId"]} for g in record["userGroups"]],
    }


def group_details(state: TenantState, group_id: str) -> Record:
    """The ``groupDetails`` shape used inside matrices."""
    record = state.groups[group_id]
    kind = state.group_types[record["tenantGroupTypeId"]]
    return {
        "id": record["id"],
        "groupName": record["groupName"],
        "displayName": record["displayName"],
        "legalName": record["legalName"],
        "tenantId": record["tenantId"],
        "groupTypeName": kind["groupTypeName"],
        "groupTypeId": kind["id"],
        "status": record["status"],
        "parentGroupIds": [link.parent_id for link in state.group_parents[group_id]],
        "isSynced": record["isSynced"],
    }


def matrix(state: TenantState, matrix_id: str) -> Record:
    """A Matrix (spec 2.11) composed from its stored ids."""
    stored = state.matrices[matrix_id]
    ids = f"{matrix_id[:24]}"
    sharing = stored["externalSharing"]
    return {
        **{
            key: stored[key]
            for key in (
                "id",
                "matrixId",
                "matrixName",
                "matrixDescription",
                "link",
                "tenantId",
                "ownerId",
                "copiedFromMatrix",
                "roleMatrix",
                "authorityMatrix",
                "isFavorite",
                "isUserSavedPersonalView",
                "createdOn",
                "updatedOn",
                "currentTab",
            )
        },
        "decisionCount": len(stored["decisionIds"]),
        "delegationCount": sum(
            state.decisions[d]["delegations"] for d in stored["decisionIds"] if d in state.decisions
        ),
        "suspendedDelegationsCount": 0,
        "pendingDelegationsCount": 0,
        "matrixStatus": state.matrix_statuses[stored["matrixStatusId"]],
        "matrixSharing": {
            "id": f"{ids}{1:012d}",
            "type": "PRIVATE",
            "sharingOption": "SPECIFIC",
            "link": False,
            "viewerAdjustableFilters": True,
            "externalSharing": sharing["isEnabled"],
            "users": [],
            "groups": [],
        },
        "matrixAuthorityRoles": [
            {"id": f"{ids}{n:012d}", "authorityRoleId": r, "isEnabled": True}
            for n, r in enumerate(stored["authorityRoleIds"])
        ],
        "matrixGroups": [
            {"id": f"{ids}{n:012d}", "tenantGroupsMappingId": g, "groupDetails": group_details(state, g)}
            for n, g in enumerate(stored["groupIds"])
            if g in state.groups
        ],
        "matrixPositions": [
            {"id": f"{ids}{n:012d}", "positionId": p, "positionDetails": position_details(state, p)}
            for n, p in enumerate(stored["positionIds"])
            if p in state.positions
        ],
        "matrixUsers": [
            {"id": f"{ids}{n:012d}", "userId": u, "userDetails": user_details(state, u)}
            for n, u in enumerate(stored["userIds"])
            if u in state.users
        ],
        "matrixDecisions": [
            {"id": f"{ids}{n:012d}", "decisionId": d, "isDisabled": False, "disabledOn": None}
            for n, d in enumerate(stored["decisionIds"])
        ],
        "matrixSections": [
            {"sectionId": key, "name": name} for key, name in _pairs(state, stored, "section")
        ],
        "matrixCategories": [
            {"categoryId": key, "name": name} for key, name in _pairs(state, stored, "category")
        ],
        "ownerDetails": user_details(state, stored["ownerId"]),
        "matrixDelegation": {
            "delegationRole": True,
            "delegationDataDetails": True,
            "delegationDataGroups": True,
            "delegationDataDocuments": False,
            "delegationDataConditions": False,
            "delegationDataAuthorities": True,
            "delegationDataRoles": False,
            "authorityTypeIds": [],
            "roleIds": [],
            "issuanceStatusNames": ["ISSUED"],
            "primaryLimitTypes": {
                "Value (Currency)": {"min": 0, "max": 1_000_000},
                "Time (Months)": {"min": 0, "max": 36},
                "Time (Years)": {"min": 0, "max": 5},
                "Authority": True,
            },
        },
        "matrixAuthorityFormatting": {
            "valueAbbrevations": "K",
            "valueRounding": "0",
            "timeUnit": "Months",
            "timeRounding": "0",
            "delegationIdentification": "ICON",
            "displayCurrencyCode": "USD",
        },
        "permissions": [{"relationship_key": "can_edit", "allowed": True}],
        "matrixExternalSharing": {
            "id": f"{ids}{0:012d}",
            "link": stored["link"],
            "isExpirationEnabled": sharing["isExpirationEnabled"],
            "expirationDate": sharing["expirationDate"],
            "isPasswordRequired": sharing["isPasswordRequired"],
            "matrixSharingId": f"{ids}{1:012d}",
            "matrixId": matrix_id,
            "createdOn": stored["createdOn"],
            "updatedOn": stored["updatedOn"],
            "password": "********" if sharing["password"] else "",
        },
    }


def position_details(state: TenantState, position_id: str) -> Record:
    """The ``positionDetails`` shape inside matrices (also the position-list record, minus timestamps)."""
    record = state.positions[position_id]
    return {
        key: record[key]
        for key in ("id", "tenantId", "positionName", "isScimProvisioned", "status", "groupIds")
    }


def _pairs(state: TenantState, stored: Record, prefix: str) -> list[tuple[str, str]]:
    """Distinct (id, name) of the sections or categories of a matrix's decisions."""
    decisions = [state.decisions[d] for d in stored["decisionIds"] if d in state.decisions]
    return sorted({(d[f"{prefix}Id"], d[f"{prefix}Name"]) for d in decisions})
