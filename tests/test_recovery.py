"""No crash point is unrecoverable, and every failure is recorded as what it was (issue 18).

A process killed (SIGKILL) in the middle of writing the warehouse leaves DuckDB's write-ahead log; the next
open replays it. These tests kill real processes at the worst moments and open what they left, with no
network (this machine has none: an open that tried to download an extension would fail).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import duckdb

from warehouse.commit import connect
from warehouse.migrate import available

ROOT = Path(__file__).resolve().parent.parent
FIRST_RELEASE = 3
"""The last migration of the first release's warehouse (current tables, history, the first views)."""

DIE_IN_COMMIT = """
import os, signal, sys
import duckdb
from warehouse.db import open_database
from warehouse.migrate import migrate
# Checkpoints off: every migration stays in the write-ahead log, as when a commit is killed before DuckDB
# checkpoints at COMMIT; then the process is killed, as kill -9 would.
settings = {"checkpoint_threshold": "1TB", "storage_compatibility_version": "v1.4.0"}
con = open_database(sys.argv[1], config=settings)
migrate(con)
os.kill(os.getpid(), signal.SIGKILL)
"""


def die_while_migrating(path: Path) -> None:
    """Migrate ``path`` in a process killed before anything is checkpointed."""
    died = subprocess.run([sys.executable, "-c", DIE_IN_COMMIT, str(path)], cwd=ROOT, check=False)
    assert died.returncode == -signal.SIGKILL
    assert path.with_name(path.name + ".wal").stat().st_size > 0


def first_release_warehouse(path: Path) -> None:
    """A warehouse as the first release built it, closed cleanly."""
    with duckdb.connect(str(path), config={"storage_compatibility_version": "v1.4.0"}) as con:
        con.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        for version, name, sql in available():
            if version <= FIRST_RELEASE:
                con.execute(sql)
                con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [version, name])


def test_a_new_warehouse_killed_in_its_first_commit_opens_offline(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse.duckdb"
    die_while_migrating(warehouse)

    with connect(warehouse) as con:
        assert con.execute("SELECT max(version) FROM schema_migrations").fetchone() == (available()[-1][0],)
        assert con.execute("SELECT count(*) FROM users").fetchone() == (0,)


def test_an_upgrade_killed_half_way_opens_offline(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse.duckdb"
    first_release_warehouse(warehouse)
    die_while_migrating(warehouse)

    with connect(warehouse) as con:
        assert con.execute("SELECT max(version) FROM schema_migrations").fetchone() == (available()[-1][0],)
