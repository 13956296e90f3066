"""Kinds of change a plan holds, and which of them safety thresholds watch."""

from __future__ import annotations

from enum import StrEnum

from pipelines.hr.fields import EntityKind


class ChangeKind(StrEnum):
    """What one planned field change means to people (a promotion, a transfer, a termination, ...)."""

    DEACTIVATION = "deactivation"
    """A user made INACTIVE or DELETED, or given a termination date (terminations count here too)."""
    REACTIVATION = "reactivation"
    MANAGER = "manager"
    EMAIL = "email"
    POSITION = "position"
    """A promotion or other change of job title."""
    GROUP = "group"
    """A transfer: the user's groups change."""
    ROLE_REMOVAL = "role_removal"
    ROLE_ADDITION = "role_addition"
    PROFILE = "profile"
    """Names, phone, employee id and types, start date."""
    GROUP_RENAME = "group_rename"
    GROUP_REPARENT = "group_reparent"
    GROUP_DEACTIVATION = "group_deactivation"
    GROUP_REACTIVATION = "group_reactivation"
    NEEDS_CREATION = "needs_creation"
    """A row with no matching service record: the API cannot create users or groups."""


WATCHED: dict[ChangeKind, EntityKind] = {
    ChangeKind.DEACTIVATION: "user",
    ChangeKind.MANAGER: "user",
    ChangeKind.EMAIL: "user",
    ChangeKind.ROLE_REMOVAL: "user",
    ChangeKind.GROUP_REPARENT: "group",
    ChangeKind.GROUP_DEACTIVATION: "group",
}
"""Kinds with a safety threshold, and the population (users or groups) their share is taken of."""
