"""The history of the items of a record's lists, asked "as of" any commit: a property over generated
sequences of commits of hand-made rows (lists drawn here, with references missing or cited twice, as the
spec allows), merged by the real merge into a real DuckDB file, one transaction a commit. At each commit's
instant, the as-of macros give exactly the items that commit left, whichever runs were full or
incremental, and a list merged again unchanged adds no version."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sync_support import query as read
from tests.sync_support import stale_digests
from tests.test_merge import TENANT, commit
from warehouse import migrate as migrations
from warehouse.catalog import FAMILIES
from warehouse.merge import MergeContext, held_tables, load_staged, merge_family, merged_tables
from warehouse.migrate import migrate
from warehouse.schema import staging_schema

GROUPS = ("g1", "g2", "g3", None)
"""What a membership cites: a few groups, or nothing (a reference the service left out)."""
TYPES = ("t1", "t2", None)
VALUES = ("10", "250,000", "Unlimited")

memberships = st.lists(st.sampled_from(GROUPS), max_size=4)
limits = st.lists(st.tuples(st.sampled_from(TYPES), st.sampled_from(VALUES)), max_size=3)


@dataclass(frozen=True)
class Step:
    """One commit: full or incremental, the lists of the records it read (records it did not read keep
    theirs; a full one marks them deleted, with their lists as last seen), and whether its staging is
    copied, as a small commit's is, or read in place, as a larger one's (`warehouse.merge.load_staged`)."""

    full: bool
    users: dict[str, list[str | None]]
    decisions: dict[str, list[tuple[str | None, str]]]
    copied: bool


steps = st.builds(
    Step,
    st.booleans(),
    st.dictionaries(st.sampled_from(("u1", "u2", "u3")), memberships),
    st.dictionaries(st.sampled_from(("d1", "d2")), limits),
    st.booleans(),
)


def staged(step: Step, tenant: str) -> dict[str, list[dict[str, Any]]]:
    """The rows a run of ``tenant`` reading these records stages. Items' own ids repeat across parents (the
    spec does not promise them unique); the content hash stands for the record's items, which it covers by
    id."""
    base = {"tenant_id": tenant, "is_deleted": False, "raw": "{}"}
    return {
        "users": [base | {"id": key, "content_hash": repr(groups)} for key, groups in step.users.items()],
        "user_groups": [
            {"tenant_id": tenant, "id": f"m{place}", "user_id": key, "group_id": group, "group_order": place}
            | {"is_primary": place == 1, "group_name": f"copy of {group}"}
            for key, groups in step.users.items()
            for place, group in enumerate(groups, start=1)
        ],
        "decisions": [
            base | {"id": key, "content_hash": repr(items)} for key, items in step.decisions.items()
        ],
        "decision_authorities": [
            {"tenant_id": tenant, "id": f"a{place}", "decision_id": key, "item_order": place, "raw": "{}"}
            | {"authority_type_id": kind, "limit_value": value, "is_unlimited": value == "Unlimited"}
            for key, items in step.decisions.items()
            for place, (kind, value) in enumerate(items, start=1)
        ],
    }


def expected(lists: dict[str, dict[str, Any]]) -> dict[str, Counter[tuple[Any, ...]]]:
    """The items the warehouse holds after the steps so far, per macro, as multisets."""
    return {
        "user_groups_as_of": Counter(
            (key, group, place == 1)
            for key, groups in lists["users"].items()
            for place, group in enumerate(groups, start=1)
        ),
        "decision_authorities_as_of": Counter(
            (key, kind, value) for key, items in lists["decisions"].items() for kind, value in items
        ),
    }


COMPARED = {
    "user_groups_as_of": "user_id, group_id, is_primary",
    "decision_authorities_as_of": "decision_id, authority_type_id, limit_value",
}


def found(
    con: duckdb.DuckDBPyConnection, tenant: str, moment: datetime
) -> dict[str, Counter[tuple[Any, ...]]]:
    """What each as-of macro gives for ``tenant`` at ``moment``, as multisets."""
    return {
        macro: Counter(
            con.execute(f"SELECT {columns} FROM {macro}(?) WHERE tenant_id = ?", [moment, tenant]).fetchall()  # noqa: S608
        )
        for macro, columns in COMPARED.items()
    }


def versions(con: duckdb.DuckDBPyConnection, tenant: str) -> int:
    """Versions of items recorded so far for ``tenant``."""
    sql = (
        "SELECT (SELECT count(*) FROM user_groups_history WHERE tenant_id = ?) "
        "+ (SELECT count(*) FROM decision_authorities_history WHERE tenant_id = ?)"
    )
    found = con.execute(sql, [tenant, tenant]).fetchone()
    assert found is not None
    return int(found[0])


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    """One migrated warehouse file for every example: each example is a tenant of its own."""
    with duckdb.connect(str(tmp_path_factory.mktemp("as_of") / "wh.duckdb")) as connection:
        migrate(connection)
        yield connection


_tenants = itertools.count(1)
_clock = itertools.count(1)


def merge(
    con: duckdb.DuckDBPyConnection,
    folder: Path,
    tenant: str,
    step: Step,
    *,
    ask_held: bool = True,
    moment: datetime | None = None,
) -> datetime:
    """Merge one step's staged rows as one committed transaction (the merge a commit runs), at a commit
    time of its own unless ``moment`` is given; returns that time. ``ask_held``: first ask which tables hold
    rows of the tenant, as a commit does (without, the merge sends every statement)."""
    moment = moment or datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=next(_clock))
    files = {}
    for table, rows in staged(step, tenant).items():
        files[table] = folder / f"{table}-{moment.timestamp()}.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=staging_schema(table)), files[table])
    # A connection of its own, as each commit's is: the staged temp tables or views vanish with it.
    with con.cursor() as commit_con:
        commit_con.begin()
        load_staged(commit_con, files, copied=step.copied)
        held = held_tables(commit_con, tenant, merged_tables(files)) if ask_held else None
        context = MergeContext(commit_con, tenant, f"run-{moment.timestamp()}", moment, step.full, held=held)
        for family in ("users", "decisions"):
            merge_family(context, FAMILIES[family], set(files))
        commit_con.commit()
    return moment


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=st.lists(steps, min_size=1, max_size=4))
def test_as_of_each_commit_instant_gives_the_items_that_commit_left(
    con: duckdb.DuckDBPyConnection, tmp_path_factory: pytest.TempPathFactory, history: list[Step]
) -> None:
    tenant, folder = f"tenant-{next(_tenants)}", tmp_path_factory.mktemp("staged")
    lists: dict[str, dict[str, Any]] = {"users": {}, "decisions": {}}
    seen: list[tuple[datetime, dict[str, Counter[tuple[Any, ...]]]]] = []
    for step in history:
        moment = merge(con, folder, tenant, step)
        lists["users"] |= step.users
        lists["decisions"] |= step.decisions
        seen.append((moment, expected(lists)))
        assert stale_digests(con, tenant) == {}, "a stored row_digest is not its row's"
    before = versions(con, tenant)
    merge(con, folder, tenant, history[-1])

    assert versions(con, tenant) == before, "a list merged again unchanged added a version"
    for moment, items in seen:
        assert found(con, tenant, moment) == items, moment


def insert(con: duckdb.DuckDBPyConnection, table: str, row: dict[str, Any]) -> None:
    """One hand-made row, as an earlier version of the tool left it (a history row is current unless it
    has a valid_to)."""
    if table.endswith("_history"):
        row = row | {"is_current": "valid_to" not in row}
    marks = ", ".join("?" for _ in row)
    con.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({marks})", list(row.values()))  # noqa: S608


def test_an_upgraded_warehouse_has_one_version_of_each_item_and_no_invented_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warehouse from before item histories: each membership gets one version, from the start of its
    user's current version (no earlier state is known); the change log invents no addition for them, and
    the first run after the upgrade that drops one records its removal."""
    path = tmp_path / "wh.duckdb"
    shipped = migrations.available()
    monkeypatch.setattr(migrations, "available", lambda: [found for found in shipped if found[0] < 20])
    since, earlier = datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC)
    with duckdb.connect(str(path)) as con:
        migrate(con, describe=False)
        user = {"tenant_id": TENANT, "id": "u1", "content_hash": "h2", "raw": "{}", "is_deleted": False}
        insert(con, "users", user)
        insert(con, "users_history", user | {"content_hash": "h1", "valid_from": earlier, "valid_to": since})
        insert(con, "users_history", user | {"valid_from": since, "run_id": "run-old"})
        for place, group in enumerate(("g1", "g2"), start=1):
            member = {"tenant_id": TENANT, "user_id": "u1", "group_id": group, "group_order": place}
            insert(con, "user_groups", member | {"is_primary": place == 1})
    monkeypatch.undo()
    user_groups = "SELECT group_id, valid_from, run_id FROM user_groups_as_of(?) ORDER BY 1"

    run_id, _ = commit(
        path,
        {
            "users": [user | {"content_hash": "h3"}],
            "user_groups": [
                {
                    "tenant_id": TENANT,
                    "user_id": "u1",
                    "group_id": "g1",
                    "group_order": 1,
                    "is_primary": True,
                }
            ],
        },
    )

    assert read(path, user_groups, [since]) == [("g1", since, None), ("g2", since, None)]
    # No version of the items is known before the upgrade's (nor any commit): refused, not answered empty.
    with pytest.raises(duckdb.InvalidInputException, match="nothing is known as of"):
        read(path, user_groups, [earlier])
    changes = (
        "SELECT entity, id, item, field, before, after, run_id FROM v_changes WHERE entity = 'user_groups'"
    )
    assert read(path, changes) == [("user_groups", "u1", "g2", "group_id", "g2", None, run_id)]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=st.lists(steps, min_size=1, max_size=3).map(lambda drawn: [*drawn, drawn[0]]))
def test_a_merge_that_skips_the_tables_a_tenant_never_held_writes_every_value_the_whole_merge_writes(
    con: duckdb.DuckDBPyConnection, tmp_path_factory: pytest.TempPathFactory, history: list[Step]
) -> None:
    # The same commits, at the same instants, for two tenants: one merged as a commit merges (statements on
    # a table that held none of the tenant's rows are not sent), one with every statement sent. Steps
    # without users, or decisions without limits, leave a table empty while its family's others fill up;
    # the first step read again at the end finds rows as they were (stamped) or changed (new versions).
    skipping, sending, folder = (
        f"tenant-{next(_tenants)}",
        f"tenant-{next(_tenants)}",
        tmp_path_factory.mktemp("staged"),
    )
    for step in history:
        moment = merge(con, folder, skipping, step)
        merge(con, folder, sending, step, ask_held=False, moment=moment)

    for family in ("users", "decisions"):
        for table in FAMILIES[family].tables:
            for name in (table, f"{table}_history"):
                # A row's digest covers its tenant: the two tenants' rows differ there alone.
                query = (
                    f"SELECT COLUMNS(lambda c: c NOT IN ('tenant_id', 'row_digest')) FROM {name} "  # noqa: S608
                    f"WHERE tenant_id = ? ORDER BY ALL"
                )
                skipped = con.execute(query, [skipping]).fetchall()
                assert skipped == con.execute(query, [sending]).fetchall(), name
