"""Safety thresholds: a plan that changes too many entities of a risky kind is blocked until a person
lifts that kind, for that plan, with a recorded reason.

A kind is over its threshold when the entities it touches exceed ``max_count`` *or* exceed ``max_share``
of the tenant's users (or groups, for group kinds; both for ``total``). The count guards large tenants, the
share small ones. Entities are counted over a rolling window: those this plan changes plus those that
plans of the tenant applied (or began applying) within ``window_days`` changed in the same kind, so that
splitting a mass change into small plans does not evade the threshold. A kind this plan does not change
is never over: earlier plans alone cannot block an unrelated plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.hr.fields import EntityKind
from models.hr.kinds import POPULATION, Watched

EntityKey = tuple[str, str]
"""(entity kind, service id) of one changed record."""


class ThresholdLimit(BaseModel):
    """The most entities one watched kind may change within the window, as a count and a share."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_count: int | None = Field(default=None, ge=0)
    """None: only the share limits (the ``total`` threshold's default)."""
    max_share: float = Field(ge=0, le=1)

    def describe(self) -> str:
        """The limit as people read it: ``25 / 5%``, or ``20%`` without a count."""
        share = f"{self.max_share:.0%}"
        return share if self.max_count is None else f"{self.max_count} / {share}"


DEFAULT_THRESHOLDS: dict[Watched, ThresholdLimit] = {
    Watched.DEACTIVATION: ThresholdLimit(max_count=25, max_share=0.05),
    Watched.REACTIVATION: ThresholdLimit(max_count=25, max_share=0.05),
    Watched.MANAGER: ThresholdLimit(max_count=50, max_share=0.10),
    Watched.EMAIL: ThresholdLimit(max_count=25, max_share=0.05),
    Watched.IDENTITY: ThresholdLimit(max_count=10, max_share=0.02),
    Watched.GROUP: ThresholdLimit(max_count=50, max_share=0.10),
    Watched.ROLE_REMOVAL: ThresholdLimit(max_count=25, max_share=0.05),
    Watched.ROLE_ADDITION: ThresholdLimit(max_count=25, max_share=0.05),
    Watched.GROUP_REPARENT: ThresholdLimit(max_count=5, max_share=0.10),
    Watched.GROUP_DEACTIVATION: ThresholdLimit(max_count=3, max_share=0.05),
    Watched.TOTAL: ThresholdLimit(max_share=0.20),
}
"""Used for every watched kind the mapping file's ``[thresholds]`` table leaves out."""

DEFAULT_WINDOW_DAYS = 7.0


class Thresholds(BaseModel):
    """The limits of every watched kind and the window they are counted over."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    window_days: float = Field(DEFAULT_WINDOW_DAYS, ge=0)
    """Entities that plans applied within this many days changed count against the limits (0: none)."""
    limits: dict[Watched, ThresholdLimit] = Field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))

    @model_validator(mode="before")
    @classmethod
    def _from_table(cls, value: Any) -> Any:
        """The TOML table is flat: ``window_days`` beside one ``kind = {max_count, max_share}`` per kind;
        kinds it leaves out keep their defaults. The nested form is how a plan stores what it was checked
        with; a kind watched since then gets its default there too."""
        if not isinstance(value, dict):
            return value
        if "limits" in value:
            return {**value, "limits": {**DEFAULT_THRESHOLDS, **value["limits"]}}
        table = dict(value)
        window = table.pop("window_days", DEFAULT_WINDOW_DAYS)
        for name in table:
            watched_kind(name)
        return {"window_days": window, "limits": {**DEFAULT_THRESHOLDS, **table}}

    @property
    def window(self) -> timedelta:
        """The rolling window as a duration."""
        return timedelta(days=self.window_days)

    def with_limit(self, kind: Watched, limit: ThresholdLimit) -> Thresholds:
        """These thresholds with one kind's limit replaced."""
        return self.model_copy(update={"limits": {**self.limits, kind: limit}})


@dataclass(frozen=True)
class ThresholdCheck:
    """One watched kind of one plan: the entities it changes, with those of the window, against its limit."""

    kind: Watched
    count: int
    """Entities this plan changes in the kind."""
    earlier: int
    """Other entities changed in the kind by plans applied within the window."""
    population: int
    limit: ThresholdLimit
    allowed_reason: str | None

    @property
    def total(self) -> int:
        """Entities the window holds with this plan applied."""
        return self.count + self.earlier

    @property
    def share(self) -> float:
        """The share of the tenant's users (or groups) the window changes with this plan applied."""
        return self.total / self.population if self.population else 0.0

    @property
    def over(self) -> bool:
        """Whether this plan changes the kind and takes it past its limit."""
        too_many = self.limit.max_count is not None and self.total > self.limit.max_count
        return self.count > 0 and (too_many or self.share > self.limit.max_share)

    @property
    def blocked(self) -> bool:
        """Over the limit and not lifted."""
        return self.over and self.allowed_reason is None


def watched_entities(changes: Iterable[tuple[str, str, str]]) -> dict[Watched, set[EntityKey]]:
    """The entities per watched kind of (change kind, entity kind, entity id) triples; every entity
    counts in ``total``, once."""
    found: dict[Watched, set[EntityKey]] = {kind: set() for kind in Watched}
    for change_kind, entity_kind, entity_id in changes:
        key = (entity_kind, entity_id)
        found[Watched.TOTAL].add(key)
        if change_kind in found:
            found[Watched(change_kind)].add(key)
    return found


def check_thresholds(
    own: Mapping[Watched, set[EntityKey]],
    earlier: Mapping[Watched, set[EntityKey]],
    population: Mapping[EntityKind, int],
    thresholds: Thresholds,
    allowed: Mapping[str, str],
) -> list[ThresholdCheck]:
    """Every watched kind's check: ``own`` the plan's entities per kind, ``earlier`` the window's,
    ``allowed`` kind -> reason."""
    return [
        ThresholdCheck(
            kind,
            len(own.get(kind, set())),
            len(earlier.get(kind, set()) - own.get(kind, set())),
            sum(population.get(entity, 0) for entity in entities),
            thresholds.limits[kind],
            allowed.get(kind),
        )
        for kind, entities in POPULATION.items()
    ]


def blocked_kinds(checks: list[ThresholdCheck]) -> list[str]:
    """The kinds that block the plan."""
    return [check.kind.value for check in checks if check.blocked]


def watched_kind(name: str) -> Watched:
    """The watched kind of ``name``; a ValueError names the kinds that exist."""
    try:
        return Watched(name)
    except ValueError:
        raise ValueError(f"no threshold named {name!r}; thresholds: {', '.join(Watched)}") from None
