"""``authority-sync warehouse upgrade``: bring a warehouse written by an earlier release up to this one, in
place, keeping everything it holds (history, ``sync_runs``, the HR plans and audit trail).

1. A copy of the file as it was is kept beside it (``<name>.before-upgrade``): rolling back is stopping
   the syncs, putting that copy back and installing the earlier release.
2. The migrations run (each in its own transaction; a migration that adds a column the records already
   hold, such as the primary group, fills it from ``raw``).
3. The stored content hashes are computed again when their definition changed (`warehouse.rehash`).
4. Through migration 0013, which numbered existing child rows by id order, every child row is written
   again from its parent's raw in the service's order (`warehouse.reorder`), so that the next sync
   reports only real changes.
5. The stored row digests are computed again when this process digests a row otherwise than the one that
   stored them (`warehouse.digest_scheme`).
6. A file in a storage format newer than readers of the copy open (DuckDB 2.0's default) is rewritten in
   the format this release creates (`warehouse.empty.STORAGE_VERSION`), so that every later publish is a
   file copy instead of a rebuilt database. So is a file the migrations left mostly free (`_why_rewritten`):
   DuckDB reuses the blocks a dropped table freed but never gives them back, and every publish would copy
   them.

It holds the warehouse's writer lock throughout: no sync or HR apply writes meanwhile.
"""

from __future__ import annotations

import os
import shutil
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import duckdb

from warehouse.db import open_database
from warehouse.digest_scheme import redigest_if_stale
from warehouse.empty import STORAGE_VERSION
from warehouse.locks import held, writer_lock_path
from warehouse.migrate import migrate
from warehouse.publish import copy_database, current_database, readable_as
from warehouse.rehash import rehash_if_stale
from warehouse.reorder import CHILD_KEYS, reorder_children

BACKUP_SUFFIX = ".before-upgrade"
FREE_SHARE_REWRITTEN = 0.25
"""The share of a file's blocks left free, after the migrations, from which the upgrade rewrites it: migration
0047 builds every table with a ``raw`` column again, which freed 645 of a 20,000-decision warehouse's 993
blocks."""


@dataclass(frozen=True)
class Upgraded:
    """What an upgrade did."""

    backup: Path
    applied: list[int]
    rehashed: int
    reordered: int
    redigested: int
    rewritten: str
    """Why the file was rewritten whole (`_why_rewritten`), or empty."""

    def describe(self) -> str:
        """One line."""
        migrations = f"migrations {self.applied[0]}-{self.applied[-1]}" if self.applied else "no migration"
        storage = self.rewritten or "storage already current"
        digests = f"{self.redigested:,} row digests computed again"
        hashes = f"{self.rehashed:,} content hashes computed again"
        reordered = f"the child rows of {self.reordered:,} records put in the service's order"
        kept = f"the file as it was is kept at {self.backup}"
        return f"{migrations} applied, {digests}, {hashes}, {reordered}, {storage}; {kept}"


def upgrade(path: Path, wait_s: float) -> Upgraded:
    """Upgrade the warehouse at ``path`` in place (see the module docstring)."""
    if not path.is_file():
        raise FileNotFoundError(f"no warehouse at {path}")
    with held(writer_lock_path(path), "warehouse upgrade", wait_s, f"the warehouse {path}"):
        backup = _keep_as_it_was(path)
        with closing(open_database(path)) as con:
            applied = migrate(con)
            con.begin()
            rehashed = rehash_if_stale(con)
            reordered = reorder_children(con) if CHILD_KEYS in applied else 0
            redigested = redigest_if_stale(con)
            con.commit()
            rewritten = _why_rewritten(con, path)
        if rewritten:
            _rewrite(path)
    return Upgraded(backup, applied, rehashed, reordered, redigested, rewritten)


def _why_rewritten(con: duckdb.DuckDBPyConnection, path: Path) -> str:
    """Why the file at ``path`` (open on ``con``) is to be rewritten whole, or empty: a storage format newer
    than `STORAGE_VERSION`, or at least `FREE_SHARE_REWRITTEN` of its blocks free once what the upgrade
    wrote is checkpointed into it."""
    if not readable_as(path, STORAGE_VERSION):
        return f"rewritten in storage {STORAGE_VERSION}"
    con.execute("CHECKPOINT")
    found = con.execute(
        "SELECT free_blocks, total_blocks FROM pragma_database_size() "
        "WHERE database_name = current_database()"
    ).fetchone()
    if found is None or found[0] < FREE_SHARE_REWRITTEN * found[1]:
        return ""
    return f"rewritten to give back {found[0]:,} free blocks of its {found[1]:,}"


def _keep_as_it_was(path: Path) -> Path:
    """Copy the file (its log checkpointed into it first) to ``<name>.before-upgrade``."""
    open_database(path).close()  # replays and checkpoints a write-ahead log left beside it
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    shutil.copyfile(path, backup)
    return backup


def _rewrite(path: Path) -> None:
    """Rewrite the file in `STORAGE_VERSION`: copied whole into a new file, checked, moved in place."""
    temporary = path.with_name(f".{path.name}.upgrade-{os.getpid()}")
    try:
        with closing(open_database(path)) as con:
            copy_database(con, current_database(con), temporary, STORAGE_VERSION)
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)
