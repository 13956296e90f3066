"""``warehouse_meta``: facts about the warehouse itself, one text value a key (the catalog's fingerprint, the
schemes the stored content hashes and row digests follow)."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb


def meta_value(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    """The value kept under ``key``, or None when none is."""
    row = con.execute("SELECT value FROM warehouse_meta WHERE key = ?", [key]).fetchone()
    return str(row[0]) if row else None


def set_meta(con: duckdb.DuckDBPyConnection, key: str, value: str) -> None:
    """Keep ``value`` under ``key``, stamped now (inside the caller's transaction, if any)."""
    con.execute("INSERT OR REPLACE INTO warehouse_meta VALUES (?, ?, ?)", [key, value, datetime.now(UTC)])
