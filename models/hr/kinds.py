"""Kinds of change a plan holds, and what safety thresholds watch: the kinds that hurt at scale, and all
changes together."""

from __future__ import annotations

from enum import StrEnum

from models.hr.fields import EntityKind


class ChangeKind(StrEnum):
    """What one planned field change means to people (a promotion, a transfer, a termination, ...)."""

    DEACTIVATION = "deactivation"
    """A user made INACTIVE or DELETED, or given a termination date (terminations count here too)."""
    REACTIVATION = "reactivation"
    MANAGER = "manager"
    EMAIL = "email"
    IDENTITY = "identity"
    """The employee id changes: the row found its user by another match key (email). A file whose ids
    all changed (a lost prefix) would rewrite every user's employee id."""
    POSITION = "position"
    """A promotion or other change of job title."""
    GROUP = "group"
    """A transfer: the user's groups change."""
    ROLE_REMOVAL = "role_removal"
    ROLE_ADDITION = "role_addition"
    PROFILE = "profile"
    """Names, phone, types, start date."""
    GROUP_RENAME = "group_rename"
    GROUP_REPARENT = "group_reparent"
    GROUP_DEACTIVATION = "group_deactivation"
    GROUP_REACTIVATION = "group_reactivation"
    NEEDS_CREATION = "needs_creation"
    """A row with no matching service record: the API cannot create users or groups."""


class Watched(StrEnum):
    """What a safety threshold watches: a change kind that hurts at scale, or every change together."""

    DEACTIVATION = ChangeKind.DEACTIVATION.value
    REACTIVATION = ChangeKind.REACTIVATION.value
    MANAGER = ChangeKind.MANAGER.value
    EMAIL = ChangeKind.EMAIL.value
    IDENTITY = ChangeKind.IDENTITY.value
    GROUP = ChangeKind.GROUP.value
    ROLE_REMOVAL = ChangeKind.ROLE_REMOVAL.value
    ROLE_ADDITION = ChangeKind.ROLE_ADDITION.value
    GROUP_REPARENT = ChangeKind.GROUP_REPARENT.value
    GROUP_DEACTIVATION = ChangeKind.GROUP_DEACTIVATION.value
    TOTAL = "total"
    """Every entity a plan changes, whatever the kind: a wrong file (a shifted column) touches most rows
    with changes no other threshold watches."""


POPULATION: dict[Watched, tuple[EntityKind, ...]] = {
    Watched.DEACTIVATION: ("user",),
    Watched.REACTIVATION: ("user",),
    Watched.MANAGER: ("user",),
    Watched.EMAIL: ("user",),
    Watched.IDENTITY: ("user",),
    Watched.GROUP: ("user",),
    Watched.ROLE_REMOVAL: ("user",),
    Watched.ROLE_ADDITION: ("user",),
    Watched.GROUP_REPARENT: ("group",),
    Watched.GROUP_DEACTIVATION: ("group",),
    Watched.TOTAL: ("user", "group"),
}
"""Each watched kind and the population (users, groups or both) its share is taken of."""
