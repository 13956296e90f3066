"""Two warehouses compared table by table, every column but those two runs of the same records fill
differently: for the tests (and the benchmark) that hold two ways of running to the same warehouse."""

from __future__ import annotations

from pathlib import Path

import duckdb

from warehouse.schema import MERGE_COLUMNS

STAMPED = (frozenset(MERGE_COLUMNS) - {"row_digest"}) | {
    "valid_from",
    "valid_to",
    "ended_run_id",
    "first_seen_at",
    "changed_at",
}
"""Columns two runs of the same records fill differently: the instants and run ids the merge stamps (its
`MERGE_COLUMNS` but the digest, which is compared), a history version's span, a revision's and a change's
instant."""
RUN_RECORDS = frozenset({"sync_runs", "warehouse_meta", "revision_rechecks"})
"""Tables about the runs themselves: compared by their runs' row counts instead."""


def differences(one: Path, other: Path) -> tuple[int, list[str]]:
    """The tables compared, and a line for each whose rows differ (every column but `STAMPED`), or for the
    last runs' row counts when they differ."""
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{one}' AS a (READ_ONLY)")
        con.execute(f"ATTACH '{other}' AS b (READ_ONLY)")
        tables = [
            str(name)
            for (name,) in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = 'a' ORDER BY table_name"
            ).fetchall()
            if name not in RUN_RECORDS
        ]
        found = [line for table in tables if (line := _table_difference(con, table))]
        counts = con.execute(
            "SELECT (SELECT row_counts FROM a.sync_runs ORDER BY finished_at DESC LIMIT 1), "
            "(SELECT row_counts FROM b.sync_runs ORDER BY finished_at DESC LIMIT 1)"
        ).fetchone()
    finally:
        con.close()
    if counts is None or counts[0] != counts[1]:
        found.append(f"the last runs' row counts: {counts}")
    return len(tables), found


def _table_difference(con: duckdb.DuckDBPyConnection, table: str) -> str | None:
    columns = ", ".join(
        f'"{column}"'
        for (column,) in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = 'a' AND table_name = ?", [table]
        ).fetchall()
        if column not in STAMPED
    )
    only = [
        con.execute(
            f"SELECT count(*) FROM (SELECT {columns} FROM {one}.{table} "  # noqa: S608 - catalog names
            f"EXCEPT ALL SELECT {columns} FROM {other}.{table})"
        ).fetchone()
        for one, other in (("a", "b"), ("b", "a"))
    ]
    if any(row and row[0] for row in only):
        return f"{table}: rows only in the first {only[0]}, only in the second {only[1]}"
    return None
