"""How big the seeded tenants are, and the fixed identities of the demo tenant."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

DEMO_TENANT_ID = "0b5e5c1e-7d4a-4c53-9a51-6f1e2d3c4b5a"
DEMO_TOKEN = "adm-demo-token"  # noqa: S105 - a published demo credential of the local emulator
DEMO_ACCESS_KEY = "adm-demo-access-key"

OTHER_TENANT_ID = "9f8e7d6c-5b4a-4392-8170-6a5b4c3d2e1f"
OTHER_TOKEN = "adm-other-token"  # noqa: S105 - as above
OTHER_ACCESS_KEY = "adm-other-access-key"

SEED_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
"""Seeded records are created and updated before this instant; writes stamp the wall clock, so every
write moves ``updatedAt``/``updatedOn`` past everything seeded."""


@dataclass(frozen=True)
class Scale:
    """Record counts of one seeded tenant."""

    users: int = 300
    decisions: int = 1_000
    delegations: int = 400
    documents: int = 200
    groups: int = 40
    actions: int = 60
    matrices: int = 5
    reports: int = 20
    notifications: int = 50


OTHER_TENANT_SCALE = Scale(
    users=25,
    decisions=40,
    delegations=15,
    documents=10,
    groups=6,
    actions=6,
    matrices=1,
    reports=3,
    notifications=5,
)
"""The second tenant, there for isolation tests: small and fixed."""
