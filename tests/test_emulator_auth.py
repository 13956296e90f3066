"""Emulator authentication and tenant isolation: bearer tokens, the access-key exchange, 401/403/404."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from emulator.scale import OTHER_ACCESS_KEY
from emulator.server import EmulatorServer
from emulator.service import Emulator
from emulator.state import TenantState
from tests.conftest import (
    DEMO_ACCESS_KEY,
    DEMO_TENANT_ID,
    DEMO_TOKEN,
    ENDPOINT_NAMES,
    OTHER_TENANT_ID,
    Call,
    admin,
    data_of,
    endpoint_calls,
    error_of,
    loopback,
)

EXCHANGE = "/auth/v1/tenants/access-key/exchange"

BAD_HEADERS: tuple[dict[str, str], ...] = (
    {},
    {"Authorization": "Bearer not-a-token"},
    {"Authorization": "Bearer"},
    {"Authorization": "Basic YWRtaW46YWRtaW4="},
    {"Authorization": DEMO_TOKEN},
)
"""No header, an unknown token, a scheme without token, another scheme, a token without scheme."""


def first(records: dict[str, Any]) -> str:
    """The id of the first record of a collection."""
    return next(iter(records))


@pytest.fixture(scope="module")
def _no_auth(emulator_server: EmulatorServer) -> Iterator[httpx.Client]:
    with loopback(base_url=emulator_server.base_url) as client:
        yield client


@pytest.fixture
def anonymous(seeded: Emulator, _no_auth: httpx.Client) -> httpx.Client:
    """A client without any Authorization header, on the `seeded` emulator."""
    return _no_auth


def exchange(client: httpx.Client, access_key: str) -> httpx.Response:
    """Exchange ``access_key`` for a token."""
    return client.post(EXCHANGE, json={"accessKey": access_key})


@pytest.mark.parametrize("endpoint", ENDPOINT_NAMES)
def test_every_endpoint_refuses_a_request_without_a_valid_token(
    anonymous: httpx.Client, seeded_demo: TenantState, endpoint: str
) -> None:
    """A valid request of any endpoint is 401 with a JSON error when the bearer token is missing or wrong."""
    call = endpoint_calls(seeded_demo)[endpoint]
    for headers in BAD_HEADERS:
        error_of(call.send(anonymous, headers=headers), 401)


def test_the_access_key_exchange_issues_a_working_token(anonymous: httpx.Client) -> None:
    """A good key needs no Authorization header, answers 201 with ``data.token``, and the token works."""
    token = data_of(exchange(anonymous, DEMO_ACCESS_KEY), 201)["token"]
    assert isinstance(token, str) and token
    page = data_of(anonymous.get("/decision/v1/decisions", headers={"Authorization": f"Bearer {token}"}))
    assert page["data"][0]["tenantId"] == DEMO_TENANT_ID


def test_an_exchanged_token_belongs_to_the_tenant_of_its_key(
    anonymous: httpx.Client, seeded_other: TenantState
) -> None:
    """The second tenant's key yields a token of the second tenant (its current user's positions)."""
    token = data_of(exchange(anonymous, OTHER_ACCESS_KEY), 201)["token"]
    positions = data_of(
        anonymous.get("/auth/v1/user/positions", headers={"Authorization": f"Bearer {token}"})
    )
    assert positions == seeded_other.users[seeded_other.current_user_id]["userPositions"]


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"accessKey": "not-a-key"}, 401, None),
        ({"accessKey": ""}, 400, "accessKey"),
        ({}, 400, "accessKey"),
        ({"accessKey": DEMO_ACCESS_KEY, "scope": "all"}, 400, "scope"),
    ],
    ids=["unknown key", "empty key", "no key", "unknown field"],
)
def test_the_exchange_refuses_a_bad_key(
    anonymous: httpx.Client, body: dict[str, str], status: int, field: str | None
) -> None:
    """An unknown key is 401; a malformed exchange body is 400 naming the field."""
    error_of(anonymous.post(EXCHANGE, json=body), status, field)


def test_a_revoked_exchanged_token_is_refused(anonymous: httpx.Client) -> None:
    """After ``/_admin/tokens/revoke`` an exchanged token is 401; the fixed demo token still works."""
    token = data_of(exchange(anonymous, DEMO_ACCESS_KEY), 201)["token"]
    headers = {"Authorization": f"Bearer {token}"}
    data_of(anonymous.get("/auth/v1/user/positions", headers=headers))
    assert admin(anonymous, "POST", "/tokens/revoke") == {"revoked": 1}
    error_of(anonymous.get("/auth/v1/user/positions", headers=headers), 401)
    data_of(anonymous.get("/auth/v1/user/positions", headers={"Authorization": f"Bearer {DEMO_TOKEN}"}))


# -- tenant isolation ---------------------------------------------------------------------------------------


def demo_record_calls(demo: TenantState) -> dict[str, Call]:
    """Requests of the second tenant that touch one demo-tenant record each (bodies valid for that tenant)."""
    return {
        "E1": Call(
            "PATCH", f"/auth/v1/user/update-entities/{first(demo.users)}", {"tenantId": OTHER_TENANT_ID}
        ),
        "E2": Call("DELETE", "/actions/v1/actions", {"ids": [first(demo.actions)]}),
        "E3": Call("PATCH", f"/settings/v1/groups/{first(demo.groups)}", {"displayName": "Hijacked"}),
        "E6": Call("PATCH", f"/actions/v1/actions/{first(demo.actions)}", {"actionName": "Hijacked"}),
        "E7": Call("PUT", f"/matrix/v1/matrix/{first(demo.matrices)}", {"matrixName": "Hijacked"}),
        "E10": Call("GET", f"/settings/v1/action-templates/{first(demo.action_templates)}"),
        "E11": Call("GET", f"/decision/v1/delegations/{first(demo.delegations)}/changelog/revision-ids"),
        "E12": Call("GET", f"/document/v1/documents/{first(demo.documents)}/changelog/revision-ids"),
        "E13": Call("PATCH", f"/notification/v1/notifications/{first(demo.notifications)}/toggle-status", {}),
    }


@pytest.mark.parametrize("endpoint", ["E1", "E2", "E3", "E6", "E7", "E10", "E11", "E12", "E13"])
def test_another_tenants_record_is_forbidden(
    seeded_other_http: httpx.Client, seeded_demo: TenantState, endpoint: str
) -> None:
    """The second tenant's token on a demo-tenant record id is 403, and nothing is written."""
    error_of(demo_record_calls(seeded_demo)[endpoint].send(seeded_other_http), 403)
    assert admin(seeded_other_http, "GET", "/stats")["writes"] == {}


@pytest.mark.parametrize(
    "endpoint", ["E1", "E5", "E7", "E8", "groups", "positions", "delegations"], ids=lambda name: name
)
def test_naming_another_tenant_is_forbidden(
    seeded_http: httpx.Client, seeded_demo: TenantState, endpoint: str
) -> None:
    """A ``tenantId`` (query or body) naming the other tenant is 403 on the caller's own records."""
    call = endpoint_calls(seeded_demo)[endpoint]
    if call.json is not None:
        call = Call(call.method, call.path, {**call.json, "tenantId": OTHER_TENANT_ID})
    else:
        call = Call(call.method, call.path, params={**(call.params or {}), "tenantId": OTHER_TENANT_ID})
    error_of(call.send(seeded_http), 403, "tenantId")
    assert admin(seeded_http, "GET", "/stats")["writes"] == {}


UNKNOWN = str(uuid.UUID(int=1, version=4))


@pytest.mark.parametrize(
    "call",
    [
        Call("PATCH", f"/auth/v1/user/update-entities/{UNKNOWN}", {"tenantId": DEMO_TENANT_ID}),
        Call("DELETE", "/actions/v1/actions", {"ids": [UNKNOWN]}),
        Call("PATCH", f"/settings/v1/groups/{UNKNOWN}", {"displayName": "Nobody"}),
        Call("PATCH", f"/actions/v1/actions/{UNKNOWN}", {"actionName": "Nobody"}),
        Call("PUT", f"/matrix/v1/matrix/{UNKNOWN}", {"matrixName": "Nobody"}),
        Call("GET", f"/settings/v1/action-templates/{UNKNOWN}"),
        Call("GET", f"/decision/v1/delegations/{UNKNOWN}/changelog/revision-ids"),
        Call("GET", f"/document/v1/documents/{UNKNOWN}/changelog/revision-ids"),
        Call("PATCH", f"/notification/v1/notifications/{UNKNOWN}/toggle-status", {}),
        Call("GET", "/no/such/route"),
    ],
    ids=["E1", "E2", "E3", "E6", "E7", "E10", "E11", "E12", "E13", "unknown route"],
)
def test_an_unknown_id_is_not_found(seeded_http: httpx.Client, call: Call) -> None:
    """An id no tenant has is 404 with a JSON error body."""
    error_of(call.send(seeded_http), 404)


def test_a_deleted_action_is_not_found(http: httpx.Client, demo: TenantState) -> None:
    """Once deleted (E2), an action is 404 for E6 and for a second E2."""
    action_id = first(demo.actions)
    data_of(http.request("DELETE", "/actions/v1/actions", json={"ids": [action_id]}))
    error_of(http.patch(f"/actions/v1/actions/{action_id}", json={"actionName": "Late"}), 404)
    error_of(http.request("DELETE", "/actions/v1/actions", json={"ids": [action_id]}), 404)


def test_another_users_notification_is_not_found(http: httpx.Client, demo: TenantState) -> None:
    """Notifications are personal: one of another user of the same tenant is 404 for E13."""
    notification_id = first(demo.notifications)
    demo.notifications[notification_id]["userId"] = list(demo.users)[1]
    error_of(http.patch(f"/notification/v1/notifications/{notification_id}/toggle-status", json={}), 404)


def test_lists_only_show_the_callers_tenant(
    seeded_http: httpx.Client, seeded_other_http: httpx.Client
) -> None:
    """Every list answers with the caller's own tenant's records only."""
    for client, tenant in ((seeded_http, DEMO_TENANT_ID), (seeded_other_http, OTHER_TENANT_ID)):
        for path, params in (
            ("/decision/v1/decisions", {}),
            ("/decision/v1/delegations", {}),
            ("/settings/v1/groups", {"tenantId": tenant}),
            ("/settings/v1/positions", {"tenantId": tenant}),
        ):
            records = data_of(client.get(path, params={**params, "limit": 100}))["data"]
            assert records and {record["tenantId"] for record in records} == {tenant}
        users = data_of(client.get("/auth/v1/user", params={"limit": 100}))["data"]
        assert {user["activeTenantId"] for user in users} == {tenant}
