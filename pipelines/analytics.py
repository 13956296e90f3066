"""The analysts' entry in Python and on the command line: a read-only connection to the copy published for
readers, and a query's rows written as a table, CSV or JSON.

    from pipelines.analytics import connect

    con = connect()
    con.sql("SELECT * FROM user_groups_as_of(TIMESTAMPTZ '2026-03-01 00:00:00+00')").df()

Never the warehouse itself: any session on it, even a read-only one, holds up the next sync's commit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

import duckdb

from models.errors import AuthoritySyncError
from pipelines.csv_cells import Inert, write_table
from pipelines.formats import OutputFormat
from pipelines.settings import load_settings
from warehouse.reads import open_for_reader


class NoPublishedCopyError(AuthoritySyncError, FileNotFoundError):
    """There is no published copy to read yet."""


def copy_path() -> Path:
    """The copy readers open: ``ADM_PUBLISH_PATH``, else ``<warehouse stem>.analytics.duckdb`` beside
    ``ADM_WAREHOUSE``."""
    return load_settings().publish_file


def connect(path: str | Path | None = None) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the published copy (`copy_path`), or to the DuckDB file ``path``.
    ``.df()`` on a relation gives a pandas DataFrame; ``.pl()`` a Polars one where Polars is installed.
    Offline like every connection of authority-sync: no extension is installed or loaded. Raises
    `NoPublishedCopyError` when no sync has published a copy yet, and
    `warehouse.reads.WriterHoldsFileError` (naming the copy to open) for a file its writer holds."""
    copy = Path(path) if path is not None else copy_path()
    if not copy.is_file():
        raise NoPublishedCopyError(
            f"no copy for readers at {copy}: a sync publishes it (authority-sync extract)"
        )
    return open_for_reader(copy)


def write_rows(
    out: IO[str], columns: Sequence[str], rows: Sequence[Sequence[Any]], kind: OutputFormat
) -> None:
    """Write ``rows`` as CSV (a header line, then one line a row) or JSON (an array of objects, one per
    row). Instants are ISO 8601 with their offset, lists and structs JSON, NULL empty in CSV and null in
    JSON. CSV cells that a spreadsheet would run as a formula, header cells included, are escaped
    (`pipelines.csv_cells`)."""
    if kind is OutputFormat.JSON:
        records = [dict(zip(columns, row, strict=True)) for row in rows]
        json.dump(records, out, default=_json_value, ensure_ascii=False, indent=1)
        out.write("\n")
        return
    write_table(out, columns, ([_csv_value(value) for value in row] for row in rows))


def _json_value(value: object) -> object:
    """What ``json`` cannot write itself: instants, dates and times as ISO 8601, decimals as text."""
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return str(value)


def _csv_value(value: object) -> str:
    """A value as a CSV cell: numbers `Inert` (written as they are: ``-5`` is a number, no formula)."""
    if value is None:
        return ""
    if isinstance(value, bool | int | float | Decimal):
        return Inert(value)
    if isinstance(value, list | dict):
        return json.dumps(value, default=_json_value, ensure_ascii=False)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return str(value)
