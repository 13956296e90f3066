"""Fixtures and helpers of the HR sync tests (this module holds no tests; the HR test modules load it with
``pytest_plugins``).

The warehouse is built once per run by the real extract from the seeded emulator and copied for each
test: every test starts from the seeded emulator (the `server` fixture re-seeds it), so the copy is
exactly what an extract would give.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import dagster as dg
import pytest

from emulator import render
from emulator.faults import FaultConfig
from emulator.scale import DEMO_TENANT_ID, SEED_EPOCH, Scale
from emulator.seed import seed_tenant
from emulator.server import EmulatorServer
from emulator.state import TenantState
from models.groups import Group
from models.hr.plan import Plan
from models.users import User
from pipelines.clients import AdmClientResource
from pipelines.hr.apply import ApplyReport
from pipelines.hr.dagster import hr_sync_job
from pipelines.hr.demo_export import (
    GROUP_EXTRA,
    GROUP_FIELDS_ORDER,
    LABEL,
    SEED,
    USER_EXTRA,
    USER_FIELDS_ORDER,
    Row,
    export_groups,
    export_users,
    write_export,
)
from pipelines.hr.mapping import SAMPLES, Mapping, load_mapping
from pipelines.hr.policy import HrPolicyResource
from pipelines.hr.snapshot import Snapshot, SyncRun
from pipelines.hr.workflow import PlanOutcome, PlanRequest, apply_stored, plan_upload
from pipelines.settings import SyncSettings
from pipelines.warehouse_resource import WarehouseResource
from resources.client import AdmClient
from tests.conftest import made_once, set_faults, shared_http
from tests.sync_support import adm_for, settings_for, sync

MAPPING = load_mapping()


SETTINGS = SyncSettings(tenants=[DEMO_TENANT_ID])
"""The settings of the tests' refreshes: the demo tenant (the tests give the resources themselves)."""
hr_sync = hr_sync_job()


def drop_sensor_context(
    root: Path, instance: dg.DagsterInstance | None = None, cursor: str | None = None
) -> dg.SensorEvaluationContext:
    """A tick of the drop-folder sensor over ``root``, with the demo tenant as the configured one."""
    return dg.build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={
            "hr_policy": HrPolicyResource(SyncSettings.model_construct(hr_drop_dir=root)),
            "adm": AdmClientResource(SETTINGS),
        },
    )


@cache
def demo_files() -> tuple[Path, Path]:
    """Fresh copies of the shipped demo exports (users, org units): as exports they are as old as their
    modification time, and a checkout's may be older than an export may be."""
    folder = Path(tempfile.mkdtemp(prefix="hr-demo-"))
    # Made at collection (test modules name the files at import), before the run's scratch folder exists.
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    users, groups = folder / "demo_users.csv", folder / "demo_groups.csv"
    for path in (users, groups):
        shutil.copy(SAMPLES / path.name, path)
    return users, groups


@cache
def seeded_state() -> TenantState:
    """The demo tenant as the emulator seeds it (never modified by the tests)."""
    return seed_tenant(SEED, DEMO_TENANT_ID, Scale(), LABEL)


def user_rows() -> list[Row]:
    """A fresh copy of the seeded users as HR rows, by employee id."""
    return export_users(seeded_state())


def group_rows() -> list[Row]:
    """A fresh copy of the seeded groups as HR org-unit rows, by external id."""
    return export_groups(seeded_state())


def row_of(rows: list[Row], employee_id: str) -> Row:
    """The row of one employee."""
    return next(row for row in rows if row["employee_id"] == employee_id)


def write_users(path: Path, rows: Iterable[Row]) -> Path:
    """An HR users CSV in the default mapping's shape."""
    return write_export(path, list(rows), MAPPING.users, USER_FIELDS_ORDER, USER_EXTRA)


def write_groups(path: Path, rows: Iterable[Row]) -> Path:
    """An HR org-units CSV in the default mapping's shape."""
    return write_export(path, list(rows), MAPPING.groups, GROUP_FIELDS_ORDER, GROUP_EXTRA)


@cache
def seeded_snapshot() -> Snapshot:
    """The seeded tenant as the planner sees it, built without a warehouse (for validation tests)."""
    state = seeded_state()
    users = {key: User.model_validate(render.user(state, key)) for key in state.users}
    groups = {key: Group.model_validate(render.group(state, key)) for key in state.groups}
    positions = {key: str(record["positionName"]) for key, record in state.positions.items()}
    return Snapshot.build(
        DEMO_TENANT_ID, SyncRun("seed", SEED_EPOCH, SEED_EPOCH), users.values(), groups, positions
    )


def user_id(employee_id: str) -> str:
    """The service id of a seeded employee."""
    return next(key for key, user in seeded_state().users.items() if user["employeeId"] == employee_id)


def group_id(external_id: str) -> str:
    """The service id of a seeded group."""
    return next(key for key, group in seeded_state().groups.items() if group["externalId"] == external_id)


@pytest.fixture(scope="session")
def hr_template(emulator_server: EmulatorServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse of the seeded demo tenant, made once per run by the real extract (by the first worker
    that needs it: every worker's emulator seeds the same records)."""

    def extract(folder: Path) -> None:
        emulator_server.emulator.reset()
        set_faults(emulator_server, FaultConfig())
        sync(settings_for(emulator_server, folder / "wh.duckdb"))

    return made_once(tmp_path_factory, "hr_template", extract) / "wh.duckdb"


@pytest.fixture
def hr_store(server: EmulatorServer, hr_template: Path, tmp_path: Path) -> WarehouseResource:
    """This test's copy of the template warehouse, next to a freshly seeded emulator."""
    shutil.copy(hr_template, tmp_path / "wh.duckdb")
    return WarehouseResource(SyncSettings(warehouse=tmp_path / "wh.duckdb", staging_dir=tmp_path / "staging"))


@pytest.fixture
def adm(server: EmulatorServer) -> AdmClientResource:
    """The client resource of the demo tenant on the test's emulator."""
    return adm_for(server)


def plan(
    store: WarehouseResource,
    *files: Path,
    mapping: Mapping = MAPPING,
    strict: bool = False,
    allow: dict[str, str] | None = None,
) -> PlanOutcome:
    """Plan ``files`` for the demo tenant."""
    request = PlanRequest(tuple(files), DEMO_TENANT_ID, mapping, strict, allow or {})
    return plan_upload(store, request, datetime.now(UTC))


TEST_TIMEOUTS = {"connect_timeout_s": 1.0, "write_timeout_s": 1.0, "read_timeout_s": 3.0}
"""Short client timeouts, so that an unanswered write's settling wait (their sum) stays short in tests."""


def client_of(adm: AdmClientResource, **timeouts: float) -> AdmClient:
    """A client of the demo tenant with the tests' short timeouts (or the ones given)."""
    settings = adm.client_settings(DEMO_TENANT_ID)
    return AdmClient(settings.model_copy(update=TEST_TIMEOUTS | timeouts))


def apply(store: WarehouseResource, adm: AdmClientResource, plan_id: str) -> ApplyReport:
    """Apply a stored plan with a client of the demo tenant."""
    with client_of(adm) as client:
        return apply_stored(store, plan_id, client, str(uuid.uuid4()))


def writes(server: EmulatorServer) -> dict[str, int]:
    """The emulator's applied writes per entity (``user:<id>``, ``group:<id>``)."""
    counted: dict[str, int] = shared_http().get(f"{server.base_url}/_admin/stats").json()["writes"]
    return counted


def step_failure(result: dg.ExecuteInProcessResult) -> tuple[str, str]:
    """(step, headline) of a Dagster run's failed step: the first line the run shows (a refused upload's
    first problems follow it, see `tests.test_hr_dagster`)."""
    event = next(event for event in result.all_events if event.is_step_failure)
    data = event.step_failure_data
    description = data.user_failure_data.description if data.user_failure_data else None
    shown = description or data.error.message if data.error else description or ""
    return str(event.step_key), shown.split("\n", 1)[0]


def faults(server: EmulatorServer, **config: object) -> None:
    """Set the emulator's faults."""
    set_faults(server, FaultConfig.model_validate(config))


def half_applicable_plan(store: WarehouseResource, server: EmulatorServer, folder: Path) -> Plan:
    """A stored plan of two users' new last name, with the emulator answering 503 to every write after the
    first: an apply of it ends incomplete, one written and one not."""
    rows = user_rows()
    for key in ("E100010", "E100012"):
        row_of(rows, key)["last_name"] = "Halfway"
    made = plan(store, write_users(folder / "u.csv", rows)).plan
    assert made is not None and len(made.entities) == 2
    faults(server, error_rate=1.0, error_status=503, methods=["PATCH"], after_writes=1)
    return made
