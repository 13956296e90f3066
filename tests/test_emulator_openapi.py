"""The emulator's OpenAPI document: every route of the service and none of the admin routes; a
schemathesis run against the live emulator (bearer token set) finds no server error."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import Case, GenerationMode
from schemathesis.specs.openapi.schemas import OpenApiSchema

from emulator.server import EmulatorServer
from tests.conftest import DEMO_TENANT_ID, DEMO_TOKEN

OPERATIONS = {
    ("/auth/v1/user/update-entities/{id}", "patch"): "E1",
    ("/actions/v1/actions", "delete"): "E2",
    ("/settings/v1/groups/{id}", "patch"): "E3",
    ("/report/v1/report/bulk-status-update", "post"): "E4",
    ("/actions/v1/actions/validate-action", "patch"): "E5",
    ("/actions/v1/actions/{id}", "patch"): "E6",
    ("/matrix/v1/matrix/{id}", "put"): "E7",
    ("/decision/v1/decisions", "get"): "E8",
    ("/auth/v1/user/positions", "get"): "E9",
    ("/settings/v1/action-templates/{id}", "get"): "E10",
    ("/decision/v1/delegations/{id}/changelog/revision-ids", "get"): "E11",
    ("/document/v1/documents/{id}/changelog/revision-ids", "get"): "E12",
    ("/notification/v1/notifications/{id}/toggle-status", "patch"): "E13",
    ("/v1/notifications/mark-all-read", "post"): "E14",
    ("/auth/v1/tenants/access-key/exchange", "post"): "exchange",
    ("/auth/v1/user", "get"): "users",
    ("/settings/v1/groups", "get"): "groups",
    ("/settings/v1/positions", "get"): "positions",
    ("/decision/v1/delegations", "get"): "delegations",
}
"""Every operation the emulator serves (the spec's 14, the exchange, four lists) and its endpoint name."""


def test_openapi_lists_every_route_and_no_admin_route(seeded_http: httpx.Client) -> None:
    """The document holds exactly the expected operations; nothing under /_admin."""
    paths = seeded_http.get("/openapi.json").json()["paths"]
    assert {(path, method) for path, operations in paths.items() for method in operations} == set(OPERATIONS)
    assert not [path for path in paths if path.startswith("/_admin")]


def test_every_operation_but_the_exchange_needs_the_bearer_token(seeded_http: httpx.Client) -> None:
    """Operations are named after their endpoint and need ``accessToken``; the exchange needs nothing."""
    document = seeded_http.get("/openapi.json").json()
    assert document["components"]["securitySchemes"]["accessToken"] == {"type": "http", "scheme": "bearer"}
    for (path, method), name in OPERATIONS.items():
        operation = document["paths"][path][method]
        assert operation["operationId"].startswith(f"{name}_")
        assert operation["security"] == ([] if name == "exchange" else [{"accessToken": []}])


@pytest.fixture(scope="module")
def live_schema(emulator_server: EmulatorServer) -> OpenApiSchema:
    """The OpenAPI schema the live emulator serves."""
    return schemathesis.openapi.from_url(f"{emulator_server.base_url}/openapi.json")


RECORD_OF_PATH = {
    "/auth/v1/user/update-entities/{id}": "users",
    "/settings/v1/groups/{id}": "groups",
    "/actions/v1/actions/{id}": "actions",
    "/matrix/v1/matrix/{id}": "matrices",
    "/settings/v1/action-templates/{id}": "action_templates",
    "/decision/v1/delegations/{id}/changelog/revision-ids": "delegations",
    "/document/v1/documents/{id}/changelog/revision-ids": "documents",
    "/notification/v1/notifications/{id}/toggle-status": "notifications",
}
"""The kind of record each path's ``{id}`` names: generated requests use a real one, to get past the 404."""


def aim_at_the_demo_tenant(case: Case[Any]) -> None:
    """Point a generated ``tenantId`` (body or query) at the caller's tenant, to get past the 403."""
    for part in (case.body, case.query):
        if isinstance(part, dict) and "tenantId" in part:
            part["tenantId"] = DEMO_TENANT_ID


@pytest.mark.parametrize("mode", list(GenerationMode))
@pytest.mark.parametrize(("path", "method"), list(OPERATIONS), ids=list(OPERATIONS.values()))
def test_generated_requests_get_no_server_error(
    server: EmulatorServer, live_schema: OpenApiSchema, path: str, method: str, mode: GenerationMode
) -> None:
    """Requests generated from the schema, fitting it or breaking it on purpose, on real records of the
    caller's tenant, never get a 5xx."""
    kind = RECORD_OF_PATH.get(path)
    records = getattr(server.emulator.tenants[DEMO_TENANT_ID], kind) if kind else {}
    fixed = {"id": list(records)[len(records) // 2]} if kind else None
    strategy = live_schema[path][method.upper()].as_strategy(generation_mode=mode, path_parameters=fixed)

    @settings(max_examples=15, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def no_server_error(case: Case[Any]) -> None:
        if mode is GenerationMode.POSITIVE:
            aim_at_the_demo_tenant(case)
        response = case.call(headers={"Authorization": f"Bearer {DEMO_TOKEN}"}, timeout=10)
        assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.text[:500]}"

    no_server_error()
