"""Helpers shared by the client tests (no tests here): a client of the session emulator, tuned for speed."""

from __future__ import annotations

from typing import Any

from emulator.server import EmulatorServer
from resources.client import AdmClient
from resources.ratelimit import clear_buckets
from resources.settings import ClientSettings
from tests.conftest import DEMO_TENANT_ID, DEMO_TOKEN

FAST = {
    "rate_per_minute": 600_000.0,
    "concurrency": 4,
    "backoff_initial_s": 0.01,
    "backoff_max_s": 0.05,
}
"""No rate limiting to speak of and near-instant backoff: the tests that need them set their own."""


def make_settings(server: EmulatorServer, **overrides: Any) -> ClientSettings:
    """Settings of a client of the demo tenant of ``server`` (ready token unless overridden)."""
    values: dict[str, Any] = {"base_url": server.base_url, "token": DEMO_TOKEN, "tenant_id": DEMO_TENANT_ID}
    return ClientSettings.model_validate(values | FAST | overrides)


def make_client(server: EmulatorServer, **overrides: Any) -> AdmClient:
    """A client of ``server``. The process-wide rate buckets are forgotten first, so that the client, like
    the freshly reset emulator, starts from a full budget."""
    clear_buckets()
    return AdmClient(make_settings(server, **overrides))
