"""Safety thresholds: a plan that changes too many entities of a risky kind is blocked until a person
lifts that kind, for that plan, with a recorded reason.

A kind is over its threshold when the entities it touches exceed ``max_count`` *or* exceed ``max_share``
of the tenant's users (or groups, for group kinds). The count guards large tenants, the share small ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from pipelines.hr.fields import EntityKind
from pipelines.hr.kinds import WATCHED, ChangeKind


class ThresholdLimit(BaseModel):
    """The most entities one plan may change in one watched kind, as a count and a share of the tenant."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_count: int = Field(ge=0)
    max_share: float = Field(ge=0, le=1)


DEFAULT_THRESHOLDS: dict[ChangeKind, ThresholdLimit] = {
    ChangeKind.DEACTIVATION: ThresholdLimit(max_count=25, max_share=0.05),
    ChangeKind.MANAGER: ThresholdLimit(max_count=50, max_share=0.10),
    ChangeKind.EMAIL: ThresholdLimit(max_count=25, max_share=0.05),
    ChangeKind.ROLE_REMOVAL: ThresholdLimit(max_count=25, max_share=0.05),
    ChangeKind.GROUP_REPARENT: ThresholdLimit(max_count=5, max_share=0.10),
    ChangeKind.GROUP_DEACTIVATION: ThresholdLimit(max_count=3, max_share=0.05),
}
"""Used for every watched kind the mapping file's ``[thresholds]`` table leaves out."""


@dataclass(frozen=True)
class ThresholdCheck:
    """One watched kind of one plan: how many entities it changes against its limit."""

    kind: ChangeKind
    count: int
    population: int
    limit: ThresholdLimit
    allowed_reason: str | None

    @property
    def share(self) -> float:
        """The share of the tenant's users (or groups) changed."""
        return self.count / self.population if self.population else 0.0

    @property
    def over(self) -> bool:
        """Whether the kind exceeds its limit."""
        return self.count > self.limit.max_count or self.share > self.limit.max_share

    @property
    def blocked(self) -> bool:
        """Over the limit and not lifted."""
        return self.over and self.allowed_reason is None


def check_thresholds(
    counts: Mapping[str, int],
    population: Mapping[EntityKind, int],
    limits: Mapping[ChangeKind, ThresholdLimit],
    allowed: Mapping[str, str],
) -> list[ThresholdCheck]:
    """Every watched kind's check; ``counts`` are entities per change kind, ``allowed`` kind -> reason."""
    return [
        ThresholdCheck(kind, counts.get(kind, 0), population[entity], limits[kind], allowed.get(kind))
        for kind, entity in WATCHED.items()
    ]


def blocked_kinds(checks: list[ThresholdCheck]) -> list[str]:
    """The kinds that block the plan."""
    return [check.kind.value for check in checks if check.blocked]


def watched_kind(name: str) -> ChangeKind:
    """The watched kind of ``name``; a ValueError names the kinds that exist."""
    if name not in WATCHED:
        raise ValueError(f"no threshold named {name!r}; thresholds: {', '.join(WATCHED)}")
    return ChangeKind(name)
