"""Short writes on warm DuckDB instances (`warehouse.db.leased`, `warehouse.commit.connected`): each block
sees only its file and its own settings, and the file is free for any process once the block ends,
whether the block succeeded or failed."""

from __future__ import annotations

import subprocess
import sys
from contextlib import closing
from pathlib import Path

import duckdb
import pytest

from warehouse.commit import connected
from warehouse.db import ConfigValue, leased, open_database
from warehouse.reads import read_only

OTHER_PROCESS = (
    "import sys, duckdb\n"
    "con = duckdb.connect(sys.argv[1])\n"  # for writing: fails while any process holds the file
    "print(con.execute('SELECT count(*) FROM t').fetchone()[0])\n"
    "con.close()\n"
)


def written_by_another_process(path: Path) -> int:
    """The rows of ``t`` as another process sees them, opening the file for writing."""
    done = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return int(done.stdout)


def test_a_block_sees_its_file_and_its_settings_only_and_frees_the_file_when_it_ends(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with leased(path, {"memory_limit": "64MB", "threads": 1}) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS n")
        con.execute("CREATE TEMP TABLE scratch AS SELECT 1 AS n")
        listed = con.execute(
            "SELECT database_name, path FROM duckdb_databases() WHERE NOT internal"
        ).fetchall()
        assert listed == [("w", str(path))]
        assert con.execute("SELECT current_setting('threads')").fetchone() == (1,)

    assert written_by_another_process(path) == 1
    with leased(tmp_path / "other.duckdb") as con:  # the next block, on the instance given back
        assert con.execute("SELECT current_setting('threads')").fetchone() != (1,)
        assert con.execute("SELECT current_setting('memory_limit')").fetchone() != ("61.0 MiB",)
        temporary = con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone()
        assert temporary == (0,)
        assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchone() == (0,)


def test_a_look_reads_what_was_last_committed_never_writes_and_frees_the_file_when_it_ends(
    tmp_path: Path,
) -> None:
    # The tool's looks at the warehouse (`warehouse.reads.read_only`) borrow warm instances too: 2 ms a look
    # instead of 32. Each must see the file as committed now, not as an instance lent before saw it.
    path = tmp_path / "w.duckdb"
    with leased(path) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS n")
    for rows in (1, 2):
        with read_only(path) as con:
            assert con is not None
            assert con.execute("SELECT count(*) FROM t").fetchone() == (rows,)
            with pytest.raises(duckdb.InvalidInputException, match="read-only"):
                con.execute("INSERT INTO t VALUES (9)")
        assert written_by_another_process(path) == rows  # the file is free for a writer
        with leased(path) as con:
            con.execute("INSERT INTO t VALUES (2)")
    with read_only(path) as con:
        assert con is not None
        listed = con.execute("SELECT database_name FROM duckdb_databases() WHERE NOT internal").fetchall()
        assert listed == [("w",)]


def test_a_block_that_fails_frees_the_file_and_keeps_only_what_it_committed(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    with pytest.raises(duckdb.ConstraintException), connected(path) as con:
        con.execute("CREATE TABLE t (n INTEGER PRIMARY KEY)")
        con.execute("INSERT INTO t VALUES (1)")
        con.begin()
        con.execute("INSERT INTO t VALUES (2)")
        con.execute("INSERT INTO t VALUES (1)")  # the transaction fails and is never committed

    assert written_by_another_process(path) == 1
    with connected(path) as con:
        assert con.execute("SELECT list(n) FROM t").fetchone() == ([1],)


SPILLING = (
    "SELECT s, count(*) FROM (SELECT md5(range::VARCHAR) AS s FROM range(1500000)) GROUP BY s ORDER BY s"
)
"""A query that outgrows a 64 MB buffer, so DuckDB spills."""


def test_a_process_that_ends_at_once_after_a_spill_leaves_no_spilled_files(tmp_path: Path) -> None:
    # `exit_now` skips the interpreter's teardown: the instance that spilled must be closed when its block
    # ends, or DuckDB never removes its folder.
    probe = (
        "from warehouse.db import leased\n"
        "from pipelines.process_exit import exit_now\n"
        "with leased('w.duckdb', {'memory_limit': '64MB', 'threads': 1}) as con:\n"
        f"    con.execute({SPILLING!r}).fetchmany(1)\n"
        "exit_now(0)\n"
    )
    subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, timeout=120, check=True)

    assert sorted(path.name for path in tmp_path.iterdir()) == ["w.duckdb"]


@pytest.mark.parametrize("warm", [True, False], ids=["leased", "open_database"])
def test_a_write_that_spills_spills_beside_its_file_never_where_the_operator_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, warm: bool
) -> None:
    # Before: the in-memory instances that write the warehouse spilled to `.tmp` in the working directory.
    standing, data = tmp_path / "standing", tmp_path / "data"
    standing.mkdir()
    data.mkdir()
    monkeypatch.chdir(standing)
    path = data / "w.duckdb"
    settings: dict[str, ConfigValue] = {"memory_limit": "64MB", "threads": 1}
    with leased(path, settings) if warm else closing(open_database(path, config=settings)) as con:
        con.execute(SPILLING).fetchmany(1)
        assert (data / "w.duckdb.tmp").is_dir()

    assert list(standing.iterdir()) == []
    assert sorted(item.name for item in data.iterdir()) == ["w.duckdb"]  # the instance that spilled is closed
    assert caplog.records == []  # a spill is no failure to release
    with leased(path) as con:  # and the next block has one that can spill again
        spills_to = con.execute("SELECT current_setting('temp_directory')").fetchone()
        assert spills_to == (str(data / "w.duckdb.tmp"),)
