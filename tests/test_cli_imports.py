"""The command line imports what a command runs (issues 30 and 31): ``--help`` loads none of the
implementation, ``sql`` and `pipelines.analytics.connect` load the settings and DuckDB but no Dagster, no
HTTP client and no pyarrow. Each probe is a fresh interpreter, which starts with nothing imported; no time
is asserted (docs/benchmarks.md, "CLI start", has the figures)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb

HEAVY = frozenset({"dagster", "dagster_shared", "httpx", "pyarrow", "pandas", "numpy", "duckdb", "emulator"})
"""Packages that cost a start a second or more between them, and that a command loads only to use them."""

HELP_MODULES = frozenset(
    {"pipelines.cli", "pipelines.hr.cli", "pipelines.formats", "pipelines.demo_defaults", "models.hr.status"}
    | {"pipelines.terminal"}  # the commands' console (rich, which Typer's help loads anyway)
    | {"warehouse.files"}  # the callback's keep_private, which every subcommand runs
    | {"pipelines.process_exit"}  # how the process ends (the standard library only)
    | {"pipelines.process_memory"}  # the package's malloc arenas (the standard library only)
)
"""The product modules ``--help`` and ``hr --help`` load: the commands' signatures and what they name."""

PROBE = """
import json, sys
from typer.testing import CliRunner
from pipelines.cli import app
for arguments in json.loads(sys.argv[1]):
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, result.output
if sys.argv[2:]:
    import pipelines.analytics
    with pipelines.analytics.connect() as con:
        assert con.execute("SELECT 1").fetchone() == (1,)
print(json.dumps(sorted(sys.modules)))
"""


def _loaded(tmp_path: Path, commands: list[list[str]], *, connect: bool = False) -> set[str]:
    """The modules a fresh interpreter holds after running ``commands`` (and `connect`, with ``connect``),
    its settings pointing at a published copy of its own."""
    copy = tmp_path / "wh.analytics.duckdb"
    duckdb.connect(str(copy)).close()
    env = {**os.environ, "ADM_WAREHOUSE": str(tmp_path / "wh.duckdb"), "ADM_PUBLISH_PATH": str(copy)}
    arguments = [sys.executable, "-c", PROBE, json.dumps(commands), *(["connect"] if connect else [])]
    result = subprocess.run(arguments, capture_output=True, text=True, check=False, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def _product(modules: set[str]) -> set[str]:
    """The product's own modules among ``modules`` (packages' ``__init__`` left out: they import nothing)."""
    packages = {"models", "models.hr", "resources", "warehouse", "pipelines", "pipelines.hr"}
    return {
        name for name in modules if name.split(".")[0] in {"models", "resources", "warehouse", "pipelines"}
    } - packages


def test_help_loads_the_signatures_only(tmp_path: Path) -> None:
    # Before: `--help` loaded the sync, the HTTP client, DuckDB, pyarrow and every model (2.9 s, 122 MB).
    loaded = _loaded(tmp_path, [["--help"], ["hr", "--help"], ["warehouse", "--help"]])
    assert sorted({name.split(".")[0] for name in loaded} & HEAVY) == []
    assert sorted(_product(loaded) - HELP_MODULES) == []


def test_sql_and_analytics_load_no_dagster_client_or_pyarrow(tmp_path: Path) -> None:
    # Before: `sql "SELECT 1"` loaded Dagster (4.5 s); then still httpx, pyarrow and every model, through
    # the settings (the check names beside pyarrow, the publish target beside the Parquet writer).
    loaded = _loaded(tmp_path, [["sql", "SELECT 1"], ["sql", "SELECT 1", "--format", "json"]], connect=True)
    assert sorted({name.split(".")[0] for name in loaded} & HEAVY) == ["duckdb"]
    assert sorted(_product(loaded) & {"resources.client", "models.actions", "pipelines.checks"}) == []
