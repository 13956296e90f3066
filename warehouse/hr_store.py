"""The HR reverse sync's plans and apply journal in the DuckDB warehouse (tables of migration 0004): every
statement the HR sync runs against them is here, beside the warehouse's other data access.

The journal is what makes an apply safe to interrupt: before an entity's write it is marked ``in_flight``
(committed), after it its outcome is recorded (committed). Whatever happens in between, the next apply
finds the entity ``in_flight`` or ``unknown`` and settles it by reading the record back.

Dated changes (migration 0012): an entity whose changes are not all due is ``scheduled``, and
``written_through`` is the day through which its changes were written, in the same statement as the
outcome, so a later apply writes exactly the changes that came due since.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime
from typing import Any

import duckdb

from models.errors import AuthoritySyncError
from models.hr.fields import decode, encode
from models.hr.kinds import ChangeKind
from models.hr.plan import Change, EntityPlan, Plan
from models.hr.status import EntityStatus, PlanStatus
from warehouse.commit import Opener


class PlanNotFoundError(AuthoritySyncError, LookupError):
    """No plan has this id (or several start with the prefix given); the message says which."""


MIN_PREFIX = 6
"""The fewest characters of a plan id that name it (when no other plan's id starts with them)."""


class JournalClosedError(AuthoritySyncError, RuntimeError):
    """The apply stopped: no more writes may start, no more outcomes are recorded."""


class AllowancesFinalError(AuthoritySyncError, RuntimeError):
    """The plan began applying (or was applied): its lifted thresholds can no longer change."""


@dataclass(frozen=True)
class Allowance:
    """One threshold lifted for one plan: who lifted it, when and why (never replaced)."""

    kind: str
    reason: str
    approved_by: str
    approved_at: datetime


@dataclass(frozen=True)
class StoredPlan:
    """A plan's row in ``hr_plans``."""

    plan_id: str
    tenant_id: str
    created_at: datetime
    status: PlanStatus
    snapshot_run_id: str
    snapshot_at: datetime
    sources: list[dict[str, Any]]
    allowed: dict[str, str]
    blocked: list[str]
    counts: dict[str, Any]
    apply_run_id: str | None
    applied_at: datetime | None
    thresholds: dict[str, Any] | None
    """The limits, window and tenant size the plan was checked with (None: planned before migration 0010)."""
    apply_error: str | None = None
    """Why the latest apply stopped before settling every entity (None: it ran to its end)."""
    planned_by: str | None = None
    """Who made the plan (None: made before migration 0014)."""
    applied_by: str | None = None
    """Who ran its latest apply (None: not applied)."""
    superseded_by: str | None = None
    """The revert that closed the plan before it was all applied (None: none did)."""


@dataclass(frozen=True)
class JournalEntry:
    """One entity of a plan with its latest outcome."""

    entity: EntityPlan
    status: EntityStatus
    message: str | None
    write_count: int
    updated_at: datetime
    settle_after: datetime | None = None
    """Not to be judged by reading back before this (its write may still be running at the service)."""
    written_through: date | None = None
    """The day through which its changes were written (None: none yet)."""


@dataclass(frozen=True)
class PendingChange:
    """One change waiting for its day: which plan, entity and field, the value it sets, and when."""

    plan_id: str
    entity_kind: str
    hr_key: str
    field: str
    after_label: str
    effective_on: date

    def overdue(self, today: date) -> bool:
        """Whether the change should have been applied already: its day is past and it still waits
        (``hr_apply_due`` stopped, or no ``hr apply-due`` ran)."""
        return self.effective_on < today


def save_plan(con: duckdb.DuckDBPyConnection, plan: Plan) -> None:
    """Store a plan, its items and its entities (all ``planned``) in one transaction."""
    con.begin()
    try:
        con.execute(
            "INSERT INTO hr_plans (plan_id, tenant_id, created_at, source_files, snapshot_run_id, "
            "snapshot_at, status, allowed_kinds, blocked_kinds, counts, thresholds, planned_by) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                plan.plan_id,
                plan.tenant_id,
                plan.created_at,
                json.dumps([asdict(source) for source in plan.sources]),
                plan.snapshot_run_id,
                plan.snapshot_at,
                plan.status,
                json.dumps(plan.allowed),
                json.dumps(plan.blocked),
                json.dumps(_counts(plan)),
                json.dumps(_thresholds(plan)),
                plan.planned_by,
            ],
        )
        _insert_allowances(con, plan.plan_id, plan.allowed, plan.approved_by, plan.created_at)
        _insert(con, "hr_plan_items", _items(plan))
        _insert(con, "hr_plan_entities", _entities(plan))
        _supersede(con, plan)
        if plan.reverts:
            _close_reverted(con, plan.reverts, plan.plan_id, plan.created_at)
        con.commit()
    except BaseException:
        con.rollback()
        raise


def _supersede(con: duckdb.DuckDBPyConnection, plan: Plan) -> None:
    """Cancel what earlier plans of the tenant still have scheduled for the entities ``plan`` names (the
    latest upload decides), and mark such a plan applied once nothing of it waits any more."""
    # The tenant's scheduled entities are few and a plan may name 50,000: they are matched here, so only
    # the entities cancelled are bound to the statement.
    scheduled = con.execute(
        "SELECT e.entity_kind, e.entity_id FROM hr_plan_entities e JOIN hr_plans p USING (plan_id) "
        "WHERE p.tenant_id = ? AND e.plan_id <> ? AND e.status = 'scheduled'",
        [plan.tenant_id, plan.plan_id],
    ).fetchall()
    cancelled = plan.named.intersection(scheduled)
    if not cancelled:
        return
    named = _columns([{"entity_kind": kind, "entity_id": key} for kind, key in cancelled])
    superseded = (
        "UPDATE hr_plan_entities e SET status = 'superseded', message = $message, updated_at = $moment "
        "FROM hr_plans p, ({}) n WHERE p.plan_id = e.plan_id AND p.tenant_id = $tenant "
        "AND e.plan_id <> $plan AND e.status = 'scheduled' "
        "AND n.entity_kind = e.entity_kind AND n.entity_id = e.entity_id"
    )
    con.execute(
        superseded.format(_unnested(named)),
        named
        | {
            "message": f"superseded by plan {plan.plan_id}",
            "moment": plan.created_at,
            "tenant": plan.tenant_id,
            "plan": plan.plan_id,
        },
    )
    con.execute(
        "UPDATE hr_plans p SET status = 'applied', applied_at = ? WHERE p.status = 'scheduled' "
        "AND p.tenant_id = ? AND NOT EXISTS (SELECT 1 FROM hr_plan_entities e "
        "WHERE e.plan_id = p.plan_id AND e.status = 'scheduled')",
        [plan.created_at, plan.tenant_id],
    )


def _close_reverted(con: duckdb.DuckDBPyConnection, plan_id: str, revert_id: str, now: datetime) -> None:
    """Close an incomplete plan its revert ``revert_id`` undoes: it is superseded, and its entities not
    written (planned, failed, or waiting for their day) are too, so its unapplied half is never written
    later. Entities whose write's outcome is unknown keep their status: nobody knows whether the service
    holds them."""
    closed = con.execute(
        "UPDATE hr_plans SET status = 'superseded', superseded_by = ? WHERE plan_id = ? "
        "AND status = 'incomplete' RETURNING plan_id",
        [revert_id, plan_id],
    ).fetchall()
    if closed:
        con.execute(
            "UPDATE hr_plan_entities SET status = 'superseded', message = ?, updated_at = ? "
            "WHERE plan_id = ? AND status IN ('planned', 'failed', 'scheduled')",
            [f"superseded by its revert, plan {revert_id}", now, plan_id],
        )


def _counts(plan: Plan) -> dict[str, Any]:
    entities = {kind: sum(1 for entity in plan.entities if entity.kind == kind) for kind in ("user", "group")}
    return {
        "changes": plan.counts,
        "entities": entities,
        "needs_creation": len(plan.new),
        "rows": sum(source.rows for source in plan.sources),
        "invalid_rows": sum(source.invalid_rows for source in plan.sources),
    }


def _thresholds(plan: Plan) -> dict[str, Any]:
    """What a later recheck needs: the limits and window, and the tenant's size when planned."""
    return plan.thresholds.model_dump(mode="json") | {"population": plan.population}


def _items(plan: Plan) -> list[dict[str, Any]]:
    items = [
        _item(plan.plan_id, entity.kind, entity.entity_id, entity.hr_key, entity.file, entity.line, change)
        for entity in plan.entities
        for change in entity.changes
    ]
    for new in plan.new:
        summary = "; ".join(f"{name}={value}" for name, value in new.cells.items() if value)
        change = Change("*", None, summary, ChangeKind.NEEDS_CREATION, "", summary)
        items.append(_item(plan.plan_id, new.kind, None, new.hr_key, new.file, new.line, change))
    return items


def _item(
    plan_id: str, kind: str, entity_id: str | None, hr_key: str, file: str, line: int, change: Change
) -> dict[str, Any]:
    return {
        "plan_id": plan_id,
        "entity_kind": kind,
        "entity_id": entity_id,
        "hr_key": hr_key,
        "field": change.field,
        "before": encode(change.before),
        "after": encode(change.after),
        "before_label": change.before_label,
        "after_label": change.after_label,
        "change_kind": change.kind.value,
        "source_file": file,
        "source_line": line,
        "effective_on": change.effective_on,
    }


def _entities(plan: Plan) -> list[dict[str, Any]]:
    return [
        {
            "plan_id": plan.plan_id,
            "entity_kind": entity.kind,
            "entity_id": entity.entity_id,
            "hr_key": entity.hr_key,
            "apply_order": entity.order,
            "status": EntityStatus.PLANNED.value,
            "message": None,
            "updated_at": plan.created_at,
            "apply_run_id": None,
            "write_count": 0,
        }
        for entity in plan.entities
    ]


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, Any]]) -> None:
    """Bulk insert: thousands of rows in one statement."""
    if not rows:
        return
    columns = _columns(rows)
    con.execute(f"INSERT INTO {table} BY NAME {_unnested(columns)}", columns)


def _columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Rows (dicts of the same keys) as one list of values per key."""
    return {name: [row[name] for row in rows] for name in rows[0]}


def _unnested(columns: dict[str, list[Any]]) -> str:
    """A SELECT of one row per position of ``columns``' lists, bound as the named parameters of the same
    names (DuckDB unnests the lists of one SELECT side by side). Not an Arrow table: building one from
    Python values (``pyarrow.Table.from_pylist``) imports pandas, 33 MB of an HR plan that never uses it."""
    return "SELECT " + ", ".join(f'unnest(${name}) AS "{name}"' for name in columns)  # fixed key names


def load_plan(con: duckdb.DuckDBPyConnection, plan_id: str) -> StoredPlan:
    """A stored plan; `PlanNotFoundError` when there is none."""
    row = con.execute(f"{_PLAN_COLUMNS} WHERE plan_id = ?", [plan_id]).fetchone()
    if row is None:
        raise PlanNotFoundError(f"no plan {plan_id}")
    return _stored(row)


def find_plan(con: duckdb.DuckDBPyConnection, text: str) -> StoredPlan:
    """The plan whose id is ``text``, or the only one whose id starts with it (at least `MIN_PREFIX`
    characters, as people copy a plan id's first part); `PlanNotFoundError` otherwise."""
    wanted = text.strip().lower()
    if len(wanted) < MIN_PREFIX:
        raise PlanNotFoundError(f"no plan {text}: give at least {MIN_PREFIX} characters of its id")
    rows = con.execute(
        "SELECT plan_id FROM hr_plans WHERE starts_with(plan_id, ?) ORDER BY plan_id LIMIT 3", [wanted]
    ).fetchall()
    if len(rows) > 1 and wanted not in {row[0] for row in rows}:
        shown = ", ".join(row[0] for row in rows[:2])
        raise PlanNotFoundError(f"{text} starts several plan ids ({shown}, ...): give more of it")
    return load_plan(con, rows[0][0] if rows else wanted)


def list_plans(con: duckdb.DuckDBPyConnection, tenant_id: str | None, limit: int) -> list[StoredPlan]:
    """The latest plans, newest first (of one tenant, or of all)."""
    rows = con.execute(
        f"{_PLAN_COLUMNS} WHERE ? IS NULL OR tenant_id = ? ORDER BY created_at DESC LIMIT ?",
        [tenant_id, tenant_id, limit],
    ).fetchall()
    return [_stored(row) for row in rows]


_PLAN_COLUMNS = (
    "SELECT plan_id, tenant_id, created_at, status, snapshot_run_id, snapshot_at, source_files, "
    "allowed_kinds, blocked_kinds, counts, apply_run_id, applied_at, thresholds, apply_error, planned_by, "
    "applied_by, superseded_by FROM hr_plans"
)


def _stored(row: tuple[Any, ...]) -> StoredPlan:
    return StoredPlan(
        plan_id=row[0],
        tenant_id=row[1],
        created_at=row[2],
        status=PlanStatus(row[3]),
        snapshot_run_id=row[4],
        snapshot_at=row[5],
        sources=json.loads(row[6]),
        allowed=json.loads(row[7]),
        blocked=json.loads(row[8]),
        counts=json.loads(row[9]),
        apply_run_id=row[10],
        applied_at=row[11],
        thresholds=json.loads(row[12]) if row[12] is not None else None,
        apply_error=row[13],
        planned_by=row[14],
        applied_by=row[15],
        superseded_by=row[16],
    )


def record_allowances(
    con: duckdb.DuckDBPyConnection, plan_id: str, lifted: dict[str, str], approved_by: str, now: datetime
) -> None:
    """Lift kinds (-> reasons) for a plan not yet applying; a kind lifted before keeps its first reason and
    approver. `AllowancesFinalError` once the plan began applying."""
    con.begin()
    try:
        plan = _open_for_allowances(con, plan_id)
        _insert_allowances(con, plan_id, lifted, approved_by, now)
        allowed = lifted | plan.allowed  # the first reason of a kind stays
        con.execute("UPDATE hr_plans SET allowed_kinds = ? WHERE plan_id = ?", [json.dumps(allowed), plan_id])
        con.commit()
    except BaseException:
        con.rollback()
        raise


def _open_for_allowances(con: duckdb.DuckDBPyConnection, plan_id: str) -> StoredPlan:
    """The plan, if it may still be lifted: it has not begun applying."""
    plan = load_plan(con, plan_id)
    if plan.status not in (PlanStatus.READY, PlanStatus.BLOCKED):
        raise AllowancesFinalError(f"plan {plan_id} is {plan.status}: its lifted thresholds are final")
    return plan


def _insert_allowances(
    con: duckdb.DuckDBPyConnection, plan_id: str, lifted: dict[str, str], approved_by: str, now: datetime
) -> None:
    for kind, reason in lifted.items():
        con.execute(
            "INSERT INTO hr_plan_allowances VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [plan_id, kind, reason, approved_by, now],
        )


def allowances(con: duckdb.DuckDBPyConnection, plan_id: str) -> list[Allowance]:
    """The thresholds lifted for a plan, by kind."""
    rows = con.execute(
        "SELECT kind, reason, approved_by, approved_at FROM hr_plan_allowances "
        "WHERE plan_id = ? ORDER BY kind",
        [plan_id],
    ).fetchall()
    return [Allowance(*row) for row in rows]


def record_blocked(con: duckdb.DuckDBPyConnection, plan_id: str, blocked: list[str]) -> None:
    """Store what blocks a plan not yet applying after its thresholds were checked again."""
    con.execute(
        "UPDATE hr_plans SET blocked_kinds = ?, "
        "status = CASE WHEN status IN ('ready', 'blocked') THEN ? ELSE status END WHERE plan_id = ?",
        [json.dumps(blocked), PlanStatus.BLOCKED if blocked else PlanStatus.READY, plan_id],
    )


def plan_changes(con: duckdb.DuckDBPyConnection, plan_id: str) -> list[tuple[str, str, str]]:
    """(change kind, entity kind, entity id) of every change a plan makes to a service record."""
    rows = con.execute(
        "SELECT DISTINCT change_kind, entity_kind, entity_id FROM hr_plan_items "
        "WHERE plan_id = ? AND entity_id IS NOT NULL",
        [plan_id],
    ).fetchall()
    return [(str(kind), str(entity), str(key)) for kind, entity, key in rows]


@dataclass(frozen=True)
class WindowPlan:
    """A plan of the thresholds' window: the kinds it lifted, and (change kind, entity kind, entity id)
    of every change it makes to a service record."""

    lifted: frozenset[str]
    changes: list[tuple[str, str, str]]


def window_plans(
    con: duckdb.DuckDBPyConnection, tenant_id: str, since: datetime, other_than: str | None
) -> list[WindowPlan]:
    """The tenant's plans that began applying at or after ``since`` (applying, incomplete, scheduled,
    applied, or superseded by a revert after writing part), other than plan ``other_than``, with their
    lifted kinds and changes."""
    rows = con.execute(
        "SELECT p.plan_id, any_value(p.allowed_kinds), "
        "list(DISTINCT [i.change_kind, i.entity_kind, i.entity_id]) FROM hr_plan_items i "
        "JOIN hr_plans p USING (plan_id) WHERE p.tenant_id = ? AND p.apply_started_at >= ? "
        "AND p.status IN ('applying', 'incomplete', 'scheduled', 'applied', 'superseded') "
        "AND p.plan_id IS DISTINCT FROM ? "
        "AND i.entity_id IS NOT NULL GROUP BY p.plan_id ORDER BY p.plan_id",
        [tenant_id, since, other_than],
    ).fetchall()
    return [
        WindowPlan(frozenset(json.loads(allowed)), [(str(a), str(b), str(c)) for a, b, c in changes])
        for _, allowed, changes in rows
    ]


def set_plan_status(
    con: duckdb.DuckDBPyConnection,
    plan_id: str,
    status: PlanStatus,
    run_id: str,
    now: datetime,
    error: str | None = None,
    actor: str | None = None,
) -> None:
    """Move a plan to ``applying`` (stamping the run and who runs it, ``actor``), ``incomplete`` or
    ``applied`` (stamping the end and ``error``: why the apply stopped, None when it ran to its end)."""
    if status == PlanStatus.APPLYING:
        con.execute(
            "UPDATE hr_plans SET status = ?, apply_run_id = ?, applied_by = ?, "
            "apply_started_at = coalesce(apply_started_at, ?) WHERE plan_id = ?",
            [status, run_id, actor, now, plan_id],
        )
    else:
        con.execute(
            "UPDATE hr_plans SET status = ?, applied_at = ?, apply_error = ? WHERE plan_id = ?",
            [status, now, error, plan_id],
        )


def journal_entries(con: duckdb.DuckDBPyConnection, plan_id: str) -> list[JournalEntry]:
    """Every entity of a plan with its changes and latest outcome, in apply order."""
    changes = _changes(con, plan_id)
    rows = con.execute(
        "SELECT entity_kind, entity_id, hr_key, apply_order, status, message, write_count, updated_at, "
        "settle_after, written_through FROM hr_plan_entities WHERE plan_id = ? "
        "ORDER BY apply_order, entity_kind, hr_key",
        [plan_id],
    ).fetchall()
    entries = []
    for kind, entity_id, hr_key, order, status, message, writes, updated, settle, through in rows:
        items, file, line = changes[(kind, entity_id)]
        entity = EntityPlan(kind, entity_id, hr_key, file, line, tuple(items), order)
        entries.append(JournalEntry(entity, EntityStatus(status), message, writes, updated, settle, through))
    return entries


def plan_items(con: duckdb.DuckDBPyConnection, plan_id: str) -> list[dict[str, Any]]:
    """A stored plan's changes as rows (the columns of ``hr_plan_items`` but the plan's id; before and after
    as JSON text, '' on a row that needs creation; effective_on as ``YYYY-MM-DD``, '' for now), entities
    in apply order, then those rows."""
    cursor = con.execute(
        "SELECT i.entity_kind, coalesce(i.entity_id, '') AS entity_id, i.hr_key, i.field, i.change_kind, "
        "CASE WHEN i.entity_id IS NULL THEN '' ELSE i.before::VARCHAR END AS before, "
        "CASE WHEN i.entity_id IS NULL THEN '' ELSE i.after::VARCHAR END AS after, "
        "coalesce(i.before_label, '') AS before_label, coalesce(i.after_label, '') AS after_label, "
        "i.source_file, i.source_line, coalesce(i.effective_on::VARCHAR, '') AS effective_on "
        "FROM hr_plan_items i LEFT JOIN hr_plan_entities e "
        "USING (plan_id, entity_kind, entity_id) WHERE i.plan_id = ? "
        "ORDER BY i.entity_id IS NULL, e.apply_order, i.entity_kind, i.hr_key, i.field",
        [plan_id],
    )
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _changes(
    con: duckdb.DuckDBPyConnection, plan_id: str
) -> dict[tuple[str, str], tuple[list[Change], str, int]]:
    rows = con.execute(
        "SELECT entity_kind, entity_id, field, before, after, change_kind, before_label, after_label, "
        "source_file, source_line, effective_on FROM hr_plan_items WHERE plan_id = ? "
        "AND entity_id IS NOT NULL ORDER BY field",
        [plan_id],
    ).fetchall()
    found: dict[tuple[str, str], tuple[list[Change], str, int]] = {}
    for kind, entity_id, name, before, after, change_kind, before_label, after_label, file, line, day in rows:
        change = Change(
            name, decode(before), decode(after), ChangeKind(change_kind), before_label, after_label, day
        )
        found.setdefault((kind, entity_id), ([], file, line))[0].append(change)
    return found


def due_plans(con: duckdb.DuckDBPyConnection, tenant_id: str | None, today: date) -> list[str]:
    """The plans (of one tenant, or of all) with a change come due by ``today`` and not yet written,
    oldest first."""
    rows = con.execute(
        f"SELECT p.plan_id, min(p.created_at) AS created {_WAITING} AND i.effective_on <= ? "
        "GROUP BY p.plan_id ORDER BY created",
        [tenant_id, tenant_id, today],
    ).fetchall()
    return [str(row[0]) for row in rows]


def pending_changes(con: duckdb.DuckDBPyConnection, tenant_id: str | None) -> list[PendingChange]:
    """Every change still waiting for its day (of one tenant, or of all), soonest first."""
    rows = con.execute(
        f"SELECT p.plan_id, i.entity_kind, i.hr_key, i.field, coalesce(i.after_label, ''), i.effective_on "
        f"{_WAITING} ORDER BY i.effective_on, i.hr_key, i.field",
        [tenant_id, tenant_id],
    ).fetchall()
    return [PendingChange(*row) for row in rows]


_WAITING = (
    "FROM hr_plans p JOIN hr_plan_entities e ON e.plan_id = p.plan_id "
    "JOIN hr_plan_items i ON i.plan_id = e.plan_id AND i.entity_kind = e.entity_kind "
    "AND i.entity_id = e.entity_id "
    "WHERE e.status = 'scheduled' "
    "AND i.effective_on > coalesce(e.written_through, DATE '0001-01-01') AND (? IS NULL OR p.tenant_id = ?)"
)
"""The changes that wait: of a scheduled entity of a plan (of tenant ``?``, or of all when
NULL), dated later than the day through which the entity was written."""


def outcome_counts(con: duckdb.DuckDBPyConnection, plan_id: str) -> dict[str, int]:
    """Entities per journal status."""
    rows = con.execute(
        "SELECT status, count(*) FROM hr_plan_entities WHERE plan_id = ? GROUP BY status ORDER BY status",
        [plan_id],
    ).fetchall()
    return {str(status): int(count) for status, count in rows}


@dataclass(frozen=True)
class _Kept:
    """A journal statement not yet written: its ticket (order of recording), parameters, and whether it is a
    mark (`Journal.mark_in_flight`) whose worker waits for it."""

    ticket: int
    parameters: list[Any]
    mark: bool


class Journal:
    """The apply journal of one plan and run. Thread-safe: writes run on the client's worker threads.

    The warehouse is never held while a request is out: the journal writes in short writes of its own
    (``open_write``: the writer lock and a connection, released at once), so a sync of any tenant commits
    between two of them. `mark_in_flight` is durable when it returns: it is what keeps a write from ever
    being sent twice. An outcome (`record`) is kept until the next short write, which writes it with the
    marks: if the process dies before that, its entity is still ``in_flight`` and the next apply settles it
    by reading it back, as it would for a write whose answer never came.

    Short writes are group commits: the marks of workers that arrive while a write is running wait for it,
    then go together in the next one (a write of the warehouse file costs 30-70 ms of CPU, most of it
    DuckDB opening the file; the requests they precede take a few). Each mark still returns only once a
    write that held it has committed; a write that fails un-marks every entity of its own, and each of
    their workers raises, so none of those writes is sent.

    `close` writes what is kept and ends the journal: a worker still running after the apply stopped (an
    error elsewhere, a kill) can then neither start a write nor journal; its entity stays ``in_flight``
    for the next apply to settle by reading it back (a mark that the closing write committed included).

    ``today`` is the apply's day: an entity applied with changes still held back (`EntityPlan.later`) is
    recorded ``scheduled``, and an applied entity is written through ``today``."""

    _STATEMENT = (
        "UPDATE hr_plan_entities SET status = ?, message = ?, updated_at = ?, apply_run_id = ?, "
        "write_count = write_count + ?, settle_after = CASE WHEN ? THEN settle_after ELSE ? END, "
        "written_through = CASE WHEN ? THEN ? ELSE written_through END "
        "WHERE plan_id = ? AND entity_kind = ? AND entity_id = ?"
    )

    def __init__(self, open_write: Opener, plan_id: str, run_id: str, today: date | None = None) -> None:
        self._open_write = open_write
        self._plan_id = plan_id
        self.run_id = run_id
        self.today = today or datetime.now(UTC).date()
        self._lock = threading.Lock()
        """Guards the fields below; never held during a write."""
        self._writer = threading.Lock()
        """Held by the one thread writing (or closing), for the whole short write."""
        self._open = True
        self._kept: list[_Kept] = []
        """Statements not yet written, in the order they were recorded."""
        self._failed: dict[int, BaseException] = {}
        """Marks a failed write dropped, by ticket, with the error their workers raise."""
        self._tickets = 0
        self._written = 0
        """Every ticket up to this one is settled: written, or in `_failed`."""

    def close(self) -> None:
        """Write the outcomes kept, then refuse every later call (waits for a write in progress)."""
        with self._writer:
            with self._lock:
                was_open, self._open = self._open, False
            if was_open:
                self._write()

    def mark_in_flight(self, entity: EntityPlan, settle_after: datetime) -> None:
        """Before a write: the entity's write is about to be sent, and its request may run until
        ``settle_after`` (if the process dies now, the next apply waits for that before reading it back).
        Durable when it returns, with every outcome kept before it."""
        ticket = self._update(
            entity, EntityStatus.IN_FLIGHT, None, sent=False, settle_after=settle_after, keep=False, mark=True
        )
        with self._writer:
            with self._lock:
                settled = ticket <= self._written
            if not settled:
                try:
                    self._write()
                except BaseException as failure:  # raised below, as each mark of the failed group raises
                    with self._lock:
                        # Not sent unless proven written: a failure before `_write` noted its group
                        # still leaves this mark unsent.
                        self._failed.setdefault(ticket, failure)
        with self._lock:
            error = self._failed.pop(ticket, None)
            if error is None and not self._open:  # committed by `close`: the apply stopped, send nothing
                error = JournalClosedError(f"the apply stopped before {entity.kind} {entity.hr_key} was sent")
        if error is not None:
            raise error

    def record(
        self,
        entity: EntityPlan,
        status: EntityStatus,
        message: str | None,
        *,
        sent: bool = False,
        still_running: bool = False,
    ) -> None:
        """After a write, or after reading the record back: the entity's outcome (written with the next
        short write or at `close`). ``sent``: the service received a write for it (counted in
        ``write_count``). ``still_running``: no answer came back, so the request may still run at the
        service until the deadline set by `mark_in_flight` (kept)."""
        self._update(entity, status, message, sent=sent, settle_after=None, keep=still_running)

    def _update(
        self,
        entity: EntityPlan,
        status: EntityStatus,
        message: str | None,
        *,
        sent: bool,
        settle_after: datetime | None,
        keep: bool,
        mark: bool = False,
    ) -> int:
        """Keep one statement for the next write, under the same lock as the check that the journal is
        open; its ticket. ``keep`` leaves ``settle_after`` as it is, else it is set."""
        applied = status == EntityStatus.APPLIED
        if applied and entity.later:
            status, message = EntityStatus.SCHEDULED, entity.waiting
        parameters = [
            status,
            message,
            datetime.now(UTC),
            self.run_id,
            int(sent),
            keep,
            settle_after,
            applied,
            self.today,
            self._plan_id,
            entity.kind,
            entity.entity_id,
        ]
        with self._lock:
            if not self._open:
                raise JournalClosedError(
                    f"the apply stopped before {entity.kind} {entity.hr_key} was settled"
                )
            self._tickets += 1
            self._kept.append(_Kept(self._tickets, parameters, mark))
            return self._tickets

    def _write(self) -> None:
        """Write every kept statement in one short transaction, in order (`_writer` is held). On failure
        the batch's marks are dropped (their workers raise) and its outcomes kept for the next write."""
        with self._lock:
            batch = list(self._kept)
        if not batch:
            return
        try:
            with self._open_write() as con:
                con.begin()
                for kept in batch:
                    con.execute(self._STATEMENT, kept.parameters)
                con.commit()
        except BaseException as error:
            with self._lock:
                dropped = {kept.ticket for kept in batch if kept.mark}
                self._kept = [kept for kept in self._kept if kept.ticket not in dropped]
                self._failed.update(dict.fromkeys(dropped, error))
                self._written = max(self._written, batch[-1].ticket)
            raise
        with self._lock:
            del self._kept[: len(batch)]
            self._written = max(self._written, batch[-1].ticket)
