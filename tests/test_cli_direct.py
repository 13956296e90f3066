"""A CLI run with no Dagster instance to record it (``DAGSTER_HOME`` unset) runs the sync directly: without
loading Dagster (or pandas), with the Dagster step's retries of a passing failure, and stopped at once by a
signal while it waits to retry. (With ``DAGSTER_HOME`` set it runs the job:
test_cli_runs_land_in_the_history_of_dagster_home.)"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

import duckdb
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.stopping import pause, received_signal
from tests.standin import Quirks, StandIn
from tests.sync_support import STANDIN_TENANT_ID, STANDIN_TOKEN
from tests.test_sync_quirks import decision, delegation, tenant

PROBE = """
import sys
from pipelines.cli import app
try:
    app(["extract"])
except SystemExit as end:
    print(end.code, sorted({name.split(".")[0] for name in sys.modules} & {"dagster", "pandas"}))
"""


def cli_env(standin: StandIn, warehouse: Path) -> dict[str, str]:
    """The CLI's settings: the stand-in's one tenant, a warehouse of the test's own, no DAGSTER_HOME."""
    return {
        "ADM_BASE_URL": standin.base_url,
        "ADM_TOKEN": STANDIN_TOKEN,
        "ADM_TENANTS": STANDIN_TENANT_ID,
        "ADM_WAREHOUSE": str(warehouse),
        "ADM_RATE_PER_MINUTE": "60000",
        "ADM_CONCURRENCY": "1",
    }


def test_a_cli_run_without_dagster_home_loads_neither_dagster_nor_pandas(tmp_path: Path) -> None:
    # Before: every CLI run imported Dagster (about 2 s) and ran the job on a temporary instance (3-4 s
    # more), which kept nothing of the run. And pyarrow's constructors from Python values (staging, the
    # checks, a new warehouse's hashes) imported pandas: 45-65 MB of the run's peak (issue 31).
    with StandIn(tenant(decisions=[decision(1)])) as standin:
        env = {"PATH": os.environ["PATH"], **cli_env(standin, tmp_path / "warehouse.duckdb")}
        probe = subprocess.run(
            [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=False
        )
    assert probe.stdout.strip().splitlines()[-1] == "0 []", probe.stdout + probe.stderr
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("SELECT status, job_name FROM sync_runs").fetchall() == [
            ("succeeded", "nightly_sync")
        ]


def test_a_cli_run_retries_a_passing_failure_as_the_dagster_step_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    served = tenant(delegations=[delegation(n) for n in range(30)])
    with StandIn(served, Quirks(outage=(20, 5))) as standin:  # E11 number 21 fails all 5 tries
        monkeypatch.delenv("DAGSTER_HOME", raising=False)
        for name, value in cli_env(standin, tmp_path / "warehouse.duckdb").items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ADM_MAX_RETRIES", "2")
        monkeypatch.setenv("ADM_RETRY_WAIT_S", "0.1")
        with caplog.at_level(logging.WARNING, logger="pipelines.tenant_runs"):
            result = CliRunner().invoke(app, ["extract"])

    assert result.exit_code == 0, result.output
    # 20 answered, 5 failed tries of the 21st; the retry asks only for the 10 not answered yet.
    assert standin.requests["revisions of delegations"] == 30
    with duckdb.connect(str(tmp_path / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT run_id, status FROM sync_runs ORDER BY started_at").fetchall()
    (first, first_status), (second, second_status) = rows
    assert (second, first_status, second_status) == (f"{first}.1", "failed", "succeeded")
    assert "the step runs again in 0.1 s" in caplog.text
    # The summary shows both tries (before: only the first, failed, of a run that succeeded).
    assert f"run {first[:8]} failed" in result.output.replace("\n", " ")
    assert result.output.count("succeeded") == 1


def test_a_signal_during_the_wait_for_a_retry_ends_it_at_once() -> None:
    """SIGTERM as the wait sleeps (raised from a profile hook in this, the main, thread: the code under test
    runs unchanged): the wait ends and names the signal, as a stopped run does."""

    def hook(frame: FrameType, event: str, argument: object) -> None:
        if event == "c_call" and argument is time.sleep and frame.f_code is pause.__code__:
            sys.setprofile(None)
            signal.raise_signal(signal.SIGTERM)

    started = time.monotonic()
    sys.setprofile(hook)
    try:
        stopped_by = pause(60)
    finally:
        sys.setprofile(None)

    assert stopped_by == signal.SIGTERM == received_signal()
    assert time.monotonic() - started < 10  # not the 60 s asked for


@pytest.mark.parametrize(
    "home", ["data/dagster_home", "/nonexistent/dagster_home"], ids=["relative", "missing"]
)
def test_a_dagster_home_dagster_cannot_use_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: str
) -> None:
    # Before: Dagster's DagsterInvariantViolationError in a 60-line traceback, exit 1.
    monkeypatch.setenv("DAGSTER_HOME", home)
    with StandIn(tenant(decisions=[decision(1)])) as standin:
        for name, value in cli_env(standin, tmp_path / "warehouse.duckdb").items():
            monkeypatch.setenv(name, value)
        result = CliRunner().invoke(app, ["extract"])
        assert sum(standin.requests.values()) == 0
    assert result.exit_code == 2
    (line,) = result.output.splitlines()
    assert line.startswith(
        f"error: DAGSTER_HOME {home!r}" if home.startswith("/") else "error: DAGSTER_HOME must be"
    )
