"""The emulator's faults, each as configured: latency, injected errors (targeted, capped, delayed), rate
limits, dropped connections, malformed bodies, drift and ignored parameters; admin counters and reset."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest

from emulator.faults import FaultConfig
from emulator.server import EmulatorServer
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
    set_faults,
    stored,
)

DECISIONS = "/decision/v1/decisions"
POSITIONS = "/auth/v1/user/positions"


def configure(server: EmulatorServer, **config: Any) -> None:
    """Put these faults in force (everything else off)."""
    set_faults(server, FaultConfig(**config))


def stats(client: httpx.Client) -> dict[str, Any]:
    """The emulator's counters."""
    result: dict[str, Any] = admin(client, "GET", "/stats")
    return result


def toggle(client: httpx.Client, notification_id: str) -> httpx.Response:
    """E13 without status (flips the notification)."""
    return client.patch(f"/notification/v1/notifications/{notification_id}/toggle-status", json={})


def test_latency_delays_every_request(server: EmulatorServer, http: httpx.Client) -> None:
    """With 100 ms latency a request takes at least 100 ms."""
    configure(server, latency_ms=100)
    for call in (Call("GET", POSITIONS), Call("POST", "/v1/notifications/mark-all-read", status=201)):
        start = time.perf_counter()
        response = call.send(http)
        assert time.perf_counter() - start >= 0.1
        assert response.status_code == call.status


def test_errors_hit_the_targeted_endpoints_only(server: EmulatorServer, http: httpx.Client) -> None:
    """error_rate 1 on E8: every E8 is the configured 5xx with a JSON body; other endpoints answer."""
    configure(server, error_rate=1, error_status=503, endpoints=["E8"])
    for _ in range(3):
        error_of(http.get(DECISIONS), 503)
    data_of(http.get(POSITIONS))
    data_of(http.get("/decision/v1/delegations"))
    assert stats(http)["faults"] == {"5xx": 3}


def test_errors_hit_the_targeted_methods_only_and_write_nothing(
    server: EmulatorServer, http: httpx.Client, demo: TenantState
) -> None:
    """error_rate 1 on PATCH: a PATCH is a 500 answered before the route (nothing is written); GET works."""
    configure(server, error_rate=1, methods=["PATCH"])
    notification_id = next(iter(demo.notifications))
    before = dict(demo.notifications[notification_id])
    error_of(toggle(http, notification_id), 500)
    data_of(http.get(DECISIONS))
    assert demo.notifications[notification_id] == before
    assert stats(http)["writes"] == {}


def test_max_faults_caps_the_injected_errors(server: EmulatorServer, http: httpx.Client) -> None:
    """With max_faults 2, the third targeted request goes through."""
    configure(server, error_rate=1, max_faults=2)
    assert [http.get(POSITIONS).status_code for _ in range(4)] == [500, 500, 200, 200]


def test_after_writes_delays_the_faults(
    server: EmulatorServer, http: httpx.Client, demo: TenantState
) -> None:
    """With after_writes 1, the first write succeeds and the next targeted request fails."""
    configure(server, error_rate=1, methods=["PATCH"], after_writes=1)
    notification_id = next(iter(demo.notifications))
    data_of(toggle(http, notification_id))
    error_of(toggle(http, notification_id), 500)
    assert stats(http)["writes"] == {f"notification:{notification_id}": 1}


def test_rate_limit_answers_429_with_retry_after(
    server: EmulatorServer, http: httpx.Client, other_http: httpx.Client
) -> None:
    """60 a minute with a burst of 3: three quick requests pass, the fourth is a 429 with an integer
    Retry-After of at least 1 s; the other tenant's budget is its own; admin routes are not limited."""
    configure(server, rate_limit_per_minute=60, rate_burst=3)
    assert [http.get(POSITIONS).status_code for _ in range(3)] == [200, 200, 200]
    limited = http.get(POSITIONS)
    error_of(limited, 429)
    assert int(limited.headers["Retry-After"]) >= 1
    data_of(other_http.get(POSITIONS))
    assert stats(http)["faults"] == {"429": 1}


def test_rate_burst_defaults_to_twice_the_rate(server: EmulatorServer, http: httpx.Client) -> None:
    """2 a minute and no burst given: four requests pass, the fifth waits about 30 s."""
    configure(server, rate_limit_per_minute=2)
    assert [http.get(POSITIONS).status_code for _ in range(4)] == [200] * 4
    limited = http.get(POSITIONS)
    assert limited.status_code == 429
    assert 25 <= int(limited.headers["Retry-After"]) <= 30


def test_a_dropped_write_is_applied(server: EmulatorServer, http: httpx.Client, demo: TenantState) -> None:
    """drop_rate 1 on E13: the client sees a broken connection, yet the write happened (once)."""
    configure(server, drop_rate=1, endpoints=["E13"])
    notification_id = next(iter(demo.notifications))
    status = demo.notifications[notification_id]["status"]
    with pytest.raises(httpx.TransportError):
        toggle(http, notification_id)
    assert demo.notifications[notification_id]["status"] != status
    counters = stats(http)
    assert counters["writes"] == {f"notification:{notification_id}": 1}
    assert counters["faults"] == {"drop": 1}
    data_of(http.get(POSITIONS))


def test_a_malformed_body_is_not_json(server: EmulatorServer, http: httpx.Client) -> None:
    """malformed_rate 1: a success status whose body does not parse as JSON."""
    configure(server, malformed_rate=1, endpoints=["E8"])
    response = http.get(DECISIONS)
    assert response.status_code == 200
    with pytest.raises(ValueError, match=r"."):
        json.loads(response.content)
    data_of(http.get(POSITIONS))
    assert stats(http)["faults"] == {"malformed": 1}


@pytest.mark.parametrize("path", [DECISIONS, "/decision/v1/delegations"])
def test_drift_changes_the_total_between_pages(server: EmulatorServer, http: httpx.Client, path: str) -> None:
    """drift_every 1: each list request inserts a record (and updates one), so totals grow page by page."""
    configure(server, drift_every=1)
    totals = [data_of(http.get(path, params={"page": number}))["total"] for number in (1, 2, 3)]
    assert totals[1] == totals[0] + 1
    assert totals[2] == totals[1] + 1


def test_ignored_parameters_do_not_filter(
    server: EmulatorServer, http: httpx.Client, demo: TenantState
) -> None:
    """A parameter named in ignore_params has no effect, as on a service that does not know it."""
    archived = data_of(http.get(DECISIONS, params={"status": "ARCHIVED"}))["total"]
    configure(server, ignore_params=["status"])
    assert archived < len(demo.decisions)
    assert data_of(http.get(DECISIONS, params={"status": "ARCHIVED"}))["total"] == len(demo.decisions)


def test_invalid_fault_configuration_is_refused(server: EmulatorServer, http: httpx.Client) -> None:
    """The admin route validates faults: a rate above 1 is a 400 naming it; the faults in force stay."""
    error_of(http.put("/_admin/faults", json={"error_rate": 2}), 400, "error_rate")
    assert admin(http, "GET", "/faults") == FaultConfig().model_dump(mode="json", by_alias=True)


# -- admin counters and reset -----------------------------------------------------------------------------


def test_stats_count_requests_per_endpoint(http: httpx.Client, demo: TenantState) -> None:
    """One request of each endpoint (and an unknown route) counts once under its name, with its status;
    admin routes and the OpenAPI document are not counted."""
    for call in endpoint_calls(demo).values():
        assert call.send(http).status_code == call.status
    http.get("/no/such/route")
    http.get("/openapi.json")
    counters = stats(http)
    assert counters["requests"] == {**dict.fromkeys(ENDPOINT_NAMES, 1), "unmatched": 1}
    assert counters["statuses"] == {"200": 16, "201": 2, "404": 1}
    assert counters["inFlight"] == 0


def test_stats_report_peak_requests_in_flight(server: EmulatorServer, http: httpx.Client) -> None:
    """Six concurrent requests held by 200 ms latency: the peak in flight is six."""
    configure(server, latency_ms=200)

    async def burst() -> list[int]:
        headers = {"Authorization": f"Bearer {DEMO_TOKEN}"}
        async with httpx.AsyncClient(base_url=server.base_url, headers=headers) as client:
            responses = await asyncio.gather(*(client.get(POSITIONS) for _ in range(6)))
        return [response.status_code for response in responses]

    assert asyncio.run(burst()) == [200] * 6
    counters = stats(http)
    assert (counters["peakInFlight"], counters["inFlight"], counters["requests"]) == (6, 0, {"E9": 6})


def test_admin_reset_restores_the_seeded_state(
    server: EmulatorServer, http: httpx.Client, demo: TenantState
) -> None:
    """After writes, an issued token and faults, /_admin/reset gives back the seeded records, zero
    counters, the startup faults and no issued token."""
    user_id = list(demo.users)[4]
    seeded = stored(http, "users", user_id)
    data_of(
        http.patch(
            f"/auth/v1/user/update-entities/{user_id}",
            json={"tenantId": DEMO_TENANT_ID, "lastName": "Changed"},
        )
    )
    token = data_of(
        http.post("/auth/v1/tenants/access-key/exchange", json={"accessKey": DEMO_ACCESS_KEY}), 201
    )["token"]
    configure(server, latency_ms=1)
    assert admin(http, "POST", "/reset") == {"tenants": [DEMO_TENANT_ID, OTHER_TENANT_ID]}
    assert stored(http, "users", user_id) == seeded
    assert stats(http)["requests"] == {}
    assert admin(http, "GET", "/faults") == FaultConfig().model_dump(mode="json", by_alias=True)
    error_of(http.get(POSITIONS, headers={"Authorization": f"Bearer {token}"}), 401)


def test_admin_mutation_changes_records_behind_the_clients_back(
    http: httpx.Client, demo: TenantState
) -> None:
    """/_admin/mutate updates and inserts decisions and delegations: the list shows them, with later
    timestamps, and an updated delegation gains a changelog revision."""
    total = len(demo.decisions)
    newest_seeded = max(record["updatedAt"] for record in demo.decisions.values())
    changed = admin(
        http,
        "POST",
        "/mutate",
        json={"decisions_updated": 2, "decisions_inserted": 1, "delegations_updated": 1},
    )
    assert data_of(http.get(DECISIONS))["total"] == total + 1
    recent = data_of(
        http.get(DECISIONS, params={"updatedAtStart": newest_seeded, "fields": "NAME", "limit": 100})
    )
    assert set(changed["decisionsUpdated"]) | set(changed["decisionsInserted"]) <= {
        r["id"] for r in recent["data"]
    }
    delegation_id = changed["delegationsUpdated"][0]
    revisions = http.get(f"/decision/v1/delegations/{delegation_id}/changelog/revision-ids").json()
    assert revisions[-1] == demo.delegation_revisions[delegation_id][-1]
    assert len(revisions) >= 2
