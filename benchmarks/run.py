"""The benchmark scenarios, with the targets of issues #6 and #9: ``make bench``, or
``python -m benchmarks.run [--only 1 3]``.

Each scenario starts its own emulator (a separate process, fixed seed, scale and faults), runs each
contender as a separate process, and prints one row per contender: wall time, API calls and 429s as the
emulator counted them, rows loaded, rows per second, the peak resident memory of the contender's process
tree and the ratio to the scenario's bound. Then it computes each target of the issue and says whether it
holds. Figures also go to ``data/bench/<scenario>.json``.

1. latency: full extract with 50 ms added to every request; bound ``ceil(calls / 16) * 50 ms``.
2. rate: full extract under a 600 requests/minute budget with a burst of 1,200; bound: the calls beyond
   the burst at 10 a second.
3. incremental: a full run, 1% of decisions, delegations and users changed, a second run.
4. memory: ours at 10,000, 100,000 and 300,000 decisions (full refreshes), and a busy day's nightly run at
   100,000.
5. reverse sync: the HR apply of a 10,000-row file with 5% changed rows at 600 requests/minute.
6. HR plan at scale: ``hr plan`` of a 50,000-row users file against a 50,000-user tenant (issue 17): wall
   time and the peak memory of the planning process, bound 400 MB (issues 26 and 31).
7. API budget (issue 20): as 1 and 3, a first full refresh, a second of the unchanged tenant, a nightly
   incremental after a 1% change, dlt's first run and its two next runs; then the month `authority-sync
   budget` projects under the default schedules on each plan, beside the month of the runs before issue 20.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.contenders import DLT, OURS, OursConfig, fresh, run_dlt, run_ours
from benchmarks.harness import (
    DEMO,
    OUTPUT,
    EmulatorProcess,
    EmulatorSpec,
    Row,
    Target,
    latency_bound,
    markdown_scenario,
    print_scenario,
    rate_bound,
    write_json,
)
from emulator.scale import Scale
from pipelines.budget import BudgetTerms, MonthProjection, RunCalls, project_month
from pipelines.settings import SyncSettings
from warehouse.commit import RETRIED
from warehouse.reads import tenant_sizes

WORK = Path("data/bench/work")
LATENCY_MS = 50.0
CONCURRENCY = 16
UNLIMITED_RATE = 60_000.0
"""Requests per minute ours is told when the emulator enforces no budget (as the CLI's embedded default)."""
PLAN_RATE = 600.0
PLAN_BURST = 1_200
SPEEDUP_TARGET = 2.0
BOUND_TARGET = 1.5
UTILISATION_TARGET = 0.97
RATE_BOUND_TARGET = 1.05
"""Scenario 2: our wall time at most this multiple of the rate bound (issue 31; issue 9 asked 1.08)."""
INCREMENTAL_TARGET = 0.03
MEMORY_LIMIT_MB = 400.0
"""Peak memory of a sync at 100k decisions and of an HR plan of 50,000 rows (issues 26 and 31)."""
HR_PLAN_ROWS = 50_000
"""Rows of scenario 6's users file, and users of its tenant."""
MEMORY_LIMIT_AT = 100_000
"""Scenario 4's size at which the sync's peak is held to `MEMORY_LIMIT_MB`."""
MEMORY_GROWTH_TARGET = 1.2
"""Peak memory from the smallest size of scenario 4 to each larger one grows at most this much (issue 31)."""
BEFORE_CALLS = RunCalls(full=3_243, nightly=222)
"""Scenario 7's tenant before issue 20: a full refresh asked every revision list again (issue 20's figures,
measured by scenarios 1 and 3)."""
SECOND_FULL_TARGET = 0.2
"""A second full refresh of the unchanged tenant: at most this share of a full refresh before issue 20."""
SECOND_FULL_WALL_S = 6.0
"""... and at most this many seconds (issue 31)."""
COMMIT_AT_LIMIT_S = 8.0
"""Scenario 4: the commit at `MEMORY_LIMIT_AT` decisions takes at most this many seconds (issue 31)."""
MONTH_SHARE_TARGET = 0.5
"""The default schedules' month on Essential: at most this share of the quota."""


@dataclass(frozen=True)
class Options:
    """Command-line choices."""

    decisions: int
    memory_decisions: tuple[int, ...]
    with_dlt: bool
    share: float = 1.0
    """Of the other lists of scenarios 1, 3 and 7 (delegations, documents, users): ``--quick`` takes a
    quarter."""


QUICK = ("1", "3")
"""The scenarios of ``--quick`` (``make bench-quick``)."""
QUICK_DECISIONS = 5_000
QUICK_SHARE = 0.25


def full_scale(decisions: int, latency_ms: float = LATENCY_MS, share: float = 1.0) -> EmulatorSpec:
    """The tenant of scenarios 1 and 3: ``decisions`` with delegations, documents and users beside them
    (``share`` of their full numbers)."""
    return EmulatorSpec(
        decisions=decisions,
        delegations=round(2_000 * share),
        documents=round(1_000 * share),
        users=round(2_000 * share),
        latency_ms=latency_ms,
    )


def scenario_latency(console: Console, options: Options) -> dict[str, Any]:
    """1. Latency-bound full extract: ours (full refresh, concurrency 16) and dlt (16 extract workers)."""
    spec = full_scale(options.decisions, share=options.share)
    work = WORK / "latency"
    rows = []
    with EmulatorProcess(spec, work / "emulator.log") as emulator:
        config = OursConfig(CONCURRENCY, UNLIMITED_RATE)
        rows.append(run_ours(emulator, fresh(work / "ours.duckdb"), config, full_refresh=True))
        if options.with_dlt:
            emulator.reset()
            rows.append(run_dlt(emulator, fresh(work / "dlt"), CONCURRENCY))
    for row in rows:
        row.bound_s = latency_bound(row.api_calls, CONCURRENCY, LATENCY_MS / 1000)
    ours, theirs = rows[0], rows[1] if len(rows) > 1 else None
    speedup = theirs.wall_s / ours.wall_s if theirs and theirs.ok and ours.ok else None
    targets = [
        Target(
            f"ours at least {SPEEDUP_TARGET:g}x faster than dlt",
            None if speedup is None else speedup >= SPEEDUP_TARGET,
            "n/a" if speedup is None else f"{speedup:.1f}x",
        ),
        Target(
            f"ours within {BOUND_TARGET}x of the bound at concurrency {CONCURRENCY}",
            ours.ratio is not None and ours.ok and ours.ratio <= BOUND_TARGET,
            f"{ours.ratio:.2f}x" if ours.ratio else "n/a",
        ),
    ]
    setup = [
        f"emulator: {spec.describe()}",
        f"bound = ceil(API calls / {CONCURRENCY}) x {LATENCY_MS:g} ms; ours: ADM_CONCURRENCY={CONCURRENCY}; "
        f"dlt: extract.workers={CONCURRENCY}, parallelized resources, Parquet loader files (its DuckDB docs' "
        "advice over the default insert_values)",
    ]
    return finish(console, "latency", "1. Latency-bound full extract", setup, rows, targets, spec)


DLT_RATE_LIMITED_ATTEMPTS = 20
"""dlt's ``request_max_attempts`` in scenario 2: with its default of 5 a 429 storm at 16 workers fails the
run; raising it is the documented remedy, so dlt gets it."""


def utilisation(row: Row) -> float | None:
    """Share of the refill budget used after the burst: (accepted calls - burst) / (rate x API window).
    Calls answered 429 used no budget, so they are not counted."""
    window = row.extra.get("api_window_s")
    if not window or not row.ok:
        return None
    return float((row.api_calls - row.rate_limited - PLAN_BURST) / (PLAN_RATE / 60 * window))


def scenario_rate(console: Console, options: Options) -> dict[str, Any]:
    """2. Rate-limited full extract: the emulator limits the tenant to 600 requests/minute, burst 1,200."""
    spec = EmulatorSpec(
        decisions=5_000,
        delegations=1_200,
        documents=600,
        users=500,
        latency_ms=LATENCY_MS,
        rate_limit=PLAN_RATE,
        rate_burst=PLAN_BURST,
    )
    work = WORK / "rate"
    rows = []
    with EmulatorProcess(spec, work / "emulator.log") as emulator:
        config = OursConfig(CONCURRENCY, PLAN_RATE, PLAN_BURST)
        rows.append(run_ours(emulator, fresh(work / "ours.duckdb"), config, full_refresh=True))
        if options.with_dlt:
            emulator.reset()
            attempts = DLT_RATE_LIMITED_ATTEMPTS
            rows.append(run_dlt(emulator, fresh(work / "dlt"), CONCURRENCY, max_attempts=attempts))
    for row in rows:
        row.bound_s = rate_bound(row.api_calls - row.rate_limited, PLAN_RATE, PLAN_BURST)
        used = utilisation(row)
        row.extra["utilisation"] = used
        if used is not None:
            row.note = f"budget used after the burst: {used:.1%}" + (f"; {row.note}" if row.note else "")
    ours = rows[0]
    used = ours.extra["utilisation"]
    targets = [
        Target("ours trips zero 429s", ours.ok and ours.rate_limited == 0, f"{ours.rate_limited} x 429"),
        Target(
            f"ours uses at least {UTILISATION_TARGET:.0%} of the budget after the burst",
            None if used is None else ours.ok and used >= UTILISATION_TARGET,
            "n/a" if used is None else f"{used:.1%}",
        ),
        Target(
            f"ours within {RATE_BOUND_TARGET}x of the bound",
            ours.ratio is not None and ours.ok and ours.ratio <= RATE_BOUND_TARGET,
            f"{ours.ratio:.2f}x" if ours.ratio else "n/a",
        ),
    ]
    setup = [
        f"emulator: {spec.describe()}",
        f"ours: ADM_RATE_PER_MINUTE={PLAN_RATE:g}, ADM_BURST={PLAN_BURST}, ADM_CONCURRENCY={CONCURRENCY}; "
        f"dlt: extract.workers={CONCURRENCY}, its HTTP retries (429 waits for Retry-After) with "
        f"request_max_attempts={DLT_RATE_LIMITED_ATTEMPTS} (default 5)",
        f"bound = (accepted calls - {PLAN_BURST}) / {PLAN_RATE / 60:g} per s; budget used after the burst = "
        f"(accepted calls - {PLAN_BURST}) / ({PLAN_RATE:g}/min x API window), the window running from the "
        "first to the last call the emulator counted; accepted = API calls - 429s",
    ]
    return finish(console, "rate", "2. Rate-limited full extract", setup, rows, targets, spec)


def one_percent(spec: EmulatorSpec) -> dict[str, int]:
    """The change of scenario 3: 1% of decisions, delegations and users."""
    return {
        "decisionsUpdated": spec.decisions // 100,
        "delegationsUpdated": spec.delegations // 100,
        "usersUpdated": spec.users // 100,
    }


def scenario_incremental(console: Console, options: Options) -> dict[str, Any]:
    """3. A full run, 1% of decisions, delegations and users changed, then an incremental run."""
    spec = full_scale(options.decisions, share=options.share)
    change = one_percent(spec)
    work = WORK / "incremental"
    rows: list[Row] = []
    with EmulatorProcess(spec, work / "emulator.log") as emulator:
        warehouse = fresh(work / "ours.duckdb")
        config = OursConfig(CONCURRENCY, UNLIMITED_RATE)
        rows.append(run_ours(emulator, warehouse, config, full_refresh=False, label=f"{OURS} full"))
        emulator.mutate(change)
        rows.append(run_ours(emulator, warehouse, config, full_refresh=False, label=f"{OURS} incremental"))
        if options.with_dlt:
            emulator.reset()
            workdir = fresh(work / "dlt")
            rows.append(run_dlt(emulator, workdir, CONCURRENCY, label=f"{DLT} full"))
            emulator.mutate(change)
            rows.append(run_dlt(emulator, workdir, CONCURRENCY, label=f"{DLT} incremental"))
    for row in rows:
        row.bound_s = latency_bound(row.api_calls, CONCURRENCY, LATENCY_MS / 1000)
    for full, second in zip(rows[::2], rows[1::2], strict=True):
        share = second.api_calls / full.api_calls if full.api_calls else None
        second.extra["share_of_full_calls"] = share
        if share is not None:
            second.note = f"API calls {share:.1%} of its full run" + (
                f"; {second.note}" if second.note else ""
            )
    share = rows[1].extra["share_of_full_calls"]
    theirs = rows[3] if len(rows) > 3 and rows[3].ok else None
    targets = [
        Target(
            f"ours' incremental API calls at most {INCREMENTAL_TARGET:.0%} of its full run's",
            None if share is None else rows[1].ok and share <= INCREMENTAL_TARGET,
            "n/a" if share is None else f"{rows[1].api_calls} / {rows[0].api_calls} = {share:.1%}",
        ),
        Target(
            "ours' incremental run faster than dlt's",
            None if theirs is None else rows[1].ok and rows[1].wall_s < theirs.wall_s,
            "n/a" if theirs is None else f"{rows[1].wall_s:.1f} s vs {theirs.wall_s:.1f} s",
        ),
    ]
    setup = [
        f"emulator: {spec.describe()}",
        f"change between the runs (/_admin/mutate): {change}",
        f"bound = ceil(API calls / {CONCURRENCY}) x {LATENCY_MS:g} ms; dlt's second run uses its "
        "incremental cursors (updatedAt/updatedOn, start_param updatedAtStart)",
    ]
    return finish(console, "incremental", "3. Incremental run after a 1% change", setup, rows, targets, spec)


def scenario_budget(console: Console, options: Options) -> dict[str, Any]:
    """7. What each kind of run costs the tenant's API budget, and the month that makes."""
    spec = full_scale(options.decisions, share=options.share)
    change = one_percent(spec)
    work = WORK / "budget"
    warehouse = fresh(work / "ours.duckdb")
    config = OursConfig(CONCURRENCY, UNLIMITED_RATE)
    rows: list[Row] = []
    with EmulatorProcess(spec, work / "emulator.log") as emulator:
        rows.append(
            run_ours(emulator, warehouse, config, full_refresh=True, label=f"{OURS} first full refresh")
        )
        rows.append(
            run_ours(emulator, warehouse, config, full_refresh=True, label=f"{OURS} second, unchanged")
        )
        emulator.mutate(change)
        rows.append(
            run_ours(emulator, warehouse, config, full_refresh=False, label=f"{OURS} nightly, 1% changed")
        )
        if options.with_dlt:
            emulator.reset()
            workdir = fresh(work / "dlt")
            rows.append(run_dlt(emulator, workdir, CONCURRENCY, label=f"{DLT} first run"))
            rows.append(run_dlt(emulator, workdir, CONCURRENCY, label=f"{DLT} second, unchanged"))
            emulator.mutate(change)
            rows.append(run_dlt(emulator, workdir, CONCURRENCY, label=f"{DLT} nightly, 1% changed"))
    for row in rows:
        row.bound_s = latency_bound(row.api_calls, CONCURRENCY, LATENCY_MS / 1000)
    settings = SyncSettings(warehouse=warehouse, tenant_id=DEMO["tenant_id"])
    sizes = tenant_sizes(warehouse, DEMO["tenant_id"])
    after = project_month(sizes, BudgetTerms.of(settings)) if sizes is not None and rows[2].ok else []
    before = [replace(month, calls=BEFORE_CALLS) for month in after]
    second = rows[1].api_calls / BEFORE_CALLS.full
    essential = after[0] if after else None
    targets = [
        Target(
            f"a second full refresh of the unchanged tenant at most {SECOND_FULL_TARGET:.0%} of "
            f"{BEFORE_CALLS.full:,} calls",
            rows[1].ok and second <= SECOND_FULL_TARGET,
            f"{rows[1].api_calls:,} calls, {second:.1%}",
        ),
        Target(
            f"a second full refresh of the unchanged tenant within {SECOND_FULL_WALL_S:g} s",
            rows[1].ok and rows[1].wall_s <= SECOND_FULL_WALL_S,
            f"{rows[1].wall_s:.1f} s",
        ),
        Target(
            f"the default schedules' month at most {MONTH_SHARE_TARGET:.0%} of Essential's quota",
            None if essential is None else essential.share <= MONTH_SHARE_TARGET,
            "n/a" if essential is None else f"{essential.monthly_calls:,} calls, {essential.share:.0%}",
        ),
    ]
    setup = [
        f"emulator: {spec.describe()}; change before the nightly runs (/_admin/mutate): {change}",
        "ours: extract --full-refresh twice, then extract; "
        f"ADM_REVISION_RECHECK_DAYS={settings.revision_recheck_days} (default); dlt: three runs of its "
        "pipeline (its next runs use its incremental cursors)",
        *_month_lines(before, after, settings),
    ]
    return finish(
        console,
        "budget",
        "7. API budget: full refreshes, a nightly run, the month",
        setup,
        rows,
        targets,
        spec,
    )


def _month_lines(
    before: list[MonthProjection], after: list[MonthProjection], settings: SyncSettings
) -> list[str]:
    """The month under the default schedules on each plan, before issue 20 and now."""
    if not after:
        return ["month: not projected (a run failed)"]
    month = after[0]
    lines = [
        f"month ({settings.nightly_cron!r} nightly, {settings.full_refresh_cron!r} full refresh: "
        f"{month.nightly_runs:.1f} and {month.full_runs:.2f} runs); before issue 20: full refresh "
        f"{BEFORE_CALLS.full:,}, nightly {BEFORE_CALLS.nightly:,} calls; now projected from the warehouse: "
        f"full refresh {month.calls.full:,}, nightly {month.calls.nightly:,}"
    ]
    for old, new in zip(before, after, strict=True):
        lines.append(
            f"month on {new.plan.value} ({new.quota:,} calls, {new.rate_per_minute:g}/min): before "
            f"{old.monthly_calls:,} calls ({old.share:.0%}), {old.minutes(old.monthly_calls) / 60:.1f} h, "
            f"a full refresh {old.minutes(old.calls.full):.0f} min; now {new.monthly_calls:,} calls "
            f"({new.share:.0%}), {new.minutes(new.monthly_calls) / 60:.1f} h, a full refresh "
            f"{new.minutes(new.calls.full):.1f} min"
        )
    return lines


def scenario_memory(console: Console, options: Options) -> dict[str, Any]:
    """4. Peak memory of ours (full refresh) at each number of decisions, everything else equal: under the
    limit at `MEMORY_LIMIT_AT` decisions, and every larger size within the growth target of the smallest;
    at `MEMORY_LIMIT_AT`, a nightly run after a `BUSY_DAY` change whose commit fits its first buffer."""
    rows = []
    nightly, change = None, {}
    specs = [full_scale(count, latency_ms=0.0) for count in options.memory_decisions]
    for spec in specs:
        work = WORK / f"memory_{spec.decisions}"
        with EmulatorProcess(spec, work / "emulator.log") as emulator:
            config = OursConfig(CONCURRENCY, UNLIMITED_RATE)
            label = f"{OURS} {spec.decisions:,} decisions"
            warehouse = fresh(work / "ours.duckdb")
            rows.append(run_ours(emulator, warehouse, config, full_refresh=True, label=label))
            if spec.decisions == MEMORY_LIMIT_AT:
                change = {name: count * BUSY_DAY for name, count in one_percent(spec).items()}
                emulator.mutate(change)
                label = f"{label}, nightly after a {BUSY_DAY}% change"
                nightly = run_ours(emulator, warehouse, config, full_refresh=False, label=label)
    sizes = dict(zip(options.memory_decisions, rows, strict=True))
    smallest = rows[0]
    targets = []
    at_limit = sizes.get(MEMORY_LIMIT_AT)
    if at_limit is not None:
        targets += [
            Target(
                f"at most {MEMORY_LIMIT_MB:g} MB at {MEMORY_LIMIT_AT:,} decisions",
                at_limit.ok and at_limit.peak_rss_mb <= MEMORY_LIMIT_MB,
                f"{at_limit.peak_rss_mb:.0f} MB",
            ),
            Target(
                f"the commit at {MEMORY_LIMIT_AT:,} decisions within {COMMIT_AT_LIMIT_S:g} s",
                at_limit.ok and _commit_s(at_limit) <= COMMIT_AT_LIMIT_S,
                f"{_commit_s(at_limit):.1f} s",
            ),
        ]
    if nightly is not None:
        retries = _commit_retries(nightly)
        targets.append(
            Target(
                f"the nightly at {MEMORY_LIMIT_AT:,} decisions commits in its first buffer",
                nightly.ok and retries == 0,
                f"{retries} retries, commit {_commit_s(nightly):.1f} s",
            )
        )
    for count, row in list(sizes.items())[1:]:
        growth = row.peak_rss_mb / smallest.peak_rss_mb if smallest.peak_rss_mb else None
        targets.append(
            Target(
                f"at {count:,} decisions less than {MEMORY_GROWTH_TARGET}x the "
                f"{options.memory_decisions[0]:,}-decision figure",
                None if growth is None else smallest.ok and row.ok and growth < MEMORY_GROWTH_TARGET,
                "n/a" if growth is None else f"{growth:.2f}x",
            )
        )
    others = ", ".join(f"{count:,}" for count in options.memory_decisions[1:])
    setup = [
        f"emulators: {specs[0].describe()}; then the same with {others} decisions",
        "peak = highest resident memory of the contender's process tree, sampled every 50 ms; ours commits "
        "with DuckDB's buffer bounded to warehouse.commit.MEMORY_LIMIT",
    ]
    if nightly is not None:
        setup.append(f"at {MEMORY_LIMIT_AT:,} decisions, then a nightly run after /_admin/mutate {change}")
    shown = rows if nightly is None else [*rows, nightly]
    return finish(console, "memory", "4. Memory: streaming, not accumulation", setup, shown, targets, *specs)


BUSY_DAY = 5
"""The percent of decisions, delegations and users scenario 4's nightly run finds changed, a busy day. At
1% its commit fits (the change log's comparison, which outgrew the buffer in a process that had run a full
refresh first, now goes in batches); at 5% the merge's insert of 5,000 changed decisions on two threads
still outgrows it, and the commit is tried again on one (session 30)."""


def _commit_s(row: Row) -> float:
    """The seconds of the commit phase our run recorded (0 when it recorded none)."""
    phases: dict[str, float] = row.extra.get("phases_s", {})
    return phases.get("commit", 0.0)


def _commit_retries(row: Row) -> int:
    """How many times our run's commit was tried again with a larger buffer, as its warnings say."""
    warnings: list[str] = row.extra.get("warnings", [])
    return sum(warning.startswith(RETRIED) for warning in warnings)


HR_ROWS = 10_000
HR_CHANGED = 0.05


NO_BURST = 10
"""The bucket of scenario 5's third apply: so small that the writes go at the plan rate from the start."""


def scenario_reverse(console: Console, options: Options) -> dict[str, Any]:
    """5. HR reverse sync: plan and apply a 10,000-row users file with 5% changed rows at 600/minute,
    then plan and apply the same file again; then the first apply again without the burst."""
    spec = EmulatorSpec(
        decisions=1_000,
        delegations=400,
        documents=200,
        users=HR_ROWS,
        latency_ms=LATENCY_MS,
        rate_limit=PLAN_RATE,
        rate_burst=PLAN_BURST,
    )
    title = "5. Reverse sync: HR apply"
    work = WORK / "reverse"
    try:
        from pipelines.hr.demo_export import benchmark_users_csv  # the HR sync is optional here
    except ImportError as error:
        return unavailable(console, "reverse", title, f"the HR reverse sync is not importable: {error}")
    csv_file = benchmark_users_csv(fresh(work / "hr_users.csv"), HR_ROWS, HR_CHANGED, scale=hr_scale(spec))
    changed = round(HR_ROWS * HR_CHANGED)
    config = OursConfig(CONCURRENCY, PLAN_RATE, PLAN_BURST)
    rows: list[Row] = []
    with EmulatorProcess(spec, work / "emulator.log") as emulator:
        hr = HrRun(emulator, fresh(work / "ours.duckdb"), csv_file, work / "plan.json")
        rows += hr.extract(config) + hr.apply(config, "apply") + hr.refresh(config)
        rows += hr.apply(config, "re-apply")
        emulator.reset()
        hr.warehouse = fresh(hr.warehouse)
        rows += hr.extract(config)
        emulator.set_burst(NO_BURST)
        rows += hr.apply(OursConfig(CONCURRENCY, PLAN_RATE, NO_BURST), f"apply, burst {NO_BURST}")
    for row in rows:
        row.bound_s = row.rows / (PLAN_RATE / 60)
    by_label = {row.contender: row for row in rows}
    targets = [
        Target(
            f"writes equal the changed rows ({changed})",
            all(by_label[label].ok and by_label[label].rows == changed for label in HrRun.APPLIES)
            if all(label in by_label for label in HrRun.APPLIES)
            else None,
            ", ".join(f"{by_label[label].rows}" for label in HrRun.APPLIES if label in by_label) + " writes",
        ),
        Target(
            "a re-apply writes nothing",
            by_label["re-apply"].ok and by_label["re-apply"].rows == 0 if "re-apply" in by_label else None,
            f"{by_label['re-apply'].rows} writes" if "re-apply" in by_label else "n/a",
        ),
    ]
    setup = [
        f"emulator: {spec.describe()}",
        f"HR file: {HR_ROWS:,} users rows, {HR_CHANGED:.0%} changed (benchmark_users_csv, seed 42); the "
        "warehouse is extracted first (untimed), `hr plan` stores a plan (untimed), `hr apply --no-refresh` "
        "is timed; after an incremental refresh the same file is planned and applied again; then the "
        f"first apply is repeated on a fresh tenant with a bucket of {NO_BURST} (emulator and client)",
        f"rows loaded = writes the emulator applied; bound = writes / {PLAN_RATE / 60:g} per s (the plan "
        f"rate; a fresh bucket's burst of {PLAN_BURST} carries 500 writes faster than that)",
    ]
    return finish(console, "reverse", title, setup, rows, targets, spec)


def scenario_hr_plan(console: Console, options: Options) -> dict[str, Any]:
    """6. ``hr plan`` of a 50,000-row users file (5% changed rows) against a 50,000-user tenant: the
    planning process's wall time and peak memory (its process tree, sampled)."""
    spec = EmulatorSpec(decisions=1_000, delegations=400, documents=200, users=HR_PLAN_ROWS)
    title = f"6. HR plan: {HR_PLAN_ROWS:,} rows against {HR_PLAN_ROWS:,} users"
    work = WORK / "hr_plan"
    from pipelines.hr.demo_export import benchmark_users_csv

    csv_file = benchmark_users_csv(fresh(work / "users.csv"), HR_PLAN_ROWS, HR_CHANGED, scale=hr_scale(spec))
    config = OursConfig(CONCURRENCY, UNLIMITED_RATE, None)
    with EmulatorProcess(spec, work / "emulator.log") as emulator:
        hr = HrRun(emulator, fresh(work / "ours.duckdb"), csv_file, work / "plan.json")
        rows = hr.extract(config)
        if not rows:
            lift = ["--allow=group", "--allow=total", "--reason=benchmark", "--approved-by=benchmark"]
            command = ["plan", str(csv_file), f"--json={fresh(hr.plan_file)}", "--limit=5", *lift]
            rows = [run_hr(emulator, config, hr.warehouse, command, "hr plan")]
    plan = rows[0]
    plan.rows = HR_PLAN_ROWS if plan.ok and read_plan_id(hr.plan_file) else 0
    targets = [
        Target(
            f"peak memory of the planning process below {MEMORY_LIMIT_MB:.0f} MB",
            plan.peak_rss_mb < MEMORY_LIMIT_MB if plan.ok else None,
            f"{plan.peak_rss_mb:.0f} MB",
        ),
        Target("the plan is stored", plan.rows == HR_PLAN_ROWS if plan.ok else None, f"{plan.rows:,} rows"),
    ]
    setup = [
        f"emulator: {spec.describe()}",
        f"HR file: {HR_PLAN_ROWS:,} users rows, {HR_CHANGED:.0%} changed (benchmark_users_csv, seed 42); the "
        "warehouse is extracted first (untimed); `authority-sync hr plan` is timed as a process of its own "
        "(Python start and imports included), writing the plan to the warehouse and as JSON",
        "rows loaded = the file's rows planned; no bound (planning makes no API call)",
    ]
    return finish(console, "hr_plan", title, setup, rows, targets, spec)


@dataclass
class HrRun:
    """Scenario 5's steps against one emulator: extract, plan, apply; failures become rows."""

    APPLIES = ("apply", f"apply, burst {NO_BURST}")

    emulator: EmulatorProcess
    warehouse: Path
    csv_file: Path
    plan_file: Path
    failed: bool = False

    def extract(self, config: OursConfig) -> list[Row]:
        """Fill the warehouse (a full extract); a row only if it failed."""
        return self._quiet(
            run_ours(self.emulator, self.warehouse, config, full_refresh=True, label="extract")
        )

    def refresh(self, config: OursConfig) -> list[Row]:
        """The incremental extract an apply normally ends with; a row only if it failed."""
        return self._quiet(
            run_ours(self.emulator, self.warehouse, config, full_refresh=False, label="refresh")
        )

    def apply(self, config: OursConfig, label: str) -> list[Row]:
        """Plan the file, refill the budget, then the timed apply (its row)."""
        if self.failed:
            return []
        # A third of the changes are transfers, over the group threshold's 50 at 10,000 rows: lifted.
        lift = ["--allow=group", "--reason=benchmark transfers", "--approved-by=benchmark"]
        command = ["plan", str(self.csv_file), f"--json={fresh(self.plan_file)}", *lift]
        plan = run_hr(self.emulator, config, self.warehouse, command, f"hr plan before {label}")
        plan_id = read_plan_id(self.plan_file) if plan.ok else None
        if plan_id is None:
            self.failed = True
            return [plan]
        self.emulator.refill()
        return [run_hr(self.emulator, config, self.warehouse, ["apply", plan_id, "--no-refresh"], label)]

    def _quiet(self, row: Row) -> list[Row]:
        if row.ok:
            return []
        self.failed = True
        return [row]


def hr_scale(spec: EmulatorSpec) -> Scale:
    """The seeded tenant of an emulator started with ``spec`` (its other counts are the CLI's defaults)."""
    return Scale(
        users=spec.users, decisions=spec.decisions, delegations=spec.delegations, documents=spec.documents
    )


def run_hr(
    emulator: EmulatorProcess, config: OursConfig, warehouse: Path, command: list[str], label: str = "hr"
) -> Row:
    """``authority-sync hr ...`` against the emulator; rows are the writes the emulator applied."""
    row = run_ours(emulator, warehouse, config, full_refresh=False, label=label, command=["hr", *command])
    row.rows = int(emulator.stats()["totalWrites"])
    return row


def read_plan_id(path: Path) -> str | None:
    """The plan id of a plan written by ``hr plan --json``."""
    if not path.exists():
        return None
    found = json.loads(path.read_text(encoding="utf-8")).get("plan_id")
    return str(found) if found else None


def unavailable(console: Console, name: str, title: str, reason: str) -> dict[str, Any]:
    """Say plainly that a scenario could not run, and why (no figures)."""
    console.print(f"[bold]{title}[/]\n  [yellow]not available:[/] {reason}\n")
    payload = {"scenario": title, "available": False, "reason": reason}
    write_json(name, payload)
    return payload


def finish(
    console: Console,
    name: str,
    title: str,
    setup: list[str],
    rows: list[Row],
    targets: list[Target],
    *specs: EmulatorSpec,
) -> dict[str, Any]:
    """Print the scenario and write its JSON."""
    print_scenario(console, title, setup, rows, targets)
    payload = {
        "scenario": title,
        "emulator": [spec.__dict__ for spec in specs],
        "setup": setup,
        "rows": [row.as_json() for row in rows],
        "targets": [target.__dict__ for target in targets],
        "markdown": markdown_scenario(title, setup, rows, targets),
    }
    console.print(f"  written to {write_json(name, payload)}\n")
    return payload


SCENARIOS: dict[str, Callable[[Console, Options], dict[str, Any]]] = {
    "1": scenario_latency,
    "2": scenario_rate,
    "3": scenario_incremental,
    "4": scenario_memory,
    "5": scenario_reverse,
    "6": scenario_hr_plan,
    "7": scenario_budget,
}


def argument_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.run``."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", nargs="+", choices=sorted(SCENARIOS), help="scenarios to run (default all)")
    parser.add_argument(
        "--decisions", type=int, default=20_000, help="decisions in scenarios 1 and 3 (e.g. 100000)"
    )
    parser.add_argument(
        "--memory-decisions",
        type=int,
        nargs="+",
        default=(10_000, MEMORY_LIMIT_AT, 300_000),
        help="scenario 4's sizes, smallest first",
    )
    parser.add_argument("--no-dlt", action="store_true", help="run ours alone")
    parser.add_argument(
        "--quick",
        action="store_true",
        # argparse %-formats a help text: the share's percent sign is doubled
        help=f"scenarios {' and '.join(QUICK)} only, at {QUICK_DECISIONS:,} decisions and "
        f"{QUICK_SHARE * 100:.0f}%% of the other lists (make bench-quick: ours beside dlt in about two "
        "minutes)",
    )
    return parser


def main() -> None:
    """Run the chosen scenarios (all by default) and print their tables."""
    arguments = argument_parser().parse_args()
    options = Options(
        QUICK_DECISIONS if arguments.quick else arguments.decisions,
        tuple(arguments.memory_decisions),
        not arguments.no_dlt,
        QUICK_SHARE if arguments.quick else 1.0,
    )
    if arguments.quick:
        arguments.only = arguments.only or list(QUICK)
    console = Console(width=130)
    # The machine may be shared: wall times mean little without how busy it was.
    console.print(f"load average at the start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    started = time.perf_counter()
    parts = [
        SCENARIOS[key](console, options).get("markdown", "") for key in arguments.only or sorted(SCENARIOS)
    ]
    took = time.perf_counter() - started
    console.print(f"all scenarios: {took:.0f} s")
    command = " ".join(["python -m benchmarks.run", *sys.argv[1:]])
    header = (
        f"`{command}` ({'make bench' if not sys.argv[1:] else 'by hand'}) on {os.cpu_count()} cores, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, all scenarios {took:.0f} s, load average "
        f"{os.getloadavg()[0]:.1f} at the end.\n\n"
    )
    summary = OUTPUT / "summary.md"
    summary.write_text(header + "\n".join(part for part in parts if part), encoding="utf-8")
    console.print(f"tables for the README: {summary}")


if __name__ == "__main__":
    main()
