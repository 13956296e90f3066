"""Shared fixtures: one emulator per test session on a free loopback port, reset before each test."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from emulator.faults import FaultConfig
from emulator.scale import DEMO_ACCESS_KEY, DEMO_TENANT_ID, DEMO_TOKEN, OTHER_TENANT_ID, OTHER_TOKEN
from emulator.server import EmulatorServer
from emulator.service import Emulator


@pytest.fixture(scope="session")
def emulator_server() -> Iterator[EmulatorServer]:
    """The emulator, seeded with the default scale, served over real HTTP for the whole session."""
    with EmulatorServer() as server:
        yield server


@pytest.fixture
def server(emulator_server: EmulatorServer) -> EmulatorServer:
    """The session emulator, back to its seeded state with no faults and zero counters."""
    emulator_server.emulator.reset()
    emulator_server.emulator.reset_stats()
    set_faults(emulator_server, FaultConfig())
    return emulator_server


@pytest.fixture
def emulator(server: EmulatorServer) -> Emulator:
    """The freshly reset emulator's state and counters."""
    return server.emulator


@pytest.fixture
def http(server: EmulatorServer) -> Iterator[httpx.Client]:
    """A raw HTTP client of the demo tenant (bearer token set)."""
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {DEMO_TOKEN}"}) as client:
        yield client


@pytest.fixture
def other_http(server: EmulatorServer) -> Iterator[httpx.Client]:
    """A raw HTTP client of the second tenant."""
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {OTHER_TOKEN}"}) as client:
        yield client


def set_faults(server: EmulatorServer, faults: FaultConfig) -> None:
    """Replace the emulator's faults through its admin route."""
    response = httpx.put(f"{server.base_url}/_admin/faults", json=faults.model_dump(mode="json"))
    response.raise_for_status()


__all__ = ["DEMO_ACCESS_KEY", "DEMO_TENANT_ID", "DEMO_TOKEN", "OTHER_TENANT_ID", "OTHER_TOKEN", "set_faults"]
