"""The emulator's write endpoints E1-E7, E13 and E14: the happy path shows in later reads, timestamps move
forward, and every validation rule of the request bodies is a 400 naming the offending field."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import httpx
import pytest

from emulator.state import TenantState
from models.actions import Action, ValidateActionResult
from models.groups import Group
from models.matrices import Matrix
from models.notifications import Notification
from models.reports import ReportStatusResult
from models.users import User
from tests.conftest import (
    DEMO_TENANT_ID,
    OTHER_TENANT_ID,
    admin,
    data_of,
    endpoint_calls,
    error_of,
    stored,
)

UNKNOWN = str(uuid.UUID(int=7, version=4))
"""A well-formed id that no record of any tenant has."""
TENANT = {"tenantId": DEMO_TENANT_ID}
LONG_EMAIL = f"{'a' * 60}@{'b' * 40}.example.com"
"""A well-formed email of 113 characters (over E1's limit of 100)."""


def ids(records: dict[str, Any], count: int, start: int = 1) -> list[str]:
    """``count`` record ids of a collection, from position ``start`` (the first record is often special)."""
    return list(records)[start : start + count]


def moment(stamp: str) -> datetime:
    """A wire timestamp as an instant."""
    return datetime.fromisoformat(stamp)


def assert_moved_forward(before: str, after: str) -> None:
    """``after`` is a later instant than ``before``."""
    assert moment(after) > moment(before), (before, after)


def writes(client: httpx.Client) -> dict[str, int]:
    """The emulator's count of applied writes per entity."""
    result: dict[str, int] = admin(client, "GET", "/stats")["writes"]
    return result


def assert_shows(record: dict[str, Any], body: dict[str, Any], *composed: str) -> None:
    """The record holds the body's values as sent, except for the ``composed`` fields."""
    sent = {key: value for key, value in body.items() if key not in composed}
    assert {key: record[key] for key in sent} == sent


def assert_refused(response: httpx.Response, client: httpx.Client, field: str, status: int = 400) -> None:
    """The request is refused naming ``field``, and nothing was written."""
    error_of(response, status, field)
    assert writes(client) == {}


# -- E1 update user entities ---------------------------------------------------------------------------


def user_path(user_id: str) -> str:
    """E1's path for a user."""
    return f"/auth/v1/user/update-entities/{user_id}"


def test_e1_updates_a_user_and_later_reads_show_it(http: httpx.Client, demo: TenantState) -> None:
    """E1 answers the updated User; the admin read and the user list show it; updatedOn moves forward."""
    user_id = ids(demo.users, 1, start=5)[0]
    manager_id = ids(demo.users, 1, start=7)[0]
    before = stored(http, "users", user_id)
    body = {
        **TENANT,
        "firstName": "Ada",
        "lastName": "Lovelace",
        "displayName": "Ada L.",
        "email": "ada.lovelace@example.com",
        "mobilePhone": "+44 (20) 7946-0958",
        "status": "INACTIVE",
        "employeeType": "Contractor",
        "startDate": "2024-02-03T04:05:06.789Z",
        "customAttributes": {"costCenter": "CC-1"},
        "managerId": manager_id,
    }
    user = data_of(http.patch(user_path(user_id), json=body))
    User.model_validate(user)
    assert_shows(user, body, "tenantId", "managerId")
    assert user["name"] == "Ada Lovelace"
    assert user["manager"]["id"] == manager_id
    assert user["updatedBy"] == demo.current_user_id
    assert_moved_forward(before["updatedOn"], user["updatedOn"])
    assert stored(http, "users", user_id) == user
    newest = data_of(http.get("/auth/v1/user", params={"sortBy": "updatedOn", "sortOrder": "desc"}))
    assert newest["data"][0] == user
    assert writes(http) == {f"user:{user_id}": 1}


def test_e1_keeps_an_integer_beyond_64_bits_in_a_free_form_field(
    http: httpx.Client, demo: TenantState
) -> None:
    # Found by schemathesis: the emulator answered 500 (its JSON encoder stops at 64-bit integers).
    user_id = ids(demo.users, 1, start=6)[0]
    huge = 2**70
    user = data_of(http.patch(user_path(user_id), json={**TENANT, "customAttributes": {"n": huge}}))
    assert user["customAttributes"] == {"n": huge}
    listed = data_of(http.get("/auth/v1/user", params={"sortBy": "updatedOn", "sortOrder": "desc"}))
    assert listed["data"][0]["customAttributes"] == {"n": huge}


def test_e1_moves_updated_on_forward_on_every_write(http: httpx.Client, demo: TenantState) -> None:
    """Two writes in a row: the second ``updatedOn`` is not before the first."""
    user_id = ids(demo.users, 1)[0]
    first = data_of(http.patch(user_path(user_id), json={**TENANT, "displayName": "One"}))["updatedOn"]
    second = data_of(http.patch(user_path(user_id), json={**TENANT, "displayName": "Two"}))["updatedOn"]
    assert moment(second) >= moment(first)


LINKS = {
    "roleIds": ("userRoles", "tenantRoleId", "roles"),
    "positionIds": ("userPositions", "positionsId", "positions"),
    "groups": ("userGroups", "groupId", "groups"),
}
"""E1 array field: the user's link list, the key holding the linked id, the tenant collection."""


@pytest.mark.parametrize("field", list(LINKS))
def test_e1_arrays_replace_the_whole_set(http: httpx.Client, demo: TenantState, field: str) -> None:
    """roleIds/positionIds/groups replace the user's set; a link that stays keeps its id; [] clears."""
    links, key, collection = LINKS[field]
    first, second, third = ids(getattr(demo, collection), 3)
    user_id = ids(demo.users, 1, start=3)[0]

    def send(linked: list[str]) -> list[dict[str, Any]]:
        items: list[Any] = [{"groupId": item} for item in linked] if field == "groups" else linked
        user = data_of(http.patch(user_path(user_id), json={**TENANT, field: items}))
        assert [link[key] for link in user[links]] == linked
        assert stored(http, "users", user_id)[links] == user[links]
        result: list[dict[str, Any]] = user[links]
        return result

    kept = send([first, second])[1]["id"]
    assert send([second, third])[0]["id"] == kept
    assert send([]) == []


def test_e1_primary_organisation_comes_first(http: httpx.Client, demo: TenantState) -> None:
    """The group flagged ``isPrimaryOrg`` is the user's first group (its primary organization)."""
    user_id = ids(demo.users, 1, start=3)[0]
    first, second = ids(demo.groups, 2)
    groups = [{"groupId": first}, {"groupId": second, "isPrimaryOrg": True}]
    user = data_of(http.patch(user_path(user_id), json={**TENANT, "groups": groups}))
    assert [group["groupId"] for group in user["userGroups"]] == [second, first]


def test_e9_shows_the_positions_e1_gave_the_current_user(http: httpx.Client, demo: TenantState) -> None:
    """E9 answers the current user's positions as E1 left them."""
    chosen = ids(demo.positions, 2)
    data_of(http.patch(user_path(demo.current_user_id), json={**TENANT, "positionIds": chosen}))
    positions = data_of(http.get("/auth/v1/user/positions"))
    assert [position["positionsId"] for position in positions] == chosen


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("lastName", "x" * 20),
        ("firstName", "x" * 50),
        ("displayName", "x" * 50),
        ("accountType", "x" * 20),
        ("profileImageUrl", "x" * 50),
        ("sourceId", "x" * 100),
        ("mobilePhone", "1234567"),
        ("mobilePhone", "+" + "1" * 24),
        ("mobilePhone", "+1 (555) 123.4567"),
        ("email", f"{'a' * 60}@{'b' * 27}.example.com"),
    ],
)
def test_e1_limits_are_inclusive(http: httpx.Client, demo: TenantState, field: str, value: str) -> None:
    """A value exactly at a length limit (or the shortest phone) is accepted."""
    user = data_of(http.patch(user_path(ids(demo.users, 1)[0]), json={**TENANT, field: value}))
    assert user[field] == value


E1_INVALID: list[tuple[dict[str, Any], str]] = [
    ({**TENANT, "email": "not-an-email"}, "email"),
    ({**TENANT, "email": LONG_EMAIL}, "email"),
    ({**TENANT, "name": "x" * 51}, "name"),
    ({**TENANT, "displayName": "x" * 51}, "displayName"),
    ({**TENANT, "firstName": "x" * 51}, "firstName"),
    ({**TENANT, "lastName": "x" * 21}, "lastName"),
    ({**TENANT, "accountType": "x" * 21}, "accountType"),
    ({**TENANT, "userType": "x" * 21}, "userType"),
    ({**TENANT, "employeeType": "x" * 21}, "employeeType"),
    ({**TENANT, "employmentType": "x" * 21}, "employmentType"),
    ({**TENANT, "profileImageUrl": "x" * 51}, "profileImageUrl"),
    ({**TENANT, "sourceId": "x" * 101}, "sourceId"),
    ({**TENANT, "actorType": "x" * 51}, "actorType"),
    ({**TENANT, "aiAgentType": "x" * 51}, "aiAgentType"),
    ({**TENANT, "mobilePhone": "123456"}, "mobilePhone"),
    ({**TENANT, "mobilePhone": "555-CALL-NOW"}, "mobilePhone"),
    ({**TENANT, "mobilePhone": "1" * 26}, "mobilePhone"),
    ({**TENANT, "managerId": "not-a-uuid"}, "managerId"),
    ({**TENANT, "roleIds": ["not-a-uuid"]}, "roleIds.0"),
    ({**TENANT, "positionIds": [UNKNOWN, "not-a-uuid"]}, "positionIds.1"),
    ({**TENANT, "groups": [{"groupId": "not-a-uuid"}]}, "groups.0.groupId"),
    ({**TENANT, "groups": [{"isPrimaryOrg": True}]}, "groups.0.groupId"),
    ({**TENANT, "status": "FIRED"}, "status"),
    ({"firstName": "Ada"}, "tenantId"),
    ({"tenantId": "acme"}, "tenantId"),
    ({**TENANT, "nickname": "Ada"}, "nickname"),
    ({**TENANT, "managerId": UNKNOWN}, "managerId"),
    ({**TENANT, "roleIds": [UNKNOWN]}, "roleIds.0"),
    ({**TENANT, "positionIds": [UNKNOWN]}, "positionIds.0"),
    ({**TENANT, "groups": [{"groupId": UNKNOWN}]}, "groups.0.groupId"),
    ({**TENANT, "firstName": None}, "firstName"),
    ({**TENANT, "managerId": None}, "managerId"),
    ({**TENANT, "roleIds": None}, "roleIds"),
    ({**TENANT, "startDate": "next tuesday"}, "startDate"),
    ({**TENANT, "customAttributes": "cost centre 1"}, "customAttributes"),
    ({**TENANT, "startDate": "202-05-01T00:00:00.000Z"}, "startDate"),
    ({**TENANT, "terminationDate": "2026-05-01"}, "terminationDate"),
    ({**TENANT, "firstName": "Ann\nMarie"}, "firstName"),
    ({**TENANT, "lastName": "Tab\there"}, "lastName"),
]


@pytest.mark.parametrize(
    ("body", "field"), E1_INVALID, ids=[f"{field}-{n}" for n, (_, field) in enumerate(E1_INVALID)]
)
def test_e1_refuses_an_invalid_body(
    seeded_http: httpx.Client, seeded_demo: TenantState, body: dict[str, Any], field: str
) -> None:
    """Each E1 rule (lengths, email, phone, uuids, enum, required tenantId, unknown field, unknown
    references, explicit null) is a 400 naming the field, and nothing is written."""
    assert_refused(seeded_http.patch(user_path(ids(seeded_demo.users, 1)[0]), json=body), seeded_http, field)


@pytest.mark.parametrize("endpoint", ["E1", "E2", "E3", "E4", "E5", "E6", "E7", "E13"])
def test_a_body_that_is_not_a_json_object_is_refused(
    seeded_http: httpx.Client, seeded_demo: TenantState, endpoint: str
) -> None:
    """Malformed JSON, and JSON that is not an object, are a 400 naming the body; nothing is written."""
    call = endpoint_calls(seeded_demo)[endpoint]
    for content in (b'{"tenantId": ', b"[1, 2]", b'"text"'):
        response = seeded_http.request(
            call.method, call.path, content=content, headers={"Content-Type": "application/json"}
        )
        assert_refused(response, seeded_http, "body")


# -- E2 delete multiple actions ---------------------------------------------------------------------------


def delete_actions(client: httpx.Client, body: Any) -> httpx.Response:
    """E2."""
    return client.request("DELETE", "/actions/v1/actions", json=body)


def test_e2_soft_deletes_actions(http: httpx.Client, demo: TenantState) -> None:
    """E2 answers the deleted actions once each; later reads show them deleted with a later updatedAt."""
    first, second = ids(demo.actions, 2)
    before = stored(http, "actions", first)
    actions = data_of(delete_actions(http, {"ids": [first, second, first]}))
    assert [action["id"] for action in actions] == [first, second]
    for action in actions:
        Action.model_validate(action)
        assert action["isDeleted"] is True
        assert action["deletedBy"] == demo.users[demo.current_user_id]["name"]
        assert stored(http, "actions", action["id"]) == action
    assert_moved_forward(before["updatedAt"], actions[0]["updatedAt"])
    assert writes(http) == {f"action:{first}": 1, f"action:{second}": 1}


def test_e2_deletes_all_or_nothing(seeded_http: httpx.Client, seeded_demo: TenantState) -> None:
    """One unknown id among live ones: 404, and the live actions stay undeleted."""
    live = ids(seeded_demo.actions, 1)[0]
    error_of(delete_actions(seeded_http, {"ids": [live, UNKNOWN]}), 404)
    assert stored(seeded_http, "actions", live)["isDeleted"] is False
    assert writes(seeded_http) == {}


@pytest.mark.parametrize(
    ("body", "field"),
    [({"ids": []}, "ids"), ({}, "ids"), ({"ids": "abc"}, "ids"), ({"ids": ["a"], "force": True}, "force")],
    ids=["empty ids", "no ids", "ids not a list", "unknown field"],
)
def test_e2_refuses_an_invalid_body(seeded_http: httpx.Client, body: dict[str, Any], field: str) -> None:
    """E2 needs at least one id; anything else in the body is refused."""
    assert_refused(delete_actions(seeded_http, body), seeded_http, field)


# -- E3 update group --------------------------------------------------------------------------------------


def group_path(group_id: str) -> str:
    """E3's path for a group."""
    return f"/settings/v1/groups/{group_id}"


def test_e3_updates_a_group_and_later_reads_show_it(http: httpx.Client, demo: TenantState) -> None:
    """E3 answers the updated Group (address merged); the admin read and the group list show it."""
    group_id = ids(demo.groups, 1, start=6)[0]
    before = stored(http, "groups", group_id)
    body = {
        "groupName": "Finance EMEA",
        "displayName": "Finance (EMEA)",
        "legalName": "Acme Finance EMEA GmbH",
        "status": "INACTIVE",
        "disableOption": "KEEP_ASSOCIATIONS",
        "isDeleted": False,
        "address": {"city": "Lyon", "countryCode": "FR"},
    }
    group = data_of(http.patch(group_path(group_id), json=body))
    Group.model_validate(group)
    assert_shows(group, body, "address")
    assert group["address"] == {
        **before["address"],
        "city": "Lyon",
        "countryCode": "FR",
        "updatedOn": group["updatedOn"],
    }
    assert_moved_forward(before["updatedOn"], group["updatedOn"])
    assert stored(http, "groups", group_id) == group
    newest = data_of(
        http.get(
            "/settings/v1/groups",
            params={"tenantId": DEMO_TENANT_ID, "sortBy": "updatedOn", "sortOrder": "desc", "limit": 1},
        )
    )
    assert newest["data"] == [group]
    assert writes(http) == {f"group:{group_id}": 1}


def parent_ids(group: dict[str, Any]) -> list[str]:
    """The parent ids of a rendered group."""
    return [link["parentId"] for link in group["parentGroups"]]


def ancestors(demo: TenantState, group_id: str) -> list[str]:
    """The group's chain of first parents, nearest first."""
    chain: list[str] = []
    while demo.group_parents[group_id]:
        group_id = demo.group_parents[group_id][0].parent_id
        chain.append(group_id)
    return chain


def deep_group(demo: TenantState) -> str:
    """A group with at least a parent and a grandparent."""
    return next(group_id for group_id in demo.groups if len(ancestors(demo, group_id)) >= 2)


def test_e3_adds_and_removes_parent_groups(http: httpx.Client, demo: TenantState) -> None:
    """addParentGroupIds links new parents (once each); removeParentGroupIds unlinks."""
    group_id = deep_group(demo)
    parent, top = ancestors(demo, group_id)[0], ancestors(demo, group_id)[-1]
    added = data_of(http.patch(group_path(group_id), json={"addParentGroupIds": [top, top, parent]}))
    assert parent_ids(added) == [parent, top]
    removed = data_of(http.patch(group_path(group_id), json={"removeParentGroupIds": [parent]}))
    assert parent_ids(removed) == [top]
    assert removed["parentGroups"][0]["parentGroup"]["id"] == top
    assert stored(http, "groups", group_id) == removed


def test_e3_remove_associations_drops_memberships(http: httpx.Client, demo: TenantState) -> None:
    """Disabling a group with REMOVE_ASSOCIATIONS removes it from its members' groups, and (as the real
    service does, issue 28) leaves the members' updatedOn where it was: no cursor can see the removal."""
    user_id = ids(demo.users, 1, start=2)[0]
    group_id = demo.users[user_id]["userGroups"][0]["groupId"]
    before = stored(http, "users", user_id)["updatedOn"]
    body = {"status": "INACTIVE", "disableOption": "REMOVE_ASSOCIATIONS"}
    data_of(http.patch(group_path(group_id), json=body))
    member = stored(http, "users", user_id)
    assert group_id not in [item["groupId"] for item in member["userGroups"]]
    assert member["updatedOn"] == before


def test_e3_names_of_100_characters_are_accepted(http: httpx.Client, demo: TenantState) -> None:
    """groupName, displayName and legalName may be exactly 100 characters."""
    body = {"groupName": "g" * 100, "displayName": "d" * 100, "legalName": "l" * 100}
    group = data_of(http.patch(group_path(ids(demo.groups, 1)[0]), json=body))
    assert {key: group[key] for key in body} == body


E3_INVALID: dict[str, tuple[str, dict[str, Any], str]] = {
    "groupName too long": ("GROUP", {"groupName": "g" * 101}, "groupName"),
    "displayName too long": ("GROUP", {"displayName": "d" * 101}, "displayName"),
    "legalName too long": ("GROUP", {"legalName": "l" * 101}, "legalName"),
    "bad status": ("GROUP", {"status": "DISABLED"}, "status"),
    "bad disableOption": ("GROUP", {"disableOption": "SOMETIMES"}, "disableOption"),
    "bad isDeleted": ("GROUP", {"isDeleted": "perhaps"}, "isDeleted"),
    "bad parent uuid": ("GROUP", {"addParentGroupIds": ["not-a-uuid"]}, "addParentGroupIds.0"),
    "bad removed uuid": ("GROUP", {"removeParentGroupIds": ["not-a-uuid"]}, "removeParentGroupIds.0"),
    "unknown parent": ("GROUP", {"addParentGroupIds": ["TOP", UNKNOWN]}, "addParentGroupIds.1"),
    "own parent": ("GROUP", {"addParentGroupIds": ["GROUP"]}, "addParentGroupIds.0"),
    "parent cycle": ("TOP", {"addParentGroupIds": ["GROUP"]}, "addParentGroupIds.0"),
    "address not an object": ("GROUP", {"address": "Main Street"}, "address"),
    "unknown address field": ("GROUP", {"address": {"zip": "1000"}}, "address.zip"),
    "line break in a group name": ("GROUP", {"groupName": "Finance\nEMEA"}, "groupName"),
    "null display name": ("GROUP", {"displayName": None}, "displayName"),
    "unknown field": ("GROUP", {"region": "EMEA"}, "region"),
    "explicit null": ("GROUP", {"groupName": None}, "groupName"),
}
"""Invalid E3 requests: the group patched, the body and the offending field. ``GROUP`` stands for a group
with a parent and a grandparent, ``TOP`` for its topmost ancestor."""


@pytest.mark.parametrize("case", list(E3_INVALID))
def test_e3_refuses_an_invalid_body(seeded_http: httpx.Client, seeded_demo: TenantState, case: str) -> None:
    """Each E3 rule (lengths, enums, uuids, unknown parent, cycles, unknown fields, null) is a 400."""
    target, body, field = E3_INVALID[case]
    group_id = deep_group(seeded_demo)
    names = {"GROUP": group_id, "TOP": ancestors(seeded_demo, group_id)[-1]}
    resolved = {
        key: [names.get(item, item) for item in value] if isinstance(value, list) else value
        for key, value in body.items()
    }
    assert_refused(seeded_http.patch(group_path(names[target]), json=resolved), seeded_http, field)


# -- E4 update report statuses ----------------------------------------------------------------------------

REPORTS = "/report/v1/report/bulk-status-update"


def test_e4_updates_then_restores_statuses(http: httpx.Client, demo: TenantState) -> None:
    """UPDATE sets the status of every listed report (201); RESTORE puts back the one before."""
    chosen = ids(demo.reports, 2, start=0)
    before = {report_id: stored(http, "reports", report_id) for report_id in chosen}
    body = {"reportIds": chosen, "status": "DELETED", "operation": "UPDATE"}
    result = data_of(http.post(REPORTS, json=body), 201)
    ReportStatusResult.model_validate(result)
    assert result == {"success": True, "updatedCount": 2, "failedIds": []}
    for report_id in chosen:
        report = stored(http, "reports", report_id)
        assert report["status"] == "DELETED"
        assert_moved_forward(before[report_id]["updatedAt"], report["updatedAt"])
    restored = data_of(http.post(REPORTS, json={"reportIds": chosen, "operation": "RESTORE"}), 201)
    assert restored == {"success": True, "updatedCount": 2, "failedIds": []}
    assert [stored(http, "reports", r)["status"] for r in chosen] == [before[r]["status"] for r in chosen]


def test_e4_lists_unknown_and_foreign_ids_in_failed_ids(
    http: httpx.Client, demo: TenantState, other: TenantState
) -> None:
    """Ids that are unknown, or another tenant's, are not updated and come back in failedIds."""
    known, foreign = ids(demo.reports, 1)[0], ids(other.reports, 1)[0]
    foreign_before = dict(other.reports[foreign])
    body = {"reportIds": [UNKNOWN, known, foreign], "status": "DELETED", "operation": "UPDATE"}
    result = data_of(http.post(REPORTS, json=body), 201)
    assert result == {"success": False, "updatedCount": 1, "failedIds": [UNKNOWN, foreign]}
    assert other.reports[foreign] == foreign_before
    assert writes(http) == {f"report:{known}": 1}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"reportIds": [UNKNOWN], "operation": "UPDATE"}, "status"),
        ({"reportIds": [UNKNOWN], "status": "GONE", "operation": "UPDATE"}, "status"),
        ({"reportIds": [UNKNOWN], "status": "DRAFT", "operation": "PURGE"}, "operation"),
        ({"reportIds": [UNKNOWN], "status": "DRAFT"}, "operation"),
        ({"reportIds": ["not-a-uuid"], "status": "DRAFT", "operation": "UPDATE"}, "reportIds.0"),
        ({"status": "DRAFT", "operation": "UPDATE"}, "reportIds"),
        ({"reportIds": [UNKNOWN], "operation": "RESTORE", "force": True}, "force"),
    ],
    ids=[
        "update without status",
        "bad status",
        "bad operation",
        "no operation",
        "bad uuid",
        "no ids",
        "unknown field",
    ],
)
def test_e4_refuses_an_invalid_body(seeded_http: httpx.Client, body: dict[str, Any], field: str) -> None:
    """E4: status is required for UPDATE; enums, uuids and required fields are checked."""
    assert_refused(seeded_http.post(REPORTS, json=body), seeded_http, field)


# -- E5 validate action -----------------------------------------------------------------------------------

VALIDATE = "/actions/v1/actions/validate-action"


def first_match(demo: TenantState, decision_id: str | None, delegation_id: str | None) -> dict[str, Any]:
    """The first live action of the decision and delegation given (both must match when both are)."""
    return next(
        action
        for action in demo.actions.values()
        if not action["isDeleted"]
        and decision_id in (None, action["decisionId"])
        and delegation_id in (None, action["delegationId"])
    )


@pytest.mark.parametrize("given", ["decision", "delegation", "both"])
def test_e5_finds_a_live_action(seeded_http: httpx.Client, seeded_demo: TenantState, given: str) -> None:
    """E5 reports the action of the decision and/or delegation: its name and its owner; nothing is written."""
    action = next(a for a in seeded_demo.actions.values() if a["delegationId"])
    decision_id = action["decisionId"] if given != "delegation" else None
    delegation_id = action["delegationId"] if given != "decision" else None
    body = {**TENANT, "decisionId": decision_id, "delegationId": delegation_id}
    result = data_of(seeded_http.patch(VALIDATE, json={k: v for k, v in body.items() if v is not None}))
    ValidateActionResult.model_validate(result)
    match = first_match(seeded_demo, decision_id, delegation_id)
    assert result == {"actionName": match["actionName"], "isExist": True, "userId": match["ownerId"]}
    assert writes(seeded_http) == {}


def test_e5_reports_no_action_when_none_matches(http: httpx.Client, demo: TenantState) -> None:
    """No decision or delegation given, an unknown one, or one whose actions are deleted: not found."""
    decision_id = next(iter(demo.actions.values()))["decisionId"]
    deleted = [key for key, action in demo.actions.items() if action["decisionId"] == decision_id]
    data_of(http.request("DELETE", "/actions/v1/actions", json={"ids": deleted}))
    nothing = {"actionName": "", "isExist": False, "userId": ""}
    for body in (TENANT, {**TENANT, "decisionId": UNKNOWN}, {**TENANT, "decisionId": decision_id}):
        assert data_of(http.patch(VALIDATE, json=body)) == nothing


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"decisionId": UNKNOWN}, "tenantId"),
        ({**TENANT, "decisionId": "not-a-uuid"}, "decisionId"),
        ({**TENANT, "delegationId": "not-a-uuid"}, "delegationId"),
        ({**TENANT, "actionId": UNKNOWN}, "actionId"),
    ],
    ids=["no tenantId", "bad decisionId", "bad delegationId", "unknown field"],
)
def test_e5_refuses_an_invalid_body(seeded_http: httpx.Client, body: dict[str, Any], field: str) -> None:
    """E5 requires tenantId; its ids are uuids."""
    error_of(seeded_http.patch(VALIDATE, json=body), 400, field)


# -- E6 update action -------------------------------------------------------------------------------------


def action_path(action_id: str) -> str:
    """E6's path for an action."""
    return f"/actions/v1/actions/{action_id}"


def test_e6_updates_an_action_and_later_reads_show_it(http: httpx.Client, demo: TenantState) -> None:
    """E6 answers the updated Action with display ids following the new links; updatedAt moves forward."""
    action_id = ids(demo.actions, 1)[0]
    before = stored(http, "actions", action_id)
    decision_id, delegation_id, document_id = (
        ids(demo.decisions, 1, start=9)[0],
        ids(demo.delegations, 1, start=9)[0],
        ids(demo.documents, 1, start=9)[0],
    )
    status_id = next(s for s in demo.action_statuses if s != before["actionStatusId"])
    assignees = ids(demo.users, 2, start=11)
    body = {
        "actionName": "Re-check the limit",
        "description": "Quarterly",
        "actionStatusId": status_id,
        "actionPriorityId": ids(demo.action_priorities, 1, start=3)[0],
        "actionTypeId": ids(demo.action_types, 1, start=2)[0],
        "actionTemplateId": ids(demo.action_templates, 1, start=2)[0],
        "decisionId": decision_id,
        "delegationId": delegation_id,
        "documentId": document_id,
        "ownerId": assignees[0],
        "dueDate": "2027-03-01T12:00:00.000Z",
        "assigneeIds": [*assignees, assignees[0]],
        "files": [{"fileUrl": "https://files.example.com/a.pdf", "fileType": "pdf", "fileName": "a.pdf"}],
    }
    action = data_of(http.patch(action_path(action_id), json=body))
    Action.model_validate(action)
    assert_shows(action, body, "assigneeIds", "files")
    assert [assignee["assigneeId"] for assignee in action["assignees"]] == assignees
    assert [{k: f[k] for k in ("fileUrl", "fileType", "fileName")} for f in action["files"]] == body["files"]
    assert action["status"]["id"] == status_id
    assert action["decisionDisplayId"] == demo.decisions[decision_id]["decisionDisplayId"]
    assert action["delegationDisplayId"] == demo.delegations[delegation_id]["delegationDisplayId"]
    assert action["documentDisplayId"] == demo.documents[document_id]["documentDisplayId"]
    assert action["updatedBy"] == demo.users[demo.current_user_id]["name"]
    assert_moved_forward(before["updatedAt"], action["updatedAt"])
    assert stored(http, "actions", action_id) == action
    assert writes(http) == {f"action:{action_id}": 1}


E6_REFERENCES = [
    "actionTypeId",
    "actionTemplateId",
    "actionPriorityId",
    "actionStatusId",
    "decisionId",
    "delegationId",
    "documentId",
    "ownerId",
]


@pytest.mark.parametrize("field", E6_REFERENCES)
def test_e6_refuses_a_bad_or_unknown_reference(
    seeded_http: httpx.Client, seeded_demo: TenantState, field: str
) -> None:
    """Each referenced id must be a uuid of a record of the caller's tenant."""
    path = action_path(ids(seeded_demo.actions, 1)[0])
    assert_refused(seeded_http.patch(path, json={field: "not-a-uuid"}), seeded_http, field)
    assert_refused(seeded_http.patch(path, json={field: UNKNOWN}), seeded_http, field)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"assigneeIds": ["not-a-uuid"]}, "assigneeIds.0"),
        ({"assigneeIds": [UNKNOWN]}, "assigneeIds.0"),
        ({"files": [{"fileUrl": "https://f/a.pdf", "fileType": "pdf"}]}, "files.0.fileName"),
        ({"dueDate": "soon"}, "dueDate"),
        ({"priority": "High"}, "priority"),
        ({"actionName": None}, "actionName"),
    ],
    ids=[
        "bad assignee uuid",
        "unknown assignee",
        "file without name",
        "bad dueDate",
        "unknown field",
        "null",
    ],
)
def test_e6_refuses_an_invalid_body(
    seeded_http: httpx.Client, seeded_demo: TenantState, body: dict[str, Any], field: str
) -> None:
    """E6's other rules: assignees, files, timestamps, unknown fields and explicit null."""
    assert_refused(
        seeded_http.patch(action_path(ids(seeded_demo.actions, 1)[0]), json=body), seeded_http, field
    )


def test_e6_refuses_another_tenants_reference(
    seeded_http: httpx.Client, seeded_demo: TenantState, seeded_other: TenantState
) -> None:
    """A decision of the other tenant is unknown to the caller: 400, not a cross-tenant link."""
    body = {"decisionId": ids(seeded_other.decisions, 1)[0]}
    assert_refused(
        seeded_http.patch(action_path(ids(seeded_demo.actions, 1)[0]), json=body), seeded_http, "decisionId"
    )


# -- E7 update matrix -------------------------------------------------------------------------------------


def matrix_path(matrix_id: str) -> str:
    """E7's path for a matrix."""
    return f"/matrix/v1/matrix/{matrix_id}"


def test_e7_updates_a_matrix_and_later_reads_show_it(http: httpx.Client, demo: TenantState) -> None:
    """E7 answers the updated Matrix composed from the new ids; fields left out are kept."""
    matrix_id = ids(demo.matrices, 1, start=0)[0]
    before = stored(http, "matrices", matrix_id)
    retired = next(s for s, record in demo.matrix_statuses.items() if not record["isActive"])
    decision_ids = ids(demo.decisions, 3, start=20)
    body = {
        "matrixName": "Regional approvals",
        "matrixDescription": "Who approves what",
        "matrixStatusId": retired,
        "tenantId": DEMO_TENANT_ID,
        "ownerId": ids(demo.users, 1, start=4)[0],
        "currentTab": "delegations",
        "authorityMatrix": False,
        "roleMatrix": True,
        "authorityRoleIds": ids(demo.roles, 2),
        "groupIds": ids(demo.groups, 1),
        "positionIds": ids(demo.positions, 1),
        "userIds": ids(demo.users, 2, start=30),
        "decisionIds": [*decision_ids, decision_ids[0]],
        "matrixExternalSharing": {
            "isEnabled": True,
            "isPasswordRequired": True,
            "password": "s3cret",
            "expirationDate": "2027-01-01T00:00:00.000Z",
        },
    }
    matrix = data_of(http.put(matrix_path(matrix_id), json=body))
    Matrix.model_validate(matrix)
    scalars = ("matrixName", "matrixDescription", "ownerId", "currentTab", "authorityMatrix", "roleMatrix")
    assert {key: matrix[key] for key in scalars} == {key: body[key] for key in scalars}
    assert matrix["matrixStatus"]["id"] == retired
    assert [d["decisionId"] for d in matrix["matrixDecisions"]] == decision_ids
    assert matrix["decisionCount"] == 3
    assert [u["userId"] for u in matrix["matrixUsers"]] == body["userIds"]
    assert [r["authorityRoleId"] for r in matrix["matrixAuthorityRoles"]] == body["authorityRoleIds"]
    assert [g["tenantGroupsMappingId"] for g in matrix["matrixGroups"]] == body["groupIds"]
    assert [p["positionId"] for p in matrix["matrixPositions"]] == body["positionIds"]
    sharing = matrix["matrixExternalSharing"]
    assert (sharing["isPasswordRequired"], sharing["password"]) == (True, "********")
    assert sharing["expirationDate"] == "2027-01-01T00:00:00.000Z"
    assert matrix["matrixSharing"]["externalSharing"] is True
    assert_moved_forward(before["updatedOn"], matrix["updatedOn"])
    assert stored(http, "matrices", matrix_id) == matrix
    kept = data_of(http.put(matrix_path(matrix_id), json={"matrixName": "Renamed"}))
    assert kept["matrixDecisions"] == matrix["matrixDecisions"]
    assert writes(http) == {f"matrix:{matrix_id}": 2}


E7_INVALID: list[tuple[dict[str, Any], str]] = [
    ({"decisionIds": [UNKNOWN]}, "decisionIds.0"),
    ({"groupIds": ["not-a-uuid"]}, "groupIds.0"),
    ({"userIds": [UNKNOWN]}, "userIds.0"),
    ({"positionIds": [UNKNOWN]}, "positionIds.0"),
    ({"authorityRoleIds": [UNKNOWN]}, "authorityRoleIds.0"),
    ({"matrixStatusId": UNKNOWN}, "matrixStatusId"),
    ({"ownerId": UNKNOWN}, "ownerId"),
    ({"authorityMatrix": "perhaps"}, "authorityMatrix"),
    ({"matrixExternalSharing": {"isEnabled": "perhaps"}}, "matrixExternalSharing.isEnabled"),
    ({"matrixExternalSharing": {"expirationDate": "never"}}, "matrixExternalSharing.expirationDate"),
    ({"favourite": True}, "favourite"),
    ({"matrixName": None}, "matrixName"),
]


@pytest.mark.parametrize(("body", "field"), E7_INVALID, ids=[field for _, field in E7_INVALID])
def test_e7_refuses_an_invalid_body(
    seeded_http: httpx.Client, seeded_demo: TenantState, body: dict[str, Any], field: str
) -> None:
    """E7: every listed id must exist in the tenant (unknown decision id included), types are checked."""
    assert_refused(
        seeded_http.put(matrix_path(ids(seeded_demo.matrices, 1, start=0)[0]), json=body), seeded_http, field
    )


# -- E13 toggle notification status, E14 mark all read ----------------------------------------------------


def toggle_path(notification_id: str) -> str:
    """E13's path for a notification."""
    return f"/notification/v1/notifications/{notification_id}/toggle-status"


def notification_with(demo: TenantState, status: str) -> str:
    """A notification of the current user in ``status``."""
    return next(
        key
        for key, record in demo.notifications.items()
        if record["status"] == status and record["userId"] == demo.current_user_id
    )


def test_e13_sets_the_given_status(http: httpx.Client, demo: TenantState) -> None:
    """status READ marks read (readAt moves forward); status UNREAD marks unread; both answer the record."""
    notification_id = notification_with(demo, "UNREAD")
    before = stored(http, "notifications", notification_id)
    read = data_of(http.patch(toggle_path(notification_id), json={"status": "READ"}))
    Notification.model_validate(read)
    assert read["status"] == "READ"
    assert_moved_forward(before["readAt"], read["readAt"])
    assert stored(http, "notifications", notification_id) == read
    unread = data_of(http.patch(toggle_path(notification_id), json={"status": "UNREAD"}))
    assert unread["status"] == "UNREAD"
    assert stored(http, "notifications", notification_id)["status"] == "UNREAD"


@pytest.mark.parametrize("start", ["READ", "UNREAD"])
def test_e13_without_status_flips(http: httpx.Client, demo: TenantState, start: str) -> None:
    """Without status, READ becomes UNREAD and UNREAD becomes READ; a second call flips back."""
    notification_id = notification_with(demo, start)
    flipped = "UNREAD" if start == "READ" else "READ"
    assert data_of(http.patch(toggle_path(notification_id), json={}))["status"] == flipped
    assert data_of(http.patch(toggle_path(notification_id), json={}))["status"] == start


@pytest.mark.parametrize(
    ("body", "field"),
    [({"status": "ARCHIVED"}, "status"), ({"status": 1}, "status"), ({"pinned": True}, "pinned")],
    ids=["bad status", "status not a string", "unknown field"],
)
def test_e13_refuses_an_invalid_body(
    seeded_http: httpx.Client, seeded_demo: TenantState, body: dict[str, Any], field: str
) -> None:
    """E13's status is UNREAD or READ."""
    assert_refused(
        seeded_http.patch(toggle_path(notification_with(seeded_demo, "READ")), json=body), seeded_http, field
    )


def test_e14_marks_every_unread_notification_read(
    http: httpx.Client, demo: TenantState, other: TenantState
) -> None:
    """E14 answers 201 with the count of the caller's unread notifications, all read afterwards (readAt moved
    forward); 0 on repeat; the other tenant's notifications are untouched."""
    unread = [
        key
        for key, n in demo.notifications.items()
        if n["status"] == "UNREAD" and n["userId"] == demo.current_user_id
    ]
    other_unread = sum(n["status"] == "UNREAD" for n in other.notifications.values())
    assert unread and other_unread
    read_before = {key: demo.notifications[key]["readAt"] for key in unread}
    assert data_of(http.post("/v1/notifications/mark-all-read"), 201) == {"count": len(unread)}
    for key in unread:
        notification = stored(http, "notifications", key)
        assert notification["status"] == "READ"
        assert_moved_forward(read_before[key], notification["readAt"])
    assert data_of(http.post("/v1/notifications/mark-all-read"), 201) == {"count": 0}
    assert sum(n["status"] == "UNREAD" for n in other.notifications.values()) == other_unread
    assert writes(http) == {f"notification:{key}": 1 for key in unread}


def test_writes_of_one_tenant_leave_the_other_alone(
    other_http: httpx.Client, demo: TenantState, other: TenantState
) -> None:
    """A write by the second tenant changes its own record only."""
    user_id = ids(other.users, 1)[0]
    body = {"tenantId": OTHER_TENANT_ID, "displayName": "Globex person"}
    assert data_of(other_http.patch(user_path(user_id), json=body))["displayName"] == "Globex person"
    assert other.users[user_id]["displayName"] == "Globex person"
    assert "Globex person" not in {user["displayName"] for user in demo.users.values()}
