"""Error parsing and response-shape checks (narrow unit tests over ``httpx.MockTransport``), and settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from pydantic import ValidationError as SettingsError

from emulator.server import EmulatorServer
from models.base import ErrorBody
from models.queries import DecisionQuery
from models.reports import ReportOperation, UpdateReportStatuses
from resources.client import AdmClient
from resources.errors import (
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ResponseFormatError,
    ServerError,
    ServiceError,
    ValidationError,
    WriteResponseFormatError,
)
from resources.ratelimit import clear_buckets
from resources.settings import ClientSettings, Environment
from tests.conftest import DEMO_TENANT_ID, DEMO_TOKEN
from tests.test_client_support import FAST, make_client

ENVELOPE = {"statusCode": 200, "timestamp": "2026-01-01T00:00:00.000Z", "message": "Success"}


def mock_client(answer: Callable[[httpx.Request], httpx.Response], **settings: Any) -> AdmClient:
    """A client of a scripted service: one attempt per call unless told otherwise, a fresh rate budget."""
    values = {
        "base_url": "https://adm.test",
        "token": DEMO_TOKEN,
        "tenant_id": DEMO_TENANT_ID,
        "max_attempts": 1,
    }
    clear_buckets()
    transport = httpx.MockTransport(answer)
    return AdmClient(ClientSettings.model_validate(values | FAST | settings), transport=transport)


def answering(status: int, **response: Any) -> Callable[[httpx.Request], httpx.Response]:
    return lambda _: httpx.Response(status, **response)


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, ValidationError), (403, PermissionDeniedError), (404, NotFoundError), (409, ServiceError)],
)
def test_a_json_error_body_is_parsed(status: int, kind: type[ServiceError]) -> None:
    body = {"statusCode": status, "message": "Decision x not here", "error": "Nope", "field": "tenantId"}
    with mock_client(answering(status, json=body)) as client, pytest.raises(kind) as caught:
        client.list_decisions(DecisionQuery(search="secret-ish search"))
    error = caught.value
    assert type(error) is kind
    assert (error.method, error.path, error.status, error.message) == (
        "GET",
        "/decision/v1/decisions",
        status,
        "Decision x not here",
    )
    assert isinstance(error.body, ErrorBody) and error.body.field == "tenantId"
    assert str(error) == f"GET /decision/v1/decisions -> {status}: Decision x not here"


def test_a_text_error_body_is_kept_as_text() -> None:
    page = "<html><body>Bad gateway</body></html>"
    with mock_client(answering(502, text=page)) as client, pytest.raises(ServerError) as caught:
        client.current_user_positions()
    assert (caught.value.status, caught.value.body, caught.value.message) == (502, page, page)


def test_a_list_of_messages_is_joined_and_retry_after_read() -> None:
    body = {"statusCode": 429, "message": ["slow down", "really"]}
    answer = answering(429, json=body, headers={"Retry-After": "0"})
    with mock_client(answer, rate_limited_max_attempts=1) as client, pytest.raises(RateLimitError) as caught:
        client.current_user_positions()
    assert (caught.value.message, caught.value.retry_after_s) == ("slow down; really", 0.0)


def test_a_body_off_the_spec_names_the_endpoint_and_field_and_is_not_retried() -> None:
    page = {"page": 1, "limit": 10, "total": 1, "data": [{"id": "d1", "name": "no other field"}]}
    with mock_client(answering(200, json={**ENVELOPE, "data": page}), max_attempts=5) as client:
        with pytest.raises(ResponseFormatError) as caught:
            client.list_decisions(DecisionQuery())
        assert client.metrics.calls == {"E8": 1}
    assert (caught.value.endpoint, caught.value.field_path, caught.value.malformed) == (
        "E8",
        "data.data.0.decisionId",
        False,
    )
    assert "E8" in str(caught.value) and "data.data.0.decisionId" in str(caught.value)


@pytest.mark.parametrize(
    "text", [b'"\\udc00 lone surrogate"', b'"\xff invalid UTF-8"'], ids=["surrogate", "utf-8"]
)
def test_text_that_is_not_unicode_is_a_contract_breach_and_is_not_retried(text: bytes) -> None:
    body = (
        b'{"statusCode": 200, "timestamp": "2026-01-01T00:00:00.000Z", "message": ' + text + b', "data": []}'
    )
    with mock_client(answering(200, content=body), max_attempts=5) as client:
        with pytest.raises(ResponseFormatError, match="not Unicode") as caught:
            client.current_user_positions()
        assert client.metrics.calls == {"E9": 1}
    assert caught.value.malformed is False


def test_json_nested_deeper_than_the_parser_follows_is_a_breach_not_retried() -> None:
    # Before: called "not valid JSON" and retried five times; the same answer comes back every time.
    nested = b"[" * 3000 + b"]" * 3000
    body = (
        b'{"statusCode": 200, "timestamp": "2026-01-01T00:00:00.000Z", "message": "ok", "data": '
        + nested
        + b"}"
    )
    with mock_client(answering(200, content=body), max_attempts=5) as client:
        with pytest.raises(ResponseFormatError, match="nested too deep") as caught:
            client.current_user_positions()
        assert client.metrics.calls == {"E9": 1}
    assert caught.value.malformed is False


def test_a_cut_body_is_retried() -> None:
    answers = iter(
        [
            httpx.Response(200, content=b'{"statusCode": 200, "tim'),
            httpx.Response(200, json={**ENVELOPE, "data": []}),
        ]
    )
    with mock_client(lambda _: next(answers), max_attempts=3) as client:
        assert client.current_user_positions() == []
        assert client.metrics.calls == {"E9": 2}


def test_a_page_other_than_asked_for_is_refused() -> None:
    page = {"page": 2, "limit": 100, "total": 0, "data": []}
    answer = answering(200, json={**ENVELOPE, "data": page})
    with (
        mock_client(answer) as client,
        pytest.raises(ResponseFormatError, match="page 2 when asked for 1") as caught,
    ):
        client.list_decisions(DecisionQuery(limit=100))
    assert caught.value.field_path == "data.page"


def test_a_page_size_other_than_asked_for_is_the_services_to_choose() -> None:
    page = {"page": 1, "limit": 50, "total": 0, "data": []}
    answer = answering(200, json={**ENVELOPE, "data": page})
    with mock_client(answer) as client:
        assert client.list_decisions(DecisionQuery(limit=100)).limit == 50


def test_a_write_answered_with_an_unexpected_success_code_is_unknown() -> None:
    result = {"success": True, "updatedCount": 0, "failedIds": []}
    body = UpdateReportStatuses(report_ids=[], operation=ReportOperation.RESTORE)
    answer = answering(200, json={**ENVELOPE, "data": result})
    with (
        mock_client(answer) as client,
        pytest.raises(WriteResponseFormatError, match=r"E4 response does not match the spec: status 200"),
    ):
        client.update_report_statuses(body)


def test_e14_accepts_200_as_well_as_201() -> None:
    with mock_client(answering(200, json={**ENVELOPE, "data": {"count": 3}})) as client:
        assert client.mark_all_notifications_read().count == 3


def test_requests_carry_the_user_agent_and_the_bearer_token() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=["3", "5"])

    with mock_client(answer) as client:
        assert client.delegation_revision_ids("a/b") == ["3", "5"]
    request = seen[0]
    assert request.url.raw_path == b"/decision/v1/delegations/a%2Fb/changelog/revision-ids"
    assert request.headers["authorization"] == f"Bearer {DEMO_TOKEN}"
    assert request.headers["user-agent"].startswith("authority-sync/")


def test_param_names_override_the_wire_names(server: EmulatorServer) -> None:
    query = DecisionQuery(search="Approve", limit=1)
    with make_client(server) as default, make_client(server, param_names={"search": "q"}) as renamed:
        filtered, ignored = default.list_decisions(query).total, renamed.list_decisions(query).total
    assert filtered is not None and ignored is not None
    assert filtered < ignored == 1000  # the emulator does not know ``q``, so nothing is filtered


# -- settings ----------------------------------------------------------------------------------------------


def settings(**values: Any) -> ClientSettings:
    return ClientSettings.model_validate({"tenant_id": DEMO_TENANT_ID, "token": "t"} | values)


def test_an_environment_names_its_base_address_and_plans_set_the_budget() -> None:
    chosen = settings(environment="prod-eu", rate_plan="premium")
    assert (chosen.environment, chosen.address) == (Environment.PROD_EU, "https://api.eu.aptlydone.com")
    assert (chosen.plan_rate_per_minute, chosen.plan_burst) == (300, 600)
    custom = settings(base_url="http://localhost:8080/", rate_per_minute=90, burst=7)
    assert (custom.address, custom.plan_rate_per_minute, custom.plan_burst) == (
        "http://localhost:8080",
        90,
        7,
    )


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"environment": "prod-us", "base_url": "https://example.test"},
        {"base_url": "ftp://example.test"},
        {"base_url": "https://example.test", "token": None},
        {"environment": "prod-mars"},
    ],
    ids=["no-address", "two-addresses", "not-http", "no-credential", "unknown-environment"],
)
def test_settings_refuse_an_incomplete_configuration(values: dict[str, Any]) -> None:
    with pytest.raises(SettingsError):
        settings(**values)
