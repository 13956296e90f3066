"""Realistic JSON samples of the service's records (spec section 2), written by hand from the spec's tables.

Each function returns a fresh dict, so a test may change it freely.
"""

from __future__ import annotations

from typing import Any

TENANT = "5f0c8f7e-3c1a-4d2b-9e6f-1a2b3c4d5e6f"
USER = "0b7e4c1d-8a2f-4e3b-b5c6-7d8e9f0a1b2c"
GROUP = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
DECISION = "3d2c1b0a-9f8e-4d7c-a6b5-4c3b2a1f0e9d"
NOW = "2025-03-14T09:26:53.589Z"


def user_position() -> dict[str, Any]:
    """A UserPosition (2.4)."""
    return {
        "id": "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f",
        "userId": USER,
        "tenantId": TENANT,
        "positionsId": "e5f4d3c2-b1a0-4f9e-8d7c-6b5a4f3e2d1c",
        "autoProvisioned": False,
        "instanceId": None,
        "isEditable": True,
        "isDeleted": False,
        "deletedOn": None,
        "createdOn": NOW,
        "updatedOn": NOW,
        "positionName": "Chief Financial Officer",
        "isSCIMProvisioned": False,
        "externalId": None,
    }


def manager() -> dict[str, Any]:
    """A Manager (2.2)."""
    return {
        "id": "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d",
        "userId": "1002",
        "idpUserId": "auth0|65f2a1b3c4d5e6f7a8b9c0d1",
        "name": "Maria Lopez",
        "email": "maria.lopez@acme.io",
        "firstName": "Maria",
        "lastName": "Lopez",
        "displayName": "Maria Lopez",
        "mobilePhone": "+1 (415) 555-0100",
        "profileImageUrl": None,
        "createdOn": NOW,
        "updatedOn": NOW,
        "userPositions": [user_position()],
        "primaryOrganization": {"groupName": "Finance", "displayName": "Finance"},
        "managerName": "Ada Chen",
        "managerProfileImageUrl": None,
    }


def user_role() -> dict[str, Any]:
    """A UserRole (2.3)."""
    return {
        "id": "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e",
        "tenantId": TENANT,
        "tenantRoleId": "4d5e6f7a-8b9c-4d0e-af1b-2c3d4e5f6a7b",
        "roleName": "Admin",
        "autoProvisioned": False,
        "instanceId": None,
        "createdOn": NOW,
        "deletedOn": None,
        "updatedOn": NOW,
    }


def user_group() -> dict[str, Any]:
    """A UserGroup (2.5)."""
    return {
        "id": "6f7a8b9c-0d1e-4f2a-8b3c-4d5e6f7a8b9c",
        "tenantId": TENANT,
        "userId": USER,
        "groupId": GROUP,
        "groupTypeId": "8b9c0d1e-2f3a-4b4c-9d5e-6f7a8b9c0d1e",
        "groupName": "Finance",
        "groupTypeName": "Department",
        "displayName": None,
    }


def user() -> dict[str, Any]:
    """A User (2.1) with every field present."""
    return {
        "id": USER,
        "userId": "1001",
        "loginId": "jane.doe@acme.io",
        "idpUserId": "auth0|65f2a1b3c4d5e6f7a8b9c0d2",
        "activeTenantId": TENANT,
        "email": "jane.doe@acme.io",
        "name": "Jane Doe",
        "displayName": "Jane Doe",
        "isSAML": False,
        "mobilePhone": "+44 20 7946 0958",
        "firstName": "Jane",
        "lastName": "Doe",
        "profileImageUrl": None,
        "currencyName": "Euro",
        "currencyCode": "EUR",
        "status": "ACTIVE",
        "accountType": "STANDARD",
        "autoProvisioned": False,
        "employeeId": "E-0042",
        "employeeNumber": "42",
        "employeeType": "FTE",
        "employmentType": "PERMANENT",
        "dateFormat": "DD/MM/YYYY",
        "userType": "USER",
        "sourceId": None,
        "actorType": "HUMAN",
        "aiAgentType": None,
        "startDate": "2021-09-01T00:00:00.000Z",
        "terminationDate": None,
        "customAttributes": {"costCenter": "CC-100"},
        "externalId": None,
        "instanceId": None,
        "systemIntegrationId": None,
        "displayLanguage": "en",
        "columnViewSettings": None,
        "searchData": ["capex", "travel"],
        "managerSync": True,
        "manager": manager(),
        "isDeleted": False,
        "isExpirePassword": False,
        "createdOn": "2021-08-30T12:00:00.000Z",
        "lastLoginDate": NOW,
        "createdBy": None,
        "updatedOn": NOW,
        "updatedBy": "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d",
        "deletedOn": None,
        "delegationsReceived": 3,
        "delegationsIssued": 0,
        "dashboardData": [{"x": 0, "y": 0, "w": 6, "h": 4, "i": "delegations"}],
        "userRoles": [user_role()],
        "userPositions": [user_position()],
        "userGroups": [user_group()],
        "isImpersonated": False,
    }


def position_summary() -> dict[str, Any]:
    """A position inside a person summary (2.6)."""
    return {
        "id": "e5f4d3c2-b1a0-4f9e-8d7c-6b5a4f3e2d1c",
        "positionName": "Controller",
        "autoProvisioned": False,
    }


def manager_summary() -> dict[str, Any]:
    """A manager inside a person summary or userDetails."""
    return {"id": "7a6b5c4d", "name": "Maria Lopez", "displayName": "Maria Lopez", "profileImageUrl": ""}


def person() -> dict[str, Any]:
    """A person summary (2.6)."""
    return {
        "id": USER,
        "email": "jane.doe@acme.io",
        "name": "Jane Doe",
        "displayName": "Jane Doe",
        "profileImageUrl": "",
        "mobilePhone": "+44 20 7946 0958",
        "primaryOrganizationId": GROUP,
        "positions": [position_summary()],
        "primaryOrganization": {
            "id": GROUP,
            "groupName": "Finance",
            "displayName": "Finance",
            "tenantGroupTypeId": "8b9c0d1e",
            "tenantGroupTypeName": "Department",
            "legalName": "Acme Finance Ltd",
            "baseCurrency": "EUR",
        },
        "manager": manager_summary(),
    }


def action_type() -> dict[str, Any]:
    """An action's type (2.7)."""
    return {
        "id": "a1",
        "tenantId": TENANT,
        "type": "REVIEW",
        "name": "Review",
        "typeIcon": "eye",
        "status": True,
        "isCustom": False,
    }


def permission() -> dict[str, Any]:
    """A permission entry."""
    return {"relationship_key": "can_edit", "allowed": True}


def action() -> dict[str, Any]:
    """An Action (2.7)."""
    return {
        "id": "f0e1d2c3-b4a5-4968-8776-655443322110",
        "actionId": "311",
        "tenantId": TENANT,
        "actionName": "Review travel policy delegation",
        "description": "Confirm the new limit.",
        "actionTypeId": "a1",
        "actionType": action_type(),
        "actionTemplateId": "t1",
        "actionTemplate": {
            "id": "t1",
            "tenantId": TENANT,
            "name": "Review",
            "description": "Review a delegation",
            "status": True,
            "type": action_type(),
        },
        "actionPriorityId": "p1",
        "actionStatusId": "s1",
        "decisionId": DECISION,
        "decisionDisplayId": "27",
        "delegationId": "d1",
        "delegationDisplayId": "88",
        "documentId": "doc1",
        "documentDisplayId": "5",
        "roleId": "r1",
        "link": "https://app.example/actions/311",
        "ownerId": USER,
        "owner": person(),
        "dueDate": "2025-04-01T00:00:00.000Z",
        "createdAt": NOW,
        "updatedAt": NOW,
        "createdBy": "Jane Doe",
        "updatedBy": "Jane Doe",
        "deletedBy": "",
        "deletedOn": NOW,
        "copiedFrom": "",
        "isDeleted": False,
        "isSystemGenerated": False,
        "assignees": [
            {
                "id": "as1",
                "assigneeId": USER,
                "assignee": person(),
                "actionStatusId": "s1",
                "actionStatusName": "Open",
                "actionTakenDate": NOW,
            }
        ],
        "files": [
            {
                "id": "f1",
                "fileUrl": "https://files.example/policy.pdf",
                "fileType": "application/pdf",
                "fileName": "policy.pdf",
                "createdAt": NOW,
            }
        ],
        "priority": {"id": "p1", "actionPriorityName": "High", "isEnabled": True, "colorName": "red"},
        "status": {"id": "s1", "actionStatusName": "Open", "isEnabled": True},
        "permissions": [permission()],
    }


def action_template() -> dict[str, Any]:
    """An action template (2.12)."""
    return {
        "id": "t1",
        "tenantId": TENANT,
        "name": "Review",
        "description": "Review a delegation",
        "source": "SYSTEM",
        "type": {
            "id": "a1",
            "tenantId": TENANT,
            "type": "REVIEW",
            "typeIcon": "eye",
            "status": True,
            "isCustom": False,
            "isDeleted": False,
            "deletedAt": NOW,
            "createdAt": NOW,
            "updatedAt": NOW,
        },
        "status": True,
        "isDeleted": False,
        "deletedAt": NOW,
        "createdAt": NOW,
        "updatedAt": NOW,
    }


def group() -> dict[str, Any]:
    """A Group (2.8)."""
    return {
        "id": GROUP,
        "tenantId": TENANT,
        "groupId": "12",
        "groupName": "Finance",
        "createdOn": NOW,
        "updatedOn": NOW,
        "isSynced": False,
        "tenantGroupType": {
            "id": "8b9c0d1e",
            "groupTypeName": "Department",
            "shouldAllowEnableDisable": True,
            "isDefault": False,
        },
        "isDeleted": False,
        "disableOption": "NA",
        "baseCurrency": "",
        "displayName": "Finance",
        "legalName": "Acme Finance Ltd",
        "externalId": "",
        "instanceId": "",
        "address": {
            "id": "ad1",
            "groupId": GROUP,
            "street1": "1 Main St",
            "street2": "",
            "city": "Dublin",
            "state": "Leinster",
            "stateCode": "L",
            "zipCode": "D01",
            "country": "Ireland",
            "countryCode": "IE",
            "createdOn": NOW,
            "updatedOn": NOW,
        },
        "parentGroups": [
            {
                "id": "pg1",
                "parentId": "p-group",
                "createdAt": NOW,
                "parentGroup": {
                    "id": "p-group",
                    "tenantId": TENANT,
                    "groupId": "1",
                    "groupName": "Acme",
                    "displayName": "Acme",
                    "legalName": "Acme Holdings",
                    "tenantGroupType": {"id": "t0", "groupTypeName": "Company"},
                },
            }
        ],
        "decisionsCount": 4,
        "delegationsCount": 9,
        "status": "ACTIVE",
    }


def decision() -> dict[str, Any]:
    """A Decision (2.10)."""
    return {
        "id": DECISION,
        "decisionId": DECISION,
        "tenantId": TENANT,
        "name": "Approve travel",
        "description": "Approve business travel",
        "guidance": "Within policy",
        "sectionId": "sec1",
        "categoryId": "cat1",
        "sectionName": "Operations",
        "categoryName": "Travel",
        "status": "PUBLISHED",
        "createdBy": USER,
        "updatedBy": None,
        "owner": USER,
        "createdByUsername": "Jane Doe",
        "ownerUsername": "Jane Doe",
        "updatedByUsername": None,
        "createdAt": NOW,
        "updatedAt": NOW,
        "copiedFrom": None,
        "conditionEnabled": False,
        "roleEnabled": True,
        "delegable": True,
        "decisionDisplayId": "27",
        "delegationPathway": ["CEO", "CFO"],
        "link": "https://app.example/decisions/27",
        "decisionGroups": [
            {
                "id": "dg1",
                "denormalizedDecisionId": DECISION,
                "groupId": GROUP,
                "tenantGroupTypeId": "8b9c0d1e",
                "displayName": "Finance",
                "groupName": "Finance",
            }
        ],
        "decisionAuthorities": [
            {
                "id": "da1",
                "denormalizedDecisionId": DECISION,
                "authorityTypeId": "at1",
                "authorityType": "Approve",
                "authorityTypeOrder": 1,
                "authorityTypeIcon": "check",
                "authorityLimit": "Up to",
                "authorityLimitValueType": "Currency",
                "authorityLimitOperator": "<=",
                "authorityLimitValue": "10000",
                "authorityLimitValueUnit": "EUR",
            }
        ],
        "decisionDocuments": [
            {
                "id": "dd1",
                "denormalizedDecisionId": DECISION,
                "documentId": "doc1",
                "documentName": "Travel policy",
                "documentUrl": "https://files.example/travel.pdf",
                "documentTypeName": "Policy",
                "documentIcon": "file",
                "documentDescription": "",
                "documentFileType": "pdf",
                "isPinned": True,
                "documentDisplayId": "5",
                "documentStatus": "PUBLISHED",
                "documentFileLink": "https://files.example/travel.pdf",
            }
        ],
        "delegations": 2,
        "ownerUserProfileUrl": "",
        "createdByUserProfileUrl": "",
        "updatedByUserProfileUrl": "",
        "permissions": [permission()],
        "createdByDetails": {"id": USER, "name": "Jane Doe"},
        "updatedByDetails": {},
        "ownerDetails": {"id": USER, "name": "Jane Doe"},
        "isRequestActionCompleted": False,
    }


def delegation() -> dict[str, Any]:
    """A Delegation (list extension; assumed fields)."""
    return {
        "id": "de1e9a7e-0000-4000-8000-000000000001",
        "tenantId": TENANT,
        "delegationDisplayId": "88",
        "decisionId": DECISION,
        "decisionName": "Approve travel",
        "status": "ISSUED",
        "issuerType": "USER",
        "issuerId": USER,
        "recipientId": "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d",
        "recipientName": "Maria Lopez",
        "startDate": "2025-01-01T00:00:00.000Z",
        "endDate": None,
        "createdAt": NOW,
        "updatedAt": NOW,
    }


def position_details() -> dict[str, Any]:
    """A matrix's positionDetails (2.11)."""
    return {
        "id": "e5f4d3c2-b1a0-4f9e-8d7c-6b5a4f3e2d1c",
        "tenantId": TENANT,
        "positionName": "Controller",
        "isScimProvisioned": False,
        "status": "ACTIVE",
        "groupIds": [GROUP],
    }


def position() -> dict[str, Any]:
    """A Position (list extension; assumed fields)."""
    return {**position_details(), "createdOn": NOW, "updatedOn": NOW}


def user_details() -> dict[str, Any]:
    """A matrix's userDetails (2.11)."""
    return {
        "id": USER,
        "email": "jane.doe@acme.io",
        "name": "Jane Doe",
        "displayName": "Jane Doe",
        "firstName": "Jane",
        "lastName": "Doe",
        "mobilePhone": "",
        "isActive": True,
        "profileImageUrl": "",
        "positions": [position_summary()],
        "primaryOrganization": {
            "groupName": "Finance",
            "displayName": "Finance",
            "tenantGroupTypeId": "8b9c0d1e",
            "tenantGroupTypeName": "Department",
        },
        "positionIds": ["e5f4d3c2-b1a0-4f9e-8d7c-6b5a4f3e2d1c"],
        "primaryOrganizationId": GROUP,
        "manager": manager_summary(),
        "roles": [{"tenantRoleId": "r1", "roleName": "Admin"}],
        "groups": [{"groupId": GROUP, "groupTypeId": "8b9c0d1e"}],
    }


def group_details() -> dict[str, Any]:
    """A matrix's groupDetails (2.11)."""
    return {
        "id": GROUP,
        "groupName": "Finance",
        "displayName": "Finance",
        "legalName": "Acme Finance Ltd",
        "tenantId": TENANT,
        "groupTypeName": "Department",
        "groupTypeId": "8b9c0d1e",
        "status": "ACTIVE",
        "parentGroupIds": ["p-group"],
        "isSynced": False,
    }


def matrix() -> dict[str, Any]:
    """A Matrix (2.11)."""
    return {
        "id": "m1a2t3r4-0000-4000-8000-000000000001",
        "matrixId": "7",
        "matrixName": "Finance authorities",
        "matrixDescription": "Who may approve what",
        "link": "https://app.example/matrix/7",
        "tenantId": TENANT,
        "ownerId": USER,
        "copiedFromMatrix": "",
        "roleMatrix": False,
        "authorityMatrix": True,
        "isFavorite": False,
        "isUserSavedPersonalView": False,
        "decisionCount": 12,
        "delegationCount": 30,
        "suspendedDelegationsCount": 1,
        "pendingDelegationsCount": 2,
        "createdOn": NOW,
        "updatedOn": NOW,
        "currentTab": "decisions",
        "matrixStatus": {"id": "ms1", "statusName": "Active", "isActive": True},
        "matrixSharing": {
            "id": "sh1",
            "type": "PRIVATE",
            "sharingOption": "VIEW",
            "link": False,
            "viewerAdjustableFilters": True,
            "externalSharing": False,
            "users": [{"id": "su1", "userId": USER, "userDetails": user_details()}],
            "groups": [{"id": "sg1", "groupId": GROUP, "groupDetails": group_details()}],
        },
        "matrixAuthorityRoles": [{"id": "ar1", "authorityRoleId": "role1", "isEnabled": True}],
        "matrixGroups": [{"id": "mg1", "tenantGroupsMappingId": "tgm1", "groupDetails": group_details()}],
        "matrixPositions": [{"id": "mp1", "positionId": "pos1", "positionDetails": position_details()}],
        "matrixUsers": [{"id": "mu1", "userId": USER, "userDetails": user_details()}],
        "matrixDecisions": [{"id": "md1", "decisionId": DECISION, "isDisabled": False, "disabledOn": None}],
        "matrixSections": [{"sectionId": "sec1", "name": "Operations"}],
        "matrixCategories": [{"categoryId": "cat1", "name": "Travel"}],
        "ownerDetails": user_details(),
        "matrixDelegation": {
            "delegationRole": True,
            "delegationDataDetails": True,
            "delegationDataGroups": False,
            "delegationDataDocuments": False,
            "delegationDataConditions": False,
            "delegationDataAuthorities": True,
            "delegationDataRoles": False,
            "authorityTypeIds": ["at1"],
            "roleIds": [],
            "issuanceStatusNames": ["ISSUED", "ACCEPTED"],
            "primaryLimitTypes": {
                "Value (Currency)": {"min": 0, "max": 250000.5},
                "Time (Months)": {"min": 0, "max": 12},
                "Time (Years)": {"min": 0, "max": 3},
                "Authority": True,
            },
        },
        "matrixAuthorityFormatting": {
            "valueAbbrevations": "K",
            "valueRounding": "0",
            "timeUnit": "Months",
            "timeRounding": "0",
            "delegationIdentification": "ID",
            "displayCurrencyCode": "EUR",
        },
        "permissions": [permission()],
        "matrixExternalSharing": {
            "id": "es1",
            "link": "https://share.example/abc",
            "isExpirationEnabled": True,
            "expirationDate": "2025-12-31T23:59:59.000Z",
            "isPasswordRequired": False,
            "matrixSharingId": "sh1",
            "matrixId": "7",
            "createdOn": NOW,
            "updatedOn": NOW,
            "password": "",
        },
    }


def notification() -> dict[str, Any]:
    """A Notification (2.13), the spec's DELEGATION_ISSUED example."""
    return {
        "id": "n1",
        "tenantId": TENANT,
        "userId": USER,
        "templateKey": "DELEGATION_ISSUED",
        "category": "Delegations",
        "title": "Delegation issued",
        "message": "Maria Lopez issued you a delegation.",
        "isActionable": True,
        "status": "UNREAD",
        "createdAt": NOW,
        "readAt": NOW,
        "entityType": "delegation",
        "entityId": "de1e9a7e-0000-4000-8000-000000000001",
        "relativeTime": "2 hours ago",
        "actionUrl": "/delegations/88",
        "payload": {"delegationDisplayId": "88"},
    }


def report_status_result() -> dict[str, Any]:
    """The result of a bulk report status update (2.9)."""
    return {"success": True, "updatedCount": 2, "failedIds": ["a0b1c2d3-0000-4000-8000-000000000009"]}


def validate_action_result() -> dict[str, Any]:
    """The data of E5."""
    return {"actionName": "Review travel policy delegation", "isExist": True, "userId": USER}
