"""The schema contract end to end: the emulator's realism profile serves records off the spec (written from
the spec's tables, not from the client's models), and the tenant sync tolerates, counts, rejects or fails
as its mode says."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from typer.testing import CliRunner

from emulator.faults import FaultConfig
from emulator.realism import DEVIATIONS, assignment
from emulator.server import EmulatorServer
from emulator.state import TenantState
from pipelines.assets import WARN_ONLY_CHECKS_TAG, table_key
from pipelines.cli import app
from pipelines.location import sync_definitions
from pipelines.runner import first_error, run_tenant
from pipelines.settings import SyncSettings
from pipelines.tenant_runs import NIGHTLY_JOB
from tests.conftest import DEMO_TENANT_ID, SMALL, copy_of, fresh, made_once, set_faults
from tests.dagster_support import events
from tests.sync_support import in_memory_instance, query, settings_for, sync, sync_env

RATE = 0.1
"""Every tenth record of a list deviates: with the small tenant, each deviation shows at least once."""


@pytest.fixture
def server(small_emulator_server: EmulatorServer) -> Iterator[EmulatorServer]:
    """The small session emulator, fresh, serving records off the spec."""
    for started in fresh(small_emulator_server):
        set_faults(started, FaultConfig(realism_rate=RATE))
        yield started


@pytest.fixture
def state(server: EmulatorServer) -> TenantState:
    """The demo tenant's records as stored (the served copies deviate)."""
    return server.emulator.tenants[DEMO_TENANT_ID]


@dataclass(frozen=True)
class TolerantRun:
    """What one Dagster run of the tolerant sync (a full refresh) left: its warehouse, the records the
    emulator stored, the run's id, and its materializations and check evaluations."""

    settings: SyncSettings
    state: TenantState
    run_id: str
    materializations: list[dg.AssetMaterialization]
    evaluations: list[dg.AssetCheckEvaluation]


def _make_tolerant_run(server: EmulatorServer, template: Path) -> Callable[[Path], None]:
    """What makes the shared run's folder: a warehouse (``wh.duckdb``), the Dagster instance the run was
    recorded in (``dagster``) and the run's id (``run_id``)."""

    def make(folder: Path) -> None:
        for started in fresh(server):
            set_faults(started, FaultConfig(realism_rate=RATE))
            settings = settings_for(started, copy_of(template, folder / "wh.duckdb"), reject_max_share=0.05)
            (folder / "dagster").mkdir()
            with dg.DagsterInstance.local_temp(str(folder / "dagster")) as instance:
                run = run_tenant(sync_definitions(settings), DEMO_TENANT_ID, instance, full_refresh=True)
            assert run.success, run.error
            (folder / "run_id").write_text(run.run_id)

    return make


@pytest.fixture(scope="module")
def tolerant_run(
    small_emulator_server: EmulatorServer, template: Path, tmp_path_factory: pytest.TempPathFactory
) -> TolerantRun:
    """One tolerant full refresh under Dagster (allowing the empty id the profile serves among 150 decisions)
    into a new warehouse, made once for the whole test run (`made_once`: the first worker to ask makes it),
    for the tests of what it stored, counted and reported: each only reads what it left (one run instead
    of four). The emulator's seed is fixed, so every worker's seeded tenant is the one that was synced."""
    folder = made_once(tmp_path_factory, "tolerant_run", _make_tolerant_run(small_emulator_server, template))
    run_id = (folder / "run_id").read_text()
    with dg.DagsterInstance.local_temp(str(folder / "dagster")) as instance:
        materializations = [
            event.step_materialization_data.materialization
            for event in events(instance, run_id, dg.DagsterEventType.ASSET_MATERIALIZATION)
        ]
        evaluations = [
            event.asset_check_evaluation_data
            for event in events(instance, run_id, dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        ]
    for server in fresh(small_emulator_server):
        settings = settings_for(server, folder / "wh.duckdb", reject_max_share=0.05)
        state = server.emulator.tenants[DEMO_TENANT_ID]  # a reset later seeds new objects; this one stays
    return TolerantRun(settings, state, run_id, materializations, evaluations)


def deviating(state: TenantState, kind: str, name: str) -> set[str]:
    """Ids of the records of ``kind`` served with the deviation ``name``."""
    chosen = assignment(kind, list(getattr(state, kind)), RATE)
    return {record_id for record_id, deviation in chosen.items() if deviation == name}


def deviations(settings: SyncSettings) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The run's tolerated deviations by (list, field, kind)."""
    (found,) = query(settings.warehouse, "SELECT deviations FROM sync_runs ORDER BY started_at DESC LIMIT 1")[
        0
    ]
    return {(row["list"], row["field"], row["kind"]): row for row in json.loads(found)}


def test_a_tolerant_run_loads_every_valid_record_and_counts_each_deviation(tolerant_run: TolerantRun) -> None:
    settings, state = tolerant_run.settings, tolerant_run.state
    empty_ids = deviating(state, "decisions", "id empty")
    assert len(empty_ids) == 1
    loaded = {row[0] for row in query(settings.warehouse, "SELECT id FROM decisions")}
    assert loaded == set(state.decisions) - empty_ids
    assert {row[0] for row in query(settings.warehouse, "SELECT id FROM users")} == set(state.users)
    found = deviations(settings)
    expected = {
        ("decisions", "name", "null"): "name null",
        ("decisions", "decisionGroups.*.displayName", "null"): "decision group displayName null",
        ("decisions", "status", "unknown_enum"): "status PENDING_REVIEW",
        ("decisions", "guidance", "missing"): "guidance omitted",
        (
            "decisions",
            "decisionAuthorities.*.authorityTypeOrder",
            "number_as_string",
        ): "authorityTypeOrder as a string",
        (
            "decisions",
            "decisionAuthorities.*.authorityLimitValueType",
            "unknown_enum",
        ): "authority value type Ratio",
        ("decisions", "permissions.*.relationship_key", "missing"): "permission key renamed",
        ("decisions", "decisionDisplayId", "number_as_text"): "decisionDisplayId as a number",
        ("users", "status", "unknown_enum"): "status SUSPENDED",
        ("users", "lastLoginDate", "invalid"): "lastLoginDate malformed",
        ("users", "isDeleted", "bool_as_string"): "isDeleted as a string",
        ("groups", "address", "null"): "address null",
        ("delegations", "status", "unknown_enum"): "status ON_HOLD",
    }
    # The delegation record is not in the spec: every field but its id is optional, so a null is no deviation.
    assert deviating(state, "delegations", "decisionName null")
    assert ("delegations", "decisionName", "null") not in found
    for key, name in expected.items():
        ids = deviating(state, key[0], name)
        assert ids, f"the profile served no {name!r}: the test would prove nothing"
        assert found[key]["records"] == len(ids), key
        assert set(found[key]["sample_ids"]) <= ids, key
    # The top of the org is served without a manager: a deviation, stored as a null manager_id.
    top = next(user for user, boss in state.manager_of.items() if user == boss)
    assert found["users", "manager", "null"]["sample_ids"] == [top]
    assert query(settings.warehouse, "SELECT manager_id FROM users WHERE id = ?", [top]) == [(None,)]


def test_tolerated_values_are_stored_as_null_or_as_the_text_received(tolerant_run: TolerantRun) -> None:
    settings, state = tolerant_run.settings, tolerant_run.state
    (unnamed,) = sorted(deviating(state, "decisions", "name null"))[:1]
    (pending,) = sorted(deviating(state, "decisions", "status PENDING_REVIEW"))[:1]
    (suspended,) = sorted(deviating(state, "users", "status SUSPENDED"))[:1]
    assert query(settings.warehouse, "SELECT name FROM decisions WHERE id = ?", [unnamed]) == [(None,)]
    assert query(settings.warehouse, "SELECT status FROM decisions WHERE id = ?", [pending]) == [
        ("PENDING_REVIEW",)
    ]
    assert query(settings.warehouse, "SELECT status FROM users WHERE id = ?", [suspended]) == [("SUSPENDED",)]
    # A number where the spec has a string loses nothing as its text.
    (numbered,) = sorted(deviating(state, "decisions", "decisionDisplayId as a number"))[:1]
    assert query(
        settings.warehouse, "SELECT decision_display_id FROM decisions WHERE id = ?", [numbered]
    ) == [("12345",)]
    # raw keeps what the service sent, not the converted value.
    (as_text,) = sorted(deviating(state, "decisions", "authorityTypeOrder as a string"))[:1]
    (raw,) = query(settings.warehouse, "SELECT raw FROM decisions WHERE id = ?", [as_text])[0]
    assert '"authorityTypeOrder":"3"' in raw


def test_rejected_records_keep_their_evidence(tolerant_run: TolerantRun) -> None:
    settings, state = tolerant_run.settings, tolerant_run.state
    rejected = query(
        settings.warehouse,
        "SELECT run_id, endpoint, page, position, record_id, field, rule, value_received, record "
        "FROM rejected_records ORDER BY page, position",
    )
    assert len(rejected) == 1
    for run_id, endpoint, page, position, record_id, field, rule, value, record in rejected:
        assert (run_id, endpoint, record_id, field, rule, value) == (
            tolerant_run.run_id,
            "E8",
            None,
            "id",
            "a non-empty string",
            '""',
        )
        assert page >= 1 and 1 <= position <= 100
        assert json.loads(record)["decisionId"] in deviating(state, "decisions", "id empty")
    (count,) = query(settings.warehouse, "SELECT rejected_records FROM sync_runs")[0]
    assert count == 1


def test_rejections_above_the_threshold_block_the_run_and_name_the_records(
    server: EmulatorServer, migrated: Path
) -> None:
    settings = settings_for(server, migrated, reject_max_count=0)

    failed = sync(settings, full_refresh=True, expect_success=False)

    assert failed.error is not None
    assert "decisions rejected_within_threshold: 1 record(s) rejected, 0 allowed: page" in failed.error
    assert 'id (none): id a non-empty string, received ""' in failed.error
    assert query(settings.warehouse, "SELECT count(*) FROM decisions") == [(0,)]
    assert query(settings.warehouse, "SELECT count(*) FROM rejected_records") == [(1,)]


def test_an_operator_can_let_a_blocking_check_only_warn_for_a_run(
    server: EmulatorServer, migrated: Path
) -> None:
    settings = settings_for(
        server, migrated, reject_max_count=0, warn_only_checks=["rejected_within_threshold"]
    )

    run = sync(settings, full_refresh=True)

    assert run.success, run.error
    assert query(settings.warehouse, "SELECT count(*) FROM decisions") == [(SMALL.decisions - 1,)]
    (checks,) = query(settings.warehouse, "SELECT checks FROM sync_runs")[0]
    (check,) = [
        c for c in json.loads(checks) if c["check"] == "rejected_within_threshold" and not c["passed"]
    ]
    assert "(a warning only: named in the warn-only checks)" in check["description"]


def test_a_run_tag_lets_a_blocking_check_warn_for_that_dagster_run_only(
    server: EmulatorServer, migrated: Path
) -> None:
    settings = settings_for(server, migrated, reject_max_count=0)
    job = sync_definitions(settings).resolve_job_def(NIGHTLY_JOB)
    with in_memory_instance() as instance:

        def run(tags: dict[str, str]) -> dg.ExecuteInProcessResult:
            return job.execute_in_process(
                partition_key=DEMO_TENANT_ID, instance=instance, tags=tags, raise_on_error=False
            )

        untagged = run({})
        mistyped = run({WARN_ONLY_CHECKS_TAG: "rejected_within_treshold"})
        tagged = run({WARN_ONLY_CHECKS_TAG: "rejected_within_threshold"})

    assert tagged.success
    assert not mistyped.success and not untagged.success
    error = first_error(mistyped)
    assert "adm/warn_only_checks: not a blocking check: rejected_within_treshold" in error
    assert "rejected_within_threshold" in error.split("the blocking checks:")[1]


def test_a_strict_run_fails_naming_endpoint_page_record_field_and_values(
    server: EmulatorServer, state: TenantState, migrated: Path
) -> None:
    settings = settings_for(server, migrated, schema_contract="strict")

    failed = sync(settings, full_refresh=True, expect_success=False)

    assert failed.error is not None
    assert "response does not match the spec: page " in failed.error
    assert "received" in failed.error and "expected" in failed.error
    record_ids = {
        record for kind in ("decisions", "users", "groups", "delegations") for record in getattr(state, kind)
    }
    named = [word.strip("(),") for word in failed.error.split() if word.strip("(),") in record_ids]
    assert named, failed.error


def test_dagster_shows_the_deviations_as_metadata_and_a_warning_check(tolerant_run: TolerantRun) -> None:
    runs = next(
        materialization
        for materialization in tolerant_run.materializations
        if materialization.asset_key == table_key("sync_runs")
    )
    assert runs.metadata["records_rejected"].value == 1
    # A first run re-verifies nothing (every revision list is new); the month it projects is metadata too.
    assert runs.metadata["revisions_rechecked"].value == 0
    assert "API calls a month" in str(runs.metadata["api_month"].value)
    tolerated = runs.metadata["deviations_tolerated"].value
    assert isinstance(tolerated, list) and {row["kind"] for row in tolerated} >= {"null", "unknown_enum"}
    warning = next(
        evaluation
        for evaluation in tolerant_run.evaluations
        if evaluation.check_name == "records_conform_to_spec"
        and evaluation.asset_key == table_key("decisions")
    )
    assert not warning.passed and warning.severity == dg.AssetCheckSeverity.WARN
    assert warning.description is not None and "deviation(s) tolerated: " in warning.description


def test_the_cli_summary_shows_what_was_tolerated_and_rejected(
    server: EmulatorServer, migrated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in sync_env(server, migrated, ADM_REJECT_MAX_SHARE="0.05").items():
        monkeypatch.setenv(name, value)

    result = CliRunner().invoke(app, ["extract", "--tenant", DEMO_TENANT_ID])

    assert result.exit_code == 0, result.output
    printed = " ".join(result.output.split())  # rich wraps to its own width
    # 15 deviating decisions, 9 kinds in turn
    assert "off the spec, tolerated: decisions name null x2" in printed
    assert "1 record(s) rejected: see the table rejected_records" in printed


def test_one_list_can_be_strict_while_the_others_are_tolerant(server: EmulatorServer, migrated: Path) -> None:
    settings = settings_for(
        server, migrated, schema_contract="tolerant,delegations=strict", reject_max_share=0.05
    )

    failed = sync(settings, full_refresh=True, expect_success=False)

    assert failed.error is not None and "delegations response does not match the spec: page 1" in failed.error


def test_every_deviation_of_the_profile_is_exercised() -> None:
    """The catalogue the tests above read: a deviation added to the profile must be added here too."""
    assert {kind: len(names) for kind, names in DEVIATIONS.items()} == {
        "decisions": 9,
        "users": 3,
        "groups": 2,
        "delegations": 2,
    }
    assert SMALL.groups * RATE >= 1
