"""Applying plans against the emulator over loopback: exactly the planned fields change, nothing is written
twice (re-apply, dropped connections, crashes, server errors), conflicts are skipped, 429s absorbed."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import pytest
from duckdb import DuckDBPyConnection
from duckdb import connect as duckdb_connect

from emulator.scale import DEMO_TENANT_ID, DEMO_TOKEN
from emulator.server import EmulatorServer
from models.groups import Group
from models.hr.fields import Values, group_values, user_values
from models.hr.kinds import ChangeKind
from models.hr.plan import Change, EntityPlan, Plan
from models.hr.status import EntityStatus, PlanStatus
from models.users import UpdateUserEntities, User
from pipelines.clients import AdmClientResource
from pipelines.hr.apply import PlanNotApplicableError, group_body, settle_window, user_body
from pipelines.hr.mapping import SAMPLES
from pipelines.hr.policy import HrPolicyResource
from pipelines.hr.workflow import apply_stored, refresh, stored_plan
from pipelines.settings import SyncSettings
from pipelines.warehouse_resource import WarehouseResource
from resources.client import AdmClient
from resources.errors import AuthenticationError
from tests.conftest import loopback, shared_http, stored
from tests.sync_support import adm_for, query, settings_for, sync, sync_env
from tests.test_hr_support import (
    SETTINGS,
    apply,
    client_of,
    faults,
    plan,
    row_of,
    seeded_snapshot,
    user_id,
    user_rows,
    write_users,
    writes,
)
from warehouse.commit import writing
from warehouse.files import default_publish_path
from warehouse.hr_store import Journal, JournalClosedError

pytest_plugins = ["tests.test_hr_support"]

DEMO = (SAMPLES / "demo_users.csv", SAMPLES / "demo_groups.csv")


def demo_plan(store: WarehouseResource) -> Plan:
    """The plan of the shipped demo export (19 entities: 2 groups, 17 users)."""
    made = plan(store, *DEMO).plan
    assert made is not None and len(made.entities) == 19
    return made


def current(server: EmulatorServer, kind: str, entity_id: str) -> Values:
    """An entity's values as the emulator holds them now."""
    with loopback(base_url=server.base_url) as client:
        record = stored(client, f"{kind}s", entity_id)
    if kind == "user":
        return user_values(User.model_validate(record))
    return group_values(Group.model_validate(record))


def journal(store: WarehouseResource, plan_id: str) -> dict[str, tuple[str, int, str | None]]:
    """Each entity's journaled (status, write count, message), by HR key."""
    with duckdb_connect(str(store.file), read_only=True) as con:
        rows = con.execute(
            "SELECT hr_key, status, write_count, message FROM hr_plan_entities WHERE plan_id = ?", [plan_id]
        ).fetchall()
    return {key: (status, count, message) for key, status, count, message in rows}


def each_written_once(server: EmulatorServer, made: Plan) -> bool:
    """Whether every planned entity was written exactly once, and nothing else was."""
    expected = {f"{entity.kind}:{entity.entity_id}": 1 for entity in made.entities}
    return writes(server) == expected


def test_apply_changes_exactly_the_planned_fields(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer
) -> None:
    made = demo_plan(hr_store)
    report = apply(hr_store, adm, made.plan_id)
    assert (report.status, report.outcomes) == ("applied", {"applied": 19})
    snapshot = seeded_snapshot()
    for entity in made.entities:
        before = (snapshot.user_values if entity.kind == "user" else snapshot.group_values)[entity.entity_id]
        expected = before | {change.field: change.after for change in entity.changes}
        assert current(server, entity.kind, entity.entity_id) == expected, entity.hr_key
    assert each_written_once(server, made)
    # Readers see the applied plan at once, not after the next sync (issue 21).
    copy = default_publish_path(hr_store.file)
    assert query(copy, "SELECT status FROM hr_plans WHERE plan_id = ?", [made.plan_id]) == [("applied",)]


def test_reapplying_the_same_file_after_success_writes_nothing(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer
) -> None:
    made = demo_plan(hr_store)
    apply(hr_store, adm, made.plan_id)
    with pytest.raises(PlanNotApplicableError, match="applies once"):
        apply(hr_store, adm, made.plan_id)
    refresh(SETTINGS, DEMO_TENANT_ID, adm, hr_store)
    again = plan(hr_store, *DEMO).plan
    assert again is not None and again.entities == [] and len(again.new) == 2
    assert apply(hr_store, adm, again.plan_id).writes == 0
    assert each_written_once(server, made)


def test_an_entity_changed_since_planning_is_skipped(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    rows = user_rows()
    row_of(rows, "E100010")["positions"] = "Buyer"
    row_of(rows, "E100011")["manager"] = "E100003"
    made = plan(hr_store, write_users(tmp_path / "u.csv", rows)).plan
    assert made is not None and len(made.entities) == 2
    with loopback(base_url=server.base_url, headers=adm_headers()) as http:
        for employee, body in (
            ("E100011", {"managerId": user_id("E100001")}),
            ("E100010", {"lastName": "Moss"}),
        ):
            path = f"/auth/v1/user/update-entities/{user_id(employee)}"
            http.patch(path, json={"tenantId": DEMO_TENANT_ID, **body}).raise_for_status()
    report = apply(hr_store, adm, made.plan_id)
    assert report.outcomes == {"applied": 1, "skipped_changed": 1}
    status, count, message = journal(hr_store, made.plan_id)["E100011"]
    assert (status, count) == ("skipped_changed", 0) and message and "manager" in message
    assert current(server, "user", user_id("E100011"))["manager"] == user_id("E100001")
    assert writes(server) == {f"user:{user_id('E100010')}": 2, f"user:{user_id('E100011')}": 1}


def adm_headers() -> dict[str, str]:
    """The demo tenant's bearer header (an emulator-only credential)."""
    return {"Authorization": f"Bearer {DEMO_TOKEN}"}


def test_a_dropped_connection_mid_apply_never_writes_twice(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer
) -> None:
    made = demo_plan(hr_store)
    faults(server, after_writes=5, drop_rate=1.0, methods=["PATCH"])
    report = apply(hr_store, adm, made.plan_id)
    assert report.status == "applied"
    outcomes = journal(hr_store, made.plan_id).values()
    assert {(status, count) for status, count, _ in outcomes} == {("applied", 1)}
    # Each cut answer is read back. Only writes that reach the service before its fifth is applied are
    # answered: the fifth and at most the others in flight with it (the journal's marks are committed in
    # groups, so a whole window of writes can leave at once).
    answered = 5 + adm.settings.concurrency - 1
    read_back = sum(1 for *_, message in outcomes if message == "read back: the write was applied")
    assert read_back >= len(outcomes) - answered > 0, (read_back, len(outcomes))
    faults(server)
    with pytest.raises(PlanNotApplicableError):
        apply(hr_store, adm, made.plan_id)
    assert each_written_once(server, made)


class Crash(BaseException):
    """The process dies."""


def test_a_crash_between_write_and_journal_is_settled_by_reading_back(
    hr_store: WarehouseResource,
    adm: AdmClientResource,
    server: EmulatorServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = demo_plan(hr_store)
    recorded = Journal.record
    calls: list[str] = []

    def dying(self: Journal, entity: object, status: str, message: str | None, **flags: bool) -> None:
        calls.append(status)
        if len(calls) > 4:
            raise Crash
        recorded(self, entity, status, message, **flags)  # type: ignore[arg-type]

    monkeypatch.setattr(Journal, "record", dying)
    with pytest.raises(Crash):
        apply(hr_store, adm, made.plan_id)
    monkeypatch.setattr(Journal, "record", recorded)
    left = {status for status, _, _ in journal(hr_store, made.plan_id).values()}
    assert "in_flight" in left
    report = apply(hr_store, adm, made.plan_id)
    assert (report.status, report.outcomes) == ("applied", {"applied": 19})
    assert each_written_once(server, made)


def test_server_errors_on_writes_are_read_back_then_written_once(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer
) -> None:
    made = demo_plan(hr_store)
    faults(server, error_rate=1.0, methods=["PATCH"], max_faults=3)
    report = apply(hr_store, adm, made.plan_id)
    assert (report.status, report.outcomes) == ("applied", {"applied": 19})
    counts = sorted(count for _, count, _ in journal(hr_store, made.plan_id).values())
    assert counts == [1] * 16 + [2] * 3
    assert each_written_once(server, made)


def test_unreadable_write_answers_are_read_back_not_repeated(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer
) -> None:
    made = demo_plan(hr_store)
    faults(server, malformed_rate=1.0, methods=["PATCH"], max_faults=3)
    report = apply(hr_store, adm, made.plan_id)
    assert report.status == "applied"
    messages = [message for _, _, message in journal(hr_store, made.plan_id).values()]
    assert messages.count("read back: the write was applied") == 3
    assert each_written_once(server, made)


def test_429s_during_apply_are_absorbed(hr_store: WarehouseResource, server: EmulatorServer) -> None:
    made = demo_plan(hr_store)
    faults(server, rate_limit_per_minute=300, rate_burst=1)
    # The client's plan is ten times the service's, so the service answers some 429s: with a bucket of
    # one, any two requests within 0.2 s (the writes of one level go out together) get one, however
    # slowly a loaded host sends them (a bucket of two let a host at a load of 8 send no third in time).
    limited = adm_for(server, rate_per_minute=3000.0, burst=20)
    report = apply(hr_store, limited, made.plan_id)
    assert (report.status, report.outcomes) == ("applied", {"applied": 19})
    statuses = shared_http().get(f"{server.base_url}/_admin/stats").json()["statuses"]
    assert statuses.get("429", 0) > 0
    assert each_written_once(server, made)


def test_bodies_hold_only_what_changes() -> None:
    ids = [str(uuid.UUID(int=number)) for number in range(1, 5)]
    user = EntityPlan(
        "user",
        ids[0],
        "E100010",
        "users.csv",
        2,
        (
            Change("positions", [ids[1]], [ids[2]], ChangeKind.POSITION, "", ""),
            Change("status", "ACTIVE", "INACTIVE", ChangeKind.DEACTIVATION, "", ""),
            Change("termination_date", None, "2025-12-31", ChangeKind.DEACTIVATION, "", ""),
            Change("groups", [ids[1]], [ids[3], ids[2]], ChangeKind.GROUP, "", ""),
        ),
    )
    assert user_body(DEMO_TENANT_ID, user).to_wire() == {
        "tenantId": DEMO_TENANT_ID,
        "positionIds": [ids[2]],
        "status": "INACTIVE",
        "terminationDate": "2025-12-31T00:00:00.000Z",
        "groups": [{"groupId": ids[3], "isPrimaryOrg": True}, {"groupId": ids[2], "isPrimaryOrg": False}],
    }
    group = EntityPlan(
        "group",
        ids[0],
        "ORG-0007",
        "groups.csv",
        2,
        (
            Change("parent", [ids[1]], [ids[2]], ChangeKind.GROUP_REPARENT, "", ""),
            Change("status", "ACTIVE", "INACTIVE", ChangeKind.GROUP_DEACTIVATION, "", ""),
            Change("disable_option", "NA", "KEEP_ASSOCIATIONS", ChangeKind.GROUP_DEACTIVATION, "", ""),
        ),
    )
    assert group_body(group).to_wire() == {
        "addParentGroupIds": [ids[2]],
        "removeParentGroupIds": [ids[1]],
        "status": "INACTIVE",
        "disableOption": "KEEP_ASSOCIATIONS",
    }


def renames(store: WarehouseResource, folder: Path, count: int) -> Plan:
    """A stored plan that changes the last name of ``count`` users (a kind no threshold watches)."""
    rows = user_rows()
    for row in rows[10 : 10 + count]:
        row["last_name"] = f"{row['last_name'][:15]}-HR"
    made = plan(store, write_users(folder / "renames.csv", rows)).plan
    assert made is not None and len(made.entities) == count
    return made


def test_an_in_flight_write_is_not_judged_before_its_request_timed_out(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    made = renames(hr_store, tmp_path, 1)
    entity = made.entities[0]
    with client_of(adm) as first:
        # An apply marked the entity in_flight, sent its write to a slow service and died; the write is
        # still under way there (applied 1.5 s after it arrived) when the next apply starts.
        Journal(partial(writing, hr_store.file, "died", 0), made.plan_id, "died").mark_in_flight(
            entity, datetime.now(UTC) + settle_window(first.settings)
        )
        faults(server, latency_ms=1500)
        body = user_body(DEMO_TENANT_ID, entity)
        sending = threading.Thread(target=first.update_user_entities, args=(entity.entity_id, body))
        sending.start()
        quick_once_received(server, "E1", 1)
        report = apply(hr_store, adm, made.plan_id)
        sending.join()
    assert (report.status, report.outcomes, report.writes) == (PlanStatus.APPLIED, {"applied": 1}, 0)
    assert journal(hr_store, made.plan_id)[entity.hr_key] == (
        "applied",
        1,
        "read back: the write was applied",
    )
    # Before the fix the read-back came at once, missed the write still under way and sent it again.
    assert each_written_once(server, made)


def quick_once_received(server: EmulatorServer, endpoint: str, count: int) -> None:
    """Remove the latency once the emulator has received ``count`` requests of ``endpoint`` (those
    received still take their time), so the requests that follow are answered quickly."""

    def received() -> int:
        counted: int = (
            shared_http().get(f"{server.base_url}/_admin/stats").json()["requests"].get(endpoint, 0)
        )
        return counted

    deadline = time.monotonic() + 30
    while received() < count and time.monotonic() < deadline:
        time.sleep(0.02)
    faults(server)


def test_a_refused_token_leaves_the_plan_incomplete_and_counts_no_write(
    hr_store: WarehouseResource,
    adm: AdmClientResource,
    server: EmulatorServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = demo_plan(hr_store)
    send, sent, revoked = AdmClient.update_user_entities, itertools.count(1), {}

    def revoking(self: AdmClient, entity_id: str, body: UpdateUserEntities) -> User:
        if next(sent) == 5:  # an administrator revokes the token mid-apply
            revoked[DEMO_TOKEN] = server.emulator.tokens.pop(DEMO_TOKEN)
        return send(self, entity_id, body)

    monkeypatch.setattr(AdmClient, "update_user_entities", revoking)
    with pytest.raises(AuthenticationError):
        apply(hr_store, adm, made.plan_id)
    stopped = stored_plan(hr_store, made.plan_id)
    assert stopped.status == PlanStatus.INCOMPLETE and "401" in (stopped.apply_error or "")
    refused = [entry for entry in journal(hr_store, made.plan_id).values() if "401" in (entry[2] or "")]
    assert refused and {(status, count) for status, count, _ in refused} == {("planned", 0)}
    server.emulator.tokens |= revoked
    monkeypatch.setattr(AdmClient, "update_user_entities", send)
    resumed = apply(hr_store, adm, made.plan_id)
    assert (resumed.status, resumed.outcomes) == (PlanStatus.APPLIED, {"applied": 19})
    assert stored_plan(hr_store, made.plan_id).apply_error is None
    assert sum(count for _, count, _ in journal(hr_store, made.plan_id).values()) == 19
    assert each_written_once(server, made)


def test_writes_that_keep_failing_leave_the_plan_incomplete(
    hr_store: WarehouseResource, adm: AdmClientResource, server: EmulatorServer, tmp_path: Path
) -> None:
    made = renames(hr_store, tmp_path, 3)
    faults(server, error_rate=1.0, methods=["PATCH"])
    report = apply(hr_store, adm, made.plan_id)
    assert (report.status, report.outcomes) == (PlanStatus.INCOMPLETE, {"planned": 3})
    # Each entity was sent twice (the second after a read-back proved the first was not applied).
    assert report.writes == 6 and writes(server) == {}
    faults(server)
    resumed = apply(hr_store, adm, made.plan_id)
    assert (resumed.status, resumed.outcomes) == (PlanStatus.APPLIED, {"applied": 3})
    assert each_written_once(server, made)


def test_an_expired_plan_is_refused(
    hr_store: WarehouseResource, adm: AdmClientResource, tmp_path: Path
) -> None:
    made = renames(hr_store, tmp_path, 1)
    with client_of(adm) as client, pytest.raises(PlanNotApplicableError, match="expired"):
        policy = HrPolicyResource(
            SyncSettings(hr_plan_max_age_hours=timedelta(seconds=0.001) / timedelta(hours=1))
        )
        apply_stored(hr_store, made.plan_id, client, str(uuid.uuid4()), policy)
    assert stored_plan(hr_store, made.plan_id).status == PlanStatus.READY


def test_a_sync_commits_while_an_hr_apply_of_the_same_warehouse_waits_on_the_service(
    hr_store: WarehouseResource, server: EmulatorServer, tmp_path: Path
) -> None:
    # Before: the apply held a read-write connection for its whole run, so a sync of any tenant waited
    # for it to end (60 s at most, then DuckDB's raw error). Now the apply journals in short writes: a
    # sync with a 2 s lock wait reads and commits while the apply's write is still out at the service.
    made = renames(hr_store, tmp_path, 2)
    faults(server, latency_ms=8000)
    command = "import sys; from pipelines.cli import app; sys.argv[0] = 'authority-sync'; app()"
    apply = subprocess.Popen(
        [
            sys.executable,
            "-c",
            command,
            "hr",
            "apply",
            made.plan_id,
            "--warehouse",
            hr_store.file,
            "--no-refresh",
        ],
        env={**os.environ, **sync_env(server, hr_store.file)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        quick_once_received(server, "E1", 1)  # a write is out (6 s); what follows is answered at once
        synced = sync(settings_for(server, hr_store.file, lock_wait_s=2.0))
        assert synced.success, synced.error
        assert apply.poll() is None  # the sync did not wait for the apply to end
        output, _ = apply.communicate(timeout=120)
    finally:
        apply.kill()
    assert apply.returncode == 0, output
    assert "applied 2" in output
    statuses = query(hr_store.file, "SELECT status FROM sync_runs ORDER BY started_at")
    assert statuses[-1] == ("succeeded",)


def in_flight(store: WarehouseResource, plan_id: str, entity: EntityPlan) -> bool:
    """Whether the warehouse file holds ``entity`` as ``in_flight`` (read under the writer lock)."""
    with writing(store.file, "check", 30) as con:
        found = con.execute(
            "SELECT status FROM hr_plan_entities WHERE plan_id = ? AND entity_id = ?",
            [plan_id, entity.entity_id],
        ).fetchone()
    return found is not None and found[0] == "in_flight"


def test_marks_of_concurrent_workers_share_short_writes_and_each_is_durable_when_it_returns(
    hr_store: WarehouseResource,
) -> None:
    made = demo_plan(hr_store)
    opened = itertools.count()

    @contextmanager
    def counted() -> Iterator[DuckDBPyConnection]:
        next(opened)
        with writing(hr_store.file, "test", 30) as con:
            yield con

    journal = Journal(counted, made.plan_id, "group")
    deadline = datetime.now(UTC) + timedelta(minutes=1)
    start = threading.Barrier(len(made.entities))

    def mark(entity: EntityPlan) -> bool:
        start.wait()
        journal.mark_in_flight(entity, deadline)
        return in_flight(hr_store, made.plan_id, entity)  # before any other write can follow

    with ThreadPoolExecutor(len(made.entities)) as pool:
        durable = list(pool.map(mark, made.entities))
    journal.close()
    assert all(durable)
    # 19 marks in fewer short writes: the workers that arrive during a write go together in the next.
    assert next(opened) < len(made.entities)


def test_a_failed_short_write_unmarks_each_entity_of_its_group_and_keeps_the_outcomes(
    hr_store: WarehouseResource,
) -> None:
    made = demo_plan(hr_store)
    first, second, third = made.entities[:3]
    failing = threading.Event()

    @contextmanager
    def flaky() -> Iterator[DuckDBPyConnection]:
        if failing.is_set():
            raise OSError("disk gone")
        with writing(hr_store.file, "test", 30) as con:
            yield con

    journal = Journal(flaky, made.plan_id, "flaky")
    deadline = datetime.now(UTC) + timedelta(minutes=1)
    journal.mark_in_flight(first, deadline)
    journal.record(first, EntityStatus.APPLIED, "written", sent=True)
    failing.set()
    with pytest.raises(OSError, match="disk gone"):
        journal.mark_in_flight(second, deadline)
    failing.clear()
    journal.mark_in_flight(third, deadline)
    journal.close()
    # The failed mark is not in the file (its write is never sent); the outcome kept before it is.
    rows = dict(
        query(
            hr_store.file,
            "SELECT entity_id, status FROM hr_plan_entities WHERE plan_id = ? AND entity_id IN (?, ?, ?)",
            [made.plan_id, first.entity_id, second.entity_id, third.entity_id],
        )
    )
    assert rows == {first.entity_id: "applied", second.entity_id: "planned", third.entity_id: "in_flight"}
    with pytest.raises(JournalClosedError):
        journal.mark_in_flight(second, deadline)
