"""The change log's paths of ``raw`` (``raw_changes``): since migration 0048 it walks only the top-level
members that differ, and reads only the versions that start or end at the commit's instant. For any two
JSON texts RFC 8259 allows (repeated keys, keys that need quoting, scalars and empty containers at the top,
integers past 64 bits, any finite float), its rows are those of migration 0042's macros, at the commit's
instant and over the whole history. A commit compares its versions in batches (migration 0050,
`warehouse.changes`): whatever the batches, it logs the rows ``raw_changes`` gives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warehouse import changes
from warehouse import migrate as migrations
from warehouse.db import open_database
from warehouse.migrate import migrate

BY_MEMBER = 48
"""The migration that changed the macros."""
BEFORE, AT = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)


def _built(path: Path, up_to: int | None) -> duckdb.DuckDBPyConnection:
    """A warehouse replayed up to (not including) migration ``up_to``, or to this release."""
    shipped = migrations.available()
    with pytest.MonkeyPatch.context() as patch:
        if up_to is not None:
            patch.setattr(migrations, "available", lambda: tuple(m for m in shipped if m[0] < up_to))
        con = open_database(path)
        migrate(con, describe=False)
    return con


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[duckdb.DuckDBPyConnection]]:
    """Migration 0042's macros, and this release's."""
    folder = tmp_path_factory.mktemp("change_paths")
    both = [_built(folder / "before.duckdb", BY_MEMBER), _built(folder / "now.duckdb", None)]
    yield both
    for con in both:
        con.close()


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
_KEYS = st.one_of(st.sampled_from(["a", "b", "name", "", "a b", "a.b", '"', "$", "[0]"]), st.text(max_size=4))


def _text(value: Any) -> str:
    """JSON text of a value whose objects are lists of (key, member) pairs, so that keys may repeat."""
    if isinstance(value, tuple) and value[0] == "object":
        return "{" + ",".join(f"{json.dumps(key)}:{_text(member)}" for key, member in value[1]) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_text(item) for item in value) + "]"
    return json.dumps(value)


_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(st.just("object"), st.lists(st.tuples(_KEYS, inner), max_size=4)),
    ),
    max_leaves=12,
)


@st.composite
def _versions(draw: st.DrawFn) -> tuple[str, str]:
    """Two raws of one record: the second drawn afresh, or the first with members changed, dropped,
    added or moved (most changes touch a few members)."""
    members = draw(st.lists(st.tuples(_KEYS, _VALUES), max_size=5))
    before = draw(st.one_of(st.just(("object", members)), _VALUES))
    if not draw(st.booleans()):
        return _text(before), _text(draw(st.one_of(st.just(("object", members)), _VALUES)))
    after = list(members)
    for _ in range(draw(st.integers(0, 3))):
        move = draw(st.sampled_from(["change", "drop", "add", "swap"]))
        if move == "add" or not after:
            after.insert(draw(st.integers(0, len(after))), (draw(_KEYS), draw(_VALUES)))
        elif move == "change":
            at = draw(st.integers(0, len(after) - 1))
            after[at] = (after[at][0], draw(_VALUES))
        elif move == "drop":
            after.pop(draw(st.integers(0, len(after) - 1)))
        else:
            after.reverse()
    return _text(("object", members)), _text(("object", after))


_AT_INSTANT, _WHOLE = ["t", AT], [None, None]
"""``raw_changes``' arguments: the changes at the second version's instant, and over the whole history."""


def _insert_versions(con: duckdb.DuckDBPyConnection, records: list[tuple[str, str]]) -> None:
    """Each pair of raws as two versions of one decision (``d0``, ``d1``...), the second starting at `AT`."""
    for number, (before, after) in enumerate(records):
        con.execute(
            "INSERT INTO decisions_history BY NAME SELECT * FROM (VALUES "
            "('t', ?, ?::JSON, ?::TIMESTAMPTZ, ?::TIMESTAMPTZ, FALSE, 'r1'), "
            "('t', ?, ?::JSON, ?::TIMESTAMPTZ, NULL, TRUE, 'r2')) "
            "v(tenant_id, id, raw, valid_from, valid_to, is_current, run_id)",
            [f"d{number}", before, BEFORE, AT, f"d{number}", after, AT],
        )


def _changes(
    con: duckdb.DuckDBPyConnection, records: list[tuple[str, str]], *walks: list[Any]
) -> list[list[Any]]:
    """``raw_changes`` of each of ``walks`` (`_AT_INSTANT`, `_WHOLE`) over ``records`` (`_insert_versions`),
    sorted (nothing is kept: the transaction is rolled back)."""
    con.begin()
    try:
        _insert_versions(con, records)
        query = "SELECT * FROM raw_changes('decisions', 'decisions_history', ?, ?) ORDER BY ALL"
        return [con.execute(query, walk).fetchall() for walk in walks]
    finally:
        con.rollback()


# Several records an example: each one's rows must be its own (no path of one record logged for another),
# and the statements' cost is paid once for them all (it was 15 s of the suite's CPU at one a query).
@settings(max_examples=50, deadline=None)
@given(st.lists(_versions(), min_size=1, max_size=8))
def test_the_paths_of_any_two_raws_are_those_the_whole_walk_gave(
    warehouses: list[duckdb.DuckDBPyConnection], records: list[tuple[str, str]]
) -> None:
    # Migration 0042's whole walk is the oracle; this release's rows, at the instant and over the whole
    # history, must both be its rows (0042's own rows at the instant would check 0042, not this release).
    (whole_walk,) = _changes(warehouses[0], records, _WHOLE)
    at_instant, whole = _changes(warehouses[1], records, _AT_INSTANT, _WHOLE)

    assert at_instant == whole_walk
    assert whole == whole_walk


def test_a_changed_member_is_named_by_each_leaf_that_differs(
    warehouses: list[duckdb.DuckDBPyConnection],
) -> None:
    (at_instant,) = _changes(
        warehouses[1],
        [
            (
                '{"name":"A","tags":["x","y"],"a b":{"c":1},"same":[1,{}]}',
                '{"name":"B","tags":["x","z"],"a b":{"c":1,"d":{}},"same":[1,{}]}',
            )
        ],
        _AT_INSTANT,
    )

    assert [(row[5], row[6], row[7]) for row in at_instant] == [
        ('$."a b".d', None, "{}"),
        ("$.name", '"A"', '"B"'),
        ("$.tags[1]", '"y"', '"z"'),
    ]


@settings(max_examples=20, deadline=None)  # each example logs a commit's changes (0.4 s): the suite's time
@given(st.lists(_versions(), min_size=1, max_size=6), st.integers(min_value=1, max_value=300))
def test_a_commit_logs_the_paths_raw_changes_gives_whatever_its_batches(
    warehouses: list[duckdb.DuckDBPyConnection], records: list[tuple[str, str]], batch_bytes: int
) -> None:
    con = warehouses[1]
    con.begin()
    try:
        _insert_versions(con, records)
        query = "SELECT * FROM raw_changes('decisions', 'decisions_history', ?, ?) ORDER BY ALL"
        expected = con.execute(query, ["t", AT]).fetchall()
        with pytest.MonkeyPatch.context() as patch:
            # Budgets of a few bytes: most batches hold one or two records.
            patch.setattr(changes, "RAW_BATCH_BYTES", batch_bytes)
            changes.record_changes(con, "t", "r2", AT, revisions_changed=())
        logged = con.execute("SELECT * FROM change_log WHERE tenant_id = 't' ORDER BY ALL").fetchall()
    finally:
        con.rollback()

    assert logged == expected
