"""A row's digest (`warehouse.schema.row_digest`) is a function of the row alone: the same in every
process, whatever time zone the process runs in, and the same from one release to the next unless a
migration digests the stored rows again.

The merge writes only rows whose digest differs from the stored one, so a digest that moves under stored
rows makes the next run write every row again and count every item row as updated, though nothing changed.
It moved with the session's time zone (an operator's laptop beside the nightly server, a container without
``TZ``) until migration 0052; it would move with DuckDB's text of a value (a new DuckDB in the lock file)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zoneinfo
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pipelines.cli import app
from tests.standin import StandIn
from tests.sync_support import stale_digests
from tests.test_cli_direct import cli_env
from tests.test_sync_quirks import decision, delegation, group, tenant, ts, uid, user
from warehouse.merge import DIGESTED
from warehouse.schema import row_digest, staging_schema

CLI = Path(sys.executable).with_name("authority-sync")
ZONES = sorted(zoneinfo.available_timezones())
"""Every IANA zone this Python knows (DuckDB's ICU knows them as well)."""


def _has_instant(kind: pa.DataType) -> bool:
    """Whether values of ``kind`` hold an instant, whose text DuckDB writes in the session's time zone."""
    if pa.types.is_timestamp(kind):
        return bool(kind.tz is not None)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _has_instant(kind.value_type)
    if pa.types.is_struct(kind):
        return any(_has_instant(member.type) for member in kind)
    return False


WITH_INSTANTS = sorted(t for t in DIGESTED if any(_has_instant(f.type) for f in staging_schema(t)))
"""The digested tables with a column whose text depends on the session's time zone."""


def test_the_tables_with_instants_are_found() -> None:
    # The property below is only as wide as this list: it must hold the tables it is about.
    assert {"decisions", "delegations", "groups", "users", "group_parents"} <= set(WITH_INSTANTS)


@settings(max_examples=60, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    instant=st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    ),
)
def test_a_rows_digest_is_the_same_in_every_session_time_zone(zone: str, instant: datetime) -> None:
    with duckdb.connect() as con:
        for table in WITH_INSTANTS:
            schema = staging_schema(table)
            row = {f.name: instant if _has_instant(f.type) else None for f in schema}
            con.from_arrow(pa.Table.from_pylist([row], schema)).create(table)
            digest = f"SELECT {row_digest(table)} FROM {table}"  # noqa: S608 - catalog names
            con.execute("SET TimeZone = 'UTC'")
            in_utc = con.execute(digest).fetchall()
            con.execute(f"SET TimeZone = '{zone}'")
            assert con.execute(digest).fetchall() == in_utc, f"{table} in {zone} at {instant}"


def _extract(env: dict[str, str], zone: str) -> None:
    """A full refresh by the CLI, in its own process, whose time zone is ``zone``."""
    done = subprocess.run(
        [str(CLI), "extract", "--full-refresh"],
        env={**env, "TZ": zone},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _stored(warehouse: Path) -> dict[str, Any]:
    """Each table's rows with instants by row id (a row written again gets a new one), and the last run's
    counts."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        tables = {
            table: con.execute(f"SELECT rowid, id, row_digest FROM {table} ORDER BY rowid").fetchall()  # noqa: S608
            for table in WITH_INSTANTS
        }
        (counts,) = con.execute(
            "SELECT row_counts FROM sync_runs ORDER BY finished_at DESC LIMIT 1"
        ).fetchone() or ("{}",)
        assert stale_digests(con) == {}
    return {"rows": tables, "counts": json.loads(counts)}


def test_a_full_refresh_in_another_time_zone_rewrites_and_counts_no_unchanged_row(tmp_path: Path) -> None:
    parent = {"id": "link-1", "parentId": uid("group", 1), "createdAt": ts(3)}
    served = tenant(
        decisions=[decision(n) for n in range(1, 4)],
        delegations=[delegation(n, startsAt=ts(n), endsAt=ts(n + 100)) for n in range(1, 3)],
        users=[user(n) for n in range(1, 3)],
        groups=[group(1), group(2, parentGroups=[parent])],
    )
    warehouse = tmp_path / "warehouse.duckdb"
    with StandIn(served) as standin:
        env = {"PATH": os.environ["PATH"], **cli_env(standin, warehouse)}
        _extract(env, "America/St_Johns")  # UTC-03:30 in winter
        first = _stored(warehouse)
        _extract(env, "Asia/Kathmandu")  # UTC+05:45
        second = _stored(warehouse)

    assert all(first["rows"][table] for table in WITH_INSTANTS), "every table with instants holds rows"
    assert second["rows"] == first["rows"], "a row of the unchanged tenant was written again"
    assert set(WITH_INSTANTS) <= set(second["counts"]), second["counts"]
    changed = {
        table: counts
        for table, counts in second["counts"].items()
        if counts.get("inserted") or counts.get("updated") or counts.get("deleted")
    }
    assert changed == {}, f"the unchanged tenant's run counts changes: {changed}"


@pytest.mark.parametrize("zone", ["Pacific/Kiritimati", "Etc/GMT+12"])
def test_stale_digests_reads_stored_digests_in_any_zone(zone: str, synced: Path) -> None:
    # The tests' own check of stored digests (tests/sync_support.py) must not depend on the zone either.
    with duckdb.connect(str(synced), read_only=True) as con:
        con.execute(f"SET TimeZone = '{zone}'")
        assert stale_digests(con) == {}


def _digest_as_text(table: str) -> str:
    """The digest as the previous release wrote it: each instant as its text in the session's zone."""
    return re.sub(r'epoch_us\(("[a-z_]+")\)', r"\1", row_digest(table))


def test_the_upgrade_digests_again_the_rows_a_previous_release_digested_in_its_zone(synced: Path) -> None:
    # A warehouse of the previous release (migrations up to 0051), written by a process in another zone.
    with duckdb.connect(str(synced)) as con:
        con.execute("SET TimeZone = 'Asia/Kathmandu'")
        for table in WITH_INSTANTS:
            con.execute(f"UPDATE {table} SET row_digest = {_digest_as_text(table)}")  # noqa: S608
        con.execute("DELETE FROM schema_migrations WHERE version = 52")
        assert set(stale_digests(con)) == set(WITH_INSTANTS) - {"group_parents"} | _held(con, "group_parents")

    result = CliRunner().invoke(app, ["warehouse", "upgrade", "--warehouse", str(synced)])

    assert result.exit_code == 0, result.output
    with duckdb.connect(str(synced), read_only=True) as con:
        for zone in ("UTC", "Asia/Kathmandu", "America/St_Johns"):
            con.execute(f"SET TimeZone = '{zone}'")
            assert stale_digests(con) == {}, zone


def _held(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    found = con.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608 - a catalog name
    return {table} if found and found[0] else set()


PROBES = Path(__file__).with_name("row_digests.json")
"""The digests of `_probe_rows`, as the stored rows of this release hold them."""


def _probe_value(kind: pa.DataType) -> object:
    """A value of ``kind`` whose text DuckDB could write in more than one way: quotes, a comma, letters
    beyond ASCII, a value at a type's edge."""
    values: dict[str, object] = {
        "bool": True,
        "date32[day]": date(2024, 2, 29),
        "decimal128(38, 6)": Decimal("-12345678901234567890123456789012.000100"),
        "double": 1e-07,
        "int32": -(2**31),
        "list<l: string>": ["a, b", "it's", None, "Zoë 😀"],
        "string": 'O\'Brien, "Zoë" {x: [1]} 😀',
    }
    if pa.types.is_timestamp(kind):
        return datetime(2024, 3, 31, 1, 30, 0, 123456, tzinfo=UTC)
    return values[str(kind)]


def _probe_rows(table: str) -> pa.Table:
    """Two rows of ``table``'s staged columns: every column holding a probe value (``raw`` a JSON
    object), then every column null."""
    schema = staging_schema(table)
    full = {f.name: '{"a": [1.50, "é"]}' if f.name == "raw" else _probe_value(f.type) for f in schema}
    return pa.Table.from_pylist([full, dict.fromkeys(schema.names)], schema)


def _probe_digests() -> dict[str, list[str]]:
    with duckdb.connect() as con:
        found = {}
        for table in sorted(DIGESTED):
            con.from_arrow(_probe_rows(table)).create(table)
            rows = con.execute(f"SELECT {row_digest(table)} FROM {table}").fetchall()  # noqa: S608
            found[table] = [str(digest) for (digest,) in rows]
    return found


def test_the_digest_of_a_stored_row_does_not_change_without_a_migration() -> None:
    # Rows stored by an earlier run hold digests computed then: if this release digests the same row
    # otherwise (a change to row_digest or to a table's staged columns, a DuckDB that writes a value's text
    # differently), every stored row looks changed to the next run.
    expected = json.loads(PROBES.read_text(encoding="utf-8"))
    found = _probe_digests()
    # A table new to this release has no stored row to keep: it is compared once the file is written anew.
    assert expected.keys() <= found.keys(), "a table of the file is no longer digested: write it anew"
    moved = sorted(table for table in expected if found[table] != expected[table])
    assert not moved, (
        f"the digest of a row of {', '.join(moved)} changed: add a migration that digests the stored rows "
        f"of these tables again (as 0052 does), then write {PROBES.name} anew "
        "(python -m tests.test_row_digest)"
    )


if __name__ == "__main__":  # writes PROBES, once a migration digests the stored rows as this release does
    PROBES.write_text(json.dumps(_probe_digests(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
