"""The emulator's in-memory state of one tenant: records as wire-shaped dicts, plus the links between them.

Records are stored the way the service sends them (camelCase dicts), so a read is a lookup and a
serialisation, never a re-validation. Parts of a record that depend on other records (a user's manager,
a group's parents) are kept as links and composed when the record is rendered.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from models.base import format_timestamp

Record = dict[str, Any]

_UUID4_MASK = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_UUID4_BITS = (0x4000 << 64) | (0x8000 << 48)


def random_uuid(rng: random.Random) -> str:
    """A version-4 UUID drawn from ``rng`` (formatted by hand: uuid.UUID is the seeding hot spot)."""
    h = f"{rng.getrandbits(128) & _UUID4_MASK | _UUID4_BITS:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def now() -> str:
    """The current time as the service writes timestamps."""
    return format_timestamp(datetime.now(UTC))


@dataclass
class ParentLink:
    """One parent edge of a group."""

    link_id: str
    parent_id: str
    created_at: str


@dataclass
class TenantState:
    """Everything one tenant holds."""

    tenant_id: str
    current_user_id: str
    users: dict[str, Record] = field(default_factory=dict)
    manager_of: dict[str, str] = field(default_factory=dict)
    roles: dict[str, Record] = field(default_factory=dict)
    positions: dict[str, Record] = field(default_factory=dict)
    group_types: dict[str, Record] = field(default_factory=dict)
    groups: dict[str, Record] = field(default_factory=dict)
    group_parents: dict[str, list[ParentLink]] = field(default_factory=dict)
    decisions: dict[str, Record] = field(default_factory=dict)
    delegations: dict[str, Record] = field(default_factory=dict)
    delegation_revisions: dict[str, list[str]] = field(default_factory=dict)
    documents: dict[str, Record] = field(default_factory=dict)
    document_revisions: dict[str, list[str]] = field(default_factory=dict)
    action_types: dict[str, Record] = field(default_factory=dict)
    action_templates: dict[str, Record] = field(default_factory=dict)
    action_priorities: dict[str, Record] = field(default_factory=dict)
    action_statuses: dict[str, Record] = field(default_factory=dict)
    actions: dict[str, Record] = field(default_factory=dict)
    matrices: dict[str, Record] = field(default_factory=dict)
    matrix_statuses: dict[str, Record] = field(default_factory=dict)
    reports: dict[str, Record] = field(default_factory=dict)
    notifications: dict[str, Record] = field(default_factory=dict)
    next_revision: int = 1
    next_display_id: int = 1
    version: int = 0
    """Bumped by every write; list caches are keyed by it."""

    def new_revision_id(self) -> str:
        """A fresh changelog revision id (revision ids are increasing numbers held as strings)."""
        self.next_revision += 1
        return str(self.next_revision)

    def new_display_id(self) -> str:
        """A fresh numeric-looking display id."""
        self.next_display_id += 1
        return str(self.next_display_id)

    def touch(self) -> None:
        """Record that the tenant changed, so cached list results are rebuilt."""
        self.version += 1
