"""Merge, commit and staging on hand-made Parquet: no service, no Dagster, a real DuckDB file. Each test
commits a few runs of one tenant and reads the tables back."""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.checks import ids_unique
from pipelines.extract import TenantExtract
from resources.metrics import MetricsSnapshot
from tests.conftest import example_warehouse
from tests.spec_generators import SCALAR_VALUES
from tests.sync_support import query as read
from warehouse import commit as commit_module
from warehouse.catalog import FAMILIES
from warehouse.catalog_sql import backfill_calls
from warehouse.commit import (
    CHANGES_ONE_THREAD_FROM,
    COMMIT_BUFFERS,
    FIRST_COMMIT_LARGER_FROM,
    FIRST_COMMIT_ONE_THREAD_FROM,
    LARGER,
    MEMORY_LIMIT_BYTES,
    MEMORY_LIMIT_MB,
    ONE_THREAD,
    SMALL_COMMIT_BELOW,
    UNBOUNDED,
    CommitBuffer,
    CommitResult,
    StagedRun,
    StagingMismatchError,
    buffers_for,
    commit_run,
    connect,
    record_unfinished,
)
from warehouse.db import ROW_GROUP_ROWS
from warehouse.merge import CommitConstraintError, load_staged
from warehouse.publish_target import PublishTarget
from warehouse.reads import CheckEvidence
from warehouse.runs import RunRecord, RunStatus, insert_run
from warehouse.schema import staging_schema
from warehouse.staging import StagingWriter, clean_leftovers, discard, staged_tables, staging_dir

TENANT = "aaaaaaaa-0000-4000-8000-00000000000a"
OTHER = "bbbbbbbb-0000-4000-8000-00000000000b"
_runs = itertools.count(1)


def decision(record_id: str, name: str, *, status: str = "PUBLISHED", tenant: str = TENANT) -> dict[str, Any]:
    """A decisions row: the hash stands for the record's own content, here its name and status."""
    return {
        "tenant_id": tenant,
        "id": record_id,
        "name": name,
        "status": status,
        "is_deleted": status == "DELETED",
        "content_hash": f"{name}/{status}",
        "raw": f'{{"id": "{record_id}", "name": "{name}"}}',
    }


def authority(
    record_id: str | None, decision_id: str, limit: str, order: int = 1, tenant: str = TENANT
) -> dict[str, Any]:
    """A decision_authorities row, the ``order``-th of its decision."""
    return {
        "tenant_id": tenant,
        "id": record_id,
        "decision_id": decision_id,
        "item_order": order,
        "limit_value": limit,
        "is_unlimited": False,
        "raw": "{}",
    }


def revision(delegation_id: str, revision_id: str, order: int) -> dict[str, Any]:
    """A delegation_revisions row (first_seen_at is the merge's to fill)."""
    return {
        "tenant_id": TENANT,
        "delegation_id": delegation_id,
        "revision_id": revision_id,
        "revision_order": order,
        "first_seen_at": None,
    }


def delegation(record_id: str) -> dict[str, Any]:
    """A delegations row."""
    return {
        "tenant_id": TENANT,
        "id": record_id,
        "status": "ISSUED",
        "is_deleted": False,
        "content_hash": "h",
        "raw": "{}",
    }


def stage(root: Path, tables: dict[str, list[dict[str, Any]]]) -> tuple[Path, dict[str, int]]:
    """Write each table's rows as Parquet in its staging schema, the way a run leaves them."""
    folder = root / f"stage-{next(_runs)}"
    folder.mkdir(parents=True)
    for table, rows in tables.items():
        pq.write_table(pa.Table.from_pylist(rows, schema=staging_schema(table)), folder / f"{table}.parquet")
    return folder, {table: len(rows) for table, rows in tables.items()}


def commit(
    warehouse: Path,
    tables: dict[str, list[dict[str, Any]]],
    *,
    full: bool = False,
    tenant: str = TENANT,
    cursors: dict[str, str] | None = None,
    in_place: bool = False,
) -> tuple[str, CommitResult]:
    """Stage ``tables`` and commit them as one run; returns the run id and the commit's result. With
    ``in_place``, the commit runs as a larger one does (`as_larger_commit`)."""
    folder, counts = stage(warehouse.parent, tables)
    mode = "full" if full else "incremental"
    modes = dict.fromkeys(("decisions", "delegations", "users", "groups"), mode)
    record = RunRecord(f"run-{next(_runs)}", tenant, mode, datetime.now(UTC))
    with committed_in_place(in_place):
        result = commit_run(warehouse, StagedRun(folder, counts, modes, cursors or {}), record, wait_s=5)
    return record.run_id, result


def as_larger_commit(patch: pytest.MonkeyPatch) -> None:
    """While ``patch`` holds, every commit runs as one over `SMALL_COMMIT_BELOW` does (staged files read in
    place, two threads): the tests stage small commits, which otherwise copy their files."""
    patch.setattr(commit_module, "SMALL_COMMIT_BELOW", 0)


@contextmanager
def committed_in_place(in_place: bool) -> Iterator[None]:
    """For the block, commits run as a larger one does (`as_larger_commit`) when ``in_place``; otherwise as
    they would."""
    with pytest.MonkeyPatch.context() as patch:
        if in_place:
            as_larger_commit(patch)
        yield


@pytest.fixture
def warehouse(migrated: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new warehouse: a copy of the migrated template (these tests are about merging, not migrating). A
    test parametrized with `IN_PLACE` commits as a larger commit does (`as_larger_commit`)."""
    if getattr(request, "param", None) == IN_PLACE:
        as_larger_commit(monkeypatch)
    return migrated


IN_PLACE = "staged read in place"
BOTH_WAYS = pytest.mark.parametrize("warehouse", ["staged copied", IN_PLACE], indirect=True)
"""Run a merge test as a small commit does (staged files copied) and as a larger one does (read in place)."""


@BOTH_WAYS
def test_insert_update_unchanged_delete_and_reappear(warehouse: Path) -> None:
    _, first = commit(warehouse, {"decisions": [decision("a", "A"), decision("b", "B"), decision("c", "C")]})
    assert first.row_counts["decisions"] == {"inserted": 3, "updated": 0, "unchanged": 0, "deleted": 0}

    run_id, second = commit(warehouse, {"decisions": [decision("a", "A2"), decision("b", "B")]}, full=True)

    assert second.row_counts["decisions"] == {"inserted": 0, "updated": 1, "unchanged": 1, "deleted": 1}
    assert read(warehouse, "SELECT id, name, is_deleted, run_id FROM decisions ORDER BY id") == [
        ("a", "A2", False, run_id),
        ("b", "B", False, run_id),
        ("c", "C", True, first_run_of(warehouse, "c")),
    ]
    # A second full run without c does not count it deleted again, nor move its deleted_at.
    (deleted_at,) = read(warehouse, "SELECT deleted_at FROM decisions WHERE id = 'c'")[0]
    _, third = commit(warehouse, {"decisions": [decision("a", "A2"), decision("b", "B")]}, full=True)
    assert third.row_counts["decisions"]["deleted"] == 0
    assert read(warehouse, "SELECT deleted_at FROM decisions WHERE id = 'c'") == [(deleted_at,)]

    commit(warehouse, {"decisions": [decision("c", "C")]})

    assert read(warehouse, "SELECT is_deleted, deleted_at FROM decisions WHERE id = 'c'") == [(False, None)]


def first_run_of(warehouse: Path, record_id: str) -> str:
    """The run that first recorded a record (its first history version)."""
    found = read(
        warehouse,
        "SELECT run_id FROM decisions_history WHERE id = ? ORDER BY valid_from LIMIT 1",
        [record_id],
    )
    return str(found[0][0])


def test_rows_equal_to_the_staged_ones_are_stamped_not_written_again(warehouse: Path) -> None:
    roots = "SELECT id, rowid FROM decisions"
    items = "SELECT decision_id, rowid FROM decision_authorities"
    first = [authority("x1", "a", "10"), authority("x2", "b", "20")]
    commit(warehouse, {"decisions": [decision("a", "A"), decision("b", "B")], "decision_authorities": first})
    before, items_before = dict(read(warehouse, roots)), dict(read(warehouse, items))
    # b's hash is the same, its raw is not: a row differing in any staged column is written again.
    b_again = decision("b", "B") | {"raw": '{"id": "b", "name": "B", "delegations": 2}'}
    changed = [authority("x1", "a", "10"), authority("x2", "b", "25")]

    run_id, result = commit(
        warehouse, {"decisions": [decision("a", "A"), b_again], "decision_authorities": changed}, full=True
    )

    assert result.row_counts["decisions"] == {"inserted": 0, "updated": 0, "unchanged": 2, "deleted": 0}
    after, items_after = dict(read(warehouse, roots)), dict(read(warehouse, items))
    assert after["a"] == before["a"] and after["b"] != before["b"]
    assert items_after["a"] == items_before["a"] and items_after["b"] != items_before["b"]
    assert read(warehouse, "SELECT DISTINCT run_id FROM decisions") == [(run_id,)]
    assert read(warehouse, "SELECT DISTINCT run_id FROM decision_authorities") == [(run_id,)]
    assert read(warehouse, "SELECT raw FROM decisions WHERE id = 'b'") == [(b_again["raw"],)]
    limits = "SELECT limit_value FROM decision_authorities WHERE decision_id = 'b'"
    assert read(warehouse, limits) == [("25",)]


def test_a_record_the_service_says_is_deleted_keeps_when_it_was_first_seen_deleted(warehouse: Path) -> None:
    commit(warehouse, {"decisions": [decision("a", "A")]})
    commit(warehouse, {"decisions": [decision("a", "A", status="DELETED")]})
    (first_seen,) = read(warehouse, "SELECT deleted_at FROM decisions WHERE id = 'a'")[0]

    commit(warehouse, {"decisions": [decision("a", "A", status="DELETED")]})

    assert first_seen is not None
    assert read(warehouse, "SELECT is_deleted, deleted_at FROM decisions WHERE id = 'a'") == [
        (True, first_seen)
    ]
    # Still listed by the service: deleted_at is not after the run that last saw it.
    assert read(warehouse, "SELECT deleted_at <= synced_at FROM decisions WHERE id = 'a'") == [(True,)]


@BOTH_WAYS
def test_child_rows_follow_their_staged_record_and_stay_with_a_vanished_one(warehouse: Path) -> None:
    commit(
        warehouse,
        {
            "decisions": [decision("a", "A"), decision("b", "B")],
            "decision_authorities": [
                authority("x1", "a", "10"),
                authority("x2", "a", "20", order=2),
                authority("y", "b", "5"),
            ],
        },
    )

    _, result = commit(
        warehouse,
        {"decisions": [decision("a", "A")], "decision_authorities": [authority("x1", "a", "15")]},
        full=True,
    )

    assert result.row_counts["decision_authorities"] == {
        "inserted": 0,
        "updated": 1,
        "unchanged": 0,
        "deleted": 1,
    }
    assert read(warehouse, "SELECT id, decision_id, limit_value FROM decision_authorities ORDER BY id") == [
        ("x1", "a", "15"),
        ("y", "b", "5"),
    ]


def test_child_ids_repeated_within_and_across_parents_or_missing_all_load(warehouse: Path) -> None:
    # Embedded records' ids are not promised unique: a child row is its parent's n-th item.
    commit(
        warehouse,
        {
            "decisions": [decision("a", "A"), decision("b", "B")],
            "decision_authorities": [
                authority("shared", "a", "10"),
                authority("shared", "a", "20", order=2),
                authority("shared", "b", "5"),
                authority(None, "b", "7", order=2),
            ],
        },
    )

    assert read(
        warehouse,
        "SELECT decision_id, item_order, id FROM decision_authorities ORDER BY decision_id, item_order",
    ) == [("a", 1, "shared"), ("a", 2, "shared"), ("b", 1, "shared"), ("b", 2, None)]


def test_an_incremental_run_replaces_only_the_records_it_staged(warehouse: Path) -> None:
    commit(warehouse, {"decisions": [decision("a", "A"), decision("b", "B")]})

    _, result = commit(warehouse, {"decisions": [decision("b", "B2")]})

    assert result.row_counts["decisions"] == {"inserted": 0, "updated": 1, "unchanged": 0, "deleted": 0}
    assert read(warehouse, "SELECT id, name, is_deleted FROM decisions ORDER BY id") == [
        ("a", "A", False),
        ("b", "B2", False),
    ]


@BOTH_WAYS
def test_history_is_a_chain_of_versions_with_a_tombstone_and_a_return(warehouse: Path) -> None:
    commit(warehouse, {"decisions": [decision("a", "A")]})
    commit(warehouse, {"decisions": [decision("a", "A")]})  # unchanged: no version
    commit(warehouse, {"decisions": [decision("a", "A2")]})
    commit(warehouse, {"decisions": [decision("z", "Z")]}, full=True)  # a vanished
    commit(warehouse, {"decisions": [decision("a", "A2")]})  # a is back

    chain = read(
        warehouse,
        "SELECT name, is_deleted, is_current, valid_from, valid_to FROM decisions_history "
        "WHERE id = 'a' ORDER BY valid_from",
    )
    assert [row[:3] for row in chain] == [
        ("A", False, False),
        ("A2", False, False),
        ("A2", True, False),
        ("A2", False, True),
    ]
    assert all(older[4] == newer[3] for older, newer in itertools.pairwise(chain)), "versions must touch"
    assert chain[-1][4] is None


@BOTH_WAYS
def test_revisions_keep_when_they_were_first_seen_and_count_a_new_order(warehouse: Path) -> None:
    commit(
        warehouse,
        {
            "delegations": [delegation("d")],
            "delegation_revisions": [revision("d", "r1", 1), revision("d", "r2", 2)],
        },
    )
    before = dict(read(warehouse, "SELECT revision_id, first_seen_at FROM delegation_revisions"))

    _, result = commit(
        warehouse,
        {
            "delegations": [delegation("d")],
            "delegation_revisions": [revision("d", "r2", 1), revision("d", "r1", 2), revision("d", "r3", 3)],
        },
    )

    after = dict(read(warehouse, "SELECT revision_id, first_seen_at FROM delegation_revisions"))
    assert result.row_counts["delegation_revisions"] == {
        "inserted": 1,
        "updated": 2,
        "unchanged": 0,
        "deleted": 0,
    }
    assert after["r1"] == before["r1"] and after["r2"] == before["r2"] and after["r3"] > before["r1"]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lists=st.lists(
        st.tuples(st.lists(st.sampled_from(["r1", "r2", "r3"]), min_size=1, max_size=4), st.booleans()),
        min_size=2,
        max_size=3,
    )
)
def test_after_any_sequence_of_revision_lists_the_current_versions_are_the_list(
    template: Path, folder: Path, lists: list[tuple[list[str], bool]]
) -> None:
    """An id added, dropped, moved, repeated or put in another's place: after each commit the history's
    current versions are the list's ids, each with its occurrences; versions the commit ended name it.
    Each commit runs as a small or as a larger one (drawn), whichever the commit before it was."""
    warehouse = example_warehouse(template, folder)
    for ids, in_place in lists:
        before = Counter(read(warehouse, _CURRENT_REVISIONS))
        run_id, _ = commit(
            warehouse,
            {
                "delegations": [delegation("d")],
                "delegation_revisions": [revision("d", rid, order) for order, rid in enumerate(ids, 1)],
            },
            in_place=in_place,
        )
        listed = Counter((rid, ids[: place + 1].count(rid)) for place, rid in enumerate(ids))
        assert Counter(read(warehouse, _CURRENT_REVISIONS)) == listed, ids
        ended = read(
            warehouse,
            "SELECT revision_id, occurrence FROM delegation_revisions_history WHERE ended_run_id = ?",
            [run_id],
        )
        assert Counter(ended) == before - listed, ids


_CURRENT_REVISIONS = "SELECT revision_id, occurrence FROM delegation_revisions_history WHERE is_current"


def test_a_run_row_that_cannot_be_written_again_stays_as_the_run_began_it(warehouse: Path) -> None:
    """The row is rewritten by a delete and an insert, in one transaction: an insert that fails leaves the
    row the run started with (the next run records it killed), never no row."""
    record = RunRecord(f"run-{next(_runs)}", TENANT, "incremental", datetime.now(UTC))
    record.status = RunStatus.RUNNING
    with connect(warehouse) as con:
        insert_run(con, record)
    record.pid = "not a process id"  # type: ignore[assignment]  # an INTEGER column refuses it

    assert not record_unfinished(warehouse, record, wait_s=5)

    assert read(warehouse, "SELECT status FROM sync_runs WHERE run_id = ?", [record.run_id]) == [("running",)]


CURRENT_STATE = {
    "decisions": "SELECT id, rowid FROM decisions",
    "decision_authorities": "SELECT decision_id, item_order, rowid FROM decision_authorities",
    "delegation_revisions": "SELECT delegation_id, revision_id, rowid FROM delegation_revisions",
    "histories": "SELECT (SELECT count(*) FROM decisions_history), (SELECT count(*) FROM "
    "decision_authorities_history), (SELECT count(*) FROM delegation_revisions_history)",
    "change_log": "SELECT count(*) FROM change_log",
}
"""Where each row is stored and how many versions and changes there are: what a commit that rewrites,
versions or logs anything changes."""


@BOTH_WAYS
def test_a_commit_of_what_is_stored_writes_nothing_but_the_stamps(warehouse: Path) -> None:
    tables = {
        "decisions": [decision("a", "A"), decision("b", "B")],
        "decision_authorities": [authority("x1", "a", "10"), authority("x2", "b", "20", order=1)],
        "delegations": [delegation("d")],
        "delegation_revisions": [revision("d", "r1", 1), revision("d", "r2", 2)],
    }
    commit(warehouse, tables)
    before = {name: sorted(read(warehouse, sql)) for name, sql in CURRENT_STATE.items()}

    run_id, result = commit(warehouse, tables)

    assert {name: sorted(read(warehouse, sql)) for name, sql in CURRENT_STATE.items()} == before
    assert all(counts["unchanged"] == sum(counts.values()) for counts in result.row_counts.values())
    for table in ("decisions", "decision_authorities", "delegations", "delegation_revisions"):
        assert read(warehouse, f"SELECT DISTINCT run_id FROM {table}") == [(run_id,)]  # noqa: S608


def row_groups(warehouse: Path, table: str) -> int:
    """How many row groups ``table`` is stored in."""
    sql = f"SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('{table}')"  # noqa: S608
    return int(read(warehouse, sql)[0][0])


def test_a_warehouse_is_written_in_small_row_groups_that_commits_keep(warehouse: Path) -> None:
    # At DuckDB's default a tenant's table was one row group, which a checkpoint rewrites whole when a row
    # is appended to it: a nightly's 1% of 20,000 decisions rewrote every decision (2.0 s of checkpoint).
    rows = 5 * ROW_GROUP_ROWS
    commit(warehouse, {"decisions": [decision(f"d{n:05}", "A") for n in range(rows)]})
    assert row_groups(warehouse, "decisions") == 5

    changed = [decision(f"d{n:05}", "B") for n in range(0, rows, 100)]
    commit(warehouse, {"decisions": changed})

    # The changed rows were deleted where they were and appended at the end; no writer merged the
    # row groups back into one (DuckDB takes the size at ATTACH, and keeps none in the file).
    assert row_groups(warehouse, "decisions") == 6
    assert read(warehouse, "SELECT count(*) FILTER (WHERE name = 'B'), count(*) FROM decisions") == [
        (len(changed), rows)
    ]


def test_a_full_read_that_drops_a_revision_list_ends_its_versions_though_no_revision_was_staged(
    warehouse: Path,
) -> None:
    cited = {
        "tenant_id": TENANT,
        "id": "a-p",
        "decision_id": "a",
        "item_order": 1,
        "document_id": "p",
        "raw": "{}",
    }
    listed = {"tenant_id": TENANT, "document_id": "p", "revision_id": "r1", "revision_order": 1}
    commit(
        warehouse,
        {"decisions": [decision("a", "A")], "decision_documents": [cited], "document_revisions": [listed]},
    )
    commit(warehouse, {"delegations": [delegation("d")]})  # writes no revision list: keeps their versions
    versions = "SELECT document_id, revision_id, is_current, ended_run_id FROM document_revisions_history"
    assert read(warehouse, versions) == [("p", "r1", True, None)]

    # A full read finds the decision citing no document any more: the document's list is pruned.
    run_id, _ = commit(warehouse, {"decisions": [decision("a", "A")], "decision_documents": []}, full=True)

    assert read(warehouse, "SELECT count(*) FROM document_revisions") == [(0,)]
    assert read(warehouse, versions) == [("p", "r1", False, run_id)]


def test_the_copy_published_by_a_commit_holds_the_state_it_committed(warehouse: Path) -> None:
    """Published on the commit's own connection, after its COMMIT and CHECKPOINT: every table of the copy
    is the warehouse's as committed; the run's row learns its commit's and publish's times afterwards."""
    commit(warehouse, {"decisions": [decision("a", "A")], "decision_authorities": [authority("x", "a", "1")]})
    folder, counts = stage(warehouse.parent, {"decisions": [decision("a", "A2"), decision("b", "B")]})
    record = RunRecord(f"run-{next(_runs)}", TENANT, "incremental", datetime.now(UTC))
    target = PublishTarget(warehouse.parent / "copy.duckdb")

    result = commit_run(warehouse, StagedRun(folder, counts, {"decisions": "incremental"}), record, 5, target)

    assert result.published is not None and result.published.error is None
    with duckdb.connect(str(warehouse), read_only=True) as con:
        con.execute("ATTACH ? AS copy (READ_ONLY)", [str(target.path)])
        names = [
            row[0]
            for row in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = "
                "current_database() AND NOT internal"
            ).fetchall()
        ]
        late = "EXCLUDE (phase_seconds, warnings)"
        for name in names:
            columns = late if name == "sync_runs" else ""
            differing = con.execute(
                f"SELECT count(*) FROM ((SELECT * {columns} FROM main.{name} EXCEPT ALL "  # noqa: S608
                f"SELECT * {columns} FROM copy.{name}) UNION ALL (SELECT * {columns} FROM copy.{name} "
                f"EXCEPT ALL SELECT * {columns} FROM main.{name}))"
            ).fetchone()
            assert differing == (0,), name
        assert con.execute("SELECT count(*) FROM copy.decisions").fetchone() == (2,)
    phases = json.loads(
        read(warehouse, "SELECT phase_seconds FROM sync_runs WHERE run_id = ?", [record.run_id])[0][0]
    )
    assert {"commit", "publish"} <= set(phases)


def test_tenants_do_not_touch_each_other(warehouse: Path) -> None:
    commit(warehouse, {"decisions": [decision("a", "A")]})
    commit(warehouse, {"decisions": [decision("a", "Other", tenant=OTHER)]}, tenant=OTHER, full=True)

    assert read(warehouse, "SELECT tenant_id, name, is_deleted FROM decisions ORDER BY tenant_id") == [
        (TENANT, "A", False),
        (OTHER, "Other", False),
    ]


def test_a_commit_moves_cursors_and_records_the_run_in_one_transaction(warehouse: Path) -> None:
    run_id, _ = commit(
        warehouse, {"decisions": [decision("a", "A")]}, cursors={"decisions": "2026-01-02T03:04:05Z"}
    )

    assert read(warehouse, "SELECT entity, run_id FROM extract_cursors") == [("decisions", run_id)]
    assert read(warehouse, "SELECT status FROM sync_runs WHERE run_id = ?", [run_id]) == [("succeeded",)]


def test_a_failing_merge_leaves_the_warehouse_as_it_was(warehouse: Path) -> None:
    commit(warehouse, {"decisions": [decision("a", "A")]})
    before = read(warehouse, "SELECT * FROM decisions")
    # Two staged rows with one key (staging nothing else could write: the extract keeps one row per id):
    # the insert breaks the primary key in the middle of the merge, and the error names table and key.
    repeated = rf"decisions repeats its key \(tenant_id, id\): \({TENANT}, b\) x2"
    with pytest.raises(CommitConstraintError, match=repeated):
        commit(warehouse, {"decisions": [decision("a", "A3"), decision("b", "B"), decision("b", "B")]})

    assert read(warehouse, "SELECT * FROM decisions") == before
    assert read(warehouse, "SELECT count(*) FROM decisions_history") == [(1,)]
    assert read(warehouse, "SELECT count(*) FROM sync_runs") == [(1,)]


def test_a_commit_that_outgrows_its_buffer_is_committed_once_with_the_next(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Records of 50 kB each: a 4 MB buffer cannot hold the commit, the next (unbounded) one can.
    rows = [
        decision(f"d{i}", "N") | {"raw": json.dumps({"id": f"d{i}", "pad": "p" * 50_000})} for i in range(100)
    ]
    folder, counts = stage(tmp_path, {"decisions": rows})
    record = RunRecord("run-oom", TENANT, "incremental", datetime.now(UTC))
    staged = StagedRun(folder, counts, {"decisions": "incremental"})

    started = time.perf_counter()
    result = commit_run(tmp_path / "w.duckdb", staged, record, 5, buffers=(CommitBuffer("4MB", 1), UNBOUNDED))
    elapsed = time.perf_counter() - started

    assert result.row_counts["decisions"] == {"inserted": 100, "updated": 0, "unchanged": 0, "deleted": 0}
    # The commit phase counts the attempt that ran out of memory too (a third of the time here). Before, only
    # the last one, and the rest of the run's time seemed to go nowhere (25.7 s at 300,000 decisions).
    assert record.phase_seconds["commit"] >= 0.85 * elapsed
    warehouse = tmp_path / "w.duckdb"
    assert read(warehouse, "SELECT count(*), count(DISTINCT id) FROM decisions") == [(100, 100)]
    assert read(warehouse, "SELECT count(*) FROM decisions_history") == [(100,)]
    warning = (
        "the commit needed more memory than 4MB on 1 thread and was tried again with an unbounded buffer"
    )
    assert read(warehouse, "SELECT run_id, status, warnings FROM sync_runs") == [
        ("run-oom", "succeeded", json.dumps([f"{warning} on a thread per core"]))
    ]
    assert warning in caplog.text


def test_a_staging_larger_than_the_buffer_commits_on_one_thread_first(tmp_path: Path) -> None:
    staged = StagedRun(tmp_path, {}, {})
    with (tmp_path / "decisions.parquet").open("wb") as file:
        file.truncate(MEMORY_LIMIT_BYTES)  # sparse: the size is what counts
    assert buffers_for(staged) == COMMIT_BUFFERS
    with (tmp_path / "decision_groups.parquet").open("wb") as file:
        file.truncate(1)
    assert buffers_for(staged) == COMMIT_BUFFERS[COMMIT_BUFFERS.index(ONE_THREAD) :]
    assert buffers_for(staged)[0] == CommitBuffer(f"{MEMORY_LIMIT_MB}MB", threads=1)


def test_a_small_commit_starts_on_one_thread(tmp_path: Path) -> None:
    # A hundred-odd statements of a few rows each: a second thread only adds its coordination.
    with (tmp_path / "decisions.parquet").open("wb") as file:
        file.truncate(SMALL_COMMIT_BELOW - 1)  # sparse: the size is what counts
    one_thread_first = COMMIT_BUFFERS[COMMIT_BUFFERS.index(ONE_THREAD) :]
    assert buffers_for(StagedRun(tmp_path, {}, {}, held_records=1)) == one_thread_first
    assert (
        buffers_for(StagedRun(tmp_path, {}, {"decisions": "incremental"}, held_records=1)) == one_thread_first
    )
    with (tmp_path / "users.parquet").open("wb") as file:
        file.truncate(1)
    assert buffers_for(StagedRun(tmp_path, {}, {}, held_records=1)) == COMMIT_BUFFERS


def test_staged_files_copied_or_read_in_place_read_the_same_rows(tmp_path: Path) -> None:
    ids = pa.array([str(uuid.uuid4()) for _ in range(3_000)])
    decisions, users = tmp_path / "decisions.parquet", tmp_path / "users.parquet"
    pq.write_table(pa.table({"id": ids, "place": pa.array(range(len(ids)))}), decisions)
    pq.write_table(pa.table({"id": ids[:0], "place": pa.array([], pa.int64())}), users)  # none staged
    files = {"decisions": decisions, "users": users}
    listed = {
        True: "SELECT table_name FROM duckdb_tables() WHERE temporary ORDER BY 1",
        False: "SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal ORDER BY 1",
    }
    for copied, query in listed.items():
        with duckdb.connect() as con:
            load_staged(con, files, copied=copied)
            assert con.execute(query).fetchall() == [("stg_decisions",), ("stg_users",)]
            for view, path in (("stg_decisions", decisions), ("stg_users", users)):
                assert con.table(view).order("place").to_arrow_table().equals(pq.read_table(path))


def test_a_tenants_first_commit_of_an_eighth_of_the_buffer_starts_on_one_thread(tmp_path: Path) -> None:
    # Every row of a first commit is inserted: on two threads, 24 MB staged at 10,000 decisions ran out.
    with (tmp_path / "decisions.parquet").open("wb") as file:
        file.truncate(FIRST_COMMIT_ONE_THREAD_FROM)  # sparse: the size is what counts
    one_thread_first = COMMIT_BUFFERS[COMMIT_BUFFERS.index(ONE_THREAD) :]
    assert buffers_for(StagedRun(tmp_path, {}, {}, held_records=0)) == one_thread_first
    assert buffers_for(StagedRun(tmp_path, {}, {}, held_records=1)) == COMMIT_BUFFERS  # mostly compared
    assert buffers_for(StagedRun(tmp_path, {}, {})) == COMMIT_BUFFERS  # not known
    with (tmp_path / "decisions.parquet").open("wb") as file:
        file.truncate(FIRST_COMMIT_ONE_THREAD_FROM - 1)
    assert buffers_for(StagedRun(tmp_path, {}, {}, held_records=0)) == COMMIT_BUFFERS


def test_a_held_tenants_commit_of_a_sixteenth_of_the_buffer_read_incrementally_starts_on_one_thread(
    tmp_path: Path,
) -> None:
    # Each record an incremental read stages changed: on two threads, a 5% nightly of 100,000 decisions ran
    # out in the insert of its 5,000 new versions. The same bytes of a full read are mostly compared.
    half = CHANGES_ONE_THREAD_FROM // 2
    for table in ("decisions", "decision_groups", "users"):
        with (tmp_path / f"{table}.parquet").open("wb") as file:
            file.truncate(half)  # sparse: the size is what counts
    one_thread_first = COMMIT_BUFFERS[COMMIT_BUFFERS.index(ONE_THREAD) :]
    incremental = {"decisions": "incremental", "users": "full"}
    assert buffers_for(StagedRun(tmp_path, {}, incremental, held_records=1)) == one_thread_first
    assert buffers_for(StagedRun(tmp_path, {}, {"decisions": "full", "users": "full"}, held_records=1)) == (
        COMMIT_BUFFERS
    )
    assert buffers_for(
        StagedRun(tmp_path, {}, {"decisions": "full", "users": "incremental"}, held_records=1)
    ) == (
        COMMIT_BUFFERS  # the users' half alone
    )
    with (tmp_path / "decision_groups.parquet").open("wb") as file:
        file.truncate(half - 1)
    assert buffers_for(StagedRun(tmp_path, {}, incremental, held_records=1)) == COMMIT_BUFFERS


def test_a_tenants_first_commit_of_three_buffers_starts_on_the_larger_one(tmp_path: Path) -> None:
    # 300,000 decisions (about 570 MB staged, by proportion) ran out of 128 MB on one thread, at the end.
    with (tmp_path / "decisions.parquet").open("wb") as file:
        file.truncate(FIRST_COMMIT_LARGER_FROM)  # sparse: the size is what counts
    assert buffers_for(StagedRun(tmp_path, {}, {}, held_records=0)) == (LARGER, UNBOUNDED)
    one_thread_first = COMMIT_BUFFERS[COMMIT_BUFFERS.index(ONE_THREAD) :]
    assert buffers_for(StagedRun(tmp_path, {}, {}, held_records=1)) == one_thread_first  # mostly compared
    with (tmp_path / "decisions.parquet").open("wb") as file:
        file.truncate(FIRST_COMMIT_LARGER_FROM - 1)
    assert buffers_for(StagedRun(tmp_path, {}, {}, held_records=0)) == one_thread_first


def test_staging_that_differs_from_the_extract_is_never_committed(tmp_path: Path) -> None:
    warehouse = tmp_path / "not_yet.duckdb"
    folder, counts = stage(tmp_path, {"decisions": [decision("a", "A")]})
    record = RunRecord("run-x", TENANT, "incremental", datetime.now(UTC))

    with pytest.raises(StagingMismatchError, match="decisions holds 1 rows, the extract reported 2"):
        commit_run(warehouse, StagedRun(folder, {"decisions": 2}, {}), record, wait_s=1)
    with pytest.raises(StagingMismatchError, match="holds \\['decisions'\\], the extract reported \\[\\]"):
        commit_run(warehouse, StagedRun(folder, {}, {}), record, wait_s=1)
    assert counts == {"decisions": 1}
    assert not warehouse.exists()


def test_the_staging_writer_stages_declared_tables_and_cleaning_removes_only_the_tenants(
    tmp_path: Path,
) -> None:
    root = tmp_path / "staging"
    mine, other = staging_dir(root, "run-1", TENANT), staging_dir(root, "run-1", OTHER)
    with StagingWriter(mine) as writer:
        writer.add({"decisions": [decision("a", "A")]})
        writer.declare("decision_authorities")
    with StagingWriter(other) as writer:
        writer.add({"decisions": [decision("b", "B", tenant=OTHER)]})

    assert writer.counts == {"decisions": 1}
    assert pq.read_table(staged_tables(mine)["decision_authorities"]).num_rows == 0
    assert clean_leftovers(root, TENANT) == [mine]
    assert not mine.exists() and other.exists()
    discard(other)
    assert not (root / "run-1").exists()


def test_an_id_staged_twice_fails_the_ids_unique_check_naming_it(tmp_path: Path) -> None:
    # The stream keeps one record per id, so only staging written some other way can repeat one: the check
    # is the net under the commit's keys.
    with StagingWriter(tmp_path) as writer:
        writer.add({"decisions": [decision("a", "A"), decision("b", "B"), decision("a", "A2")]})
    extract = TenantExtract(tmp_path, {}, MetricsSnapshot())

    outcome = ids_unique("decisions")(extract, CheckEvidence())

    assert not outcome.passed and outcome.blocking
    assert outcome.description == "1 id(s) staged twice: a"


_POOL = ("a", "b", "c")


@st.composite
def drawn_decision(draw: st.DrawFn, record_id: str) -> dict[str, Any]:
    """A decisions row whose raw holds, beside the columns, a free-form object of any JSON the spec's
    ``object`` fields allow (any keys, nested lists and objects), which a run may change anywhere."""
    name, status = draw(st.sampled_from(["N", "M"])), draw(st.sampled_from(["PUBLISHED", "DRAFT", "DELETED"]))
    raw = {"id": record_id, "name": name, "custom": draw(SCALAR_VALUES["object"])}
    text = json.dumps(raw)
    row = decision(record_id, name, status=status)
    return row | {"raw": text, "content_hash": f"{text}/{status}"}


@dataclass(frozen=True)
class DrawnRun:
    """One run: full or not, the decisions it stages with their authorities, and whether its commit runs
    as a larger one does (`as_larger_commit`)."""

    full: bool
    decisions: list[dict[str, Any]]
    authorities: list[dict[str, Any]]
    in_place: bool


@st.composite
def drawn_run(draw: st.DrawFn) -> DrawnRun:
    """One `DrawnRun`."""
    ids = draw(st.lists(st.sampled_from(_POOL), unique=True, max_size=len(_POOL)))
    decisions = [draw(drawn_decision(record_id)) for record_id in ids]
    authorities = [
        authority(f"{record_id}{order}", record_id, draw(st.sampled_from(["10", "20"])), order)
        for record_id in ids
        for order in range(1, draw(st.integers(0, 2)) + 1)
    ]
    return DrawnRun(draw(st.booleans()), decisions, authorities, draw(st.booleans()))


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=st.lists(drawn_run(), min_size=2, max_size=3))
def test_the_change_log_each_commit_appends_is_what_the_whole_history_gives(
    template: Path, folder: Path, runs: list[DrawnRun]
) -> None:
    """Each commit logs only its own changes, from the versions of the records it touched (warehouse/
    changes.py): after any sequence of runs, each committed as a small or a larger commit, the log is, row
    for row, every change the histories hold, as recomputing it from the whole history gives
    (`backfill_calls`)."""
    warehouse = example_warehouse(template, folder)
    for run in runs:
        tables = {"decisions": run.decisions, "decision_authorities": run.authorities}
        commit(warehouse, tables, full=run.full, in_place=run.in_place)
    with duckdb.connect(str(warehouse)) as con:
        logged = Counter(con.execute("SELECT * FROM change_log").fetchall())
        con.execute("DELETE FROM change_log")
        for family in FAMILIES.values():
            for calls in backfill_calls(family).values():
                for call in calls:
                    con.execute(f"INSERT INTO change_log SELECT * FROM {call}")  # noqa: S608
        recomputed = Counter(con.execute("SELECT * FROM change_log").fetchall())
    assert logged == recomputed
