"""Authentication: one exchange per refused token, clear failures, and secrets that never leak."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import httpx
import pytest

from emulator.faults import FaultConfig
from emulator.scale import Scale
from emulator.server import EmulatorServer
from emulator.service import EmulatorOptions
from models.groups import UpdateGroup
from models.queries import DecisionQuery
from models.users import UpdateUserEntities
from pipelines.clients import AdmClientResource
from pipelines.settings import SyncSettings, load_settings, tenant_variable_suffix
from resources.client import AdmClient
from resources.errors import AuthenticationError, ServiceError
from resources.settings import ClientSettings
from tests.conftest import DEMO_ACCESS_KEY, DEMO_TENANT_ID, OTHER_TENANT_ID, set_faults, shared_http
from tests.test_client_support import make_client, make_settings

SECRET_KEY = "sk-TOPSECRET-123"
ENVELOPE = {"statusCode": 201, "timestamp": "2026-01-01T00:00:00.000Z", "message": "Success"}


def revoke_tokens(server: EmulatorServer) -> None:
    shared_http().post(f"{server.base_url}/_admin/tokens/revoke").raise_for_status()


def exchanges(server: EmulatorServer) -> int:
    count: int = shared_http().get(f"{server.base_url}/_admin/stats").json()["exchanges"]
    return count


def test_a_refused_token_is_renewed_by_one_exchange(server: EmulatorServer) -> None:
    with make_client(server, token=None, access_key=DEMO_ACCESS_KEY) as client:
        client.current_user_positions()
        revoke_tokens(server)
        assert client.current_user_positions()
        assert client.metrics.exchanges == 2
    assert exchanges(server) == 2


def test_concurrent_requests_share_one_renewal(server: EmulatorServer) -> None:
    delegation_ids = list(server.emulator.tenants[DEMO_TENANT_ID].delegations)[:40]
    with make_client(server, token=None, access_key=DEMO_ACCESS_KEY, concurrency=8) as client:
        client.current_user_positions()
        revoke_tokens(server)
        results = list(client.map_concurrent(client.delegation_revision_ids, delegation_ids))
    assert len(results) == len(delegation_ids)
    assert exchanges(server) == 2


def test_a_ready_token_and_a_key_fall_back_to_the_key(server: EmulatorServer) -> None:
    with make_client(server, token="expired-token", access_key=DEMO_ACCESS_KEY) as client:
        assert client.current_user_positions()
    assert exchanges(server) == 1


def test_a_refused_ready_token_fails_at_once(server: EmulatorServer) -> None:
    with make_client(server, token="not-a-token") as client, pytest.raises(AuthenticationError) as caught:
        client.current_user_positions()
    assert caught.value.status == 401
    assert client.metrics.calls == {"E9": 1}


def test_a_wrong_access_key_is_an_authentication_error(server: EmulatorServer) -> None:
    with (
        make_client(server, token=None, access_key="wrong-key") as client,
        pytest.raises(AuthenticationError),
    ):
        client.current_user_positions()
    assert client.metrics.calls == {"exchange": 1}


def test_a_second_refusal_is_an_authentication_error() -> None:
    seen: list[str] = []

    def service(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path.endswith("/exchange"):
            return httpx.Response(201, json={**ENVELOPE, "data": {"token": f"t{len(seen)}"}})
        return httpx.Response(401, json={"statusCode": 401, "message": "Invalid or expired token"})

    settings = ClientSettings(
        base_url="https://adm.test", access_key=DEMO_ACCESS_KEY, tenant_id=DEMO_TENANT_ID
    )
    with AdmClient(settings, transport=httpx.MockTransport(service)) as client:
        with pytest.raises(AuthenticationError, match="Invalid or expired token"):
            client.current_user_positions()
        assert client.metrics.calls == {"exchange": 2, "E9": 2}


@pytest.fixture
def secret_server() -> Iterator[EmulatorServer]:
    """An emulator of its own whose demo tenant accepts the distinctive access key."""
    options = EmulatorOptions(access_key=SECRET_KEY, scale=Scale(users=20, decisions=30, delegations=10))
    with EmulatorServer(options) as server:
        yield server


def test_no_secret_reaches_logs_errors_or_reprs(
    secret_server: EmulatorServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    resource = AdmClientResource(
        SyncSettings(base_url=secret_server.base_url, access_key=SECRET_KEY, tenants=[DEMO_TENANT_ID])
    )
    settings = make_settings(secret_server, token=None, access_key=SECRET_KEY)
    with make_client(secret_server, token=None, access_key=SECRET_KEY) as client:
        client.current_user_positions()
        tokens = issued_tokens(secret_server)
        revoke_tokens(secret_server)
        list(client.iter_decisions(DecisionQuery(limit=7)))
        tokens += issued_tokens(secret_server)
        texts = failures(client, secret_server)
        texts += [repr(client), str(client), repr(settings), str(settings), repr(resource), str(resource)]
        texts += [repr(client.metrics), repr(client._credentials)]
    with make_client(secret_server, token=None, access_key=SECRET_KEY + "-wrong") as stranger:
        with pytest.raises(AuthenticationError) as refused:
            stranger.current_user_positions()
        texts += [str(refused.value), repr(refused.value), repr(stranger)]
    texts += [record.getMessage() for record in caplog.records] + [caplog.text]
    assert {"httpx", "httpcore.http11", "resources.auth"} <= {record.name for record in caplog.records}
    assert len(tokens) == 2
    for secret in [SECRET_KEY, *tokens]:
        assert not [text for text in texts if secret in text], secret[:6]


def issued_tokens(server: EmulatorServer) -> list[str]:
    return [token for token in server.emulator.tokens if token.startswith("emu.")]


def failures(client: AdmClient, server: EmulatorServer) -> list[str]:
    """The text of every error of a few failing calls: a 5xx on a write, a 404, a 400."""
    state = server.emulator.tenants[DEMO_TENANT_ID]
    set_faults(server, FaultConfig(error_rate=1, max_faults=1, methods=["PATCH"]))
    bad_manager = UpdateUserEntities(tenant_id=DEMO_TENANT_ID, manager_id=OTHER_TENANT_ID)
    calls: list[Callable[[], object]] = [
        lambda: client.update_group("no-such-group", UpdateGroup(display_name="x")),
        lambda: client.update_group("no-such-group", UpdateGroup(display_name="x")),
        lambda: client.get_action_template("missing"),
        lambda: client.update_user_entities(next(iter(state.users)), bad_manager),
    ]
    texts: list[str] = []
    for call in calls:
        with pytest.raises(ServiceError) as caught:
            call()
        error = caught.value
        texts += [str(error), repr(error), repr(error.body), str(error.__cause__), repr(error.__cause__)]
    return texts


def test_the_client_resource_builds_each_tenants_client_from_the_settings(
    monkeypatch: pytest.MonkeyPatch, server: EmulatorServer
) -> None:
    monkeypatch.setenv("ADM_BASE_URL", server.base_url)
    monkeypatch.setenv("ADM_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("ADM_TENANTS", f"{DEMO_TENANT_ID},{OTHER_TENANT_ID}")
    monkeypatch.setenv("ADM_RATE_PLAN", "Premium")
    monkeypatch.setenv("ADM_CONCURRENCY", "2")
    monkeypatch.setenv(f"ADM_TOKEN__{tenant_variable_suffix(DEMO_TENANT_ID)}", "adm-demo-token")
    resource = AdmClientResource(load_settings())
    settings = resource.client_settings()
    assert (settings.base_url, settings.rate_plan, settings.plan_rate_per_minute, settings.concurrency) == (
        server.base_url,
        "premium",
        300,
        2,
    )
    with resource.get_client() as client:
        assert client.current_user_positions()
    other = resource.client_settings(OTHER_TENANT_ID)
    assert other.token is None and other.access_key is not None
    assert SECRET_KEY not in repr(resource) + str(resource) + repr(other)
