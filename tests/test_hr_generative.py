"""The HR write path under drawn HR exports, over real HTTP (the emulator) and a real DuckDB warehouse.

Each example draws a users export from what HR systems produce around the seeded tenant: its own people
unchanged, renamed, with a new email, with a new worker type, renamed and re-addressed at once, a text
holding a control character (C0 or C1, as a wrong encoding leaves it), and people of the second tenant
(Globex) under the same employee ids; and who runs it: the command line under any ``LOGNAME``/``USER``,
or a Dagster run with any tags. It plans and applies the export as an operator would, then reads every
user of the file back over HTTP.

Property: every write the service received is one a person could see in the file, about the user the
row identifies (the row agrees with them beyond the key), recorded as by the OS account of the process,
never a name from the environment or a tag; every other row is refused with a reason (``identity_mismatch``,
``control_characters``, or the whole file as not about this tenant); users are compared field by field.

``make test`` runs ``ADM_HR_GENERATIVE_EXAMPLES`` examples (default 3): each plans and applies for real.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import duckdb
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from emulator.scale import DEMO_TENANT_ID, DEMO_TOKEN
from emulator.server import EmulatorServer
from models.hr.fields import Values, user_values
from models.users import User
from pipelines.cli import app
from pipelines.hr.dagster import HrSyncConfig
from pipelines.hr.demo_export import Row
from pipelines.hr.identity import FOREIGN_SHARE
from pipelines.hr.policy import HrPolicyResource
from pipelines.hr.workflow import os_user
from pipelines.settings import SyncSettings
from pipelines.warehouse_resource import WarehouseResource
from tests.conftest import fresh, stored
from tests.sync_support import adm_for
from tests.test_hr_identity import globex_rows, write_untenanted
from tests.test_hr_support import hr_sync, row_of, seeded_snapshot, user_id, user_rows

pytest_plugins = ["tests.test_hr_support"]

EXAMPLES = int(os.environ.get("ADM_HR_GENERATIVE_EXAMPLES", "3"))
OVERLAP = [f"E{100000 + n}" for n in range(25)]
"""Employee ids both emulator tenants hold (Globex has 25 people)."""
CONTROLS = "\x01\x07\x1b\x7f\x85\x92\x9b"
"""Control characters an export carries: C0, DEL, and C1 (cp1252's curly quotes read as latin-1)."""
EVENTS = ("same", "rename", "email", "worker_type", "rename_and_email", "control", "foreign")

letters = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzéßø"), min_size=2, max_size=12)
names = letters.map(lambda text: text[:1].upper() + text[1:])


@dataclass
class Drawn:
    """One drawn export row: the seeded employee it names, what happened to it, and the row as written."""

    employee_id: str
    event: str
    row: Row


@st.composite
def exports(draw: st.DrawFn) -> list[Drawn]:
    """Rows about distinct employees of the shared id range, each with one drawn event (written without
    the tenant column, as most HRIS exports are)."""
    ids = draw(st.lists(st.sampled_from(OVERLAP), min_size=1, max_size=6, unique=True))
    ours, theirs = user_rows(), globex_rows()
    drawn = []
    for number, employee_id in enumerate(ids):
        event = draw(st.sampled_from(EVENTS))
        row = dict(row_of(theirs if event == "foreign" else ours, employee_id))
        if event in ("rename", "rename_and_email"):
            row["last_name"] = draw(names)
        if event in ("email", "rename_and_email"):
            row["email"] = f"moved.{number}.{draw(st.integers(0, 999))}@acme-hr.example.com"
        if event == "worker_type":
            row["employee_type"] = draw(names)
        if event == "control":
            field = draw(st.sampled_from(["last_name", "employee_type"]))
            text = draw(names)
            cut = draw(st.integers(1, len(text) - 1))
            row[field] = text[:cut] + draw(st.sampled_from(CONTROLS)) + text[cut:]
        drawn.append(Drawn(employee_id, event, row))
    return drawn


def folded(text: str | None) -> str:
    """A name or an email as the identity rule compares it."""
    return " ".join(unicodedata.normalize("NFC", text or "").split()).casefold()


def written_fields(item: Drawn, current: Values) -> dict[str, str]:
    """The fields a person sees the row change (cells holding a control character are no change)."""
    changed = {
        name: item.row[name]
        for name in ("last_name", "email", "employee_type", "first_name")
        if item.row[name] != (current[name] or "")
    }
    return {name: value for name, value in changed.items() if not any(c in value for c in CONTROLS)}


def identified(item: Drawn, current: Values) -> bool:
    """Whether the row agrees with the user its employee id found beyond that id."""
    email = folded(item.row["email"]) == folded(current["email"] if isinstance(current["email"], str) else "")
    named = all(
        not any(c in item.row[name] for c in CONTROLS)
        and folded(item.row[name]) == folded(str(current[name]))
        for name in ("first_name", "last_name")
    )
    return email or named


def expected_state(drawn: list[Drawn]) -> tuple[dict[str, Values], bool]:
    """Each named user as the service must hold it after the apply, and whether the file is refused
    whole (a material share of rows about other people, or every row refused)."""
    seeded = seeded_snapshot().user_values
    expected: dict[str, Values] = {}
    mismatched = refused = 0
    for item in drawn:
        current = seeded[user_id(item.employee_id)]
        changes = written_fields(item, current)
        wrong = bool(changes or item.event == "control") and not identified(item, current)
        # A foreign row may break other rules (its positions, its manager): refused either way.
        mismatched += wrong
        ok = not wrong and item.event not in ("control", "foreign")
        refused += not ok and item.event != "same"
        after = dict(current)
        if ok and changes:
            after |= changes
            if "last_name" in changes:
                after["display_name"] = f"{current['first_name']} {changes['last_name']}"
        expected[item.employee_id] = after
    whole = (mismatched and mismatched >= FOREIGN_SHARE * len(drawn)) or refused == len(drawn)
    if whole:
        expected = {item.employee_id: seeded[user_id(item.employee_id)] for item in drawn}
    return expected, bool(whole)


def service_users(server: EmulatorServer, employee_ids: list[str]) -> dict[str, Values]:
    """The users as the emulator holds them now, read over HTTP."""
    with httpx.Client(base_url=server.base_url) as client:
        return {
            key: user_values(User.model_validate(stored(client, "users", user_id(key))))
            for key in employee_ids
        }


def plan_actors(warehouse: Path) -> list[tuple[str | None, str | None]]:
    """(planned_by, applied_by) of every plan stored."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute("SELECT planned_by, applied_by FROM hr_plans").fetchall()
    return [(str(planned), applied) for planned, applied in rows]


def by_command_line(server: EmulatorServer, warehouse: Path, export: Path, login: str) -> None:
    """``hr plan`` then ``hr apply`` of its plan, with ``LOGNAME`` and ``USER`` saying ``login``."""
    env = {
        "ADM_BASE_URL": server.base_url,
        "ADM_TOKEN": DEMO_TOKEN,
        "ADM_TENANT_ID": DEMO_TENANT_ID,
        "ADM_RATE_PER_MINUTE": "60000",
        "ADM_HR_MAX_INVALID_SHARE": "1",
        "ADM_ENVIRONMENT": None,
        "ADM_ACCESS_KEY": None,
        "ADM_TENANTS": None,
        "LOGNAME": login,
        "USER": login,
    }
    document = export.with_suffix(".json")
    folder = str(export.parent / "reports")
    common = ["--warehouse", str(warehouse)]
    planned = CliRunner().invoke(
        app, ["hr", "plan", str(export), *common, "--errors", folder, "--json", str(document)], env=env
    )
    assert planned.exit_code in (0, 1), planned.output
    if planned.exit_code == 0:
        plan_id = json.loads(document.read_text(encoding="utf-8"))["plan_id"]
        applied = CliRunner().invoke(app, ["hr", "apply", plan_id, *common, "--no-refresh"], env=env)
        assert applied.exit_code == 0, applied.output


def by_dagster(server: EmulatorServer, warehouse: Path, export: Path, tags: dict[str, str]) -> None:
    """An ``hr_sync`` run of the export launched with ``tags``."""
    store = WarehouseResource(SyncSettings(warehouse=warehouse))
    config = HrSyncConfig(files=[str(export)], errors_dir=str(export.parent / "reports"))
    with dg.instance_for_test() as instance:
        hr_sync.execute_in_process(
            run_config=dg.RunConfig(ops={"hr_plan": config}),
            resources={
                "adm": adm_for(server),
                "warehouse": store,
                "hr_policy": HrPolicyResource(SyncSettings(hr_max_invalid_share=1)),
            },
            instance=instance,
            tags=tags,
            raise_on_error=False,
        )


logins = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz.-_"), min_size=1, max_size=12).filter(
    lambda name: name != os_user()
)
run_tags = st.fixed_dictionaries(
    {},
    optional={
        "user": logins,
        "dagster/sensor_name": st.sampled_from(["hr_drop_folder", "hr_apply_due"]),
        "dagster/schedule_name": st.just("hr_apply_due"),
        "dagster/tick": st.integers(1, 5).map(str),
    },
)


@pytest.mark.timeout(max(600, 60 * EXAMPLES))  # a few seconds an example, far more on a busy machine
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(drawn=exports(), path=st.sampled_from(["cli", "dagster"]), login=logins, tags=run_tags)
def test_every_write_is_one_a_person_sees_about_the_person_the_row_identifies_by_a_real_actor(
    emulator_server: EmulatorServer,
    hr_template: Path,
    drawn: list[Drawn],
    path: str,
    login: str,
    tags: dict[str, str],
) -> None:
    folder = Path(tempfile.mkdtemp(prefix="hr-gen-"))
    try:
        warehouse = folder / "wh.duckdb"
        shutil.copy(hr_template, warehouse)
        for server in fresh(emulator_server):
            export = write_untenanted(folder / "export.csv", [item.row for item in drawn])
            if path == "cli":
                by_command_line(server, warehouse, export, login)
            else:
                by_dagster(server, warehouse, export, tags)
            expected, whole = expected_state(drawn)
            got = service_users(server, list(expected))
            for key, values in expected.items():
                assert got[key] == values, (key, [item.event for item in drawn if item.employee_id == key])
            wrote = set(httpx.get(f"{server.base_url}/_admin/stats").json()["writes"])
            changed = {
                f"user:{user_id(key)}"
                for key, values in expected.items()
                if values != seeded_snapshot().user_values[user_id(key)]
            }
            assert wrote == changed
            actors = plan_actors(warehouse)
            assert whole == (actors == [])
            assert all(planned == os_user() and applied in (None, os_user()) for planned, applied in actors)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
