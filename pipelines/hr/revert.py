"""Revert an applied plan: a new plan that puts back the values the applied plan replaced.

The revert is built from the apply journal (each applied entity's fields, before and after) against a
fresh snapshot, and goes through what every plan goes through: its changes are classified like an upload's
(a reverted termination is a reactivation), the safety thresholds check it, it is stored and applied by
`hr apply`, whose read-back skips an entity changed in the meantime. An entity that no longer holds the
values the plan wrote (someone changed it since) is left out of the revert and listed: a revert never
overwrites a later change.

Reverting an incomplete plan closes it: saving the revert makes it ``superseded`` (naming the revert), so
its unapplied half is never written by a later `hr apply` of it. An entity whose write's outcome is still
unknown is listed: whether the service holds it is not known, so it is neither reverted nor written.

What a revert cannot undo, said per entity before anything is applied: a field that was empty before the
plan (a termination date given by a termination) cannot be emptied again, because E1 and E3 refuse null;
the revert restores the entity's other fields (its status) in one write and lists the field as kept. A
group deactivated with REMOVE_ASSOCIATIONS lost its members at the service; reactivating it does not bring
them back (the ``disable_option`` field is not reverted).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from models.errors import AuthoritySyncError
from models.hr.fields import same
from models.hr.kinds import Watched
from models.hr.plan import Change, EntityPlan, Plan, SourceFile
from models.hr.status import EntityStatus, PlanStatus
from models.hr.thresholds import EntityKey
from pipelines.hr.mapping import Mapping as HrMapping
from pipelines.hr.plan import apply_allowances, change_kind
from pipelines.hr.snapshot import Snapshot, fresh_run, load_snapshot
from pipelines.hr.workflow import short_write, window_entities
from pipelines.warehouse_resource import WarehouseResource
from warehouse.hr_store import (
    JournalEntry,
    StoredPlan,
    journal_entries,
    load_plan,
    save_plan,
)

REVERTIBLE = frozenset({PlanStatus.APPLIED, PlanStatus.INCOMPLETE})
UNSETTLED = frozenset({EntityStatus.IN_FLIGHT, EntityStatus.UNKNOWN})
"""Entities whose write may or may not have been applied: a revert cannot know what to put back."""
NOT_REVERTED = frozenset({"disable_option"})
"""Fields written with a change that cannot be put back (see the module's docstring)."""


class NotRevertibleError(AuthoritySyncError, ValueError):
    """The plan never wrote anything that could be put back."""


@dataclass(frozen=True)
class Left:
    """An entity of the applied plan that the revert leaves alone, and why."""

    entity: EntityPlan
    reason: str


@dataclass(frozen=True)
class Revert:
    """The stored revert plan, the entities it leaves alone, and those it restores only in part (with the
    fields it cannot empty again)."""

    plan: Plan
    left: list[Left]
    partial: list[Left] = field(default_factory=list)


def revert_stored(
    store: WarehouseResource,
    plan_id: str,
    mapping: HrMapping,
    now: datetime | None = None,
    planned_by: str = "",
) -> Revert:
    """Build, check and store the revert of an applied plan against a fresh enough warehouse, as planned
    by ``planned_by``. Raises
    `NotRevertibleError`, `warehouse.hr_store.PlanNotFoundError` or
    `pipelines.hr.snapshot.StaleWarehouseError`."""
    moment = now or datetime.now(UTC)
    with short_write(store) as con:
        applied = load_plan(con, plan_id)
        if applied.status not in REVERTIBLE:
            raise NotRevertibleError(
                f"plan {plan_id} is {applied.status}: only an applied or incomplete plan can be reverted"
            )
        run = fresh_run(con, applied.tenant_id, mapping.max_warehouse_age, moment)
        snapshot = load_snapshot(con, applied.tenant_id, run)
        # Counted with the window like any plan: reverting in small plans evades no threshold either.
        earlier = window_entities(con, applied.tenant_id, mapping.thresholds, moment, None)
        revert = revert_plan(applied, journal_entries(con, plan_id), snapshot, mapping, moment, earlier)
        revert.plan.planned_by = planned_by
        save_plan(con, revert.plan)
        return revert


def revert_plan(
    applied: StoredPlan,
    journal: list[JournalEntry],
    snapshot: Snapshot,
    mapping: HrMapping,
    now: datetime,
    earlier: Mapping[Watched, set[EntityKey]],
) -> Revert:
    """The revert of ``applied`` given its journal and the service as ``snapshot`` holds it."""
    entities: list[EntityPlan] = []
    left: list[Left] = []
    partial: list[Left] = []
    for entry in journal:
        if entry.status in UNSETTLED:
            left.append(Left(entry.entity, f"its write's outcome is {entry.status}: check it in the service"))
        if entry.status is not EntityStatus.APPLIED:
            continue
        reverted, reason = _reverted(entry.entity, snapshot)
        if reverted is None:
            left.append(Left(entry.entity, reason))
            continue
        entities.append(reverted)
        if reason:
            partial.append(Left(entry.entity, reason))
    if not entities:
        raise NotRevertibleError(
            f"plan {applied.plan_id} has nothing left to revert"
            + (f": {len(left)} entity(ies) changed since it was applied" if left else "")
        )
    plan = Plan(
        plan_id=str(uuid.uuid4()),
        tenant_id=applied.tenant_id,
        created_at=now,
        sources=[SourceFile(f"revert of plan {applied.plan_id}", "revert", "", len(entities), 0)],
        snapshot_run_id=snapshot.run.run_id,
        snapshot_at=snapshot.run.started_at,
        entities=entities,
        new=[],
        population=snapshot.population,
        thresholds=mapping.thresholds,
        earlier=earlier,
        reverts=applied.plan_id,
    )
    apply_allowances(plan, mapping, {})
    return Revert(plan, left, partial)


def _reverted(entity: EntityPlan, snapshot: Snapshot) -> tuple[EntityPlan | None, str]:
    """The entity with each change it can undo turned around (None when none) and why a field is not."""
    values = (snapshot.user_values if entity.kind == "user" else snapshot.group_values).get(entity.entity_id)
    if values is None:
        return None, "no longer in the service"
    changes = [change for change in entity.changes if change.field not in NOT_REVERTED]
    moved = [change.field for change in changes if not same(values.get(change.field), change.after)]
    if moved:
        return None, f"changed since the plan was applied: {', '.join(moved)}"
    # E1 and E3 refuse null: a field empty before the plan cannot be emptied again.
    kept = [change for change in changes if change.before is None]
    why = "; ".join(
        f"{change.field} stays {change.after_label or change.after} (the service cannot empty a field)"
        for change in kept
    )
    undone = tuple(_turned(entity, change) for change in changes if change.before is not None)
    if not undone:
        return None, why
    return replace(entity, changes=undone, later=()), why


def _turned(entity: EntityPlan, change: Change) -> Change:
    return Change(
        change.field,
        change.after,
        change.before,
        change_kind(entity.kind, change.field, change.after, change.before),
        change.after_label,
        change.before_label,
    )
