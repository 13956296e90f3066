"""The one settings object of authority-sync: every ``ADM_*`` environment variable, read and checked once.

The CLI and the Dagster code location (``definitions.py``) both call `load_settings`. A bad value stops
either with one line that names the variable and what it accepts (`SettingsError`), never a traceback or a
pydantic dump. Secrets are `SecretStr`: they never show in a repr, a message or a log.

Per-tenant credentials: an operator of several tenants holds one key per tenant. ``ADM_TOKEN__<TENANT>`` and
``ADM_ACCESS_KEY__<TENANT>`` (the tenant id upper-cased, hyphens as underscores) give one tenant its own
credential; ``ADM_TOKEN``/``ADM_ACCESS_KEY`` serve every tenant that has none of its own.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Self, TypeVar
from urllib.parse import urlsplit

from croniter import croniter
from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from models.base import UUID_PATTERN, is_uuid
from models.errors import AuthoritySyncError
from pipelines.checks import parse_check_names
from pipelines.hr.policy import DEFAULT_DROP_DIR, DEFAULT_MAX_INVALID_SHARE, DEFAULT_PLAN_MAX_AGE_HOURS
from resources.contract import ContractMode, parse_modes
from resources.settings import REQUEST_DEADLINE_S, Environment, RatePlan
from resources.tls import CaBundle
from warehouse.files import default_publish_path, group_id
from warehouse.locks import DEFAULT_LOCK_WAIT_S
from warehouse.publish import (
    DEFAULT_STORAGE_VERSION,
    PublishTarget,
    same_file_problem,
    storage_version_problem,
)
from warehouse.reads import warehouse_problem

PREFIX = "ADM_"
TOKEN_PREFIX = "ADM_TOKEN__"  # noqa: S105 - a variable name, not a secret
ACCESS_KEY_PREFIX = "ADM_ACCESS_KEY__"
RATE_PLAN_PREFIX = "ADM_RATE_PLAN__"
QUOTA_PREFIX = "ADM_MONTHLY_QUOTA__"
UNLIMITED_RATE = 60_000.0
"""Rate budget against a local emulator, which enforces none unless told to."""
EMULATOR_HOST, EMULATOR_PORT = "127.0.0.1", 8080
"""Where `authority-sync emulator` (``make emulator``) listens unless told otherwise."""
DEMO_WAREHOUSE = Path("data/demo/warehouse.duckdb")
"""The demo's own warehouse, apart from where production data lives."""

MONTHLY_QUOTAS: dict[RatePlan, int] = {
    RatePlan.ESSENTIAL: 25_000,
    RatePlan.PREMIUM: 100_000,
    RatePlan.ENTERPRISE: 250_000,
}
"""API calls per month of each plan (public-reference.md)."""

ACCEPTS: dict[str, str] = {
    "environment": "one of staging-us, staging-eu, prod-us, prod-eu",
    "base_url": "an address starting with http:// or https://",
    "tenant_id": "a tenant id (UUID)",
    "tenants": "comma-separated tenant ids (UUIDs), each optionally named: acme=<uuid>",
    "rate_plan": "one of essential, premium, enterprise",
    "rate_per_minute": "a number of requests per minute above 0",
    "burst": "a whole number of requests of at least 1",
    "concurrency": "a whole number from 1 to 64",
    "request_deadline_s": "a number of seconds above 0",
    "warehouse": "the path of a DuckDB file, existing or to create",
    "staging_dir": "a folder path",
    "publish_path": "the path of a DuckDB file other than the warehouse (ADM_WAREHOUSE)",
    "publish_storage_version": "a DuckDB storage version such as v1.4.0 (readers need that DuckDB or newer)",
    "publish_parquet": "true or false",
    "readers_group": "the name of a group of this machine",
    "allow_insecure_http": "true or false",
    "ca_bundle": "a PEM file of certificate authorities",
    "overlap_minutes": "a whole number of minutes, 0 or more",
    "freshness_hours": "a number of hours above 0",
    "monthly_quota": "a whole number of API calls of at least 1",
    "quota_max_share": "a share above 0 and at most 1 (e.g. 0.9)",
    "allow_over_quota": "true or false",
    "lock_wait_s": "a number of seconds, 0 or more",
    "schema_contract": "strict or tolerant, optionally per list (e.g. tolerant,users=strict)",
    "reject_max_count": "a whole number of records, 0 or more",
    "reject_max_share": "a share from 0 to 1 (e.g. 0.01)",
    "warn_only_checks": "comma-separated names of blocking checks that only warn this time",
    "resume_hours": "a number of hours, 0 or more",
    "run_budget_s": "a number of seconds above 0",
    "max_retries": "a whole number of retries, 0 or more",
    "retry_wait_s": "a number of seconds, 0 or more",
    "revision_recheck_days": "a whole number of days of at least 1",
    "nightly_cron": "a cron expression of five fields (UTC), e.g. 0 2 * * *",
    "full_refresh_cron": "a cron expression of five fields (UTC), e.g. 0 3 * * 0",
    "hr_drop_dir": "a folder path",
    "hr_plan_max_age_hours": "a number of hours above 0",
    "hr_max_invalid_share": "a share from 0 to 1 (e.g. 0.1)",
    "hr_four_eyes": "true or false",
    "tenant_rate_plans": "one of essential, premium, enterprise",
    "tenant_quotas": "a whole number of API calls of at least 1",
}
"""What each setting accepts, as the one-line error says it."""

PER_TENANT_PREFIXES = {"tenant_rate_plans": RATE_PLAN_PREFIX, "tenant_quotas": QUOTA_PREFIX}
"""The settings one tenant may have of its own, and their variables' prefix (``<prefix><TENANT>``)."""

CRON_FIELDS = 5
"""minute hour day-of-month month day-of-week."""

NIGHTLY_CRON = "0 2 * * *"
FULL_REFRESH_CRON = "0 3 * * 0"
RECHECK_DAYS = 30
"""The default schedules and re-verification window (``ADM_REVISION_RECHECK_DAYS``): with them the benchmark's
tenant (20,000 decisions, 2,000 delegations, 1,000 documents, 1% changed a night) spends 48% of Essential's
quota a month; docs/sync.md weighs other windows."""

NO_TENANT = "no tenant configured: set ADM_TENANTS (ids, comma-separated) or ADM_TENANT_ID"

SECRET_FIELDS = frozenset({"token", "access_key"})
_V = TypeVar("_V")


def _private_address(url: str) -> bool:
    """Whether ``url`` is https, or plain http to this machine (an emulator, a local proxy)."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return True
    host = parts.hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


NO_SERVICE = (
    "no service address is configured: set ADM_BASE_URL or ADM_ENVIRONMENT (and ADM_TOKEN or "
    "ADM_ACCESS_KEY); to try authority-sync on its embedded emulator instead, run `authority-sync demo` "
    "(its files stay under data/demo/)"
)
"""Why a sync or an HR apply refuses without an address: it never falls back to an emulator, whose demo
data would land where production data lives."""


class SettingsError(AuthoritySyncError, ValueError):
    """A setting has a value it does not accept; the message is one line naming the variable."""


def configured_tenant(value: str, tenants: Sequence[str], names: Mapping[str, str] | None = None) -> str:
    """The configured tenant ``value`` names (its id, any case, or its name in ``names``: id -> name), else
    `SettingsError` in one line (a tenant id also names folders and lock files: only the configured ones
    may reach them)."""
    wanted = value.strip().lower()
    named = {name.lower(): tenant for tenant, name in (names or {}).items()}
    found = next((tenant for tenant in tenants if tenant.lower() == wanted), named.get(wanted))
    if found is None:
        shown = value if len(value) <= 80 else value[:79] + "…"
        configured = ", ".join(tenants)
        raise SettingsError(f"tenant {shown!r} is not configured (ADM_TENANTS: {configured})")
    return found


class SyncSettings(BaseSettings):
    """Every setting of authority-sync, from ``ADM_*`` environment variables (see the README's table)."""

    # Empty variables count as unset, as a shell's `export ADM_TOKEN=` means.
    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore", frozen=True, env_ignore_empty=True)

    environment: Environment | None = None
    base_url: str | None = None
    token: SecretStr | None = None
    access_key: SecretStr | None = None
    tenant_id: Annotated[str, Field(pattern=UUID_PATTERN)] | None = None
    tenants: Annotated[list[str], NoDecode] = Field(default_factory=list)
    tenant_names: dict[str, str] = Field(default_factory=dict)
    """Tenant id -> the name ``ADM_TENANTS`` gives it (``acme=<uuid>``), for people: the CLI accepts and
    shows it, and each sync labels the tenant with it in the warehouse (``v_sync_status``)."""
    rate_plan: RatePlan = RatePlan.ESSENTIAL
    rate_per_minute: Annotated[float | None, Field(gt=0)] = None
    burst: Annotated[int | None, Field(ge=1)] = None
    concurrency: Annotated[int, Field(ge=1, le=64)] = 8
    request_deadline_s: Annotated[float, Field(gt=0)] = REQUEST_DEADLINE_S
    """The whole of one request, connecting and every read of its answer (`resources.transfer`)."""
    warehouse: Path = Path("data/warehouse.duckdb")
    staging_dir: Path | None = None
    publish_path: Path | None = None
    """The copy readers open (after ``warehouse``: its check compares the two)."""
    publish_storage_version: str = DEFAULT_STORAGE_VERSION
    publish_parquet: bool = False
    readers_group: str | None = None
    """The group that may read the copy for readers (else every file written is private to its owner)."""
    allow_insecure_http: bool = False
    """Allow plain http:// to an address other than this machine's (tokens would cross the network open)."""
    ca_bundle: CaBundle | None = None
    """A PEM file of CAs trusted besides the OS trust store and the public CAs (a re-signing proxy's CA)."""
    overlap_minutes: Annotated[int, Field(ge=0)] = 10
    freshness_hours: Annotated[float, Field(gt=0)] = 26.0
    monthly_quota: Annotated[int | None, Field(ge=1)] = None
    quota_max_share: Annotated[float, Field(gt=0, le=1)] = 0.9
    allow_over_quota: bool = False
    lock_wait_s: Annotated[float, Field(ge=0)] = DEFAULT_LOCK_WAIT_S
    schema_contract: str = ContractMode.TOLERANT.value
    """``tolerant`` or ``strict``, optionally per list: ``tolerant,users=strict``."""
    reject_max_count: Annotated[int, Field(ge=0)] = 10
    reject_max_share: Annotated[float, Field(ge=0, le=1)] = 0.01
    resume_hours: Annotated[float, Field(ge=0)] = 12.0
    """A run reuses the revision lists a failed or killed run fetched within this many hours (0: never)."""
    run_budget_s: Annotated[float | None, Field(gt=0)] = None
    """Seconds a run may take before it is stopped like a SIGTERM would (its journal kept for the next run);
    unset: three times what its expected calls take at the plan's rate, plus ten minutes."""
    max_retries: Annotated[int, Field(ge=0)] = 2
    """A Dagster step that failed for a passing reason (5xx, connection, 429s) runs again this often."""
    retry_wait_s: Annotated[float, Field(ge=0)] = 30.0
    """Seconds before the first of those retries, doubled for each next one."""
    revision_recheck_days: Annotated[int, Field(ge=1)] = RECHECK_DAYS
    """Each run (nightly or full) re-verifies about 1/N of the revision lists (E11, E12) whose delegation or
    decision did not change, the longest unverified first: a revision the service adds without touching its
    owner is found within N runs (N days on the nightly schedule), at a flat cost per run. A full re-pull of
    every list each week would cost what N = 7 costs; docs/sync.md weighs the choice."""
    warn_only_checks: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Blocking checks (`pipelines.checks`) that only warn: an operator's override for a known case."""
    nightly_cron: str = NIGHTLY_CRON
    full_refresh_cron: str = FULL_REFRESH_CRON
    hr_drop_dir: Path = Path(DEFAULT_DROP_DIR)
    hr_plan_max_age_hours: Annotated[float, Field(gt=0)] = DEFAULT_PLAN_MAX_AGE_HOURS
    """An HR plan older than this is not applied (plan the files again)."""
    hr_max_invalid_share: Annotated[float, Field(ge=0, le=1)] = DEFAULT_MAX_INVALID_SHARE
    """An HR upload with a larger share of invalid rows is refused (nothing planned): a wrong file."""
    hr_four_eyes: bool = False
    """Refuse a threshold lift by the person who made the plan (approver and planner must differ)."""
    tenant_tokens: dict[str, SecretStr] = Field(default_factory=dict, exclude=True)
    """Per-tenant tokens (tenant id -> token) from ``ADM_TOKEN__<TENANT>``."""
    tenant_access_keys: dict[str, SecretStr] = Field(default_factory=dict, exclude=True)
    """Per-tenant access keys from ``ADM_ACCESS_KEY__<TENANT>``."""
    tenant_rate_plans: dict[str, RatePlan] = Field(default_factory=dict)
    """Per-tenant rate plans (variable suffix -> plan) from ``ADM_RATE_PLAN__<TENANT>``."""
    tenant_quotas: dict[str, Annotated[int, Field(ge=1)]] = Field(default_factory=dict)
    """Per-tenant monthly quotas (variable suffix -> calls) from ``ADM_MONTHLY_QUOTA__<TENANT>``."""

    @field_validator("nightly_cron", "full_refresh_cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        # Five fields, as Dagster's schedules take them (croniter alone would also take six).
        if len(value.split()) != CRON_FIELDS or not croniter.is_valid(value):
            raise ValueError("not a cron expression")
        return value.strip()

    @field_validator("schema_contract")
    @classmethod
    def _contract(cls, value: str) -> str:
        parse_modes(value)
        return value.strip().lower()

    @field_validator("environment", "rate_plan", mode="before")
    @classmethod
    def _lower_case(cls, value: object) -> object:
        # Operators write PROD-US or Premium.
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("tenant_rate_plans", mode="before")
    @classmethod
    def _lower_case_plans(cls, value: object) -> object:
        if isinstance(value, dict):
            return {key: cls._lower_case(plan) for key, plan in value.items()}
        return value

    @field_validator("base_url")
    @classmethod
    def _http_address(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("not an http(s) address")
        return value.rstrip("/") if value else None

    @field_validator("readers_group")
    @classmethod
    def _known_group(cls, value: str | None) -> str | None:
        if value is not None:
            group_id(value)
        return value

    @field_validator("warehouse")
    @classmethod
    def _duckdb_file(cls, value: Path) -> Path:
        problem = warehouse_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("publish_path")
    @classmethod
    def _other_duckdb_file(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if value is None:
            return None
        # A refused ADM_WAREHOUSE is absent here: its own error is the one to read.
        warehouse = info.data.get("warehouse")
        problem = warehouse_problem(value) or (same_file_problem(warehouse, value) if warehouse else None)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("publish_storage_version")
    @classmethod
    def _known_storage_version(cls, value: str) -> str:
        problem = storage_version_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("warn_only_checks")
    @classmethod
    def _check_names(cls, value: list[str]) -> list[str]:
        return list(parse_check_names(",".join(value)))

    @model_validator(mode="before")
    @classmethod
    def _named_tenants(cls, data: Any) -> Any:
        """``ADM_TENANTS=acme=<uuid>,<uuid>``: the ids to ``tenants``, the names to ``tenant_names``."""
        if not isinstance(data, dict) or not isinstance(data.get("tenants"), str):
            return data
        ids, names = [], {}
        for entry in (part.strip() for part in data["tenants"].split(",") if part.strip()):
            name, named, tenant = entry.rpartition("=")
            ids.append(tenant.strip())
            if named:
                names[tenant.strip()] = name.strip()
        if any(not name or is_uuid(name) for name in names.values()):
            raise ValueError("ADM_TENANTS: a tenant's name (name=<uuid>) cannot be blank or a UUID")
        if len({name.lower() for name in names.values()}) < len(names):
            raise ValueError("ADM_TENANTS: two tenants have the same name")
        return {**data, "tenants": ids, "tenant_names": names}

    @field_validator("tenants", "warn_only_checks", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("tenants")
    @classmethod
    def _uuids(cls, value: list[str]) -> list[str]:
        bad = [tenant for tenant in value if not is_uuid(tenant)]
        if bad:
            raise ValueError(f"not a UUID: {', '.join(bad)}")
        return value

    @model_validator(mode="after")
    def _one_address_and_credentials(self) -> Self:
        if self.environment is not None and self.base_url is not None:
            raise ValueError("give ADM_ENVIRONMENT or ADM_BASE_URL, not both")
        if self.base_url and not (self.allow_insecure_http or _private_address(self.base_url)):
            raise ValueError(
                f"ADM_BASE_URL={self.base_url} would send the token unencrypted to another machine: use "
                "https://, or set ADM_ALLOW_INSECURE_HTTP=true"
            )
        if self.address_configured and not self.sync_tenants:
            raise ValueError(NO_TENANT)
        suffixes = {tenant_variable_suffix(tenant) for tenant in self.sync_tenants}
        for prefix, values in (
            (RATE_PLAN_PREFIX, self.tenant_rate_plans),
            (QUOTA_PREFIX, self.tenant_quotas),
        ):
            stray = sorted(f"{prefix}{key}" for key in values if key.upper() not in suffixes)
            if stray:
                raise ValueError(f"{', '.join(stray)} names no tenant of ADM_TENANTS / ADM_TENANT_ID")
        if self.address_configured:
            missing = [t for t in self.sync_tenants if not self.has_credential(t)]
            if missing:
                raise ValueError(
                    f"no credential for tenant {', '.join(missing)}: set ADM_TOKEN or ADM_ACCESS_KEY "
                    f"(or {TOKEN_PREFIX}<TENANT> / {ACCESS_KEY_PREFIX}<TENANT>)"
                )
        return self

    # -- derived values --------------------------------------------------------------------------------------

    @property
    def address_configured(self) -> bool:
        """Whether a service address is configured (else a sync or an HR apply refuses, see `NO_SERVICE`)."""
        return self.environment is not None or self.base_url is not None

    @property
    def sync_tenants(self) -> list[str]:
        """The tenants to sync: ``ADM_TENANTS``, else ``ADM_TENANT_ID``; one Dagster partition each."""
        return self.tenants or ([self.tenant_id] if self.tenant_id else [])

    @property
    def default_tenant(self) -> str:
        """The tenant a command works on when it names none: the first configured one; `SettingsError`
        (one line) when none is."""
        if not self.sync_tenants:
            raise SettingsError(NO_TENANT)
        return self.sync_tenants[0]

    def configured_tenant(self, value: str) -> str:
        """``value`` as the configured tenant it names (UUIDs compare without regard to case); raises
        `SettingsError` in one line for anything else, a path or a wildcard included."""
        return configured_tenant(value, self.sync_tenants, self.tenant_names)

    def tenant_label(self, tenant_id: str) -> str:
        """How people see a tenant: ``acme (<uuid>)`` when ``ADM_TENANTS`` names it, else its id."""
        name = self.tenant_names.get(tenant_id)
        return f"{name} ({tenant_id})" if name else tenant_id

    @property
    def staging_root(self) -> Path:
        """Where runs stage their extracts: ``ADM_STAGING_DIR``, else ``staging`` beside the warehouse."""
        return self.staging_dir or self.warehouse.parent / "staging"

    @property
    def limiter_state_dir(self) -> Path:
        """Where each tenant's rate-limit bucket is remembered between runs: ``ratelimit`` beside the
        warehouse, so that a run following another starts with the budget the service has left. It follows
        the warehouse, which the operator placed, never the staging folder's parent (``ADM_STAGING_DIR=/tmp``
        would put it at ``/ratelimit``) nor the working directory."""
        return self.warehouse.parent / "ratelimit"

    @property
    def publish_file(self) -> Path:
        """The copy readers open: ``ADM_PUBLISH_PATH``, else ``<stem>.analytics.duckdb`` beside the
        warehouse."""
        return self.publish_path or default_publish_path(self.warehouse)

    @property
    def publish_target(self) -> PublishTarget:
        """Where and how each commit publishes the reader copy."""
        return PublishTarget(
            self.publish_file, self.publish_storage_version, self.publish_parquet, self.readers_group
        )

    @property
    def overlap(self) -> timedelta:
        """How far before the committed cursor an incremental read starts."""
        return timedelta(minutes=self.overlap_minutes)

    @property
    def freshness(self) -> timedelta:
        """A tenant whose last committed sync is older than this is stale."""
        return timedelta(hours=self.freshness_hours)

    @property
    def quota(self) -> int:
        """API calls a month: ``ADM_MONTHLY_QUOTA``, else the plan's."""
        return self.monthly_quota or MONTHLY_QUOTAS[self.rate_plan]

    def rate_plan_of(self, tenant_id: str) -> RatePlan:
        """The tenant's rate plan: ``ADM_RATE_PLAN__<TENANT>``, else ``ADM_RATE_PLAN``."""
        return _of_tenant(self.tenant_rate_plans, tenant_id) or self.rate_plan

    def quota_of(self, tenant_id: str) -> int:
        """The tenant's API calls a month: ``ADM_MONTHLY_QUOTA__<TENANT>``, else its own plan's quota when
        it has a plan of its own, else `quota`."""
        own = _of_tenant(self.tenant_quotas, tenant_id)
        if own is not None:
            return own
        plan = _of_tenant(self.tenant_rate_plans, tenant_id)
        return MONTHLY_QUOTAS[plan] if plan is not None else self.quota

    def has_credential(self, tenant_id: str) -> bool:
        """Whether ``tenant_id`` has a token or an access key, its own or the shared one."""
        own = credential_for(self.tenant_tokens, tenant_id) or credential_for(
            self.tenant_access_keys, tenant_id
        )
        return own is not None or self.token is not None or self.access_key is not None


def tenant_variable_suffix(tenant_id: str) -> str:
    """The ``<TENANT>`` part of a per-tenant variable: the id upper-cased, hyphens as underscores."""
    return tenant_id.upper().replace("-", "_")


def load_settings() -> SyncSettings:
    """The settings from the process environment; `SettingsError` (one line) when a value is refused.
    With no address configured, see `SyncSettings.address_configured` (and `pipelines.demo`)."""
    try:
        settings = SyncSettings(
            tenant_tokens=_per_tenant(os.environ, TOKEN_PREFIX),
            tenant_access_keys=_per_tenant(os.environ, ACCESS_KEY_PREFIX),
            tenant_rate_plans=_per_tenant_values(os.environ, RATE_PLAN_PREFIX),
            tenant_quotas=_per_tenant_values(os.environ, QUOTA_PREFIX),
        )
    except ValidationError as error:
        raise SettingsError(describe(error, os.environ)) from None
    return settings


def _per_tenant(env: Mapping[str, str], prefix: str) -> dict[str, SecretStr]:
    """Per-tenant secrets keyed by their variable's suffix; matched to tenant ids by `credential_for`."""
    return {
        name.removeprefix(prefix): SecretStr(value) for name, value in env.items() if name.startswith(prefix)
    }


def _per_tenant_values(env: Mapping[str, str], prefix: str) -> dict[str, str]:
    """Per-tenant plain values keyed by their variable's suffix (empty ones unset, like every variable)."""
    return {
        name.removeprefix(prefix): value for name, value in env.items() if name.startswith(prefix) and value
    }


def credential_for(secrets: Mapping[str, SecretStr], tenant_id: str) -> SecretStr | None:
    """A tenant's own secret, whatever the case of its variable's suffix."""
    return _of_tenant(secrets, tenant_id)


def _of_tenant(values: Mapping[str, _V], tenant_id: str) -> _V | None:
    """A tenant's own value of a per-tenant variable (keyed by suffix, any case)."""
    wanted = tenant_variable_suffix(tenant_id)
    return next((value for key, value in values.items() if key.upper() == wanted), None)


def describe(error: ValidationError, env: Mapping[str, str]) -> str:
    """One line: each refused variable, its value (never a secret's) and what it accepts."""
    parts = []
    for problem in error.errors(include_url=False, include_input=False):
        field = str(problem["loc"][0]) if problem["loc"] else ""
        if not field:
            parts.append(str(problem["msg"]).removeprefix("Value error, "))
            continue
        per_tenant = PER_TENANT_PREFIXES.get(field)
        variable = f"{per_tenant}{problem['loc'][1]}" if per_tenant else f"{PREFIX}{field.upper()}"
        shown = "(hidden)" if field in SECRET_FIELDS else repr(env.get(variable, ""))
        reason = str(problem["msg"]).removeprefix("Value error, ") if problem["type"] == "value_error" else ""
        parts.append(
            f"{variable}={shown} is not accepted: expected {ACCEPTS.get(field, problem['msg'])}"
            + (f" ({reason})" if reason else "")
        )
    return "; ".join(parts)
