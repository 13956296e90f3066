"""Shared fixtures: one emulator per test session on a free loopback port, reset before each test."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import settings

from emulator.faults import FaultConfig
from emulator.scale import (
    DEMO_ACCESS_KEY,
    DEMO_TENANT_ID,
    DEMO_TOKEN,
    OTHER_TENANT_ID,
    OTHER_TOKEN,
    Scale,
)
from emulator.server import EmulatorServer
from emulator.service import Emulator, EmulatorOptions
from emulator.state import TenantState
from resources.client import AdmClient
from resources.tls import tls_context
from warehouse.commit import connect

# Both emulator tenants are configured, as a deployment would list its tenants, so that each can be a
# Dagster partition. Set before any test module imports the pipelines (partitions are fixed at load).
os.environ.setdefault("ADM_TENANTS", f"{DEMO_TENANT_ID},{OTHER_TENANT_ID}")

# `make test` draws the same examples on every run, so that a red CI is reproducible to the example and
# never a matter of luck; `make generative` (HYPOTHESIS_PROFILE=explore) draws new ones each run.
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def loopback(base_url: str = "", **options: Any) -> httpx.Client:
    """An HTTP client of a test server (``options`` as `httpx.Client` takes them) on the process's one TLS
    context: a client that builds its own reads a few hundred certificates, about 40 ms of CPU, and the
    suite's tests open thousands (the servers are plain HTTP on the loopback; nothing is verified)."""
    return httpx.Client(base_url=base_url, verify=tls_context(), **options)


@cache
def shared_http() -> httpx.Client:
    """One client for the process's requests by full URL (admin routes, GraphQL probes): what
    ``httpx.get(url)`` does, without a client (and a TLS context) per request."""
    return loopback()


@pytest.fixture(scope="session", autouse=True)
def _scratch_in_the_runs_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """This process's temporary files and folders (``tempfile``: the helpers' scratch folders, one a
    hypothesis example, and whatever the code under test makes) under the run's own folder, which pytest
    prunes, not in the system's: a run left about 4,000 folders there."""
    previous = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("tempfile"))
    yield
    tempfile.tempdir = previous


@pytest.fixture(scope="session")
def emulator_server() -> Iterator[EmulatorServer]:
    """The emulator, seeded with the default scale, served over real HTTP for the whole session."""
    with EmulatorServer() as server:
        yield server


SMALL = Scale(users=60, decisions=150, delegations=60, documents=30, groups=10)
"""A small demo tenant, for the sync tests: they are about behaviour, the benchmarks about volume."""

EXIT_WITHIN_S = 15.0
"""How long a command may take to end after a stop signal (the CLI's sync, an HR apply). Well within what a
process supervisor allows (Kubernetes gives 30 s, systemd 90 s). The goal is 5 s and an idle machine exits
in about 1 s; a suite on 2 busy cores took 6.9 s, so the bound leaves that margin."""


@pytest.fixture(scope="session")
def small_emulator_server() -> Iterator[EmulatorServer]:
    """A second session emulator whose demo tenant is `SMALL`."""
    with EmulatorServer(EmulatorOptions(scale=SMALL)) as server:
        yield server


@pytest.fixture
def server(emulator_server: EmulatorServer) -> Iterator[EmulatorServer]:
    """The session emulator, back to its seeded state with no faults and zero counters. Faults are
    cleared again afterwards, so that no fault outlives its test (session fixtures reuse the server)."""
    yield from fresh(emulator_server)


def fresh(server: EmulatorServer) -> Iterator[EmulatorServer]:
    """``server`` re-seeded, without faults and with zero counters for one test (fixture body)."""
    server.emulator.reset()
    server.emulator.reset_stats()
    set_faults(server, FaultConfig())
    yield server
    set_faults(server, FaultConfig())


@pytest.fixture
def client(server: EmulatorServer) -> Iterator[AdmClient]:
    """A typed client of the demo tenant, tuned for fast tests (see tests/test_client_support.py)."""
    # Imported here: the support module itself imports this conftest.
    from tests.test_client_support import make_client

    with make_client(server) as adm_client:
        yield adm_client


@pytest.fixture
def emulator(server: EmulatorServer) -> Emulator:
    """The freshly reset emulator's state and counters."""
    return server.emulator


@pytest.fixture
def http(server: EmulatorServer) -> Iterator[httpx.Client]:
    """A raw HTTP client of the demo tenant (bearer token set)."""
    with loopback(base_url=server.base_url, headers={"Authorization": f"Bearer {DEMO_TOKEN}"}) as client:
        yield client


@pytest.fixture
def other_http(server: EmulatorServer) -> Iterator[httpx.Client]:
    """A raw HTTP client of the second tenant."""
    with loopback(base_url=server.base_url, headers={"Authorization": f"Bearer {OTHER_TOKEN}"}) as client:
        yield client


def set_faults(server: EmulatorServer, faults: FaultConfig) -> None:
    """Replace the emulator's faults through its admin route."""
    response = shared_http().put(f"{server.base_url}/_admin/faults", json=faults.model_dump(mode="json"))
    response.raise_for_status()


@pytest.fixture
def demo(emulator: Emulator) -> TenantState:
    """The demo tenant's in-memory records (for expectations computed independently of the routes)."""
    return emulator.tenants[DEMO_TENANT_ID]


@pytest.fixture
def other(emulator: Emulator) -> TenantState:
    """The second tenant's in-memory records."""
    return emulator.tenants[OTHER_TENANT_ID]


# -- the seeded emulator without re-seeding, for tests that change nothing -------------------------------
# Re-seeding costs ~0.04 s a test (`Emulator.reset` unpickles the seeded tenants). Tests that only read, or
# that expect a request to be refused, use the `seeded*` fixtures: they re-seed only when the state may
# differ from the seed, that is unless the tenants are the very objects a previous `seeded` test left
# behind, unwritten (version 0) with no issued token. Such tests must not change records in memory (or
# must call ``TenantState.touch()`` if they do).


_FIXED_TOKENS = {DEMO_TOKEN, OTHER_TOKEN}


@dataclass
class _Untouched:
    tenants: list[TenantState] = field(default_factory=list)


@pytest.fixture(scope="session")
def _untouched() -> _Untouched:
    return _Untouched()


@pytest.fixture(scope="session")
def _admin_client(emulator_server: EmulatorServer) -> Iterator[httpx.Client]:
    with loopback(base_url=emulator_server.base_url) as client:
        yield client


@pytest.fixture
def seeded(
    emulator_server: EmulatorServer, _untouched: _Untouched, _admin_client: httpx.Client
) -> Iterator[Emulator]:
    """The session emulator in its seeded state, no faults, zero counters; re-seeded only when needed."""
    emulator = emulator_server.emulator
    tenants = list(emulator.tenants.values())
    reused = len(tenants) == len(_untouched.tenants) and all(
        state is left for state, left in zip(tenants, _untouched.tenants, strict=True)
    )
    if not reused or any(state.version for state in tenants) or set(emulator.tokens) != _FIXED_TOKENS:
        emulator.reset()
    _admin_client.put("/_admin/faults", json=FaultConfig().model_dump(mode="json")).raise_for_status()
    emulator.reset_stats()
    yield emulator
    tenants = list(emulator.tenants.values())
    clean = not any(state.version for state in tenants) and set(emulator.tokens) == _FIXED_TOKENS
    _untouched.tenants = tenants if clean else []


@pytest.fixture(scope="session")
def _seeded_clients(emulator_server: EmulatorServer) -> Iterator[dict[str, httpx.Client]]:
    with (
        loopback(
            base_url=emulator_server.base_url, headers={"Authorization": f"Bearer {DEMO_TOKEN}"}
        ) as demo,
        loopback(
            base_url=emulator_server.base_url, headers={"Authorization": f"Bearer {OTHER_TOKEN}"}
        ) as other,
    ):
        yield {"demo": demo, "other": other}


@pytest.fixture
def seeded_http(seeded: Emulator, _seeded_clients: dict[str, httpx.Client]) -> httpx.Client:
    """A client of the demo tenant on the `seeded` emulator."""
    return _seeded_clients["demo"]


@pytest.fixture
def seeded_other_http(seeded: Emulator, _seeded_clients: dict[str, httpx.Client]) -> httpx.Client:
    """A client of the second tenant on the `seeded` emulator."""
    return _seeded_clients["other"]


@pytest.fixture
def seeded_demo(seeded: Emulator) -> TenantState:
    """The demo tenant's records on the `seeded` emulator."""
    return seeded.tenants[DEMO_TENANT_ID]


@pytest.fixture
def seeded_other(seeded: Emulator) -> TenantState:
    """The second tenant's records on the `seeded` emulator."""
    return seeded.tenants[OTHER_TENANT_ID]


# -- helpers of the emulator tests ------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One request of an endpoint: method, path, JSON body, query and the success status it expects."""

    method: str
    path: str
    json: Any = None
    params: dict[str, str] | None = None
    status: int = 200

    def send(self, client: httpx.Client, headers: dict[str, str] | None = None) -> httpx.Response:
        """Send this request with ``client``."""
        return client.request(self.method, self.path, json=self.json, params=self.params, headers=headers)


def endpoint_calls(state: TenantState) -> dict[str, Call]:
    """A valid request of every endpoint but the exchange (E1..E14 and the four lists), by endpoint name,
    on the first record of each kind of ``state`` (E2 deletes the last action): sent in order, all succeed."""
    tenant = state.tenant_id

    def first(records: dict[str, Any]) -> str:
        return next(iter(records))

    return {
        "E1": Call(
            "PATCH",
            f"/auth/v1/user/update-entities/{first(state.users)}",
            {"tenantId": tenant, "lastName": "X"},
        ),
        "E2": Call("DELETE", "/actions/v1/actions", {"ids": [list(state.actions)[-1]]}),
        "E3": Call("PATCH", f"/settings/v1/groups/{first(state.groups)}", {"displayName": "Renamed"}),
        "E4": Call(
            "POST",
            "/report/v1/report/bulk-status-update",
            {"reportIds": [first(state.reports)], "status": "ARCHIVED", "operation": "UPDATE"},
            status=201,
        ),
        "E5": Call("PATCH", "/actions/v1/actions/validate-action", {"tenantId": tenant}),
        "E6": Call("PATCH", f"/actions/v1/actions/{first(state.actions)}", {"actionName": "Renamed"}),
        "E7": Call("PUT", f"/matrix/v1/matrix/{first(state.matrices)}", {"matrixName": "Renamed"}),
        "E8": Call("GET", "/decision/v1/decisions"),
        "E9": Call("GET", "/auth/v1/user/positions"),
        "E10": Call("GET", f"/settings/v1/action-templates/{first(state.action_templates)}"),
        "E11": Call("GET", f"/decision/v1/delegations/{first(state.delegations)}/changelog/revision-ids"),
        "E12": Call("GET", f"/document/v1/documents/{first(state.documents)}/changelog/revision-ids"),
        "E13": Call(
            "PATCH", f"/notification/v1/notifications/{first(state.notifications)}/toggle-status", {}
        ),
        "E14": Call("POST", "/v1/notifications/mark-all-read", status=201),
        "users": Call("GET", "/auth/v1/user"),
        "groups": Call("GET", "/settings/v1/groups", params={"tenantId": tenant}),
        "positions": Call("GET", "/settings/v1/positions", params={"tenantId": tenant}),
        "delegations": Call("GET", "/decision/v1/delegations"),
    }


ENDPOINT_NAMES = (*(f"E{number}" for number in range(1, 15)), "users", "groups", "positions", "delegations")
"""The names `endpoint_calls` keys its requests by (also the names the emulator counts traffic under)."""


def data_of(response: httpx.Response, status: int = 200) -> Any:
    """The ``data`` of a success envelope, after checking the status and the envelope around it."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["statusCode"] == status
    assert body["message"] == "Success"
    return body["data"]


def error_of(response: httpx.Response, status: int, field: str | None = None) -> dict[str, Any]:
    """The JSON error body of ``response``, checked: ``status``, ``statusCode``, ``message``, ``error``
    and, when ``field`` is given, the offending ``field``."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["statusCode"] == status
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["error"], str) and body["error"]
    if field is not None:
        assert body.get("field") == field, body
    return body


Params = Mapping[str, Any] | Sequence[tuple[str, Any]]
"""Query parameters: a mapping, or pairs (to repeat a name)."""


def fetch_all(client: httpx.Client, path: str, params: Params = ()) -> list[dict[str, Any]]:
    """Every item of a paged list, in order, 100 per page; checks that ``total`` holds on every page."""
    pairs = list(params.items()) if isinstance(params, Mapping) else list(params)
    items: list[dict[str, Any]] = []
    number, total = 1, None
    while total is None or len(items) < total:
        page = data_of(client.get(path, params=[*pairs, ("page", number), ("limit", 100)]))
        assert total in (None, page["total"])
        total = page["total"]
        if not page["data"]:
            break
        items += page["data"]
        number += 1
    assert len(items) == total
    return items


def admin(client: httpx.Client, method: str, path: str, **kwargs: Any) -> Any:
    """Call an admin route (it needs no token) with ``client`` and return its JSON."""
    response = client.request(method, f"/_admin{path}", **kwargs)
    response.raise_for_status()
    return response.json()


def stored(client: httpx.Client, kind: str, record_id: str, tenant_id: str = DEMO_TENANT_ID) -> Any:
    """A stored record as the admin route renders it (``kind`` is the state's collection name)."""
    return admin(client, "GET", f"/records/{kind}/{record_id}", params={"tenant_id": tenant_id})


__all__ = [
    "DEMO_ACCESS_KEY",
    "DEMO_TENANT_ID",
    "DEMO_TOKEN",
    "ENDPOINT_NAMES",
    "OTHER_TENANT_ID",
    "OTHER_TOKEN",
    "Call",
    "admin",
    "copy_of",
    "data_of",
    "endpoint_calls",
    "error_of",
    "example_warehouse",
    "fetch_all",
    "loopback",
    "made_once",
    "set_faults",
    "shared_http",
    "stored",
]


def made_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]) -> Path:
    """A folder that ``make(folder)`` fills, made once for the whole run: the suite's worker processes
    (pytest-xdist) share the run's temporary root; the first to ask makes the folder while the others
    wait on a lock, then find it made. Without workers, a folder of this session's own."""
    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's root, shared by its workers (each has a folder of its own in it)
    folder = root / "made_once" / name
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / _MADE).exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / _MADE).touch()
    return folder


_MADE = ".made"
"""The file `made_once` writes last in a folder it made: a folder without it was left half made."""


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated, empty warehouse, made once per run by `warehouse.commit.connect` (a stamped copy of the
    shipped empty warehouse: `warehouse.empty`) and copied wherever a test needs a new warehouse but is not
    about creating one: a new warehouse costs about 0.15 s of CPU, a copy of this one a millisecond. A copy
    is the very file the first connection would have made (same storage format, same schema and comments)
    but for the instants of its bookkeeping rows; creating and migrating files is tested on new files
    (tests/test_baseline.py, tests/test_dictionary.py, tests/test_recovery.py,
    tests/test_pipeline_definitions.py, tests/test_tenant_ids.py, the CLI's tests, the HR template)."""
    folder = made_once(tmp_path_factory, "template", lambda made: connect(made / "warehouse.duckdb").close())
    return folder / "warehouse.duckdb"


def copy_of(template: Path, path: Path) -> Path:
    """``path``, a copy of ``template`` (a closed warehouse file; its folder made if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, path)
    return path


@pytest.fixture
def migrated(template: Path, tmp_path: Path) -> Path:
    """A migrated, empty warehouse of this test (``wh.duckdb`` in its folder), copied from `template`."""
    return copy_of(template, tmp_path / "wh.duckdb")


@pytest.fixture(scope="session")
def synced_template(
    small_emulator_server: EmulatorServer, template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The migrated warehouse after one sync of the freshly seeded `SMALL` emulator's demo tenant (a first
    run: every list read whole), made once per worker (its emulator is the worker's own) and copied by
    `synced` wherever a test needs that first sync but is not about it: a sync costs about 2 s, a copy a
    millisecond. The seed fixes every id and timestamp the emulator serves (they are drawn from the seed and
    dated before ``SEED_EPOCH``, never from the time of a reset), so the freshly reset emulator of a test
    serves exactly what it served when this was made, and the copy is what the test's own first run would
    have committed but for the run's id and the instants it ran and committed at (checked by
    tests/test_pipeline_extract.py::test_the_synced_template_is_what_a_first_run_commits)."""
    # Imported here: the support module itself imports this conftest.
    from tests.sync_support import settings_for, sync

    server = small_emulator_server
    server.emulator.reset()
    set_faults(server, FaultConfig())
    path = copy_of(template, tmp_path_factory.mktemp("synced") / "warehouse.duckdb")
    sync(settings_for(server, path))
    server.emulator.reset_stats()
    return path


@pytest.fixture
def synced(synced_template: Path, tmp_path: Path) -> Path:
    """This test's warehouse (``wh.duckdb`` in its folder) after the first sync of the freshly seeded
    `SMALL` emulator's demo tenant: a copy of `synced_template`. For tests on the small emulator, fresh."""
    return copy_of(synced_template, tmp_path / "wh.duckdb")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where a property test's examples keep their warehouses (`example_warehouse`)."""
    return tmp_path_factory.mktemp("examples")


def example_warehouse(template: Path, folder: Path) -> Path:
    """A copy of ``template`` for one example of a property test, in a folder of its own under ``folder``:
    the staging and resume state beside a warehouse is its tenant's (a failed run's revision lists wait
    there for the next run to reuse), and each example's service is a new one under the same tenant id."""
    return copy_of(template, folder / str(uuid.uuid4()) / "warehouse.duckdb")


# -- the order of the test files -----------------------------------------------------------------------------
# `make test` deals the tests one by one to parallel workers (pytest-xdist, --dist loadgroup; the files marked
# with an `xdist_group` go whole to one worker): a worker is handed the next test of the collection whenever
# it runs dry, and the run lasts as long as its busiest worker. The files with the longest tests therefore
# start first, the short tests fill in around them; xdist's own ordering (the groups with the most tests
# first) is off: --no-loadscope-reorder in the Makefile. Without xdist (`pytest -p no:xdist`) the order is
# only an order.

LONGEST_FIRST = (
    "test_pipeline_dagster_dev.py",
    "test_sync_generative.py",
    "test_recovery.py",
    "test_unchanged.py",
    "test_hr_safety.py",
    "test_hr_apply.py",
    "test_pipeline_dagster_processes.py",
    "test_hr_dagster.py",
    "test_analyst_truth.py",
    "test_history.py",
    "test_analytics.py",
    "test_views.py",
    "test_publish.py",
    "test_hr_cli.py",
    "test_hr_generative.py",
    "test_sync_quirks.py",
    "test_pipeline_extract.py",
    "test_pipeline_contract.py",
    "test_sync_evidence.py",
    "test_hr_effective.py",
    "test_hr_identity.py",
    "test_pipeline_dagster.py",
    "test_emulator_openapi.py",
    "test_hr_revert.py",
    "test_hr_files.py",
    "test_tenant_ids.py",
    "test_hr_plan.py",
    "test_hr_drop.py",
)
"""Test files by the time of their longest tests, longest first (measured per test, CPU and wall; a rough
order is enough). Files not named here follow, in collection order."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the files of `LONGEST_FIRST` first, in its order (a stable sort: tests keep their order)."""
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
