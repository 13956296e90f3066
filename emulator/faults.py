"""Fault injection: latency, server errors, per-tenant rate limiting, dropped connections, malformed JSON
and drift. Everything is off by default; set by CLI flags or ``PUT /_admin/faults``.

When a fault hits a write matters: an injected 5xx answers *before* the route runs (nothing is written),
while a dropped connection or malformed body is injected *after* the route ran (the write happened, the
client cannot know). That second case is the one a client must never blindly repeat.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class FaultConfig(BaseModel):
    """Faults of one emulator. Rates are probabilities per targeted request."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, validate_by_name=True, validate_by_alias=True
    )

    latency_ms: float = Field(0.0, ge=0, description="Fixed latency added to every request.")
    jitter_ms: float = Field(0.0, ge=0, description="Uniform random extra latency, 0..jitter.")
    error_rate: float = Field(0.0, ge=0, le=1, description="Share of targeted requests answered with a 5xx.")
    error_status: int = Field(500, ge=500, le=599, description="Status of injected server errors.")
    drop_rate: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Share of targeted requests whose connection is cut mid-response, after the route ran.",
    )
    malformed_rate: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Share of targeted requests answered with truncated JSON, after the route ran.",
    )
    rate_limit_per_minute: float | None = Field(None, gt=0, description="Per-tenant budget; 429 beyond it.")
    rate_burst: int | None = Field(
        None, ge=1, description="Token bucket size; default twice the per-minute rate."
    )
    drift_every: int = Field(
        0, ge=0, description="Every Nth paged-list request inserts one record and updates one (0: never)."
    )
    methods: list[str] | None = Field(None, description="Methods the error/drop/malformed faults target.")
    endpoints: list[str] | None = Field(
        None,
        description="Endpoint names (E1..E14, exchange, users, groups, "
        "positions, delegations) the error/drop/malformed faults target.",
    )
    after_writes: int = Field(
        0, ge=0, description="Error/drop/malformed faults start once this many writes were applied."
    )
    max_faults: int | None = Field(
        None, ge=0, description="Stop injecting error/drop/malformed faults after this many."
    )
    ignore_params: list[str] = Field(
        default_factory=list,
        description="Query parameter names the emulator ignores, as a service would that does not know them.",
    )
    realism_rate: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Share of list records served off the spec (nulls, omitted fields, unknown enum values, "
        "numbers as strings, malformed dates, empty ids; see emulator.realism), the top user with a null "
        "manager. 0: off.",
    )
    total_skew: int = Field(
        0,
        ge=0,
        description="Added to the total of every paged list, as a service would whose counts are off.",
    )

    def targets(self, method: str, endpoint: str) -> bool:
        """Whether the error/drop/malformed faults apply to this request."""
        return (self.methods is None or method in self.methods) and (
            self.endpoints is None or endpoint in self.endpoints
        )

    @property
    def burst(self) -> float:
        """Bucket capacity: the configured burst, else twice the per-minute rate (public-reference.md)."""
        rate = self.rate_limit_per_minute or 0.0
        return float(self.rate_burst) if self.rate_burst is not None else 2 * rate


@dataclass
class Bucket:
    """A token bucket: ``capacity`` tokens, refilled at ``per_second``."""

    capacity: float
    per_second: float
    tokens: float
    stamp: float

    def take(self) -> float:
        """Take one token; returns 0 when granted, else the seconds until one is available."""
        moment = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (moment - self.stamp) * self.per_second)
        self.stamp = moment
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.per_second


class RateLimiter:
    """Per-tenant token buckets of the emulated service."""

    def __init__(self) -> None:
        self._buckets: dict[str, Bucket] = {}

    def reset(self) -> None:
        """Refill every bucket (a new fault configuration starts from a full budget)."""
        self._buckets.clear()

    def retry_after(self, tenant_id: str, faults: FaultConfig) -> int | None:
        """None when the request may go on, else the ``Retry-After`` seconds of a 429."""
        if faults.rate_limit_per_minute is None:
            return None
        bucket = self._buckets.get(tenant_id)
        if bucket is None:
            capacity = faults.burst
            bucket = Bucket(capacity, faults.rate_limit_per_minute / 60, capacity, time.monotonic())
            self._buckets[tenant_id] = bucket
        wait = bucket.take()
        return None if wait == 0 else max(1, math.ceil(wait))
