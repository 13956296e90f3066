"""The statuses of HR plans and of their entities (the apply journal), as stored in ``hr_plans.status``
and ``hr_plan_entities.status``."""

from __future__ import annotations

from enum import StrEnum


class PlanStatus(StrEnum):
    """Where a plan stands."""

    READY = "ready"
    """Within every threshold (or lifted): may be applied."""
    BLOCKED = "blocked"
    """A watched kind is over its threshold and not lifted."""
    APPLYING = "applying"
    """An apply is running (or was killed: the next apply resumes it)."""
    INCOMPLETE = "incomplete"
    """An apply ended with entities not applied (failed, unknown, or stopped by an error): resumable."""
    SCHEDULED = "scheduled"
    """Every change due so far is applied; changes dated later wait for their day (``hr apply-due``)."""
    APPLIED = "applied"
    """Every entity is settled; the plan never applies again."""
    SUPERSEDED = "superseded"
    """An incomplete plan closed by its revert (``superseded_by``): its unapplied half never applies."""


class EntityStatus(StrEnum):
    """One entity's latest outcome in the apply journal."""

    PLANNED = "planned"
    IN_FLIGHT = "in_flight"
    APPLIED = "applied"
    SKIPPED_CHANGED = "skipped_changed"
    FAILED = "failed"
    UNKNOWN = "unknown"
    MISMATCH = "mismatch"
    SCHEDULED = "scheduled"
    """Changes dated later wait for their day (any due before were applied)."""
    SUPERSEDED = "superseded"
    """Its scheduled changes were cancelled (a later upload named the entity: the latest upload decides),
    or its plan was closed by a revert before it was written."""


PENDING = frozenset({EntityStatus.PLANNED, EntityStatus.IN_FLIGHT, EntityStatus.UNKNOWN})
"""Entity statuses an apply still has to settle."""
