"""How a client reaches the service: address, credentials, tenant, rate plan, concurrency and timeouts.

Every assumption about the service that public-reference.md leaves open is a named, overridable setting
here: the base addresses, the rate plans and their burst, the timeouts, the retry budget and the wire
names of query parameters (``param_names``). TLS certificates are always verified; there is no switch
(``ca_bundle`` adds CAs to those trusted, see `resources.tls`).
"""

from __future__ import annotations

from enum import StrEnum
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from models.base import UuidStr
from resources.tls import CaBundle


class Environment(StrEnum):
    """The four deployments of the service (spec 9.3)."""

    STAGING_US = "staging-us"
    STAGING_EU = "staging-eu"
    PROD_US = "prod-us"
    PROD_EU = "prod-eu"


BASE_URLS: dict[Environment, str] = {
    Environment.STAGING_US: "https://staging.api.us.aptlydone.com",
    Environment.STAGING_EU: "https://staging.api.eu.aptlydone.com",
    Environment.PROD_US: "https://api.us.aptlydone.com",
    Environment.PROD_EU: "https://api.eu.aptlydone.com",
}
"""Base address of each environment (public-reference.md)."""


class RatePlan(StrEnum):
    """The service's rate plans (public-reference.md)."""

    ESSENTIAL = "essential"
    PREMIUM = "premium"
    ENTERPRISE = "enterprise"


PLAN_RATES_PER_MINUTE: dict[RatePlan, float] = {
    RatePlan.ESSENTIAL: 60.0,
    RatePlan.PREMIUM: 300.0,
    RatePlan.ENTERPRISE: 600.0,
}
"""Requests per minute per tenant of each plan (public-reference.md)."""

MONTHLY_QUOTAS: dict[RatePlan, int] = {
    RatePlan.ESSENTIAL: 25_000,
    RatePlan.PREMIUM: 100_000,
    RatePlan.ENTERPRISE: 250_000,
}
"""API calls per month of each plan (public-reference.md)."""

BURST_FACTOR = 2.0
"""Bursts reach twice the per-minute rate (public-reference.md; the emulator's bucket does the same)."""

DEFAULT_CONCURRENCY = 8
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 30.0
WRITE_TIMEOUT_S = 30.0
REQUEST_DEADLINE_S = 120.0
"""The whole of one request, from connecting to the last byte of its answer (`resources.transfer`): a
page of 100 decisions arrives in well under a second; a body trickled slower than this is a failure,
retried as a timeout, instead of a run held for hours."""
Concurrency = Annotated[int, Field(ge=1, le=64)]
"""Requests in flight at most (`DEFAULT_CONCURRENCY` unless set)."""
RatePerMinute = Annotated[float, Field(gt=0)]
"""A tenant's requests per minute, overriding its plan's."""
Burst = Annotated[int, Field(ge=1)]
"""A tenant's token bucket size, overriding twice its rate."""
Deadline = Annotated[float, Field(gt=0)]
"""Seconds one request may take in all (`REQUEST_DEADLINE_S` unless set)."""
POOL_TIMEOUT_S = 60.0
"""Waiting for a free pooled connection; generous because the client bounds its own concurrency."""

MAX_ATTEMPTS = 5
"""Attempts of one request (the first included) after connection errors, 5xx or unreadable bodies."""

RATE_LIMITED_MAX_ATTEMPTS = 10
"""Attempts of one request answered 429: each waits for Retry-After, so more of them are affordable."""

BACKOFF_INITIAL_S = 0.5
BACKOFF_MAX_S = 20.0


def http_address(value: str | None) -> str | None:
    """``value`` without its trailing slash when it is an http(s) address; ValueError when it is not."""
    if value is not None and not value.startswith(("http://", "https://")):
        raise ValueError("not an http(s) address")
    return value.rstrip("/") if value else value


def lower_case(value: object) -> object:
    """A word as written lower-cased (operators write PROD-US or Premium), anything else as it is."""
    return value.strip().lower() if isinstance(value, str) else value


@cache
def default_user_agent() -> str:
    """``authority-sync/<installed version>``."""
    try:
        return f"authority-sync/{version('authority-sync')}"
    except PackageNotFoundError:
        return "authority-sync/unknown"


class ClientSettings(BaseModel):
    """Settings of one `AdmClient`.

    Give exactly one of ``environment`` and ``base_url`` (any address is accepted, e.g. the emulator's),
    and a ``token``, an ``access_key`` or both: with both, the token is used until the service answers 401,
    then the key is exchanged for a new one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    environment: Environment | None = None
    base_url: str | None = None
    token: SecretStr | None = None
    access_key: SecretStr | None = None
    tenant_id: UuidStr
    rate_plan: RatePlan = RatePlan.ESSENTIAL
    rate_per_minute: RatePerMinute | None = None
    burst: Burst | None = None
    concurrency: Concurrency = DEFAULT_CONCURRENCY
    connect_timeout_s: Annotated[float, Field(gt=0)] = CONNECT_TIMEOUT_S
    read_timeout_s: Annotated[float, Field(gt=0)] = READ_TIMEOUT_S
    write_timeout_s: Annotated[float, Field(gt=0)] = WRITE_TIMEOUT_S
    pool_timeout_s: Annotated[float, Field(gt=0)] = POOL_TIMEOUT_S
    request_deadline_s: Deadline = REQUEST_DEADLINE_S
    max_attempts: Annotated[int, Field(ge=1)] = MAX_ATTEMPTS
    rate_limited_max_attempts: Annotated[int, Field(ge=1)] = RATE_LIMITED_MAX_ATTEMPTS
    backoff_initial_s: Annotated[float, Field(ge=0)] = BACKOFF_INITIAL_S
    backoff_max_s: Annotated[float, Field(ge=0)] = BACKOFF_MAX_S
    param_names: dict[str, str] = Field(default_factory=dict)
    """Query field name (snake_case, as in models.queries) -> wire name, overriding the assumed names."""
    user_agent: str = Field(default_factory=default_user_agent)
    limiter_state_dir: Path | None = None
    """Where the tenant's rate-limit bucket is remembered between runs (None: each process starts full)."""
    ca_bundle: CaBundle | None = None
    """A PEM file of CAs trusted besides the OS trust store and the public CAs (a corporate CA)."""

    _lower_case = field_validator("environment", "rate_plan", mode="before")(lower_case)
    _http_address = field_validator("base_url")(http_address)

    @model_validator(mode="after")
    def _one_address_and_a_credential(self) -> Self:
        if (self.environment is None) == (self.base_url is None):
            raise ValueError("give exactly one of environment and base_url")
        if self.token is None and self.access_key is None:
            raise ValueError("give a token or an access_key")
        return self

    @property
    def address(self) -> str:
        """The base address requests go to."""
        if self.base_url is not None:
            return self.base_url
        assert self.environment is not None  # guaranteed by the validator
        return BASE_URLS[self.environment]

    @property
    def plan_rate_per_minute(self) -> float:
        """The per-minute budget of the tenant: the override, else the plan's."""
        return self.rate_per_minute or PLAN_RATES_PER_MINUTE[self.rate_plan]

    @property
    def plan_burst(self) -> float:
        """The bucket size of the tenant: the override, else twice the per-minute rate."""
        return float(self.burst) if self.burst is not None else BURST_FACTOR * self.plan_rate_per_minute
