"""The tenant sync under Dagster's own launch paths, on real instances (temporary ``DAGSTER_HOME``) against
the real emulator, in this process: blocking checks, subsets, the tenant lock, the API budget, freshness
and the CLI's history. Re-execution and ``dagster job execute`` in their own processes:
tests/test_pipeline_dagster_processes.py; the GraphQL client on ``dagster dev``:
tests/test_pipeline_dagster_dev.py."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.data_version import CachingStaleStatusResolver
from dagster._core.loader import LoadingContextForTest
from pydantic import SecretStr
from typer.testing import CliRunner

from emulator.faults import FaultConfig
from emulator.server import EmulatorServer
from emulator.service import Emulator
from pipelines.assets import ALLOW_OVER_QUOTA_TAG, TABLES, table_key
from pipelines.cli import app
from pipelines.freshness import FRESHNESS_JOB, FRESHNESS_KEY, check_names
from pipelines.location import sync_definitions
from pipelines.runner import QUIET_LOGS, first_error, run_tenant
from pipelines.settings import SyncSettings, load_settings, tenant_variable_suffix
from pipelines.tenant_runs import NIGHTLY_JOB
from pipelines.tenant_tags import TENANT_TAG
from resources.waits import NOTICE_AFTER_S
from resources.waits import logger as wait_log
from tests.conftest import DEMO_TENANT_ID, OTHER_TENANT_ID, OTHER_TOKEN, fresh, set_faults
from tests.dagster_support import events, materialized, new_dagster_home, tenant_rows
from tests.sync_support import in_memory_instance, query, settings_for, sync, sync_env, sync_job
from warehouse.locks import held, tenant_lock_path, writer_lock_path


@pytest.fixture
def server(small_emulator_server: EmulatorServer) -> Iterator[EmulatorServer]:
    """The small session emulator, fresh (these tests are about launch paths, not volume)."""
    yield from fresh(small_emulator_server)


@pytest.fixture
def warehouse(migrated: Path) -> Path:
    """A new warehouse (a copy of the migrated template: these tests are not about migrating)."""
    return migrated


@pytest.fixture
def settings(server: EmulatorServer, warehouse: Path) -> SyncSettings:
    """Settings of a new warehouse, pointed at the session emulator."""
    return settings_for(server, warehouse)


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    """A Dagster instance in memory (`in_memory_instance`): these tests read what a run recorded in it."""
    with in_memory_instance() as temporary:
        yield temporary


@pytest.fixture
def instance_on_disk() -> Iterator[dg.DagsterInstance]:
    """A Dagster instance in a temporary folder, for the freshness checks: they read the schedules' state,
    which an instance in memory does not keep."""
    with dg.instance_for_test() as temporary:
        yield temporary


@pytest.fixture
def sync_environment(server: EmulatorServer, warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ADM_*`` variables of both tenants, for code that reads the environment (and what it starts)."""
    for name, value in sync_env(server, warehouse, ADM_LOCK_WAIT_S="1").items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def dagster_home(tmp_path: Path) -> Path:
    """A Dagster instance folder with the project's instance settings (run concurrency per tenant)."""
    return new_dagster_home(tmp_path)


def test_a_failed_check_leaves_the_tables_unmaterialized_and_shows_its_figures(
    server: EmulatorServer, settings: SyncSettings, instance: dg.DagsterInstance
) -> None:
    # One decision is served without a usable id, and the run allows none.
    set_faults(server, FaultConfig(realism_rate=0.1))
    named = {DEMO_TENANT_ID: "acme"}
    settings = settings.model_copy(update={"reject_max_count": 0, "tenant_names": named})

    run = run_tenant(sync_definitions(settings), DEMO_TENANT_ID, instance)

    assert not run.success and run.error is not None and "nothing committed" in run.error
    assert materialized(instance, run.run_id) == {}
    results = {
        (check.asset_key.to_user_string(), check.check_name): check
        for check in (
            event.asset_check_evaluation_data
            for event in events(instance, run.run_id, dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        )
    }
    decisions = results["adm/decisions", "rejected_within_threshold"]
    assert not decisions.passed and decisions.severity == dg.AssetCheckSeverity.ERROR
    # Named for its tenant (by its name, and its id): the UI shows a check's latest result.
    assert (decisions.description or "").startswith(
        f"tenant acme ({DEMO_TENANT_ID}): 1 record(s) rejected, 0 allowed"
    )
    assert decisions.metadata["tenant"].value == DEMO_TENANT_ID
    (status, phases) = query(settings.warehouse, "SELECT status, phase_seconds FROM sync_runs")[0]
    assert status == "blocked_by_check" and set(json.loads(phases)) == {"extract", "checks"}
    assert query(settings.warehouse, "SELECT count(*) FROM decisions") == [(0,)]

    # The other tenant's run passes the same check: each result is its tenant's partition's, and the check
    # is partitioned by tenant (test_pipeline_definitions), so the UI keeps the failure on the blocked
    # tenant (before: the latest result of any tenant stood for all).
    set_faults(server, FaultConfig())
    own_token = {tenant_variable_suffix(OTHER_TENANT_ID): SecretStr(OTHER_TOKEN)}
    other = settings.model_copy(update={"tenant_tokens": own_token})
    assert run_tenant(sync_definitions(other), OTHER_TENANT_ID, instance).success
    key = dg.AssetCheckKey(table_key("decisions"), "rejected_within_threshold")
    history = instance.event_log_storage.get_asset_check_execution_history(key, limit=10)
    latest: dict[str, str] = {}
    for record in sorted(history, key=lambda record: record.create_timestamp):
        assert record.event is not None and record.event.dagster_event is not None
        evaluation = record.event.dagster_event.event_specific_data
        assert isinstance(evaluation, dg.AssetCheckEvaluation)
        latest[str(evaluation.partition)] = record.status.value
    assert latest == {DEMO_TENANT_ID: "FAILED", OTHER_TENANT_ID: "SUCCEEDED"}


def test_selecting_one_table_commits_the_whole_tenant(
    settings: SyncSettings, instance: dg.DagsterInstance, emulator: Emulator
) -> None:
    """``dagster asset materialize --select adm/users``: the tenant is committed whole; every table is
    reported as a materialization of the same run and partition, once."""
    job = sync_definitions(settings).resolve_job_def(NIGHTLY_JOB)

    result = job.execute_in_process(
        partition_key=DEMO_TENANT_ID,
        instance=instance,
        asset_selection=[table_key("users")],
        run_config=QUIET_LOGS,
    )

    assert result.success
    state = emulator.tenants[DEMO_TENANT_ID]
    assert tenant_rows(settings.warehouse, "decisions") == len(state.decisions)
    tables = materialized(instance, result.run_id)
    assert {table_key(table).to_user_string() for table in TABLES} <= set(tables)
    assert {"adm/decisions_history", "adm/v_decision_scope", "adm/analytics_copy"} <= set(tables)
    # Its partition tags it with the tenant, as every launch path's run: the run queue takes turns by it.
    run = instance.get_run_by_id(result.run_id)
    assert run is not None and run.tags[TENANT_TAG] == DEMO_TENANT_ID
    assert tables["adm/users"]["dagster/row_count"] == len(state.users)
    assert tables["adm/decisions"]["dagster/row_count"] == len(state.decisions)
    # Before: 0, while the table held the tenant's row of this run.
    assert tables["adm/sync_runs"]["dagster/row_count"] == 1
    assert {table["partition"] for table in tables.values()} == {DEMO_TENANT_ID}
    assert not list((settings.warehouse.parent / "staging").glob("*"))
    # Each asset once, as a runtime event: no output to handle and no data-version provenance to query
    # (a third to a half of what Dagster added to a run, pipelines/assets.py).
    done = events(instance, result.run_id, dg.DagsterEventType.ASSET_MATERIALIZATION)
    assert len(done) == len(tables)
    tags = [event.step_materialization_data.materialization.tags or {} for event in done]
    assert not [tag for tag in tags if "dagster/data_version" in tag]
    assert not events(instance, result.run_id, dg.DagsterEventType.HANDLED_OUTPUT)


def test_after_a_run_no_asset_of_its_tenant_shows_stale(
    settings: SyncSettings, instance: dg.DagsterInstance
) -> None:
    """The UI's staleness after a run, as Dagster resolves it for the asset graph: runtime materializations
    carry no data-version provenance, so Dagster compares each asset's materialization with its upstream
    assets' by time, and the step must report every asset after the assets it depends on."""
    run = sync_job(settings, instance=instance)

    graph = sync_definitions(settings).resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    keys = graph.get(table_key("decisions")).assets_def.keys  # every asset of the sync's step
    assert {key.to_user_string() for key in keys} == set(materialized(instance, run.run_id))
    stale = {key.to_user_string(): resolver.get_stale_causes(key, DEMO_TENANT_ID) for key in keys}
    assert {key: causes for key, causes in stale.items() if causes} == {}


def test_a_second_sync_of_a_tenant_is_refused_while_one_runs(settings: SyncSettings) -> None:
    with held(tenant_lock_path(settings.warehouse, DEMO_TENANT_ID), "run 1234", 0, "the tenant"):
        refused = sync_job(settings, expect_success=False)

    assert refused.error is not None and "held by run 1234" in refused.error
    assert "this run did nothing" in refused.error
    assert query(settings.warehouse, "SELECT status, api_calls_total FROM sync_runs") == [("failed", 0)]


def test_a_run_over_the_api_budget_is_refused_unless_allowed(
    settings: SyncSettings, instance: dg.DagsterInstance
) -> None:
    """With a month of twice a full run's calls, a second full run would pass 90% of it."""
    first = sync(settings, full_refresh=True)
    calls = query(settings.warehouse, "SELECT api_calls_total FROM sync_runs")[0][0]
    budget = settings.model_copy(update={"monthly_quota": 2 * calls})

    refused = sync_job(budget, full_refresh=True, expect_success=False)

    assert refused.error is not None and "API budget" in refused.error
    assert f"{calls} API calls this month + about {calls} for this run" in refused.error
    defs = sync_definitions(budget)
    allowed = run_tenant(defs, DEMO_TENANT_ID, instance, full_refresh=True, allow_over_quota=True)
    assert allowed.success
    assert instance.get_run_by_id(allowed.run_id).tags[ALLOW_OVER_QUOTA_TAG] == "true"  # type: ignore[union-attr]
    statuses = query(budget.warehouse, "SELECT run_id, status FROM sync_runs ORDER BY started_at")
    assert statuses == [
        (first.run_id, "succeeded"),
        (refused.run_id, "failed"),
        (allowed.run_id, "succeeded"),
    ]


def test_freshness_is_red_for_a_tenant_that_never_committed_and_green_after(
    server: EmulatorServer, warehouse: Path, instance_on_disk: dg.DagsterInstance
) -> None:
    """The second tenant's syncs keep failing (its credential is wrong): its check stays red while the
    demo tenant's turns green, evaluated by the sensor's own job, not by a sync."""
    # The demo tenant is named: its check is fresh_acme (and its description names its id).
    settings = settings_for(server, warehouse).model_copy(update={"tenant_names": {DEMO_TENANT_ID: "acme"}})
    defs = sync_definitions(settings)
    check_job = defs.resolve_job_def(FRESHNESS_JOB)
    demo, other = "fresh_acme", f"fresh_{OTHER_TENANT_ID.replace('-', '_')}"
    assert check_names([DEMO_TENANT_ID, OTHER_TENANT_ID], settings.tenant_names) == {
        demo: DEMO_TENANT_ID,
        other: OTHER_TENANT_ID,
    }

    def freshness() -> dict[str, tuple[bool, str]]:
        result = check_job.execute_in_process(instance=instance_on_disk, run_config=QUIET_LOGS)
        assert result.success
        return {
            check.check_name: (check.passed, check.description or "")
            for check in result.get_asset_check_evaluations()
        }

    assert freshness() == {
        demo: (False, "the tenant has no committed sync"),
        other: (False, "the tenant has no committed sync"),
    }
    sync(settings)
    # Its sync fails (free of Dagster: the failed run's row is what the check reads, not how it ran).
    assert not sync(settings, OTHER_TENANT_ID, expect_success=False).success
    after = freshness()
    assert after[demo][0] is True
    assert after[demo][1].startswith("last committed sync 0.0 h ago (limit 26 h)")
    assert after[other] == (False, "the tenant has no committed sync")
    graph = defs.get_repository_def().asset_graph
    spec = graph.get(dg.AssetCheckKey(FRESHNESS_KEY, demo))
    assert spec.description is not None and spec.description.startswith(f"Tenant acme ({DEMO_TENANT_ID}):")

    sensor = defs.resolve_sensor_def("tenant_freshness_sensor")
    with dg.build_sensor_context(instance=instance_on_disk, definitions=defs) as context:
        requests = sensor.evaluate_tick(context).run_requests
    assert sensor.job_name == FRESHNESS_JOB
    assert [request.run_key for request in requests or []] == [f"fresh:{datetime.now(UTC):%Y-%m-%dT%H}"]


def test_a_stopped_schedule_is_told_by_every_tenants_freshness_check(
    server: EmulatorServer, warehouse: Path, instance_on_disk: dg.DagsterInstance
) -> None:
    """The schedules start running when a service is configured, stopped when none is; a stopped one is
    named by each tenant's freshness check and a warning of its run (before, nothing said that no
    nightly sync would run)."""
    settings = settings_for(server, warehouse)
    for service, status in (
        (True, dg.DefaultScheduleStatus.RUNNING),
        (False, dg.DefaultScheduleStatus.STOPPED),
    ):
        defs = sync_definitions(settings if service else settings.model_copy(update={"base_url": None}))
        schedules = defs.get_repository_def().schedule_defs
        assert {schedule.default_status for schedule in schedules} == {status}
        result = defs.resolve_job_def(FRESHNESS_JOB).execute_in_process(
            instance=instance_on_disk, run_config=QUIET_LOGS
        )
        told = [check.description or "" for check in result.get_asset_check_evaluations()]
        warned = [record.user_message for record in instance_on_disk.all_logs(result.run_id)]
        stopped = "nightly_sync_schedule, weekly_full_refresh_schedule stopped: no such sync of any tenant"
        assert len(told) == 2
        assert all((stopped in description) != service for description in told)
        assert any(stopped in message for message in warned) != service


def test_each_tenant_syncs_with_its_own_credential(
    server: EmulatorServer, warehouse: Path, sync_environment: None
) -> None:
    """``ADM_TOKEN__<TENANT>`` per tenant: both tenants sync, each with its own token (the sync takes its
    tenant's client from the settings the same way on every launch path: free of Dagster here)."""
    settings = load_settings()

    for tenant in (DEMO_TENANT_ID, OTHER_TENANT_ID):
        sync(settings, tenant)

    assert query(warehouse, "SELECT tenant_id, status FROM sync_runs ORDER BY tenant_id") == sorted(
        [(DEMO_TENANT_ID, "succeeded"), (OTHER_TENANT_ID, "succeeded")]
    )


@pytest.mark.usefixtures("sync_environment")
def test_cli_runs_land_in_the_history_of_dagster_home(
    dagster_home: Path, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))

    result = CliRunner().invoke(app, ["extract", "--tenant", DEMO_TENANT_ID])

    assert result.exit_code == 0, result.output
    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs()
    assert [(run.job_name, run.tags.get("dagster/partition"), run.status.value) for run in runs] == [
        (NIGHTLY_JOB, DEMO_TENANT_ID, "SUCCESS")
    ]
    assert query(warehouse, "SELECT run_id FROM sync_runs") == [(runs[0].run_id,)]


def test_a_bad_setting_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADM_RATE_PER_MINUTE", "fast")

    result = CliRunner().invoke(app, ["extract"])

    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: ADM_RATE_PER_MINUTE='fast' is not accepted: expected a number of requests per minute above 0"
    ]


def test_a_wait_for_the_warehouses_writer_is_a_run_event_when_it_starts_and_when_it_ends(
    settings: SyncSettings, dagster_home: Path
) -> None:
    """Another writer holds the warehouse past the notice: the run's log says what it waits for and who
    holds it when the wait has lasted a few seconds (not after the 300 s it may last), and how long it
    waited when it got it; the sync then commits."""
    job = sync_definitions(settings.model_copy(update={"lock_wait_s": 30})).resolve_job_def(NIGHTLY_JOB)
    run_id = str(uuid.uuid4())
    told, ended, holding = threading.Event(), threading.Event(), threading.Event()

    def hold_until_told() -> None:
        """Hold the writer lock until the run says it waits for it (or the run ended, having given up)."""
        with held(writer_lock_path(settings.warehouse), "an analyst's export", 0, "the warehouse"):
            holding.set()
            while not (told.is_set() or ended.is_set()):
                time.sleep(0.05)

    # The holder learns of the wait from the wait's own logger, not by reading the run's storage while the
    # run writes it: on an instance in memory that read raced the run's writes ("database table is locked").
    # What the run's log says is checked once the run has ended.
    heard = _Heard("waiting for the warehouse", told)
    with dg.DagsterInstance.from_config(str(dagster_home)) as project:
        python_logs = project.get_settings("python_logs")
    with in_memory_instance({"python_logs": python_logs}) as instance:
        holder = threading.Thread(target=hold_until_told)
        holder.start()
        holding.wait()
        wait_log.addHandler(heard)
        try:
            result = job.execute_in_process(partition_key=DEMO_TENANT_ID, instance=instance, run_id=run_id)
        finally:
            wait_log.removeHandler(heard)
            ended.set()
            holder.join()
        logged = [record.user_message for record in instance.all_logs(run_id)]

    assert result.success, "the run gave up waiting, and its log never said what it waited for"
    waiting = next(i for i, message in enumerate(logged) if message.startswith("waiting for the warehouse"))
    assert f"held by an analyst's export (pid {os.getpid()}" in logged[waiting]
    assert "(up to 30 s)" in logged[waiting]
    waited = next(i for i, message in enumerate(logged) if message.startswith("waited "))
    assert waiting < waited and "for the warehouse" in logged[waited]
    assert float(logged[waited].split()[1]) >= NOTICE_AFTER_S


class _Heard(logging.Handler):
    """Sets ``event`` when a record's message starts with ``start``."""

    def __init__(self, start: str, event: threading.Event) -> None:
        super().__init__()
        self.start, self.event = start, event

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(self.start):
            self.event.set()


def test_a_run_without_a_partition_is_refused_before_it_does_anything(
    server: EmulatorServer, warehouse: Path, instance: dg.DagsterInstance
) -> None:
    # ``dagster job execute -j nightly_sync`` with no partition tag. Before, with one tenant configured: the
    # sync committed, then its partitioned checks failed the run, and the on-call engineer reran it.
    settings = settings_for(server, warehouse, tenants=[DEMO_TENANT_ID])
    job = sync_definitions(settings).resolve_job_def(NIGHTLY_JOB)

    result = job.execute_in_process(instance=instance, run_config=QUIET_LOGS, raise_on_error=False)

    assert not result.success
    assert "this run names no tenant (no partition)" in first_error(result)
    assert query(warehouse, "SELECT count(*) FROM sync_runs") == [(0,)]
