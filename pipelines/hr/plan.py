"""Diff an upload's valid rows against the warehouse: a field-level plan with every value before and after.

Only fields a row fills are compared (a blank cell keeps the service's value). A user the service shows as
INVITED is not "changed" by an HR status of ACTIVE: the service activates invited users at first sign-in.
Rows that match no service record are listed as needing creation (the API cannot create users or
groups). Entities are ordered for applying: groups before users, parents before children.

A change may be dated (`Change.effective_on`): a row's effective date still to come dates all its changes;
a termination whose termination date is still to come dates its status change on that day (the
termination date itself is data, written now). Past dates and today mean now (None).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import date, datetime

from models.hr.fields import EntityKind, Value, Values, differs
from models.hr.kinds import ChangeKind, Watched
from models.hr.plan import Change, EntityPlan, NewEntity, Plan, SourceFile
from models.hr.thresholds import (
    EntityKey,
    check_thresholds,
)
from pipelines.hr.graph import INACTIVE, depths
from pipelines.hr.mapping import Mapping as HrMapping
from pipelines.hr.rows import HrRow
from pipelines.hr.snapshot import Snapshot
from pipelines.hr.validate import Validation

_USER_KINDS = {
    "employee_id": ChangeKind.IDENTITY,
    "manager": ChangeKind.MANAGER,
    "email": ChangeKind.EMAIL,
    "positions": ChangeKind.POSITION,
    "groups": ChangeKind.GROUP,
    "termination_date": ChangeKind.DEACTIVATION,
}
_GROUP_KINDS = {"parent": ChangeKind.GROUP_REPARENT, "disable_option": ChangeKind.GROUP_DEACTIVATION}


def make_plan(
    validation: Validation,
    snapshot: Snapshot,
    mapping: HrMapping,
    allowed: Mapping[str, str],
    now: datetime,
    *,
    earlier: Mapping[Watched, set[EntityKey]],
    approved_by: str = "",
    planned_by: str = "",
) -> Plan:
    """Plan the valid rows of ``validation`` against ``snapshot``; thresholds, counted with the ``earlier``
    plans of their window, decide the status. ``allowed`` (kind -> reason) are lifted by ``approved_by``."""
    valid = [row for row in validation.rows if row.valid]
    option = mapping.groups.disable_option.value
    entities = [
        entity
        for row in valid
        if row.entity_id and (entity := _entity(row, snapshot, option, now.date())).changes
    ]
    plan = Plan(
        plan_id=str(uuid.uuid4()),
        tenant_id=snapshot.tenant_id,
        created_at=now,
        sources=_sources(validation),
        snapshot_run_id=snapshot.run.run_id,
        snapshot_at=snapshot.run.started_at,
        entities=_ordered(entities, snapshot),
        new=[
            NewEntity(row.kind, row.key, row.file, row.line, row.cells) for row in valid if not row.entity_id
        ],
        population=snapshot.population,
        earlier=earlier,
        approved_by=approved_by if allowed else "",
        planned_by=planned_by,
        named={(row.kind, row.entity_id) for row in valid if row.entity_id},
    )
    apply_allowances(plan, mapping, allowed)
    return plan


def apply_allowances(plan: Plan, mapping: HrMapping, allowed: Mapping[str, str]) -> None:
    """Check the mapping's thresholds with the kinds ``allowed`` (kind -> reason) lifted, counting the
    plan's ``earlier`` entities of the window too; sets the plan's status."""
    plan.thresholds = mapping.thresholds
    plan.allowed = dict(allowed)
    plan.checks = check_thresholds(plan.watched, plan.earlier, plan.population, plan.thresholds, plan.allowed)
    plan.status = "blocked" if plan.blocked else "ready"


def _entity(row: HrRow, snapshot: Snapshot, disable_option: str, today: date) -> EntityPlan:
    assert row.entity_id is not None
    current = (snapshot.user_values if row.kind == "user" else snapshot.group_values)[row.entity_id]
    desired = dict(row.desired)
    ends = desired.get("termination_date")
    if (
        row.kind == "user"
        and desired.get("status") == "ACTIVE"
        and isinstance(ends, str)
        and ends > str(today)
    ):
        # A pending leaver (Workday's "Active" with a termination date to come): active until that day,
        # then inactive; the status change is dated on it (`_dated`).
        desired["status"] = "INACTIVE"
    if row.kind == "group" and desired.get("status") in INACTIVE:
        # E3 takes the fate of the group's associations with a deactivation; the mapping decides it.
        desired["disable_option"] = disable_option
    changes = tuple(
        _dated(row, _change(row.kind, name, current[name], after, snapshot), current, today)
        for name, after in desired.items()
        if differs(row.kind, name, current[name], after)
    )
    return EntityPlan(row.kind, row.entity_id, row.key, row.file, row.line, changes)


def _dated(row: HrRow, change: Change, current: Values, today: date) -> Change:
    """``change`` with the day it takes effect, None for now: see the module docstring."""
    day = row.effective_on
    if change.field == "termination_date":
        day = None  # data about the leaver, true from today: written now
    elif row.kind == "user" and change.field == "status" and change.after in INACTIVE:
        ends = row.desired.get("termination_date") or current["termination_date"]
        if isinstance(ends, str):
            day = max(day or date.min, date.fromisoformat(ends))
    return replace(change, effective_on=day if day is not None and day > today else None)


def _change(kind: EntityKind, name: str, before: Value, after: Value, snapshot: Snapshot) -> Change:
    return Change(
        name,
        before,
        after,
        change_kind(kind, name, before, after),
        _label(name, before, snapshot),
        _label(name, after, snapshot),
    )


def change_kind(kind: EntityKind, name: str, before: Value, after: Value) -> ChangeKind:
    """What a change means: see `ChangeKind`."""
    if kind == "group":
        if name == "status":
            return ChangeKind.GROUP_DEACTIVATION if after in INACTIVE else ChangeKind.GROUP_REACTIVATION
        return _GROUP_KINDS.get(name, ChangeKind.GROUP_RENAME)
    if name == "status":
        if after in INACTIVE:
            return ChangeKind.DEACTIVATION
        return ChangeKind.REACTIVATION if before in INACTIVE else ChangeKind.PROFILE
    if name == "roles":
        removed = set(before or []) - set(after or [])
        return ChangeKind.ROLE_REMOVAL if removed else ChangeKind.ROLE_ADDITION
    return _USER_KINDS.get(name, ChangeKind.PROFILE)


def _label(name: str, value: Value, snapshot: Snapshot) -> str:
    """A value as people read it: names for references."""
    if value is None:
        return ""
    if isinstance(value, str):
        return snapshot.user_label(value) if name == "manager" else value
    namers: dict[str, Callable[[str], str | None]] = {
        "positions": snapshot.positions.get,
        "roles": snapshot.roles.get,
        "groups": snapshot.group_label,
        "parent": snapshot.group_label,
    }
    return "; ".join(namers[name](item) or item for item in value)


def _ordered(entities: list[EntityPlan], snapshot: Snapshot) -> list[EntityPlan]:
    """Groups by depth in the tree the plan leaves (parents first), then users."""
    parents = {key: list(values["parent"] or []) for key, values in snapshot.group_values.items()}
    for entity in entities:
        for change in entity.changes:
            if change.field == "parent":
                parents[entity.entity_id] = list(change.after or [])
    depth = depths(parents)
    user_order = 1 + max(depth.values(), default=0)
    ordered = [
        replace(entity, order=depth.get(entity.entity_id, 0) if entity.kind == "group" else user_order)
        for entity in entities
    ]
    return sorted(ordered, key=lambda entity: (entity.order, entity.kind, entity.hr_key))


def _sources(validation: Validation) -> list[SourceFile]:
    return [
        SourceFile(
            file.name,
            validation.kinds.get(file.name, "unreadable"),
            file.sha256,
            len(file.rows),
            len(validation.invalid_lines(file.name)),
        )
        for file in validation.files
    ]
