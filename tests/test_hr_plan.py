"""Planning against a warehouse filled by the real extract: the demo export's plan, what is stored, the
freshness rules, strict mode and the error report, and safety thresholds."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from emulator.scale import DEMO_TENANT_ID
from models.hr.kinds import Watched
from models.hr.thresholds import ThresholdLimit
from pipelines.clients import AdmClientResource
from pipelines.hr.apply import PlanNotApplicableError
from pipelines.hr.exports import write_error_reports
from pipelines.hr.mapping import Mapping
from pipelines.hr.snapshot import StaleWarehouseError, latest_run, load_snapshot
from pipelines.hr.upload import read_upload
from pipelines.hr.workflow import PLAN_MEMORY_LIMIT, PlanRequest, allow, plan_upload, refresh
from pipelines.warehouse_resource import WarehouseResource
from tests.sync_support import query
from tests.test_hr_support import (
    MAPPING,
    SETTINGS,
    apply,
    demo_files,
    plan,
    row_of,
    user_rows,
    write_users,
)
from warehouse.files import default_publish_path

pytest_plugins = ["tests.test_hr_support"]

DEMO = demo_files()


def test_the_demo_export_plans_every_kind_of_hr_event(hr_store: WarehouseResource) -> None:
    outcome = plan(hr_store, *DEMO)
    assert outcome.plan is not None
    assert outcome.plan.counts == {
        "deactivation": 3,
        "email": 1,
        "group": 4,
        "group_rename": 1,
        "group_reparent": 1,
        "manager": 4,
        "position": 4,
        "role_removal": 1,
        "needs_creation": 2,
    }
    assert outcome.plan.status == "ready"
    assert len({(p.file, p.line) for p in outcome.validation.problems}) == 8
    assert {new.hr_key for new in outcome.plan.new} == {"E100300", "ORG-0041"}


def test_a_plan_is_stored_with_its_sources_and_every_before_and_after(hr_store: WarehouseResource) -> None:
    outcome = plan(hr_store, *DEMO)
    assert outcome.plan is not None
    with duckdb.connect(str(hr_store.file), read_only=True) as con:
        row = con.execute(
            "SELECT tenant_id, source_files, status, counts FROM hr_plans WHERE plan_id = ?",
            [outcome.plan.plan_id],
        ).fetchone()
        items = con.execute(
            "SELECT entity_kind, hr_key, field, before, after, change_kind FROM hr_plan_items "
            "WHERE plan_id = ?",
            [outcome.plan.plan_id],
        ).fetchall()
        journal = con.execute(
            "SELECT DISTINCT status FROM hr_plan_entities WHERE plan_id = ?", [outcome.plan.plan_id]
        ).fetchall()
    assert row is not None
    sources = {Path(source["file"]).name: source["sha256"] for source in json.loads(row[1])}
    assert sources == {path.name: read_upload(path).sha256 for path in DEMO}
    assert (row[0], row[2], json.loads(row[3])["invalid_rows"]) == (DEMO_TENANT_ID, "ready", 8)
    email = next(item for item in items if item[2] == "email")
    assert json.loads(email[3]).endswith("@acme.example.com")
    assert json.loads(email[4]).endswith("@acme-group.example.com")
    assert ("user", "E100300", "*") in {(kind, key, field) for kind, key, field, *_ in items}
    assert journal == [("planned",)]
    # Readers see the plan at once, not after the next sync (issue 21).
    copy = default_publish_path(hr_store.file)
    stored = query(copy, "SELECT status FROM hr_plans WHERE plan_id = ?", [outcome.plan.plan_id])
    assert stored == [("ready",)]


def test_a_stale_warehouse_is_refused_until_refreshed(
    hr_store: WarehouseResource, adm: AdmClientResource
) -> None:
    late = datetime.now(UTC) + MAPPING.max_warehouse_age + timedelta(minutes=1)
    request = PlanRequest(DEMO, DEMO_TENANT_ID, MAPPING)
    with pytest.raises(StaleWarehouseError, match="refresh"):
        plan_upload(hr_store, request, late)
    refresh(SETTINGS, DEMO_TENANT_ID, adm, hr_store)
    assert plan_upload(hr_store, request).plan is not None


def test_a_warehouse_older_than_the_last_apply_is_refused(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path
) -> None:
    rows = user_rows()
    row_of(rows, "E100010")["positions"] = "Buyer"
    made = plan(hr_store, write_users(tmp_path / "u.csv", rows)).plan
    assert made is not None
    apply(hr_store, adm, made.plan_id)
    with pytest.raises(StaleWarehouseError, match="HR writes"):
        plan(hr_store, *DEMO)


def test_strict_refuses_the_whole_upload(hr_store: WarehouseResource) -> None:
    outcome = plan(hr_store, *DEMO, strict=True)
    assert outcome.plan is None and outcome.refusal and "--strict" in outcome.refusal
    with duckdb.connect(str(hr_store.file), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM hr_plans").fetchone() == (0,)


def test_the_error_report_holds_the_original_columns_and_is_safe(
    hr_store: WarehouseResource, tmp_path: Path
) -> None:
    outcome = plan(hr_store, *DEMO)
    reports = {path.name: path for path in write_error_reports(outcome.validation, MAPPING, tmp_path)}
    assert set(reports) == {"demo_users.errors.csv", "demo_groups.errors.csv"}
    with reports["demo_users.errors.csv"].open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    header = read_upload(DEMO[0]).header
    assert list(rows[0]) == [*header, "hr_sync_line", "hr_sync_errors"]
    assert len(rows) == 7
    injected = next(row for row in rows if "formula_injection" in row["hr_sync_errors"])
    assert injected["First Name"].startswith("'=HYPERLINK")
    assert all(row["Mobile Phone"].startswith("+1 (555)") for row in rows)
    assert all(not cell.startswith(("=", "@")) for row in rows for cell in row.values())


def strict_thresholds() -> Mapping:
    """The default mapping with at most one manager change and no email change per plan."""
    limits = MAPPING.thresholds.with_limit(Watched.MANAGER, ThresholdLimit(max_count=1, max_share=1.0))
    limits = limits.with_limit(Watched.EMAIL, ThresholdLimit(max_count=0, max_share=1.0))
    return MAPPING.model_copy(update={"thresholds": limits})


def test_thresholds_block_and_allow_lifts_one_kind_only(
    hr_store: WarehouseResource, adm: AdmClientResource
) -> None:
    blocked = plan(hr_store, *DEMO, mapping=strict_thresholds()).plan
    assert blocked is not None and blocked.status == "blocked"
    assert blocked.blocked == ["manager", "email"]
    with pytest.raises(PlanNotApplicableError, match="manager, email"):
        apply(hr_store, adm, blocked.plan_id)
    lifted = allow(hr_store, blocked.plan_id, {"manager": "Q1 reorganisation, approved by HR"}, "hr.lead")
    assert (lifted.status, lifted.blocked) == ("blocked", ["email"])
    assert lifted.allowed == {"manager": "Q1 reorganisation, approved by HR"}
    with pytest.raises(PlanNotApplicableError, match="email"):
        apply(hr_store, adm, blocked.plan_id)
    assert allow(hr_store, blocked.plan_id, {"email": "domain migration"}, "hr.lead").status == "ready"
    assert apply(hr_store, adm, blocked.plan_id).status == "applied"


def test_allowing_at_plan_time_records_the_reason(hr_store: WarehouseResource) -> None:
    made = plan(hr_store, *DEMO, mapping=strict_thresholds(), allow={"manager": "reorg"}).plan
    assert made is not None and made.blocked == ["email"]
    check = next(check for check in made.checks if check.kind == "manager")
    assert (check.over, check.allowed_reason) == (True, "reorg")
    with pytest.raises(ValueError, match="no threshold"):
        plan(hr_store, *DEMO, allow={"position": "not a watched kind"})


def test_a_user_unknown_to_the_service_needs_creation(hr_store: WarehouseResource, tmp_path: Path) -> None:
    rows = user_rows()
    hire = dict(row_of(rows, "E100010"), employee_id="E900001", email="new.hire@acme.example.com")
    made = plan(hr_store, write_users(tmp_path / "u.csv", [row_of(rows, "E100010"), hire])).plan
    assert made is not None and made.entities == []
    assert [(new.kind, new.hr_key) for new in made.new] == [("user", "E900001")]


def test_loading_the_snapshot_leaves_no_pages_cached_and_the_limit_as_it_was(
    hr_store: WarehouseResource,
) -> None:
    """The users' pages, read once, are not held in DuckDB's buffer while the upload is planned (the
    50,000-user peak of scenario 6), and the connection keeps the memory limit it was opened with."""
    con = duckdb.connect(hr_store.file, read_only=True, config={"memory_limit": PLAN_MEMORY_LIMIT})
    try:
        limit = con.execute("SELECT current_setting('memory_limit')").fetchall()
        run = latest_run(con, DEMO_TENANT_ID)
        assert run is not None
        snapshot = load_snapshot(con, DEMO_TENANT_ID, run)
        cached = con.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchall()
        assert snapshot.user_values
        assert cached[0][0] <= 1024 * 1024
        assert con.execute("SELECT current_setting('memory_limit')").fetchall() == limit
    finally:
        con.close()
