"""Every DuckDB connection authority-sync opens, opened one way.

Offline: DuckDB never installs or auto-loads an extension here. Everything the warehouse needs (JSON,
Parquet, ICU's time zones) is built into the package, and a write-ahead log left by a killed process is
replayed at the next open: with auto-install on, replaying a migration that calls ``timezone()`` made
DuckDB try to download ``icu`` first, and without a network the warehouse could not be opened at all.

Small row groups: a file opened for writing is attached with `ROW_GROUP_ROWS` rows to a row group. At
DuckDB's default (122,880) a tenant's whole table is one row group, and a checkpoint rewrites a row group
whenever rows are appended to it or it is vacuumed: a nightly run that changed 1% of the decisions
rewrote all of them, `raw` texts included (CHECKPOINT 0.5 s at 5,000 decisions, 2 s at 20,000; 0.15 and
1 s in row groups of 2,048 rows, docs/benchmarks.md). With small row groups it rewrites the
last, partly filled one and the few it merges. DuckDB takes the size at ``ATTACH`` only, not as a setting,
and does not keep it in the file: every writer must ask for it, or its checkpoints merge the row groups
back. Readers need nothing (a row group of any size reads the same).

Warm instances: creating a DuckDB instance costs 22-25 ms of CPU (it registers its whole function catalog),
most of opening a file for a short write (35-50 ms in all, against 9-10 ms on an instance already made) or
for a look (a read-only open of the warehouse and one query: 45 ms, against 16 ms). A write or a look that
runs within a block (`leased`) therefore borrows an idle in-memory instance of the process, attaches the
file on a connection of its own, and when the block ends detaches the file (releasing DuckDB's
lock on it at once, as closing did) and gives the instance back, its settings reset. An instance is lent to
one block at a time, so settings such as ``memory_limit`` stay the block's; one whose block failed is
closed, not lent again.

Spilled data beside the file: what a write cannot hold within its memory limit, DuckDB spills to files in
its instance's temporary folder, removed when the instance closes. An in-memory instance's folder is
``.tmp`` in the working directory of whoever runs the command, so a tenant's records landed wherever the
operator happened to stand. Every instance that writes a file here spills to `spill_folder` instead,
DuckDB's own choice for a file it opens directly. DuckDB cannot point an instance elsewhere once it has
spilled, so an instance that spilled is closed when its block ends (which removes the folder), not lent
again.

Instants in UTC: a session shows and hands Python each instant in its time zone, by default the process's
own (``TZ``). The tool's own connections work in UTC, so that nothing it reads, compares or writes depends on
where it runs, and so that it runs at all in the zones ICU knows and Python's pytz (through which DuckDB
converts an instant) lacks: ``TZ=JST``, ``IST`` or ``GMT+3`` made every incremental run fail. A reader's
connection (an analyst's) keeps the process's zone, unless Python cannot convert to it: then UTC, said once.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import duckdb

logger = logging.getLogger(__name__)

ConfigValue = str | bool | int | float | list[str]

OFFLINE: dict[str, ConfigValue] = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
"""DuckDB settings of every connection: no extension is installed or loaded on demand."""

ROW_GROUP_ROWS = 2048
"""Rows to a row group of a file written here (a multiple of DuckDB's vector of 2,048 rows)."""

_BUILT_IN = frozenset({"memory", "system", "temp"})
"""Names of DuckDB's own catalogs, which an attached file cannot take."""
IDLE_INSTANCES = 4
"""Warm instances kept for later blocks; more are closed when given back."""


def spill_folder(path: Path | str) -> str:
    """The folder DuckDB spills to while it writes the file ``path``: ``<file>.tmp`` beside it."""
    return str(Path(f"{path}.tmp").absolute())


def open_database(
    path: Path | str | None = None,
    *,
    read_only: bool = False,
    config: Mapping[str, ConfigValue] | None = None,
    process_zone: bool = False,
) -> duckdb.DuckDBPyConnection:
    """A connection to the DuckDB file ``path`` (in memory when None), offline, with ``config`` on top, its
    instants in UTC, or in the process's time zone for a reader (``process_zone``; see the module
    docstring). A file opened for writing is its connection's only database, under its own name as when
    DuckDB opens it directly, with `ROW_GROUP_ROWS` rows to a row group, spilling to `spill_folder`."""
    settings = {**OFFLINE, **(config or {})}
    if path is None or read_only:
        con = duckdb.connect(":memory:" if path is None else str(path), read_only=read_only, config=settings)
        _set_zone(con, process_zone)
        return con
    con = duckdb.connect(":memory:", config={"temp_directory": spill_folder(path), **settings})
    try:
        _set_zone(con, process_zone)
        name = _catalog_name(Path(path))
        con.execute(f'ATTACH ? AS "{name}" (ROW_GROUP_SIZE {ROW_GROUP_ROWS})', [str(path)])
        con.execute(f'USE "{name}"')
        con.execute("DETACH memory")
    except BaseException:
        con.close()
        raise
    return con


def _set_zone(con: duckdb.DuckDBPyConnection, process_zone: bool) -> None:
    """Put the instance's sessions in UTC, unless ``process_zone`` and Python can convert an instant to the
    process's zone (see the module docstring). A setting, not a ``config`` entry: DuckDB refuses a time
    zone in ``config`` before it has loaded ICU."""
    if process_zone:
        try:
            con.execute("SELECT TIMESTAMPTZ '2000-01-01 00:00:00+00'").fetchall()
            return
        except KeyError:  # pytz's UnknownTimeZoneError, raised through DuckDB's conversion
            zone = con.execute("SELECT current_setting('TimeZone')").fetchall()[0][0]
            logger.warning(
                "instants are shown in UTC: Python cannot convert them to this process's time zone %s", zone
            )
    con.execute("SET GLOBAL TimeZone = 'UTC'")


def quoted(*names: str) -> str:
    """An SQL identifier, qualified by its parts when there are several: each part in double quotes, its
    own double quotes doubled (a catalog's names, never input)."""
    return ".".join('"' + name.replace('"', '""') + '"' for name in names)


def _catalog_name(path: Path) -> str:
    """The catalog name DuckDB gives the file when it opens it directly (its stem), unless it is a name of
    DuckDB's own (then ``<stem>_file``); double quotes doubled for a quoted identifier."""
    stem = path.name.split(".")[0] or "warehouse"
    name = f"{stem}_file" if stem.lower() in _BUILT_IN else stem
    return name.replace('"', '""')


@contextmanager
def leased(
    path: Path | str, config: Mapping[str, ConfigValue] | None = None, *, read_only: bool = False
) -> Iterator[duckdb.DuckDBPyConnection]:
    """For the block, what `open_database` gives for ``path`` (its only database, ``config`` on top of
    `OFFLINE`; for writing, small row groups), on a warm instance of the process (see the module
    docstring); the file is detached when the block ends."""
    host = _HOSTS.take()
    con = host.cursor()
    name = _catalog_name(Path(path))
    settings = {"temp_directory": spill_folder(path), **(config or {})}
    options = "READ_ONLY" if read_only else f"ROW_GROUP_SIZE {ROW_GROUP_ROWS}"
    try:
        for key, value in settings.items():
            con.execute(f"SET {key} = {_literal(value)}")
        con.execute(f'ATTACH ? AS "{name}" ({options})', [str(path)])
        con.execute(f'USE "{name}"')
        con.execute("DETACH memory")
        yield con
    except BaseException:
        # Whatever state the failure left (an aborted transaction, a file still attached), closing the
        # instance ends it and releases the file.
        con.close()
        host.close()
        raise
    released = _release(con, name, settings)
    con.close()
    if released:
        _HOSTS.give_back(host)
    else:
        host.close()


def _release(con: duckdb.DuckDBPyConnection, name: str, config: Mapping[str, ConfigValue]) -> bool:
    """Detach the file and reset the block's settings; False when the instance spilled (see the module
    docstring) or (logged) when DuckDB could not. Detaching checkpoints the file, and a full disk fails that
    as it failed the close that this replaces: what was committed is in the write-ahead log beside the file,
    replayed at its next open."""
    try:
        con.execute("ATTACH ':memory:' AS memory")
        con.execute("USE memory")
        con.execute(f'DETACH "{name}"')
        if Path(str(config["temp_directory"])).is_dir():
            return False
        for key in config:
            con.execute(f"RESET {key}")
    except duckdb.Error as error:
        logger.warning("releasing the DuckDB file %s: %s", name, error)
        return False
    return True


def _literal(value: ConfigValue) -> str:
    """A setting's value as SQL (values come from this package's own code, never from input)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_literal(item) for item in value) + "]"
    return "'" + value.replace("'", "''") + "'"


class _Hosts:
    """The idle in-memory instances of this process. A child made by ``fork`` (Dagster's run workers)
    starts with none: an instance copied by fork is not the child's to use, and closing it could wait for
    threads that did not survive the fork, so the copies are kept aside, never used nor closed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._idle: list[duckdb.DuckDBPyConnection] = []
        self._inherited: list[duckdb.DuckDBPyConnection] = []

    def take(self) -> duckdb.DuckDBPyConnection:
        """An idle instance, or a new one."""
        with self._lock:
            self._forget_inherited()
            if self._idle:
                return self._idle.pop()
        host = duckdb.connect(":memory:", config=dict(OFFLINE))
        _set_zone(host, process_zone=False)
        return host

    def give_back(self, host: duckdb.DuckDBPyConnection) -> None:
        """Keep ``host`` for a later block, unless enough are kept already."""
        with self._lock:
            self._forget_inherited()
            if len(self._idle) < IDLE_INSTANCES:
                self._idle.append(host)
                return
        host.close()

    def _forget_inherited(self) -> None:
        if self._pid != os.getpid():
            self._inherited.extend(self._idle)
            self._idle, self._pid = [], os.getpid()


_HOSTS = _Hosts()
