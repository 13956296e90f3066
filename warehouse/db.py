"""Every DuckDB connection authority-sync opens, opened one way.

Offline: DuckDB never installs or auto-loads an extension here. Everything the warehouse needs (JSON,
Parquet, ICU's time zones) is built into the package, and a write-ahead log left by a killed process is
replayed at the next open: with auto-install on, replaying a migration that calls ``timezone()`` made
DuckDB try to download ``icu`` first, and without a network the warehouse could not be opened at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import duckdb

ConfigValue = str | bool | int | float | list[str]

OFFLINE: dict[str, ConfigValue] = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
"""DuckDB settings of every connection: no extension is installed or loaded on demand."""


def open_database(
    path: Path | str | None = None,
    *,
    read_only: bool = False,
    config: Mapping[str, ConfigValue] | None = None,
) -> duckdb.DuckDBPyConnection:
    """A connection to the DuckDB file ``path`` (in memory when None), offline, with ``config`` on top."""
    target = ":memory:" if path is None else str(path)
    return duckdb.connect(target, read_only=read_only, config={**OFFLINE, **(config or {})})
