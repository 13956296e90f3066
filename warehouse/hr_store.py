"""The HR reverse sync's plans and apply journal in the DuckDB warehouse (tables of migration 0004): every
statement the HR sync runs against them is here, beside the warehouse's other data access.

The journal is what makes an apply safe to interrupt: before an entity's write it is marked ``in_flight``
(committed), after it its outcome is recorded (committed). Whatever happens in between, the next apply
finds the entity ``in_flight`` or ``unknown`` and settles it by reading the record back.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb
import pyarrow as pa

from pipelines.hr.fields import decode, encode
from pipelines.hr.kinds import ChangeKind
from pipelines.hr.plan import Change, EntityPlan, Plan
from warehouse.hr_status import EntityStatus, PlanStatus


class PlanNotFoundError(KeyError):
    """No plan has this id."""


class JournalClosedError(RuntimeError):
    """The apply stopped: no more writes may start, no more outcomes are recorded."""


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


@dataclass(frozen=True)
class JournalEntry:
    """One entity of a plan with its latest outcome."""

    entity: EntityPlan
    status: EntityStatus
    message: str | None
    write_count: int
    updated_at: datetime


def save_plan(con: duckdb.DuckDBPyConnection, plan: Plan) -> None:
    """Store a plan, its items and its entities (all ``planned``) in one transaction."""
    con.begin()
    try:
        con.execute(
            "INSERT INTO hr_plans (plan_id, tenant_id, created_at, source_files, snapshot_run_id, "
            "snapshot_at, status, allowed_kinds, blocked_kinds, counts) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            ],
        )
        _insert(con, "hr_plan_items", _items(plan))
        _insert(con, "hr_plan_entities", _entities(plan))
        con.commit()
    except BaseException:
        con.rollback()
        raise


def _counts(plan: Plan) -> dict[str, Any]:
    entities = {kind: sum(1 for entity in plan.entities if entity.kind == kind) for kind in ("user", "group")}
    return {
        "changes": plan.counts,
        "entities": entities,
        "needs_creation": len(plan.new),
        "rows": sum(source.rows for source in plan.sources),
        "invalid_rows": sum(source.invalid_rows for source in plan.sources),
    }


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
    """Bulk insert through Arrow: thousands of rows in one statement."""
    if not rows:
        return
    staged = pa.Table.from_pylist(rows)
    con.register("hr_rows", staged)
    try:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM hr_rows")  # noqa: S608 - fixed table names
    finally:
        con.unregister("hr_rows")


def load_plan(con: duckdb.DuckDBPyConnection, plan_id: str) -> StoredPlan:
    """A stored plan; `PlanNotFoundError` when there is none."""
    row = con.execute(f"{_PLAN_COLUMNS} WHERE plan_id = ?", [plan_id]).fetchone()
    if row is None:
        raise PlanNotFoundError(plan_id)
    return _stored(row)


def list_plans(con: duckdb.DuckDBPyConnection, tenant_id: str | None, limit: int) -> list[StoredPlan]:
    """The latest plans, newest first (of one tenant, or of all)."""
    rows = con.execute(
        f"{_PLAN_COLUMNS} WHERE ? IS NULL OR tenant_id = ? ORDER BY created_at DESC LIMIT ?",
        [tenant_id, tenant_id, limit],
    ).fetchall()
    return [_stored(row) for row in rows]


_PLAN_COLUMNS = (
    "SELECT plan_id, tenant_id, created_at, status, snapshot_run_id, snapshot_at, source_files, "
    "allowed_kinds, blocked_kinds, counts, apply_run_id, applied_at FROM hr_plans"
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
    )


def record_allowances(
    con: duckdb.DuckDBPyConnection, plan_id: str, allowed: dict[str, str], blocked: list[str]
) -> None:
    """Store the kinds lifted for a plan (with reasons) and what still blocks it."""
    con.execute(
        "UPDATE hr_plans SET allowed_kinds = ?, blocked_kinds = ?, "
        "status = CASE WHEN status IN ('ready', 'blocked') THEN ? ELSE status END WHERE plan_id = ?",
        [
            json.dumps(allowed),
            json.dumps(blocked),
            PlanStatus.BLOCKED if blocked else PlanStatus.READY,
            plan_id,
        ],
    )


def set_plan_status(
    con: duckdb.DuckDBPyConnection, plan_id: str, status: PlanStatus, run_id: str, now: datetime
) -> None:
    """Move a plan to ``applying`` (stamping the run), ``incomplete`` or ``applied`` (stamping the end)."""
    if status == PlanStatus.APPLYING:
        con.execute(
            "UPDATE hr_plans SET status = ?, apply_run_id = ?, "
            "apply_started_at = coalesce(apply_started_at, ?) WHERE plan_id = ?",
            [status, run_id, now, plan_id],
        )
    else:
        con.execute(
            "UPDATE hr_plans SET status = ?, applied_at = ? WHERE plan_id = ?", [status, now, plan_id]
        )


def journal_entries(con: duckdb.DuckDBPyConnection, plan_id: str) -> list[JournalEntry]:
    """Every entity of a plan with its changes and latest outcome, in apply order."""
    changes = _changes(con, plan_id)
    rows = con.execute(
        "SELECT entity_kind, entity_id, hr_key, apply_order, status, message, write_count, updated_at "
        "FROM hr_plan_entities WHERE plan_id = ? ORDER BY apply_order, entity_kind, hr_key",
        [plan_id],
    ).fetchall()
    entries = []
    for kind, entity_id, hr_key, order, status, message, writes, updated in rows:
        items, file, line = changes[(kind, entity_id)]
        entity = EntityPlan(kind, entity_id, hr_key, file, line, tuple(items), order)
        entries.append(JournalEntry(entity, EntityStatus(status), message, writes, updated))
    return entries


def _changes(
    con: duckdb.DuckDBPyConnection, plan_id: str
) -> dict[tuple[str, str], tuple[list[Change], str, int]]:
    rows = con.execute(
        "SELECT entity_kind, entity_id, field, before, after, change_kind, before_label, after_label, "
        "source_file, source_line FROM hr_plan_items WHERE plan_id = ? AND entity_id IS NOT NULL "
        "ORDER BY field",
        [plan_id],
    ).fetchall()
    found: dict[tuple[str, str], tuple[list[Change], str, int]] = {}
    for kind, entity_id, name, before, after, change_kind, before_label, after_label, file, line in rows:
        change = Change(
            name, decode(before), decode(after), ChangeKind(change_kind), before_label, after_label
        )
        found.setdefault((kind, entity_id), ([], file, line))[0].append(change)
    return found


def outcome_counts(con: duckdb.DuckDBPyConnection, plan_id: str) -> dict[str, int]:
    """Entities per journal status."""
    rows = con.execute(
        "SELECT status, count(*) FROM hr_plan_entities WHERE plan_id = ? GROUP BY status ORDER BY status",
        [plan_id],
    ).fetchall()
    return {str(status): int(count) for status, count in rows}


class Journal:
    """The apply journal of one plan and run. Each call is one committed statement, so an outcome is
    durable as soon as the call returns. Thread-safe: writes run on the client's worker threads.

    `close` ends it: a worker still running after the apply stopped (an error elsewhere, a kill) can
    then neither start a write nor touch the connection; its entity stays ``in_flight`` for the next apply
    to settle by reading it back."""

    def __init__(self, con: duckdb.DuckDBPyConnection, plan_id: str, run_id: str) -> None:
        self._con = con
        self._plan_id = plan_id
        self.run_id = run_id
        self._lock = threading.Lock()
        self._open = True

    def close(self) -> None:
        """Refuse every later call (waits for one in progress)."""
        with self._lock:
            self._open = False

    def mark_in_flight(self, entity: EntityPlan) -> None:
        """Before a write: the entity's write is about to be sent (counted as one write)."""
        self._update(entity, EntityStatus.IN_FLIGHT, None, written=True)

    def record(self, entity: EntityPlan, status: EntityStatus, message: str | None) -> None:
        """After a write, or after reading the record back: the entity's outcome."""
        self._update(entity, status, message, written=False)

    def _update(
        self, entity: EntityPlan, status: EntityStatus, message: str | None, *, written: bool
    ) -> None:
        with self._lock:
            if not self._open:
                raise JournalClosedError(
                    f"the apply stopped before {entity.kind} {entity.hr_key} was settled"
                )
            self._con.execute(
                "UPDATE hr_plan_entities SET status = ?, message = ?, updated_at = ?, apply_run_id = ?, "
                "write_count = write_count + ? WHERE plan_id = ? AND entity_kind = ? AND entity_id = ?",
                [
                    status,
                    message,
                    datetime.now(UTC),
                    self.run_id,
                    int(written),
                    self._plan_id,
                    entity.kind,
                    entity.entity_id,
                ],
            )
