"""Dagster's GraphQL client on ``dagster dev`` (webserver, daemon, run queue, run workers) against the real
emulator. (A file of its own: ``dagster dev`` and its processes take most of a minute, and the suite's
workers take a file each.)"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import httpx
import pytest
from dagster_graphql import DagsterGraphQLClient

from emulator.server import EmulatorServer
from pipelines.settings import SyncSettings
from pipelines.tenant_tags import TENANT_NAME_TAG, TENANT_TAG
from tests.conftest import DEMO_TENANT_ID, OTHER_TENANT_ID, fresh, shared_http
from tests.dagster_support import (
    PARTITION,
    new_dagster_home,
    synced_then_deleted_at_the_plan,
    too_many_requests,
)
from tests.sync_support import DAGSTER, ROOT, query, settings_for

STARTUP_S = 300
"""Bound on `dagster dev`'s start (webserver, daemon, code server): 20-30 s idle, minutes under load."""
RUN_S = 420
"""Bound on one run, from its submission (a run worker's start, a small tenant's sync at the plan's rate)."""
STOP_S = 60
"""How long `dagster dev` may take to stop on SIGTERM before its process group is killed."""
LOCATION = "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus } } } }"
"""The code locations of the webserver and whether each has loaded (GraphQL)."""


@pytest.fixture
def server(small_emulator_server: EmulatorServer) -> Iterator[EmulatorServer]:
    """The small session emulator, fresh (these tests are about launch paths, not volume)."""
    yield from fresh(small_emulator_server)


@pytest.fixture
def settings(server: EmulatorServer, migrated: Path) -> SyncSettings:
    """Settings of a new warehouse (a copy of the migrated template), pointed at the session emulator."""
    return settings_for(server, migrated)


@pytest.fixture
def dagster_home(tmp_path: Path) -> Path:
    """A Dagster instance folder with the project's instance settings (run concurrency per tenant), its
    queue read every second."""
    home = new_dagster_home(tmp_path)
    instance = home / "dagster.yaml"
    project = instance.read_text()
    queue = "  class: TenantRunCoordinator\n"
    assert queue in project
    # The test's instance only: the project's run queue looks for runs to start every second instead of
    # every 5 (the per-tenant limit is what the test is about, not how often the queue is read).
    tick = f"{queue}  config:\n    dequeue_interval_seconds: 1\n"
    instance.write_text(project.replace(queue, tick) + "telemetry:\n  enabled: false\n")
    return home


# dagster-graphql's client calls gql in a way gql deprecates; not ours to fix.
@pytest.mark.filterwarnings("ignore:Using variable_values:DeprecationWarning")
# dagster dev, its daemon and two run workers start: 40-80 s, minutes on a loaded machine; the waits
# inside are bounded (STARTUP_S, RUN_S) and fail saying which.
@pytest.mark.timeout(STARTUP_S + 2 * RUN_S + 2 * STOP_S + 60)
def test_graphql_client_on_dagster_dev_runs_full_refresh_fully_one_run_per_tenant_at_a_time(
    server: EmulatorServer, settings: SyncSettings, dagster_home: Path, tmp_path: Path
) -> None:
    """Dagster's GraphQL client with no run config, on `dagster dev` (queue, daemon, run workers): the
    full refresh reads fully and finds deletions; a nightly run of the same tenant submitted at once waits
    for it in the queue; no 429 at the plan's rate. Both carry their tenant's tags, which GraphQL's
    launchRun does not add (the project's run queue does): the runs list finds them by tenant."""
    deleted, env = synced_then_deleted_at_the_plan(server, settings, dagster_home)
    env["ADM_TENANTS"] = f"acme={DEMO_TENANT_ID},{OTHER_TENANT_ID}"
    with _dagster_dev(env, tmp_path / "dagster_dev.log") as client:
        full = client.submit_job_execution("full_refresh", tags=PARTITION)
        nightly = client.submit_job_execution("nightly_sync", tags=PARTITION)
        assert _wait(client, full) == "SUCCESS"
        assert _wait(client, nightly) == "SUCCESS"
    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        tagged = instance.get_runs(dg.RunsFilter(tags={TENANT_TAG: DEMO_TENANT_ID, TENANT_NAME_TAG: "acme"}))
    assert {run.run_id for run in tagged} == {full, nightly}

    runs = query(
        settings.warehouse, "SELECT run_id, mode, started_at, finished_at FROM sync_runs ORDER BY 3"
    )[1:]
    assert [(run_id, mode) for run_id, mode, _, _ in runs] == [(full, "full"), (nightly, "incremental")]
    assert runs[1][2] >= runs[0][3], "the second run of the tenant started before the first had finished"
    marked = query(settings.warehouse, "SELECT id FROM decisions WHERE is_deleted AND deleted_at > synced_at")
    assert {row[0] for row in marked} == deleted
    assert too_many_requests(server) == 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _dagster_dev(env: dict[str, str], log: Path) -> Iterator[DagsterGraphQLClient]:
    """`dagster dev` in its own process group, once its webserver answers and its code location has
    loaded (a launch before that fails); ended (whole tree) on exit."""
    port = _free_port()
    with log.open("w") as output:
        process = subprocess.Popen(
            [str(DAGSTER), "dev", "-m", "pipelines.definitions", "-p", str(port)],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + STARTUP_S
        while not _location_loaded(f"http://127.0.0.1:{port}"):
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"not ready in {STARTUP_S} s\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
        yield DagsterGraphQLClient("127.0.0.1", port_number=port)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:  # a loaded machine: its shutdown is not what the test is about
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=STOP_S)


def _location_loaded(address: str) -> bool:
    """Whether the webserver at ``address`` answers and its code location has loaded."""
    try:
        response = shared_http().post(f"{address}/graphql", json={"query": LOCATION}, timeout=5)
        response.raise_for_status()
    except httpx.HTTPError:
        return False
    entries = response.json()["data"]["workspaceOrError"].get("locationEntries", [])
    return bool(entries) and all(entry["loadStatus"] == "LOADED" for entry in entries)


def _wait(client: DagsterGraphQLClient, run_id: str) -> str:
    """Poll a run until it ends; its final status."""
    deadline = time.monotonic() + RUN_S
    while time.monotonic() < deadline:
        status = client.get_run_status(run_id).value
        if status in {"SUCCESS", "FAILURE", "CANCELED"}:
            return status
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} did not end within {RUN_S} s")
