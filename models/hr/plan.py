"""An HR plan as data: each entity's field changes (before and after), the rows that need creating, the
files it came from, and the thresholds it was checked against. `pipelines.hr.plan` makes plans; the store
(`warehouse.hr_store`) saves and loads them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime

from models.hr.fields import EntityKind, Value
from models.hr.kinds import ChangeKind, Watched
from models.hr.thresholds import EntityKey, ThresholdCheck, Thresholds, blocked_kinds, watched_entities


@dataclass(frozen=True)
class Change:
    """One field of one entity: its value before and after (ids for references) and readable labels."""

    field: str
    before: Value
    after: Value
    kind: ChangeKind
    before_label: str
    after_label: str
    effective_on: date | None = None
    """The day the change takes effect; None: now."""


@dataclass(frozen=True)
class EntityPlan:
    """Everything that changes on one service record, and when it is applied (lower ``order`` first)."""

    kind: EntityKind
    entity_id: str
    hr_key: str
    file: str
    line: int
    changes: tuple[Change, ...]
    order: int = 0
    later: tuple[Change, ...] = ()
    """While applying: the changes not yet due, held back from ``changes`` (written on a later day)."""

    @property
    def waiting(self) -> str:
        """The held-back changes in one line: ``status on 2027-01-31, groups on 2026-12-01``."""
        return "waiting: " + ", ".join(f"{change.field} on {change.effective_on}" for change in self.later)


@dataclass(frozen=True)
class NewEntity:
    """A valid row that matches no service record: it needs creating, which the API cannot do."""

    kind: EntityKind
    hr_key: str
    file: str
    line: int
    cells: dict[str, str]
    """The row's cells by field, as HR wrote them."""


@dataclass(frozen=True)
class SourceFile:
    """One file of the upload: its kind, hash and row counts."""

    file: str
    kind: str
    sha256: str
    rows: int
    invalid_rows: int


@dataclass
class Plan:
    """A plan: its identity and sources, what it changes, and whether thresholds let it be applied."""

    plan_id: str
    tenant_id: str
    created_at: datetime
    sources: list[SourceFile]
    snapshot_run_id: str
    snapshot_at: datetime
    entities: list[EntityPlan]
    new: list[NewEntity]
    population: dict[EntityKind, int]
    thresholds: Thresholds = field(default_factory=Thresholds)
    earlier: Mapping[Watched, set[EntityKey]] = field(default_factory=dict)
    """Entities per watched kind that plans applied within the thresholds' window changed."""
    checks: list[ThresholdCheck] = field(default_factory=list)
    allowed: dict[str, str] = field(default_factory=dict)
    approved_by: str = ""
    """Who lifted the ``allowed`` kinds (when any are)."""
    planned_by: str = ""
    """Who made the plan (an OS user, or a Dagster run's launcher, sensor or schedule)."""
    status: str = "ready"
    reverts: str | None = None
    """The plan this one reverts (a revert's): saving it closes that plan if it is incomplete."""
    named: set[tuple[EntityKind, str]] = field(default_factory=set)
    """Every service record a valid row names, changed or not: the latest upload decides its future, so
    saving this plan supersedes the changes still scheduled for it by earlier plans."""

    @property
    def counts(self) -> dict[str, int]:
        """Entities per change kind (an entity with two fields of one kind counts once)."""
        kinds: dict[str, set[tuple[str, str]]] = {}
        for entity in self.entities:
            for change in entity.changes:
                kinds.setdefault(change.kind.value, set()).add((entity.kind, entity.entity_id))
        counts = {kind: len(entities) for kind, entities in sorted(kinds.items())}
        return counts | ({ChangeKind.NEEDS_CREATION.value: len(self.new)} if self.new else {})

    @property
    def watched(self) -> dict[Watched, set[EntityKey]]:
        """The entities this plan changes per watched kind."""
        changes = (
            (change.kind, entity.kind, entity.entity_id)
            for entity in self.entities
            for change in entity.changes
        )
        return watched_entities(changes)

    @property
    def blocked(self) -> list[str]:
        """Change kinds over their threshold and not allowed."""
        return blocked_kinds(self.checks)
