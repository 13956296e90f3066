"""The copy tells the whole truth (issue 29): the last run whatever its outcome, what an answer as of an
instant is known as of and where history starts, every change named in a change log written at commit
time, revision ids as of any time, and who holds the writer's file. Real syncs of the small emulator over
loopback HTTP into real DuckDB files: a first run (read whole), a failed run, changes (one no column shows), a
nightly run, a failed run again."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from pydantic import SecretStr

from emulator.server import EmulatorServer
from pipelines.settings import SyncSettings
from pipelines.sync import SyncOutcome
from tests.conftest import DEMO_TENANT_ID, DEMO_TOKEN, copy_of, loopback, shared_http
from tests.sync_support import only_run, query, settings_for, sync_direct
from warehouse.locks import LockBusyError

pytestmark = pytest.mark.xdist_group("test_analyst_truth")  # its module fixture syncs: once, on one worker

NEW_COST_CENTER = "CC-AUDIT-29"


@dataclass(frozen=True)
class Synced:
    """The module's warehouse, its copy, and what its runs left."""

    settings: SyncSettings
    full: Commit
    """The first run, which read every list whole."""
    nightly: SyncOutcome
    user_id: str
    cost_center_before: str
    status_after_nightly: list[tuple[Any, ...]]
    """The copy's v_sync_status after the nightly run, which followed a failed run."""
    failed_error: str

    @property
    def copy(self) -> Path:
        """The copy published for readers."""
        return self.settings.publish_file


def failing_run(settings: SyncSettings) -> str:
    """A run refused by the service (a wrong token: 401); returns its error."""
    wrong = settings.model_copy(update={"token": SecretStr("not-the-token")})
    with pytest.raises(Exception, match="401") as raised:
        sync_direct(wrong, DEMO_TENANT_ID, full_refresh=False)
    return str(raised.value)


@dataclass(frozen=True)
class Commit:
    """A committed run: its id and the instant it committed at."""

    run_id: str
    finished_at: datetime


def first_run(settings: SyncSettings) -> Commit:
    """The one run a warehouse copied from the synced template has had."""
    return Commit(*only_run(settings.warehouse))


@pytest.fixture(scope="module")
def synced(
    small_emulator_server: EmulatorServer, synced_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Synced]:
    """A first run (every list read whole: a copy of the synced template); a failed run; a user's
    customAttributes changed through E1 and other changes; a nightly run; a failed run again."""
    server = small_emulator_server
    server.emulator.reset()
    settings = settings_for(server, copy_of(synced_template, tmp_path_factory.mktemp("truth") / "wh.duckdb"))
    full = first_run(settings)
    failing_run(settings)
    user_id, before = query(
        settings.warehouse,
        "SELECT id, raw ->> '$.customAttributes.costCenter' FROM users "
        "WHERE tenant_id = ? AND raw ->> '$.customAttributes.costCenter' IS NOT NULL ORDER BY id LIMIT 1",
        [DEMO_TENANT_ID],
    )[0]
    with loopback(base_url=server.base_url, headers={"Authorization": f"Bearer {DEMO_TOKEN}"}) as http:
        http.patch(
            f"/auth/v1/user/update-entities/{user_id}",
            json={"tenantId": DEMO_TENANT_ID, "customAttributes": {"costCenter": NEW_COST_CENTER}},
        ).raise_for_status()
    shared_http().post(f"{server.base_url}/_admin/mutate", json={"decisionsUpdated": 2}).raise_for_status()
    nightly = sync_direct(settings, DEMO_TENANT_ID, full_refresh=False)
    status = query(settings.publish_file, STATUS, [DEMO_TENANT_ID])
    error = failing_run(settings)
    yield Synced(settings, full, nightly, user_id, before, status, error)
    server.emulator.reset()


STATUS = (
    "SELECT last_run_status, last_run_error, last_commit_run_id, first_commit_at FROM v_sync_status "
    "WHERE tenant_id = ?"
)


def test_the_copy_shows_the_last_run_failed_with_its_own_error_and_where_history_starts(
    synced: Synced,
) -> None:
    (status,) = query(synced.copy, STATUS, [DEMO_TENANT_ID])
    assert status[0] == "failed"
    assert synced.failed_error in status[1]
    assert status[2:] == (synced.nightly.record.run_id, synced.full.finished_at)
    # Nothing but the run's row reached the copy: its data is the last commit's.
    assert query(synced.copy, "SELECT count(*) FROM change_log") == query(
        synced.settings.warehouse, "SELECT count(*) FROM change_log"
    )


def test_a_succeeded_last_run_shows_no_older_runs_error(synced: Synced) -> None:
    """A failed run, then a committed one: the copy's last_run_error is NULL, not the failed run's."""
    assert synced.status_after_nightly == [
        ("succeeded", None, synced.nightly.record.run_id, synced.full.finished_at)
    ]


def test_an_answer_as_of_an_instant_names_the_commit_it_is_known_as_of(synced: Synced) -> None:
    full, nightly = synced.full, synced.nightly.record
    assert full.finished_at is not None and nightly.finished_at is not None
    between = full.finished_at + (nightly.finished_at - full.finished_at) / 2
    sql = "SELECT DISTINCT known_as_of, known_as_of_run_id FROM {}(?)"
    for macro in ("users_as_of", "decision_authorities_as_of", "user_authorities_as_of", "group_tree_as_of"):
        assert query(synced.copy, sql.format(macro), [full.finished_at]) == [(full.finished_at, full.run_id)]
        assert query(synced.copy, sql.format(macro), [between]) == [(full.finished_at, full.run_id)]
        assert query(synced.copy, sql.format(macro), [nightly.finished_at]) == [
            (nightly.finished_at, nightly.run_id)
        ]
    assert query(synced.copy, "SELECT DISTINCT known_as_of_run_id FROM v_user_authorities") == [
        (nightly.run_id,)
    ]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM users_as_of(?)",
        "SELECT count(*) FROM user_authorities_as_of(?)",
        "SELECT count(*) FROM delegation_revisions_as_of(?)",
    ],
)
def test_an_instant_before_the_first_commit_is_refused_not_answered_empty(synced: Synced, sql: str) -> None:
    first = synced.full.finished_at
    assert first is not None
    with pytest.raises(duckdb.InvalidInputException, match="nothing is known as of") as refused:
        query(synced.copy, sql, [first - timedelta(microseconds=1)])
    assert DEMO_TENANT_ID in str(refused.value)
    assert first.strftime("%Y-%m-%dT%H:%M:%S.%fZ") in str(refused.value)


def test_a_change_no_column_shows_is_named_by_its_path_in_raw(synced: Synced) -> None:
    rows = query(
        synced.copy,
        "SELECT field, before, after, run_id FROM v_changes "
        "WHERE entity = 'users' AND id = ? AND field LIKE '$%'",
        [synced.user_id],
    )
    assert (
        "$.customAttributes.costCenter",
        f'"{synced.cost_center_before}"',
        f'"{NEW_COST_CENTER}"',
        synced.nightly.record.run_id,
    ) in rows


def test_the_change_log_is_written_by_the_commit_in_utc_text_with_occurrences(synced: Synced) -> None:
    """The log is a table the commit appended to (the view computes nothing), its instants' text is UTC ISO
    8601 whatever the reader's time zone, and items carry their occurrence."""
    with duckdb.connect(str(synced.copy), read_only=True) as con:
        con.execute("SET TimeZone = 'America/New_York'")
        rows = con.execute(
            "SELECT before, after FROM v_changes WHERE entity = 'decisions' AND field = 'updated_at'"
        ).fetchall()
        columns = [row[0] for row in con.execute("DESCRIBE v_changes").fetchall()]
        logged = con.execute(
            "SELECT count(*) FROM change_log WHERE run_id = ?", [synced.nightly.record.run_id]
        ).fetchall()[0][0]
        view = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'v_changes'").fetchall()[0][0]
    assert len(rows) == 2
    for before, after in rows:
        for text in (before, after):
            assert datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    assert "occurrence" in columns
    assert logged > 0
    assert "change_log" in view and "history" not in view


def test_revision_ids_a_full_refresh_drops_stay_in_their_history(
    small_emulator_server: EmulatorServer, synced_template: Path, tmp_path: Path
) -> None:
    """A delegation the service no longer lists: a full refresh prunes its revision list, and its ids stay
    known as of any time before."""
    server = small_emulator_server
    server.emulator.reset()
    settings = settings_for(server, copy_of(synced_template, tmp_path / "wh.duckdb"))
    first = first_run(settings)
    delegation, revisions = query(
        settings.warehouse,
        "SELECT delegation_id, list(revision_id ORDER BY revision_id) FROM delegation_revisions "
        "WHERE tenant_id = ? GROUP BY ALL ORDER BY delegation_id LIMIT 1",
        [DEMO_TENANT_ID],
    )[0]
    del server.emulator.tenants[DEMO_TENANT_ID].delegations[delegation]
    second = sync_direct(settings, DEMO_TENANT_ID, full_refresh=True).record
    server.emulator.reset()

    as_of = (
        "SELECT list(revision_id ORDER BY revision_id) FROM delegation_revisions_as_of(?) "
        "WHERE tenant_id = ? AND delegation_id = ?"
    )
    assert query(settings.publish_file, as_of, [first.finished_at, DEMO_TENANT_ID, delegation]) == [
        (revisions,)
    ]
    assert query(settings.publish_file, as_of, [second.finished_at, DEMO_TENANT_ID, delegation]) == [(None,)]
    ended = query(
        settings.publish_file,
        "SELECT DISTINCT ended_run_id FROM delegation_revisions_history WHERE delegation_id = ?",
        [delegation],
    )
    assert ended == [(second.run_id,)]


def test_a_commit_blocked_by_a_notebooks_read_only_session_names_it_and_the_copy(
    small_emulator_server: EmulatorServer, template: Path, tmp_path: Path
) -> None:
    """A plain ``duckdb.connect(warehouse, read_only=True)`` in another process (a notebook) holds DuckDB's
    lock on the writer's file: the run's failure names that process and the copy readers belong on."""
    settings = settings_for(small_emulator_server, copy_of(template, tmp_path / "wh.duckdb"), lock_wait_s=0.5)
    notebook = tmp_path / "notebook.py"
    notebook.write_text(
        "import sys, duckdb\n"
        f"con = duckdb.connect({str(settings.warehouse)!r}, read_only=True)\n"
        "print('open', flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, str(notebook)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as holder:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        try:
            with pytest.raises(LockBusyError) as refused:
                sync_direct(settings, DEMO_TENANT_ID, full_refresh=True)
        finally:
            holder.communicate("")
    message = str(refused.value)
    assert f"pid {holder.pid} ({Path(sys.executable).name} notebook.py, user " in message
    assert f"readers belong on the published copy {settings.publish_file}" in message
    assert "\n" not in message
