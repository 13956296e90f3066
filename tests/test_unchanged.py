"""Records read again unchanged (warehouse/unchanged.py): a list read whole stages the stored rows of the
records whose text and derivation are those of their rows instead of deriving them again, and commits
exactly what deriving them commits. Real syncs over loopback HTTP from the small emulator; each way runs on
its own copy of the same warehouse, and the two are compared table by table, field by field. A record that
changes while its list is read is served by the stand-in (tests/standin.py)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from emulator.server import EmulatorServer
from tests.conftest import DEMO_TENANT_ID, example_warehouse, fresh
from tests.dagster_support import mutate
from tests.standin import Quirks, Tenant
from tests.sync_support import query, settings_for, sync
from tests.test_sync_quirks import run, tenant, ts, uid, user
from tests.warehouse_compare import differences
from warehouse.catalog import LISTS
from warehouse.staging import StagingWriter
from warehouse.unchanged import UnchangedRowsError, stage_unchanged

ALWAYS, NEVER = {"reuse_min_records": 0}, {"reuse_min_records": 10**9}
"""``ADM_REUSE_MIN_RECORDS`` of a run that reuses whatever it can, and of one that derives every record."""
EXAMPLES = int(os.environ.get("ADM_GENERATIVE_EXAMPLES", "2"))
"""Sequences drawn: 2 in `make test` (each up to two runs after the first, on two warehouses), 300 in `make
generative`."""


@pytest.fixture
def server(small_emulator_server: EmulatorServer) -> Iterator[EmulatorServer]:
    """The small session emulator, fresh."""
    yield from fresh(small_emulator_server)


def both_ways(server: EmulatorServer, warehouse: Path, *, full_refresh: bool, **changes: object) -> Path:
    """Run the tenant once deriving every record (on a copy of ``warehouse`` made first) and once reusing
    whatever it can (on ``warehouse``); return the copy."""
    deriving = warehouse.with_name(f"deriving-{warehouse.name}")
    shutil.copyfile(warehouse, deriving)
    sync(settings_for(server, deriving, **NEVER, **changes), full_refresh=full_refresh)
    sync(settings_for(server, warehouse, **ALWAYS, **changes), full_refresh=full_refresh)
    return deriving


def reused(warehouse: Path) -> dict[str, int]:
    """Per list, the records the last run staged from the warehouse (``sync_runs.records_reused``)."""
    ((found,),) = query(warehouse, "SELECT records_reused FROM sync_runs ORDER BY finished_at DESC LIMIT 1")
    return dict(json.loads(found))


def live(warehouse: Path) -> dict[str, int]:
    """Live records of each list."""
    return {
        name: query(warehouse, f"SELECT count(*) FROM {name} WHERE NOT coalesce(is_deleted, FALSE)")[0][0]  # noqa: S608
        for name in LISTS
    }


def test_a_second_full_refresh_stages_every_unchanged_record_and_commits_what_deriving_commits(
    server: EmulatorServer, synced: Path
) -> None:
    deriving = both_ways(server, synced, full_refresh=True)
    assert reused(synced) == {name: count for name, count in live(deriving).items() if count}
    assert reused(deriving) == {}
    compared, found = differences(deriving, synced)
    assert found == [], found
    assert compared > 30


def test_a_revision_list_never_checked_is_read_though_its_owner_is_reused(
    server: EmulatorServer, synced: Path
) -> None:
    # Records staged again are not offered to the revision reads: a list one names that no run checked is
    # read all the same (it is due), and both ways check the same lists.
    with duckdb.connect(str(synced)) as con:
        unchecked = con.execute(
            "DELETE FROM revision_checks WHERE rowid IN (SELECT min(rowid) FROM revision_checks "
            "GROUP BY parent_kind) RETURNING parent_kind, parent_id"
        ).fetchall()
    assert {kind for kind, _ in unchecked} == {"delegation", "document"}
    deriving = both_ways(server, synced, full_refresh=True)
    assert reused(synced) == {name: count for name, count in live(deriving).items() if count}
    assert differences(deriving, synced)[1] == []
    checked = query(synced, "SELECT parent_kind, parent_id FROM revision_checks")
    assert set(unchecked) <= set(checked)


def test_rows_another_derivation_wrote_are_derived_again_once(server: EmulatorServer, synced: Path) -> None:
    # The schema contract's modes are part of what derives rows (so is every file of the code and schema):
    # the first run under other modes derives every record again, the next one reuses what that one wrote.
    other = {"schema_contract": "tolerant,users=strict"}
    deriving = both_ways(server, synced, full_refresh=True, **other)
    assert reused(synced) == {}
    assert differences(deriving, synced)[1] == []
    sync(settings_for(server, synced, **ALWAYS, **other), full_refresh=True)
    assert reused(synced) == {name: count for name, count in live(synced).items() if count}


def test_a_stored_row_whose_text_changed_since_the_run_read_it_fails_naming_the_list(
    synced: Path, tmp_path: Path
) -> None:
    # The staging of a run whose users list was read: the digest noted for one record is not its row's.
    (first, second) = query(synced, "SELECT id, md5(raw) FROM users ORDER BY id LIMIT 2")
    with StagingWriter(tmp_path) as writer:
        writer.declare(*LISTS["users"].family.tables)
    noted = {"users": {first[0]: first[1], second[0]: first[1]}}
    with pytest.raises(UnchangedRowsError, match=r"^users: 1 of the 2 records read unchanged no longer have"):
        stage_unchanged(synced, 1.0, tmp_path, DEMO_TENANT_ID, noted)


CHANGES = st.fixed_dictionaries(
    {},
    optional={
        "decisionsUpdated": st.integers(1, 4),
        "decisionsInserted": st.integers(1, 2),
        "decisionsDeleted": st.integers(1, 2),
        "delegationsUpdated": st.integers(1, 3),
        "delegationsInserted": st.integers(1, 2),
        "usersUpdated": st.integers(1, 4),
        "groupsUpdated": st.integers(1, 2),
        "documentRevisions": st.integers(1, 3),
        "unknownField": st.sampled_from(["addedLater", "x_extra"]),
    },
)
"""What the service may change between two runs (the emulator's bulk mutations): none, some or all."""
RUNS = st.lists(st.tuples(CHANGES, st.booleans()), min_size=1, max_size=2)
"""A sequence of runs after the first: the changes made before each, and whether it is a full refresh."""


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")
@pytest.mark.timeout(max(600, 30 * EXAMPLES))  # up to 13 s an example here, far more on a busy machine
@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate]
)
@given(runs=RUNS)
def test_after_any_sequence_of_changes_and_runs_reusing_commits_what_deriving_commits(
    runs: list[tuple[dict[str, Any], bool]],
    small_emulator_server: EmulatorServer,
    synced_template: Path,
    folder: Path,
) -> None:
    server = next(fresh(small_emulator_server))
    reusing = example_warehouse(synced_template, folder)
    deriving = reusing.with_name("deriving.duckdb")
    shutil.copyfile(reusing, deriving)
    for step, (changes, full_refresh) in enumerate(runs, 1):
        if changes:
            mutate(server, **changes)
        sync(settings_for(server, deriving, **NEVER), full_refresh=full_refresh)
        sync(settings_for(server, reusing, **ALWAYS), full_refresh=full_refresh)
        _, found = differences(deriving, reusing)
        assert found == [], f"run {step} ({changes}, full refresh {full_refresh}): {found}"
        event(f"records reused: {'some' if reused(reusing) else 'none'}")


def test_a_record_read_unchanged_then_met_again_changed_is_stored_as_its_latest_copy(migrated: Path) -> None:
    served = tenant(users=[user(n) for n in range(1, 8)])
    run(served, migrated)

    def change_the_first_once_read(name: str, before: int, held: Tenant) -> None:
        if name == "users" and before == 1:  # page 1 was served, its first record unchanged
            held.lists["users"][0].update({"userId": "changed", "updatedOn": ts(100)})

    def by_updated(name: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(records, key=lambda record: str(record.get("updatedOn")))

    quirks = Quirks(page_cap=2, on_list_request=change_the_first_once_read, order=by_updated)
    outcome, _ = run(served, migrated, quirks, **ALWAYS)
    assert outcome.record.status == "succeeded", outcome.record.error
    assert outcome.record.records_reused == {"users": 6}
    stored = query(migrated, "SELECT user_display_id FROM users WHERE id = ?", [uid("user", 1)])
    assert stored == [("changed",)]
