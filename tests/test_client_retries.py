"""Retries: reads ride out 5xx, dropped connections and broken bodies; writes are never repeated once they
may have been applied, and the emulator's write counters prove it."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from emulator.faults import FaultConfig
from emulator.server import EmulatorServer
from emulator.service import Emulator
from models.groups import UpdateGroup
from models.queries import DecisionQuery
from resources.client import AdmClient
from resources.errors import (
    APIConnectionError,
    ResponseFormatError,
    ServerError,
    WriteOutcomeUnknown,
    WriteResponseFormatError,
)
from tests.conftest import DEMO_TENANT_ID, set_faults, shared_http
from tests.test_client_support import make_client


@pytest.fixture
def group_id(emulator: Emulator) -> str:
    return list(emulator.tenants[DEMO_TENANT_ID].groups)[2]


def stats(server: EmulatorServer) -> dict[str, Any]:
    response = shared_http().get(f"{server.base_url}/_admin/stats")
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize(
    "fault",
    [
        FaultConfig(error_rate=1, max_faults=2, methods=["GET"]),
        FaultConfig(error_rate=1, error_status=503, max_faults=2, methods=["GET"]),
        FaultConfig(drop_rate=1, max_faults=2, methods=["GET"]),
        FaultConfig(malformed_rate=1, max_faults=2, methods=["GET"]),
    ],
    ids=["500", "503", "dropped", "malformed"],
)
def test_reads_are_retried(server: EmulatorServer, client: AdmClient, fault: FaultConfig) -> None:
    set_faults(server, fault)
    page = client.list_decisions(DecisionQuery(limit=5))
    assert len(page.data) == 5
    assert (client.metrics.retries, client.metrics.calls) == (2, {"E8": 3})


def test_a_read_gives_up_after_the_last_attempt(server: EmulatorServer) -> None:
    set_faults(server, FaultConfig(error_rate=1, methods=["GET"]))
    with make_client(server, max_attempts=3) as client, pytest.raises(ServerError) as caught:
        client.current_user_positions()
    assert caught.value.status == 500
    assert stats(server)["requests"]["E9"] == 3


def test_a_5xx_on_a_write_is_not_repeated(server: EmulatorServer, client: AdmClient, group_id: str) -> None:
    set_faults(server, FaultConfig(error_rate=1, max_faults=1, methods=["PATCH"]))
    with pytest.raises(WriteOutcomeUnknown, match="may have been applied") as caught:
        client.update_group(group_id, UpdateGroup(display_name="Not twice"))
    assert isinstance(caught.value.__cause__, ServerError)
    assert (caught.value.method, caught.value.path, caught.value.status) == (
        "PATCH",
        f"/settings/v1/groups/{group_id}",
        500,
    )
    counters = stats(server)
    assert counters["requests"]["E3"] == 1
    assert counters["totalWrites"] == 0  # the injected 5xx answers before the route runs


def test_a_dropped_write_is_applied_once_and_reported_unknown(
    server: EmulatorServer, client: AdmClient, group_id: str
) -> None:
    set_faults(server, FaultConfig(drop_rate=1, max_faults=1, methods=["PATCH"]))
    with pytest.raises(WriteOutcomeUnknown, match="verify it by reading") as caught:
        client.update_group(group_id, UpdateGroup(display_name="Exactly once"))
    assert isinstance(caught.value.__cause__, APIConnectionError)
    counters = stats(server)
    assert counters["requests"]["E3"] == 1
    assert counters["writes"] == {f"group:{group_id}": 1}


def test_a_malformed_write_answer_names_the_endpoint(
    server: EmulatorServer, client: AdmClient, group_id: str
) -> None:
    set_faults(server, FaultConfig(malformed_rate=1, max_faults=1, methods=["PATCH"]))
    with pytest.raises(ResponseFormatError) as caught:
        client.update_group(group_id, UpdateGroup(display_name="Unreadable"))
    error = caught.value
    assert isinstance(error, WriteResponseFormatError)
    assert isinstance(error, WriteOutcomeUnknown)
    assert (error.endpoint, error.malformed) == ("E3", True)
    assert "E3" in str(error)
    assert stats(server)["writes"] == {f"group:{group_id}": 1}


def test_a_write_that_timed_out_waiting_for_its_answer_is_not_repeated(
    server: EmulatorServer, group_id: str
) -> None:
    set_faults(server, FaultConfig(latency_ms=400, methods=["PATCH"]))
    with make_client(server, read_timeout_s=0.1) as client, pytest.raises(WriteOutcomeUnknown):
        client.update_group(group_id, UpdateGroup(display_name="Slow"))
    assert stats(server)["requests"]["E3"] == 1


def test_a_rate_limited_write_is_retried_and_applied_once(server: EmulatorServer, group_id: str) -> None:
    set_faults(server, FaultConfig(rate_limit_per_minute=60, rate_burst=1))
    with make_client(server, rate_per_minute=6000) as client:
        client.current_user_positions()
        group = client.update_group(group_id, UpdateGroup(display_name="After the pause"))
        assert client.metrics.rate_limited >= 1
    assert group.display_name == "After the pause"
    assert stats(server)["writes"] == {f"group:{group_id}": 1}


def test_a_write_that_never_left_is_retried(server: EmulatorServer, group_id: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    address = f"http://127.0.0.1:{closed_port}"
    with (
        make_client(server, base_url=address, max_attempts=3) as client,
        pytest.raises(APIConnectionError) as caught,
    ):
        client.update_group(group_id, UpdateGroup(display_name="Nobody listening"))
    assert not isinstance(caught.value, WriteOutcomeUnknown)
    assert caught.value.request_sent is False
    assert client.metrics.calls == {"E3": 3}
