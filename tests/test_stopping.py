"""Stopping a sync: SIGTERM and SIGINT stop a real CLI process at once (no further request, the row
``interrupted``, the fetched revision lists kept) and the rerun resumes from them; the wall-clock budget
stops a slow run in one line naming the slow endpoint; a killed run's row carries every call it made."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.stopping import (
    BUDGET_FACTOR,
    ROW_WAIT_S,
    RunInterruptedError,
    RunOverBudgetError,
    RunStop,
    budget_timer,
    received_signal,
    run_allowance,
    run_budget_s,
)
from pipelines.sync import SyncOutcome
from resources.metrics import MetricsSnapshot
from resources.waits import SharedWait
from tests.conftest import EXIT_WITHIN_S
from tests.dagster_support import new_dagster_home
from tests.standin import Quirks, StandIn
from tests.sync_support import STANDIN_TENANT_ID, STANDIN_TOKEN, sync_standin
from tests.test_sync_quirks import delegation, tenant
from warehouse import commit
from warehouse.locks import held, writer_lock_path
from warehouse.runs import QuotaProjection

CLI = Path(sys.executable).with_name("authority-sync")
DELEGATIONS = 60


def cli_env(tmp_path: Path, standin: StandIn, *, dagster: bool = True) -> dict[str, str]:
    """The CLI's environment: the stand-in, one request at a time, a warehouse of the test's own, and with
    ``dagster`` a Dagster instance with the project's settings (the CLI then runs the sync as the Dagster
    job; without it, the sync alone)."""
    home = {"DAGSTER_HOME": str(new_dagster_home(tmp_path))} if dagster else {}  # python_logs at INFO
    return {
        "PATH": os.environ["PATH"],
        **home,
        "ADM_BASE_URL": standin.base_url,
        "ADM_TOKEN": STANDIN_TOKEN,
        "ADM_TENANTS": STANDIN_TENANT_ID,
        "ADM_WAREHOUSE": str(tmp_path / "warehouse.duckdb"),
        "ADM_RATE_PER_MINUTE": "60000",
        "ADM_CONCURRENCY": "1",
    }


def served(standin: StandIn) -> int:
    """Requests the stand-in answered."""
    return sum(standin.requests.values())


def revisions_served(standin: StandIn) -> int:
    return standin.requests["revisions of delegations"]


def await_true(condition: Callable[[], bool], timeout: float = 90.0) -> None:
    """Poll another process's progress (no event crosses the process boundary)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the run did not get that far"
        time.sleep(0.02)


def run_rows(warehouse: Path) -> list[tuple[str, int, str | None]]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute(
            "SELECT status, api_calls_total, error FROM sync_runs ORDER BY started_at"
        ).fetchall()


def rerun(standin: StandIn, tmp_path: Path) -> SyncOutcome:
    """The next run of the tenant on what the stopped CLI process left (its warehouse and staging), in this
    process: what it finds and resumes is the subject, not how it is launched (a second CLI process cost
    a Dagster start, 4 s of CPU)."""
    return sync_standin(standin, tmp_path / "warehouse.duckdb", full_refresh=False, concurrency=1)


SUBPROCESS_TIMEOUT_S = 300
"""A CLI process starts (Dagster's import alone takes 10 s on a busy machine)."""


@pytest.mark.timeout(SUBPROCESS_TIMEOUT_S)
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_run_at_once_and_the_rerun_resumes(tmp_path: Path, stop: signal.Signals) -> None:
    # Before: the run made every remaining call, then failed with DagsterExecutionInterruptedError and
    # nothing of what it fetched was kept; the row said failed.
    with StandIn(
        tenant(delegations=[delegation(n) for n in range(DELEGATIONS)]), Quirks(latency_s=0.05)
    ) as standin:
        env = cli_env(tmp_path, standin)
        running = subprocess.Popen(
            [str(CLI), "extract"],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        await_true(lambda: revisions_served(standin) >= DELEGATIONS // 5)
        running.send_signal(stop)
        signalled_at, calls_at_signal = time.monotonic(), served(standin)
        out, err = running.communicate(timeout=60)
        exited_after = time.monotonic() - signalled_at
        time.sleep(0.1)  # an answer in flight at the signal is counted once the stand-in has sent it
        calls_after_signal = served(standin) - calls_at_signal
        fetched = revisions_served(standin)
        standin.requests.clear()
        again = rerun(standin, tmp_path)

    assert running.returncode == 128 + stop, out + err
    assert exited_after < EXIT_WITHIN_S
    assert calls_after_signal <= 1  # the one in flight (one request at a time)
    said = [line for line in out.splitlines() if line.strip()]
    assert len(said) == 1, out
    # Before: the line began `dagster._core.definitions.events.Failure:`, and stderr held the run's INFO log
    # (the instance's python_logs raise the project's loggers to INFO) although --verbose was not given.
    assert said[0].startswith(
        f"tenant {STANDIN_TENANT_ID}: interrupted by {stop.name}: no further request sent, nothing committed"
    )
    assert "INFO" not in err
    assert "kept: the next run of tenant" in said[0]
    assert again.record.status == "succeeded"
    assert revisions_served(standin) == DELEGATIONS - fetched  # none asked twice: the rerun resumed
    (first_status, first_calls, first_error), (second_status, *_) = run_rows(tmp_path / "warehouse.duckdb")
    assert (first_status, second_status) == ("interrupted", "succeeded")
    assert first_calls == calls_at_signal + calls_after_signal  # every call it made, no more
    assert first_error is not None and first_error.startswith(f"interrupted by {stop.name}")


def test_a_run_past_its_budget_stops_in_one_line_naming_the_slow_endpoint(tmp_path: Path) -> None:
    served_tenant = tenant(delegations=[delegation(n) for n in range(DELEGATIONS)])
    with StandIn(served_tenant, Quirks(latency_s=0.1)) as standin:  # 6 s of revision lists, one at a time
        with pytest.raises(RunOverBudgetError) as raised:
            sync_standin(standin, tmp_path / "warehouse.duckdb", concurrency=1, run_budget_s=3.0)
        fetched = revisions_served(standin)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("the run took longer than its budget of 3 s (ADM_RUN_BUDGET_S)")
    assert "the slowest endpoint: E11 (" in message
    assert fetched < DELEGATIONS  # stopped part-way
    ((status, _, error),) = run_rows(tmp_path / "warehouse.duckdb")
    assert (status, error) == ("failed", message)


def test_a_budget_is_asked_again_when_it_runs_out_and_stops_the_run_only_past_what_it_grew_to() -> None:
    # Before: the budget was fixed when the run began, so a first run (no estimate: 0 expected calls) that
    # needed more than the ten minutes' slack was stopped, and so was every run after it.
    stop = RunStop()
    asked: list[float] = []
    granted: list[float] = []
    started = time.monotonic()

    def allowed() -> tuple[float, str]:
        asked.append(time.monotonic() - started)
        # Twice 0.2 s more than has passed (however late the timer fires), then the same as the last time.
        granted.append(asked[-1] + 0.2 if len(asked) < 3 else granted[-1])
        return granted[-1], "as it grew"

    with budget_timer(stop, allowed, MetricsSnapshot):
        while not stop.requested and time.monotonic() - started < 30:
            time.sleep(0.01)
    assert len(asked) == 3 and asked[1] >= 0.2 and asked[2] >= asked[1] + 0.2
    assert stop.over_budget is not None
    assert stop.over_budget.startswith("the run took longer than its budget of ")
    assert "s (as it grew); no request had answered yet" in stop.over_budget


def test_a_run_that_ended_within_its_budget_is_not_stopped_after() -> None:
    stop = RunStop()
    with budget_timer(stop, lambda: (0.1, "short"), MetricsSnapshot):
        pass
    time.sleep(0.3)
    assert not stop.requested


@given(
    expected=st.one_of(st.none(), st.integers(0, 10**7)),
    made=st.lists(st.integers(0, 10**7), min_size=1, max_size=6).map(sorted),
    rate=st.floats(0.001, 1e7),
)
def test_a_run_keeping_a_third_of_the_plans_pace_outlives_its_derived_budget_and_its_message_is_true(
    expected: int | None, made: list[int], rate: float
) -> None:
    # Calls so far, as the client counts them; None: no earlier run to estimate from (a tenant's first).
    projection = None if expected is None else QuotaProjection(0, expected, 10**9, 1.0, "the last full run")
    counted = iter(made)
    allowed = run_allowance(None, rate, projection, lambda: next(counted))
    for calls in made:
        seconds, source = allowed()
        assert seconds > BUDGET_FACTOR * calls * 60.0 / rate  # a third of the plan's pace is never stopped
        assert seconds >= run_budget_s(expected or 0, rate)  # nor is a run before its expected calls' time
        assert seconds == run_budget_s(max(calls, expected or 0), rate)  # and no more: a stalled run stops
        named = f"{calls:,} calls made, more than the {expected or 0:,} expected"
        assert source.startswith(named if calls > (expected or 0) else f"{expected or 0:,} expected calls")
        assert source.endswith(f"at {rate:g}/min; ADM_RUN_BUDGET_S overrides it")
    assert run_allowance(3.0, rate, projection, lambda: made[-1])() == (3.0, "ADM_RUN_BUDGET_S")


@pytest.mark.timeout(SUBPROCESS_TIMEOUT_S)
def test_a_killed_run_is_charged_every_call_it_made(tmp_path: Path) -> None:
    # Before: the calls were written every 2 s, so the row of a killed run missed those made since. The CLI
    # without DAGSTER_HOME, the sync alone: a killed run of the Dagster job is tests/test_recovery.py's.
    with StandIn(
        tenant(delegations=[delegation(n) for n in range(DELEGATIONS)]), Quirks(latency_s=0.05)
    ) as standin:
        env = cli_env(tmp_path, standin, dagster=False)
        killed = subprocess.Popen([str(CLI), "extract"], env=env, cwd=tmp_path)
        await_true(lambda: revisions_served(standin) >= 10)
        before = revisions_served(standin)
        await_true(lambda: revisions_served(standin) >= before + 5)
        killed.send_signal(signal.SIGKILL)
        assert killed.wait(timeout=30) == -signal.SIGKILL
        time.sleep(0.2)  # the answer in flight at the kill is counted once sent
        made = served(standin)
        assert rerun(standin, tmp_path).record.status == "succeeded"
    (status, calls, _), _ = run_rows(tmp_path / "warehouse.duckdb")
    assert status == "killed"
    assert made <= calls <= made + 1  # counted before each request: at most the one about to leave


def call_on_entering(
    function: Callable[..., object], action: Callable[[], object], done: list[float]
) -> None:
    """Do ``action`` in this (the main) thread when ``function`` is next called, through a profile hook (the
    code under test runs unchanged), noting the moment in ``done``."""

    def hook(frame: FrameType, event: str, _argument: object) -> None:
        if event == "call" and frame.f_code is function.__code__:
            done.append(time.monotonic())
            sys.setprofile(None)  # once is enough, and the rest of the run at full speed
            action()

    sys.setprofile(hook)


@contextmanager
def on_entering(function: Callable[..., object], action: Callable[[], object]) -> Iterator[list[float]]:
    """`call_on_entering` for the block; yields the moment ``action`` was done, once it was."""
    done: list[float] = []
    call_on_entering(function, action, done)
    try:
        yield done
    finally:
        sys.setprofile(None)


def test_a_signal_during_the_commit_lets_it_finish_and_then_stops(tmp_path: Path) -> None:
    """SIGTERM inside the commit's transaction (as the cursors move, after the merge): the commit finishes,
    the row says ``succeeded`` (what happened: the data is there), and the run returns at once, telling
    its caller that a signal came (the CLI then starts no next tenant and exits with 143)."""
    warehouse = tmp_path / "warehouse.duckdb"
    with StandIn(tenant(delegations=[delegation(n) for n in range(5)])) as standin:
        with on_entering(commit._move_cursors, lambda: signal.raise_signal(signal.SIGTERM)) as raised:
            outcome = sync_standin(standin, warehouse, concurrency=1)
            returned = time.monotonic()
        calls = served(standin)
    assert raised, "the commit never moved the cursors"
    assert received_signal() == signal.SIGTERM
    assert outcome.commit is not None
    ((status, _, error),) = run_rows(warehouse)
    assert (status, error) == ("succeeded", None)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM delegations").fetchone() == (5,)
    assert outcome.record.api_calls_total == calls  # no request after the signal
    # It returns once the commit and its publish end (a loaded test host stretches both: hence their own
    # timings as the bound, plus a margin for the figures of the month read after them).
    phases = outcome.record.phase_seconds
    assert returned - raised[0] < phases["commit"] + phases["publish"] + EXIT_WITHIN_S


@pytest.mark.parametrize("released", [True, False], ids=["writer-released", "writer-still-busy"])
def test_a_signal_while_the_commit_waits_for_the_writer_ends_the_wait(tmp_path: Path, released: bool) -> None:
    """SIGTERM while the commit waits for another holder of the warehouse's writer (an HR apply, another
    tenant's commit): the wait ends at its next poll, not after ADM_LOCK_WAIT_S; nothing is committed. The
    row says ``interrupted`` when the writer is free within `ROW_WAIT_S`; otherwise the run keeps its
    progress report and the rerun records it ``killed`` with every call it made. The rerun resumes."""
    # Before: the signal was noted and the wait went on for up to ADM_LOCK_WAIT_S (then committed).
    warehouse = tmp_path / "warehouse.duckdb"
    other_writer = ExitStack()
    signalled: list[float] = []

    def signal_while_waiting() -> None:
        if released:
            other_writer.close()
        signal.raise_signal(signal.SIGTERM)

    def hold_writer() -> None:  # a lock on another open of the file, which flock refuses this process too
        other_writer.enter_context(held(writer_lock_path(warehouse), "hr apply of plan p-1", 0, "the writer"))
        call_on_entering(SharedWait.still, signal_while_waiting, signalled)

    with StandIn(tenant(delegations=[delegation(n) for n in range(5)])) as standin:
        with on_entering(commit.commit_run, hold_writer), pytest.raises(RunInterruptedError):
            sync_standin(standin, warehouse, concurrency=1, lock_wait_s=120)
        returned = time.monotonic()
        other_writer.close()
        calls, fetched = served(standin), revisions_served(standin)
        standin.requests.clear()
        assert rerun(standin, tmp_path).record.status == "succeeded"
        assert revisions_served(standin) == 5 - fetched  # none asked twice: the rerun resumed
    assert returned - signalled[0] < ROW_WAIT_S + EXIT_WITHIN_S
    (first_status, first_calls, first_error), (second_status, *_) = run_rows(warehouse)
    assert (first_status, second_status) == ("interrupted" if released else "killed", "succeeded")
    assert first_calls == calls
    assert first_error is not None
    assert first_error.startswith("interrupted by SIGTERM" if released else "killed: process")
