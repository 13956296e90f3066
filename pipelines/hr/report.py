"""How the HR sync shows plans, problems and outcomes: rich tables on the console, markdown for Dagster.

Data cells are escaped, so a name like ``[bold]`` prints as written. Nothing here has access to a token.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import asdict
from datetime import UTC, date
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from models.hr.plan import Change, Plan
from models.hr.thresholds import ThresholdCheck
from pipelines.hr.apply import UNFINISHED, ApplyReport, written_so_far
from pipelines.hr.problems import Problem
from warehouse.hr_store import Allowance, JournalEntry, PendingChange, StoredPlan

MAX_ROWS = 200
"""Changes (or problems) printed at most; the CSV and JSON exports hold all of them."""


def kind_rows(plan: Plan) -> list[tuple[str, str, str, str]]:
    """(kind, entities, threshold, verdict) for every kind the plan holds or a threshold watches."""
    checks = {check.kind.value: check for check in plan.checks}
    # A watched kind shows its check's count: ``total`` is no change kind of its own.
    counts = plan.counts | {kind: check.count for kind, check in checks.items()}
    return [(kind, str(counts[kind]), *_threshold(checks.get(kind))) for kind in sorted(counts)]


def _threshold(check: ThresholdCheck | None) -> tuple[str, str]:
    if check is None:
        return "-", "ok"
    limit = check.limit.describe()
    if not check.over:
        return limit, "ok"
    # With earlier plans of the window counted, this plan's own count alone may look within the limit.
    window = f" ({check.total} with plans applied in the window)" if check.earlier else ""
    return limit, f"allowed: {check.allowed_reason}" if check.allowed_reason else f"OVER: blocked{window}"


def change_rows(plan: Plan) -> list[tuple[str, str, str, str, str, str]]:
    """(entity, HR key, field, before, after, kind) for every planned field; a dated change's after says
    when it takes effect."""
    return [
        (entity.kind, entity.hr_key, change.field, change.before_label, _after(change), change.kind.value)
        for entity in plan.entities
        for change in entity.changes
    ]


def _after(change: Change) -> str:
    return _dated(change.after_label, change.effective_on.isoformat() if change.effective_on else "")


def _dated(after: str, effective_on: str) -> str:
    """A value after, with the day it takes effect when dated (``INACTIVE (on 2027-01-31)``)."""
    return f"{after} (on {effective_on})" if effective_on else after


def print_plan(console: Console, plan: Plan, limit: int = MAX_ROWS) -> None:
    """The plan: header, counts per change kind against thresholds, the changes, rows needing creation."""
    heading(console, plan.plan_id, plan.tenant_id, plan.status)
    console.print(
        f"Diffed against the warehouse's extract {plan.snapshot_run_id[:8]}, which started "
        f"{plan.snapshot_at:%Y-%m-%d %H:%M:%S} UTC."
    )
    for source in plan.sources:
        console.print(
            f"  {source.kind:6} {escape(source.file)}  sha256 {source.sha256[:16]}  {source.rows} rows, "
            f"{source.invalid_rows} invalid"
        )
    console.print(_table("Changes per kind", ("kind", "entities", "threshold", "verdict"), kind_rows(plan)))
    rows = change_rows(plan)
    console.print(_table("Changes", ("entity", "HR key", "field", "before", "after", "kind"), rows[:limit]))
    _more(console, len(rows), limit)
    new = [(item.kind, item.hr_key, str(item.line)) for item in plan.new]
    if new:
        title = f"Needs creation: {len(new)} (the API cannot create users or groups)"
        console.print(_table(title, ("entity", "HR key", "line"), new[:limit]))
        _more(console, len(new), limit)
    console.print(_verdict(plan))


def _verdict(plan: Plan) -> str:
    if plan.blocked:
        kinds = ", ".join(plan.blocked)
        return (
            f"[red]Blocked by safety thresholds: {kinds}.[/] After checking, lift one kind for this plan: "
            f"authority-sync hr apply {plan.plan_id} --allow KIND --reason TEXT"
        )
    if not plan.entities:
        return "[green]Nothing to change.[/]"
    return f"[green]Ready.[/] Apply it with: authority-sync hr apply {plan.plan_id}"


def heading(console: Console, plan_id: str, tenant_id: str, status: str) -> None:
    """A plan's first lines: a rule, then its id, tenant and status in full (a rule's title is cut to the
    terminal's width, and a plan id must be copied whole)."""
    console.rule()
    console.print(f"HR plan {plan_id} | tenant {tenant_id} | {status}", soft_wrap=True)


def print_problems(console: Console, problems: list[Problem], limit: int = MAX_ROWS) -> None:
    """Problems by file and line, then a count per rule."""
    if not problems:
        return
    rows = [(Path(p.file).name, str(p.line), p.column, p.rule, p.message) for p in problems]
    console.print(
        _table(f"{len(problems)} problem(s)", ("file", "line", "column", "rule", "message"), rows[:limit])
    )
    _more(console, len(rows), limit)
    per_rule = Counter(problem.rule for problem in problems)
    console.print("By rule: " + ", ".join(f"{rule} {count}" for rule, count in sorted(per_rule.items())))


def print_apply(console: Console, report: ApplyReport) -> None:
    """What an apply did."""
    outcomes = ", ".join(f"{status} {count}" for status, count in report.outcomes.items()) or "nothing to do"
    console.print(
        f"Plan {report.plan_id}: {report.status} (run {report.run_id[:8]}): {outcomes}; "
        f"{report.writes} write(s) sent, {report.read_backs} read-back(s)."
    )


def print_unsettled(console: Console, report: ApplyReport, entries: Iterable[JournalEntry]) -> None:
    """After an incomplete apply: each entity left unwritten (or refused: ``failed``) with what the service
    answered its writes, as journaled, then what was written and how to resume."""
    for entry in entries:
        if entry.status in UNFINISHED:
            answer = entry.message or "no answer recorded"
            console.print(f"  {escape(entry.entity.hr_key)} ({entry.status}): {escape(answer)}")
    console.print(escape(written_so_far(report.outcomes, report.plan_id)))


def print_plans(console: Console, plans: list[StoredPlan], expired: Collection[str] = ()) -> None:
    """A table of stored plans (those in ``expired`` marked so)."""
    rows = [
        (
            plan.plan_id,
            f"{plan.created_at:%Y-%m-%d %H:%M}",
            f"{plan.status} (expired)" if plan.plan_id in expired else plan.status,
            ", ".join(f"{kind} {count}" for kind, count in plan.counts.get("changes", {}).items()),
            ", ".join(source["file"].rsplit("/", 1)[-1] for source in plan.sources),
        )
        for plan in plans
    ]
    table = _table("HR plans", ("plan", "created (UTC)", "status", "changes", "files"), rows)
    table.columns[0].no_wrap = True
    table.columns[0].min_width = max((len(plan.plan_id) for plan in plans), default=0)
    console.print(table)


def print_pending(console: Console, pending: list[PendingChange], today: date) -> None:
    """The changes waiting for their effective date, soonest first, overdue ones marked (nothing when
    none wait)."""
    if not pending:
        return
    rows = [
        (
            f"{p.effective_on}" + (" OVERDUE" if p.overdue(today) else ""),
            p.entity_kind,
            p.hr_key,
            p.field,
            p.after_label,
            p.plan_id,
        )
        for p in pending
    ]
    header = ("effective", "entity", "HR key", "field", "after", "plan")
    console.print(_table("Pending changes (applied on their day by `hr apply-due`)", header, rows))


def plan_summary(plan: StoredPlan, is_expired: bool) -> dict[str, Any]:
    """A stored plan as `hr status --json` lists it."""
    return {
        "plan_id": plan.plan_id,
        "tenant_id": plan.tenant_id,
        "created_at": plan.created_at.isoformat(),
        "status": plan.status.value,
        "expired": is_expired,
        "planned_by": plan.planned_by,
        "applied_by": plan.applied_by,
        "applied_at": plan.applied_at.isoformat() if plan.applied_at else None,
        "blocked": plan.blocked,
        "allowed": plan.allowed,
        "counts": plan.counts,
        "sources": plan.sources,
        "apply_error": plan.apply_error,
        "superseded_by": plan.superseded_by,
    }


def pending_summary(change: PendingChange, today: date) -> dict[str, Any]:
    """A change waiting for its day, as `hr status --json` lists it."""
    return asdict(change) | {
        "effective_on": change.effective_on.isoformat(),
        "overdue": change.overdue(today),
    }


def plan_detail(
    plan: StoredPlan, is_expired: bool, lifts: list[Allowance], entries: list[JournalEntry]
) -> dict[str, Any]:
    """One plan as `hr status PLAN_ID --json` shows it: its summary, lifts and every entity's outcome."""
    return plan_summary(plan, is_expired) | {
        "lifts": [asdict(lift) for lift in lifts],
        "entities": [
            {
                "entity_kind": entry.entity.kind,
                "entity_id": entry.entity.entity_id,
                "hr_key": entry.entity.hr_key,
                "status": entry.status.value,
                "writes": entry.write_count,
                "updated_at": entry.updated_at.isoformat(),
                "message": entry.message,
            }
            for entry in entries
        ],
    }


def print_journal(
    console: Console, plan: StoredPlan, lifts: list[Allowance], entries: list[JournalEntry]
) -> None:
    """One plan's status: who lifted which threshold and why, and every entity's outcome."""
    heading(console, plan.plan_id, plan.tenant_id, plan.status)
    console.print(
        f"Planned by {escape(plan.planned_by or 'unknown')}; applied by {escape(plan.applied_by or '-')}"
    )
    for lift in lifts:
        when = f"{lift.approved_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
        console.print(
            f"Threshold {lift.kind} lifted by {escape(lift.approved_by)} ({when}): {escape(lift.reason)}"
        )
    if plan.blocked:
        console.print(f"[red]Blocked by safety thresholds: {', '.join(plan.blocked)}[/]")
    if plan.apply_error:
        console.print(f"[red]The last apply stopped: {escape(plan.apply_error)}[/]")
    if plan.superseded_by:
        console.print(f"Closed by its revert, plan {plan.superseded_by}: it never applies again")
    rows = [
        (
            e.entity.kind,
            e.entity.hr_key,
            e.status,
            str(e.write_count),
            f"{e.updated_at:%H:%M:%S}",
            e.message or "",
        )
        for e in entries
    ]
    console.print(_table("Entities", ("entity", "HR key", "status", "writes", "at (UTC)", "message"), rows))


def print_stored_plan(
    console: Console, plan: StoredPlan, items: list[dict[str, Any]], limit: int, expired: bool
) -> None:
    """A stored plan as planned: its sources, changes per kind and its first ``limit`` changes."""
    label = f"{plan.status} (expired)" if expired else plan.status
    heading(console, plan.plan_id, plan.tenant_id, label)
    console.print(
        f"Made {plan.created_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC, against extract run "
        f"{plan.snapshot_run_id[:8]}"
    )
    for source in plan.sources:
        console.print(
            f"Source {escape(source['file'])}: {source['rows']} row(s), {source['invalid_rows']} invalid, "
            f"sha256 {source['sha256'][:12]}"
        )
    per_kind = ", ".join(f"{kind} {count}" for kind, count in plan.counts.get("changes", {}).items())
    console.print(f"Changes per kind: {per_kind or 'none'}")
    if plan.blocked:
        console.print(f"[red]Blocked by safety thresholds: {', '.join(plan.blocked)}[/]")
    header = ("entity", "HR key", "field", "before", "after", "kind")
    rows = [
        (
            item["entity_kind"],
            item["hr_key"],
            item["field"],
            item["before_label"] or item["before"],
            _dated(item["after_label"] or item["after"], item["effective_on"]),
            item["change_kind"],
        )
        for item in items
    ]
    console.print(_table(f"{len(rows)} change(s)", header, rows[:limit]))
    _more(console, len(rows), limit)


def plan_markdown(plan: Plan, limit: int = 50) -> str:
    """The plan as markdown (Dagster metadata); long lists end with how many were left out."""
    changes = change_rows(plan)
    lines = [
        f"**Plan** `{plan.plan_id}`: **{plan.status}**",
        "",
        *_markdown_table(("kind", "entities", "threshold", "verdict"), kind_rows(plan)),
        "",
        *_markdown_table(("entity", "HR key", "field", "before", "after", "kind"), changes[:limit]),
        *_markdown_more(len(changes), limit),
    ]
    if plan.new:
        keys = ", ".join(item.hr_key for item in plan.new[:limit])
        lines += ["", f"{len(plan.new)} row(s) need creation: {keys}", *_markdown_more(len(plan.new), limit)]
    return "\n".join(lines)


def _markdown_more(total: int, limit: int) -> list[str]:
    """The line saying how many rows a markdown list left out (none when it left none out)."""
    return ["", f"... and {total - limit} more (the plan's CSV and JSON hold all)"] if total > limit else []


def _markdown_table(header: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> list[str]:
    return [
        _markdown_row(header),
        _markdown_row("---" for _ in header),
        *(_markdown_row(row) for row in rows),
    ]


def _markdown_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _table(title: str, header: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in header:
        table.add_column(column)
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table


def _more(console: Console, total: int, limit: int) -> None:
    if total > limit:
        console.print(f"... and {total - limit} more (write them all with --csv or --json)")
