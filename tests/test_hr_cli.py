"""The ``authority-sync hr`` commands end to end, the secrets they must never show, the demo samples and
the benchmark's generator."""

from __future__ import annotations

import csv
import json
import logging
import os
import pwd
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from emulator.scale import DEMO_TENANT_ID, DEMO_TOKEN, Scale
from emulator.server import EmulatorServer
from pipelines.cli import app
from pipelines.clients import AdmClientResource
from pipelines.hr.demo_export import USER_FIELDS_ORDER, benchmark_users_csv, write_demo_export
from pipelines.hr.mapping import SAMPLES
from pipelines.hr.policy import HrPolicyResource
from pipelines.hr.workflow import allow, apply_stored, os_user
from pipelines.settings import SyncSettings
from pipelines.warehouse_resource import WarehouseResource
from tests.conftest import EXIT_WITHIN_S
from tests.test_hr_support import (
    MAPPING,
    client_of,
    demo_files,
    faults,
    row_of,
    user_rows,
    write_users,
    writes,
)
from tests.test_recovery import FIRST_RELEASE, first_release_warehouse
from warehouse.commit import connect
from warehouse.hr_store import allowances
from warehouse.migrate import available

pytest_plugins = ["tests.test_hr_support"]

DEMO = [str(path) for path in demo_files()]


@pytest.fixture
def service_env(server: EmulatorServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The CLI pointed at the test's emulator through the environment, working in ``tmp_path``."""
    monkeypatch.delenv("ADM_ENVIRONMENT", raising=False)
    monkeypatch.delenv("ADM_ACCESS_KEY", raising=False)
    monkeypatch.setenv("ADM_BASE_URL", server.base_url)
    monkeypatch.setenv("ADM_TOKEN", DEMO_TOKEN)
    monkeypatch.setenv("ADM_TENANT_ID", DEMO_TENANT_ID)
    monkeypatch.setenv("ADM_RATE_PER_MINUTE", "60000")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def hr(*args: str) -> tuple[int, str]:
    """Run ``authority-sync hr ARGS``; its exit code and output."""
    result = CliRunner().invoke(app, ["hr", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_plan_apply_status_from_the_command_line_never_show_the_token(
    service_env: Path, hr_store: WarehouseResource, server: EmulatorServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    code, planned = hr(
        "plan", *DEMO, "--warehouse", str(hr_store.file), "--csv", "plan.csv", "--json", "plan.json"
    )
    assert code == 0, planned
    document = json.loads(Path("plan.json").read_text(encoding="utf-8"))
    assert document["status"] == "ready" and document["plan_id"] in planned
    code, applied = hr("apply", document["plan_id"], "--warehouse", str(hr_store.file))
    assert code == 0, applied
    assert "applied 19" in applied and "Warehouse refreshed" in applied
    assert len(writes(server)) == 19
    listed = (
        hr("status", "--warehouse", str(hr_store.file))[1]
        + hr("status", document["plan_id"], "--warehouse", str(hr_store.file))[1]
    )
    assert document["plan_id"] in listed
    files = [Path("plan.csv"), Path("plan.json"), *Path("data/hr/reports").glob("*.csv")]
    texts = [planned, applied, listed, caplog.text, *(path.read_text(encoding="utf-8-sig") for path in files)]
    assert all(DEMO_TOKEN not in text for text in texts)


def test_a_refused_token_is_reported_without_being_shown(
    service_env: Path, hr_store: WarehouseResource, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert hr("plan", *DEMO, "--warehouse", str(hr_store.file), "--json", "plan.json")[0] == 0
    plan_id = json.loads(Path("plan.json").read_text(encoding="utf-8"))["plan_id"]
    monkeypatch.setenv("ADM_TOKEN", "adm-very-secret-token")
    code, output = hr("apply", plan_id, "--warehouse", str(hr_store.file), "--no-refresh")
    assert code == 1 and "401" in output
    assert "adm-very-secret-token" not in output


def test_plan_csv_holds_every_change_made_safe(service_env: Path, hr_store: WarehouseResource) -> None:
    code, _ = hr("plan", *DEMO, "--warehouse", str(hr_store.file), "--csv", "plan.csv")
    assert code == 0
    with Path("plan.csv").open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    kinds = {row["change_kind"] for row in rows}
    assert {
        "position",
        "manager",
        "group",
        "deactivation",
        "email",
        "group_reparent",
        "needs_creation",
    } <= kinds
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row.values())


def test_strict_and_blocked_plans_exit_non_zero(service_env: Path, hr_store: WarehouseResource) -> None:
    code, output = hr("plan", *DEMO, "--warehouse", str(hr_store.file), "--strict")
    assert code == 1 and "--strict" in output
    strict = Path("strict.toml")
    mapping = (SAMPLES / "mapping.toml").read_text(encoding="utf-8")
    strict.write_text(
        mapping.replace("manager = { max_count = 50", "manager = { max_count = 1"), encoding="utf-8"
    )
    code, output = hr(
        "plan", *DEMO, "--warehouse", str(hr_store.file), "--mapping", str(strict), "--json", "b.json"
    )
    assert code == 3 and "Blocked by safety thresholds: manager" in output
    # Applying it is blocked the same way, with the same exit code the docs give.
    blocked = json.loads(Path("b.json").read_text(encoding="utf-8"))["plan_id"]
    code, output = hr("apply", blocked, "--warehouse", str(hr_store.file), "--no-refresh")
    assert code == 3 and "blocked by safety thresholds (manager)" in output
    allowed = ("--allow", "manager", "--reason", "reorg")
    code, output = hr("plan", *DEMO, "--warehouse", str(hr_store.file), "--mapping", str(strict), *allowed)
    assert code == 0 and "allowed: reorg" in output
    code, output = hr("plan", *DEMO, "--warehouse", str(hr_store.file), "--allow", "manager")
    assert code == 2 and "--reason" in output


def test_a_refused_apply_never_replaces_the_stored_lift(
    service_env: Path, hr_store: WarehouseResource
) -> None:
    strict = Path("strict.toml")
    mapping = (SAMPLES / "mapping.toml").read_text(encoding="utf-8")
    strict.write_text(
        mapping.replace("manager = { max_count = 50", "manager = { max_count = 1"), encoding="utf-8"
    )
    lift = ("--mapping", str(strict), "--allow", "manager", "--reason", "reorg", "--json", "plan.json")
    assert hr("plan", *DEMO, "--warehouse", str(hr_store.file), *lift)[0] == 0
    plan_id = json.loads(Path("plan.json").read_text(encoding="utf-8"))["plan_id"]
    assert hr("apply", plan_id, "--warehouse", str(hr_store.file), "--no-refresh")[0] == 0
    again = ("--allow", "manager", "--reason", "something else", "--approved-by", "mallory", "--no-refresh")
    code, output = hr("apply", plan_id, "--warehouse", str(hr_store.file), *again)
    assert code == 1 and "final" in output
    con = connect(hr_store.file)
    try:
        lifted = allowances(con, plan_id)
    finally:
        con.close()
    assert [(a.kind, a.reason, a.approved_by) for a in lifted] == [("manager", "reorg", os_user())]
    status = hr("status", plan_id, "--warehouse", str(hr_store.file))[1]
    assert f"Threshold manager lifted by {os_user()}" in status and "reorg" in status


def test_the_demo_export_reproduces_the_committed_samples(tmp_path: Path) -> None:
    users, groups = write_demo_export(tmp_path)
    assert users.read_bytes() == (SAMPLES / "demo_users.csv").read_bytes()
    assert groups.read_bytes() == (SAMPLES / "demo_groups.csv").read_bytes()


def test_the_benchmark_export_changes_the_requested_share(tmp_path: Path) -> None:
    path = benchmark_users_csv(tmp_path / "bench.csv", rows=400, changed_share=0.05, scale=Scale(users=400))
    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    plain = benchmark_users_csv(tmp_path / "plain.csv", rows=400, changed_share=0.0, scale=Scale(users=400))
    with plain.open(encoding="utf-8-sig", newline="") as handle:
        baseline = list(csv.DictReader(handle))
    exported = [MAPPING.users.columns[name] for name in USER_FIELDS_ORDER]  # no optional Effective Date
    assert len(rows) == 400 and list(rows[0]) == [*exported, "Cost Center"]
    assert sum(1 for row, base in zip(rows, baseline, strict=True) if row != base) == 20


def test_an_upload_whose_every_row_is_invalid_exits_non_zero(
    service_env: Path, hr_store: WarehouseResource
) -> None:
    rows = user_rows()
    for row in rows[:3]:
        row["email"] = "not-an-email"
    code, output = hr("plan", str(write_users(Path("bad.csv"), rows[:3])), "--warehouse", str(hr_store.file))
    assert code == 1 and "every row of the upload is invalid (3)" in output
    assert "Nothing to change" not in output


def test_the_needs_creation_table_honours_the_limit(service_env: Path, hr_store: WarehouseResource) -> None:
    rows = user_rows()
    hires = [
        dict(rows[10], employee_id=f"E9{number:05}", email=f"hire{number}@acme.example.com")
        for number in range(5)
    ]
    code, output = hr(
        "plan", str(write_users(Path("hires.csv"), hires)), "--warehouse", str(hr_store.file), "--limit", "2"
    )
    assert code == 0, output
    assert "Needs creation: 5" in output and "E900001" in output and "E900004" not in output
    assert "and 3 more" in output


def test_cp1252_semicolon_export_with_file_options(service_env: Path, hr_store: WarehouseResource) -> None:
    rows = user_rows()
    row_of(rows, "E100010")["first_name"] = "Zoë"
    text = write_users(Path("utf8.csv"), [row_of(rows, "E100010")]).read_text(encoding="utf-8-sig")
    Path("cp1252.csv").write_bytes(text.replace('","', '";"').encode("cp1252"))
    args = ("plan", "cp1252.csv", "--warehouse", str(hr_store.file), "--json", "plan.json")
    code, output = hr(*args, "--encoding", "cp1252", "--delimiter", ";")
    assert code == 0, output
    changes = json.loads(Path("plan.json").read_text(encoding="utf-8"))["changes"]
    found = sorted((change["field"], change["after_label"]) for change in changes)
    assert found == [("display_name", f"Zoë {row_of(rows, 'E100010')['last_name']}"), ("first_name", "Zoë")]
    code, output = hr(*args)
    assert code == 1 and "--encoding" in output and "Traceback" not in output
    code, output = hr(*args, "--encoding", "klingon")
    assert code == 2 and "klingon" in output and "Traceback" not in output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("--allow", "manger", "--reason", "typo"), "no threshold named 'manger'"),
        (("--allow", "position", "--reason", "not watched"), "no threshold named 'position'"),
    ],
)
def test_a_mistyped_allow_is_a_usage_error(
    service_env: Path, hr_store: WarehouseResource, arguments: tuple[str, ...], message: str
) -> None:
    code, output = hr("plan", *DEMO, "--warehouse", str(hr_store.file), *arguments)
    assert code == 2 and message in output and "Traceback" not in output


@pytest.mark.parametrize(("name", "message"), [(".", "is a directory"), ("gone.csv", "does not exist")])
def test_a_directory_or_a_missing_file_is_a_usage_error(
    service_env: Path, hr_store: WarehouseResource, name: str, message: str
) -> None:
    code, output = hr("plan", name, "--warehouse", str(hr_store.file))
    assert code == 2 and message in output and "Traceback" not in output


def planned_demo(warehouse: str) -> str:
    """Plan the demo export from the command line; the plan's id."""
    code, output = hr("plan", *DEMO, "--warehouse", warehouse, "--json", "plan.json", "--csv", "plan.csv")
    assert code == 0, output
    plan_id: str = json.loads(Path("plan.json").read_text(encoding="utf-8"))["plan_id"]
    return plan_id


def csv_rows(path: Path) -> list[dict[str, str]]:
    """A CSV file's rows."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def test_show_prints_and_exports_a_stored_plan_later(service_env: Path, hr_store: WarehouseResource) -> None:
    plan_id = planned_demo(str(hr_store.file))
    code, output = hr(
        "show", plan_id, "--warehouse", str(hr_store.file), "--csv", "later.csv", "--limit", "5"
    )
    assert code == 0, output
    assert plan_id in output and "demo_users.csv" in output and "... and" in output
    later, planned = csv_rows(Path("later.csv")), csv_rows(Path("plan.csv"))
    assert len(later) == len(planned) > 5

    def changes(rows: list[dict[str, str]]) -> set[tuple[str, str, str, str]]:
        return {(row["hr_key"], row["field"], row["change_kind"], row["before"]) for row in rows}

    assert changes(later) == changes(planned)
    assert hr("show", "no-such-plan", "--warehouse", str(hr_store.file))[0] == 2


def test_an_incomplete_apply_exits_non_zero_and_status_shows_its_problems(
    service_env: Path, hr_store: WarehouseResource, server: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # plan ids unwrapped
    plan_id = planned_demo(str(hr_store.file))
    faults(server, error_rate=1.0, methods=["PATCH"])
    code, output = hr("apply", plan_id, "--warehouse", str(hr_store.file), "--no-refresh")
    assert code == 1 and "incomplete" in output
    code, listed = hr("status", "--warehouse", str(hr_store.file), "--problems")
    assert code == 0 and plan_id in listed and "incomplete" in listed
    code, entities = hr("status", plan_id, "--warehouse", str(hr_store.file), "--problems")
    assert code == 0 and entities.count("not applied") >= 19
    faults(server)
    code, output = hr("apply", plan_id, "--warehouse", str(hr_store.file), "--no-refresh")
    assert code == 0 and "applied 19" in output
    assert plan_id not in hr("status", "--warehouse", str(hr_store.file), "--problems")[1]
    assert "not applied" not in hr("status", plan_id, "--warehouse", str(hr_store.file), "--problems")[1]


def test_an_expired_plan_is_refused_in_one_line(
    service_env: Path, hr_store: WarehouseResource, server: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    plan_id = planned_demo(str(hr_store.file))
    monkeypatch.setenv("ADM_HR_PLAN_MAX_AGE_HOURS", "0.000001")
    code, output = hr("apply", plan_id, "--warehouse", str(hr_store.file), "--no-refresh")
    assert code == 1 and "expired" in output and len(output.strip().splitlines()) == 1
    assert writes(server) == {}
    assert "ready (expired)" in hr("status", "--warehouse", str(hr_store.file))[1]


def test_status_while_the_warehouse_is_written_says_so_in_one_line(
    service_env: Path, hr_store: WarehouseResource, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADM_LOCK_WAIT_S", "0.5")
    hold = (
        "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(60)"
    )
    writer = subprocess.Popen([sys.executable, "-c", hold, hr_store.file], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "held"
        code, output = hr("status", "--warehouse", str(hr_store.file))
        applied = hr("apply", "any-plan", "--warehouse", str(hr_store.file), "--no-refresh")
    finally:
        writer.kill()
        writer.wait()
    assert code == 1 and "Traceback" not in output
    assert "is held by another process after waiting 0.5 s" in " ".join(output.split())
    assert applied[0] == 1 and "is in use" in " ".join(applied[1].split())


def test_who_plans_lifts_and_applies_is_the_os_account_and_four_eyes_refuses_the_planner(
    adm: AdmClientResource, service_env: Path, hr_store: WarehouseResource, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``adm`` first: made before ``service_env`` puts the token in the environment (it stays a value).
    monkeypatch.setenv("ADM_HR_FOUR_EYES", "true")
    # The environment says whatever its setter likes; the account of the process's real uid is who acts.
    me = pwd.getpwuid(os.getuid()).pw_name
    for variable in ("LOGNAME", "USER"):
        monkeypatch.setenv(variable, "hr.planner")
    strict = Path("strict.toml")
    mapping = (SAMPLES / "mapping.toml").read_text(encoding="utf-8")
    strict.write_text(mapping.replace("manager = { max_count = 50", "manager = { max_count = 1"))
    code, _ = hr(
        "plan", *DEMO, "--warehouse", str(hr_store.file), "--mapping", str(strict), "--json", "p.json"
    )
    plan_id = json.loads(Path("p.json").read_text(encoding="utf-8"))["plan_id"]
    lift = ("--allow", "manager", "--reason", "reorg", "--warehouse", str(hr_store.file), "--no-refresh")
    code, output = hr("apply", plan_id[:8], *lift)  # a prefix of the id names the plan
    assert code == 1 and f"ADM_HR_FOUR_EYES: {me} made this plan" in output
    code, output = hr("apply", plan_id[:8], *lift, "--approved-by", "hr.lead")
    assert code == 2 and "cannot name another" in output
    for variable in ("LOGNAME", "USER"):
        monkeypatch.setenv(variable, "hr.lead")  # before: the lift and the apply went through as hr.lead
    code, output = hr("apply", plan_id[:8], *lift)
    assert code == 1 and f"ADM_HR_FOUR_EYES: {me} made this plan" in output
    # Another person (an account of their own) lifts; the planner still cannot apply what they planned.
    policy = HrPolicyResource(SyncSettings(hr_four_eyes=True))
    allow(hr_store, plan_id, {"manager": "reorg"}, "hr.lead", policy)
    code, output = hr("apply", plan_id, "--warehouse", str(hr_store.file), "--no-refresh")
    assert code == 1 and f"{me} made this plan, so another person must apply it" in " ".join(output.split())
    with client_of(adm) as client:
        assert apply_stored(hr_store, plan_id, client, "run", policy, actor="hr.lead").status == "applied"
    code, listed = hr("status", plan_id[:8], "--json", "--warehouse", str(hr_store.file))
    shown = json.loads(listed)
    assert (shown["plan_id"], shown["planned_by"], shown["applied_by"]) == (plan_id, me, "hr.lead")
    assert [(lift["kind"], lift["approved_by"]) for lift in shown["lifts"]] == [("manager", "hr.lead")]
    code, listed = hr("status", "--json", "--warehouse", str(hr_store.file))
    assert [plan["plan_id"] for plan in json.loads(listed)["plans"]] == [plan_id]


def test_plan_tells_a_person_waiting_each_step_it_finished(
    service_env: Path, hr_store: WarehouseResource
) -> None:
    code, output = hr("plan", *DEMO, "--warehouse", str(hr_store.file))
    assert code == 0, output
    steps = [
        "row(s) from 2 file(s)",
        "loaded the warehouse's 300 user(s)",
        "validated ",
        "planned ",
    ]
    places = [output.find(step) for step in steps]
    assert -1 not in places and places == sorted(places), output


UNUSED_BY_PLANNING = ("pandas", "pyarrow.compute", "pyarrow.parquet", "dagster")
"""Modules `hr plan` never uses: each costs megabytes of the 400 MB a 50,000-row plan may take."""


def test_a_plan_loads_no_module_it_does_not_use(service_env: Path, hr_store: WarehouseResource) -> None:
    # Before: pyarrow.compute and .parquet came with the settings (15 MB), pandas with the users snapshot
    # and the stored plan (Arrow arrays built from Python values import it: 33 MB).
    probe = (
        "import sys\n"
        "from pipelines.cli import app\n"
        "try:\n"
        "    app()\n"
        "finally:\n"
        f"    print('loaded:', *[name for name in {UNUSED_BY_PLANNING!r} if name in sys.modules])\n"
    )
    arguments = ["hr", "plan", *DEMO, "--warehouse", str(hr_store.file)]
    done = subprocess.run(
        [sys.executable, "-c", probe, *arguments], capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "loaded:", done.stdout


CLI = Path(sys.executable).with_name("authority-sync")


@pytest.mark.timeout(300)  # the CLI process imports Dagster: seconds on a busy machine
def test_sigterm_stops_an_apply_in_one_line_and_the_same_apply_finishes_it_exactly_once(
    service_env: Path, hr_store: WarehouseResource, server: EmulatorServer
) -> None:
    # Before: the process died at once, printing nothing. (SIGINT takes the same path: test_stopping.)
    stop = signal.SIGTERM
    plan_id = planned_demo(str(hr_store.file))
    faults(server, latency_ms=150)  # with one request at a time, long enough to signal mid-apply
    env = os.environ | {"ADM_CONCURRENCY": "1", "DAGSTER_HOME": str(service_env), "COLUMNS": "1000"}
    running = subprocess.Popen(
        [str(CLI), "hr", "apply", plan_id, "--warehouse", hr_store.file, "--no-refresh"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while len(writes(server)) < 3:  # no event crosses the process boundary: poll the service
        assert time.monotonic() < deadline and running.poll() is None, "the apply did not get that far"
        time.sleep(0.02)
    running.send_signal(stop)
    signalled_at = time.monotonic()
    out, err = running.communicate(timeout=60)
    exited_after = time.monotonic() - signalled_at
    first = writes(server)
    faults(server)
    code, again = hr("apply", plan_id, "--warehouse", str(hr_store.file), "--no-refresh")

    assert running.returncode == 128 + stop, out + err
    assert exited_after < EXIT_WITHIN_S
    said = [line for line in out.splitlines() if line.strip()]
    assert len(said) == 1, out
    assert f"plan {plan_id}: interrupted by {stop.name}: no further request sent" in said[0]
    assert f"applied {len(first)}" in said[0]  # what was written: every write sent got its answer
    assert f"`authority-sync hr apply {plan_id}` again resumes" in said[0]
    assert len(first) < 19  # stopped part-way
    assert code == 0 and "applied 19" in again, again
    assert list(writes(server).values()) == [1] * 19  # every entity written once, none twice


def test_plan_refuses_a_warehouse_of_an_earlier_release_naming_the_upgrade(service_env: Path) -> None:
    # Before: hr plan migrated it under its 32 MB buffer (OutOfMemory at 50,000 users), without the copy,
    # the hashes and the child rows' order `warehouse upgrade` sees to.
    old = service_env / "old.duckdb"
    first_release_warehouse(old)
    code, output = hr("plan", *DEMO, "--warehouse", str(old))
    said = " ".join(output.split())
    assert code == 1, output
    assert f"migrations {FIRST_RELEASE + 1}-{available()[-1][0]} not applied" in said
    assert "upgrade it first with `authority-sync warehouse upgrade`" in said
    with duckdb.connect(str(old), read_only=True) as con:  # the file is as it was
        assert con.execute("SELECT max(version) FROM schema_migrations").fetchall() == [(FIRST_RELEASE,)]
    upgraded = CliRunner().invoke(app, ["warehouse", "upgrade", "--warehouse", str(old)])
    assert upgraded.exit_code == 0, upgraded.output
    code, output = hr("plan", *DEMO, "--warehouse", str(old))
    assert code == 1 and "holds no extract of tenant" in output, output  # past the refusal
