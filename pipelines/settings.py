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
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Self, TypeVar
from urllib.parse import urlsplit

from croniter import croniter
from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from models.base import UUID_PATTERN, is_uuid
from models.errors import AuthoritySyncError
from pipelines.check_names import parse_check_names
from resources.contract_modes import ContractMode, parse_modes
from resources.settings import (
    DEFAULT_CONCURRENCY,
    MONTHLY_QUOTAS,
    REQUEST_DEADLINE_S,
    Burst,
    ClientSettings,
    Concurrency,
    Deadline,
    Environment,
    RatePerMinute,
    RatePlan,
    http_address,
    lower_case,
)
from resources.tls import CaBundle
from warehouse.files import default_publish_path, group_id
from warehouse.locks import DEFAULT_LOCK_WAIT_S
from warehouse.publish_target import (
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

PER_TENANT_PREFIXES = {
    "tenant_tokens": TOKEN_PREFIX,
    "tenant_access_keys": ACCESS_KEY_PREFIX,
    "tenant_rate_plans": RATE_PLAN_PREFIX,
    "tenant_quotas": QUOTA_PREFIX,
}
"""The settings one tenant may have of its own, and their variables' prefix (``<prefix><TENANT>``)."""

CRON_FIELDS = 5
"""minute hour day-of-month month day-of-week."""

RECHECK_DAYS = 30
"""The default re-verification window (``ADM_REVISION_RECHECK_DAYS``): with the default schedules the
benchmark's tenant (20,000 decisions, 2,000 delegations, 1,000 documents, 1% changed a night) spends 48% of
Essential's quota a month; docs/sync.md weighs other windows."""

REUSE_MIN_RECORDS = 5_000
"""The default of ``ADM_REUSE_MIN_RECORDS``: staging a list's unchanged records from the warehouse opens the
file once more and writes each staged file of the list again (about 45 ms, and 30 ms a table), while deriving
a record costs 0.05-0.13 ms: a night's whole read of a few thousand users is faster derived (docs/sync.md,
"Records read again unchanged")."""

SECRET_FIELDS = frozenset({"token", "access_key", "tenant_tokens", "tenant_access_keys"})
_V = TypeVar("_V")


@dataclass(frozen=True)
class Accepts:
    """What a setting accepts, as its one-line error and the settings table say it. Every setting read
    from a variable carries one (``Annotated[type, Accepts(...)]``); ``shown_default`` is how the table
    shows a default that is not a value of its own (another setting's, a plan's), else None."""

    text: str
    shown_default: str | None = None


def accepts(field: FieldInfo) -> Accepts | None:
    """The `Accepts` of a field, or None for a value derived from others (``tenant_names``)."""
    return next((item for item in field.metadata if isinstance(item, Accepts)), None)


def variable_of(field: str) -> str:
    """The variable a field is read from (``ADM_TOKEN__<TENANT>`` for a per-tenant one)."""
    per_tenant = PER_TENANT_PREFIXES.get(field)
    return f"{per_tenant}<TENANT>" if per_tenant else f"{PREFIX}{field.upper()}"


NO_TENANT = "no tenant configured: set ADM_TENANTS (ids, comma-separated) or ADM_TENANT_ID"


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
    """Every setting of authority-sync, from ``ADM_*`` environment variables: the one declaration of each,
    its default, validation, what it accepts (`Accepts`) and what it means (its description, from which the
    README's table is rendered: `pipelines.settings_doc`). The CLI reads it with `load_settings`; Dagster
    gets it bound as the resources of `pipelines.bindings`, which have nothing a launchpad could set."""

    # Empty variables count as unset, as a shell's `export ADM_TOKEN=` means.
    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore", frozen=True, env_ignore_empty=True)

    environment: Annotated[Environment | None, Accepts("one of staging-us, staging-eu, prod-us, prod-eu")] = (
        Field(None, description="the service's deployment (give this or `ADM_BASE_URL`)")
    )
    base_url: Annotated[str | None, Accepts("an address starting with http:// or https://")] = Field(
        None,
        description="any base address (an emulator, a proxy). With neither set, a sync or an HR apply "
        "refuses in one line (never a fallback to an emulator: demo data would land where production data "
        "lives); `authority-sync demo` runs on its embedded emulator with files of its own under "
        "`data/demo/`, and `make dagster` without an address drives `make emulator` into `data/demo/`",
    )
    token: Annotated[SecretStr | None, Accepts("a bearer token")] = Field(
        None, description="a ready bearer token, for every tenant without one of its own"
    )
    access_key: Annotated[SecretStr | None, Accepts("an access key")] = Field(
        None,
        description="a machine access key, exchanged for a token at first use and again once after a 401",
    )
    tenant_id: Annotated[str | None, Field(pattern=UUID_PATTERN), Accepts("a tenant id (UUID)")] = Field(
        None, description="the tenant to sync when `ADM_TENANTS` is unset"
    )
    tenants: Annotated[
        list[str],
        NoDecode,
        Accepts("comma-separated tenant ids (UUIDs), each optionally named: acme=<uuid>", "`ADM_TENANT_ID`"),
    ] = Field(
        default_factory=list,
        description="comma-separated tenants to sync, one Dagster partition each; each may be named, "
        "`acme=<uuid>`: the CLI accepts (`--tenant acme`) and shows the name, labels the tenant with it in "
        "the warehouse (`v_sync_status.tenant_label`), and every sync run of the tenant carries it in the "
        "tag `adm/tenant_name` (the runs list shows it)",
    )
    tenant_names: dict[str, str] = Field(default_factory=dict)
    """Tenant id -> the name ``ADM_TENANTS`` gives it (``acme=<uuid>``), for people: the CLI accepts and
    shows it, and each sync labels the tenant with it in the warehouse (``v_sync_status``)."""
    rate_plan: Annotated[RatePlan, Accepts("one of essential, premium, enterprise")] = Field(
        RatePlan.ESSENTIAL,
        description="`essential` (60/min, 25,000 calls a month), `premium` (300/min, 100,000) or "
        "`enterprise` (600/min, 250,000); bursts of twice the rate",
    )
    rate_per_minute: Annotated[
        RatePerMinute | None, Accepts("a number of requests per minute above 0", "plan rate")
    ] = Field(None, description="overrides the plan's rate")
    burst: Annotated[Burst | None, Accepts("a whole number of requests of at least 1", "twice the rate")] = (
        Field(None, description="overrides the burst (token bucket size)")
    )
    concurrency: Annotated[Concurrency, Accepts("a whole number from 1 to 64")] = Field(
        DEFAULT_CONCURRENCY, description="requests in flight at most, per tenant sync"
    )
    request_deadline_s: Annotated[Deadline, Accepts("a number of seconds above 0")] = Field(
        REQUEST_DEADLINE_S,
        description="seconds one request may take in all, connecting and every read of its answer (each read "
        "also has a 30 s timeout): a body trickled slower fails as a timeout naming the endpoint, and is "
        "retried as one",
    )
    monthly_quota: Annotated[
        int | None, Field(ge=1), Accepts("a whole number of API calls of at least 1", "plan quota")
    ] = Field(None, description="API calls a month, when the contract differs from the plan")
    quota_max_share: Annotated[
        float, Field(gt=0, le=1), Accepts("a share above 0 and at most 1 (e.g. 0.9)")
    ] = Field(0.9, description="a run projected to take the month past this share of the quota is refused")
    allow_over_quota: Annotated[bool, Accepts("true or false")] = Field(
        False,
        description="run anyway (also the run tag `adm/allow_over_quota=true` or "
        "`extract --allow-over-quota`)",
    )
    warehouse: Annotated[Path, Accepts("the path of a DuckDB file, existing or to create")] = Field(
        Path("data/warehouse.duckdb"), description="the DuckDB file"
    )
    staging_dir: Annotated[Path | None, Accepts("a folder path", "`staging` beside the warehouse")] = Field(
        None, description="where runs stage Parquet files (personal data: removed after every run)"
    )
    publish_path: Annotated[
        Path | None,
        Accepts(
            "the path of a DuckDB file other than the warehouse (ADM_WAREHOUSE)",
            "`<warehouse stem>.analytics.duckdb` beside the warehouse",
        ),
    ] = Field(
        None,
        description="the copy analysts open, published after every commit (see Publishing for readers); the "
        "warehouse itself is refused",
    )
    publish_storage_version: Annotated[
        str, Accepts("a DuckDB storage version such as v1.4.0 (readers need that DuckDB or newer)")
    ] = Field(
        DEFAULT_STORAGE_VERSION,
        description="the DuckDB storage format of that copy (`v1.4.0`, `v1.5.0`, …, `latest`): readers need "
        "that DuckDB release or a newer one",
    )
    publish_parquet: Annotated[bool, Accepts("true or false")] = Field(
        False, description="also publish one Parquet file per table and view, for readers without DuckDB"
    )
    overlap_minutes: Annotated[int, Field(ge=0), Accepts("a whole number of minutes, 0 or more")] = Field(
        10, description="an incremental read starts this long before the committed cursor"
    )
    freshness_hours: Annotated[float, Field(gt=0), Accepts("a number of hours above 0")] = Field(
        26.0, description="a tenant whose last committed sync is older is stale (its freshness check fails)"
    )
    schema_contract: Annotated[
        str, Accepts("strict or tolerant, optionally per list (e.g. tolerant,users=strict)")
    ] = Field(
        ContractMode.TOLERANT.value,
        description="`tolerant`: records off the spec are loaded with the deviation recorded; `strict`: any "
        "deviation fails the run (see the schema contract). Per list, by its name in the list catalog "
        "(`resources/catalog.py`): `tolerant,users=strict`; a name of no list is refused naming the lists",
    )
    reject_max_count: Annotated[int, Field(ge=0), Accepts("a whole number of records, 0 or more")] = Field(
        10, description="a list with more rejected records than this fails the run"
    )
    reject_max_share: Annotated[float, Field(ge=0, le=1), Accepts("a share from 0 to 1 (e.g. 0.01)")] = Field(
        0.01, description="a list whose rejected records exceed this share of its records fails the run"
    )
    revision_recheck_days: Annotated[int, Field(ge=1), Accepts("a whole number of days of at least 1")] = (
        Field(
            RECHECK_DAYS,
            description="every run (nightly or full) re-verifies about 1/N of the revision lists (E11, E12) "
            "whose delegation or decision did not change, the longest unverified first: a revision added "
            "without touching its owner is seen within N runs; see [docs/sync.md](docs/sync.md)",
        )
    )
    reuse_min_records: Annotated[int, Field(ge=0), Accepts("a whole number of records, 0 or more")] = Field(
        REUSE_MIN_RECORDS,
        description="a list read whole that holds at least this many live records does not derive again the "
        "records whose text and derivation are those of their stored rows: it stages those rows (0: any "
        "list; a number above the largest list: never); see [docs/sync.md](docs/sync.md)",
    )
    resume_hours: Annotated[float, Field(ge=0), Accepts("a number of hours, 0 or more")] = Field(
        12.0,
        description="a run reuses the revision lists that a failed, killed or interrupted run of the tenant "
        "fetched this recently (0: never); see [docs/operations.md](docs/operations.md)",
    )
    run_budget_s: Annotated[
        float | None, Field(gt=0), Accepts("a number of seconds above 0", "from the run's calls")
    ] = Field(
        None,
        description="a run still going after this many seconds stops as on SIGTERM and fails in one line "
        "naming its slowest endpoint; default three times what its calls take at the plan's rate, plus ten "
        "minutes: the calls expected, or those made once they are more (a first run's budget grows with "
        "its calls) ([stopping a run](docs/operations.md#stopping-a-run))",
    )
    max_retries: Annotated[int, Field(ge=0), Accepts("a whole number of retries, 0 or more")] = Field(
        2,
        description="a sync that failed for a passing reason (5xx, a lost connection, 429s) runs again "
        "this often, as a Dagster step (run tag `adm/max_retries`) or a CLI run",
    )
    retry_wait_s: Annotated[float, Field(ge=0), Accepts("a number of seconds, 0 or more")] = Field(
        30.0,
        description="seconds before the first of those retries, doubled for each next one (run tag "
        "`adm/retry_wait_s`)",
    )
    readers_group: Annotated[str | None, Accepts("the name of a group of this machine")] = Field(
        None,
        description="a group that may read the copy for readers (0640); everything else written stays its "
        "owner's (0600 files, 0700 folders)",
    )
    allow_insecure_http: Annotated[bool, Accepts("true or false")] = Field(
        False,
        description="allow plain `http://` to another machine (the token would cross the network "
        "unencrypted); plain http never goes through a proxy",
    )
    ca_bundle: Annotated[CaBundle | None, Accepts("a PEM file of certificate authorities")] = Field(
        None,
        description="a PEM file of CAs trusted besides the OS trust store and the public CAs (a corporate "
        "proxy's CA); see [corporate network](docs/operations.md#corporate-network)",
    )
    warn_only_checks: Annotated[
        list[str], NoDecode, Accepts("comma-separated names of blocking checks that only warn this time")
    ] = Field(
        default_factory=list,
        description="comma-separated blocking checks that only warn (an operator's override; also the run "
        "tag `adm/warn_only_checks`): see [docs/sync.md](docs/sync.md)",
    )
    lock_wait_s: Annotated[float, Field(ge=0), Accepts("a number of seconds, 0 or more")] = Field(
        DEFAULT_LOCK_WAIT_S,
        description="how long any open of the warehouse (a commit, an HR step, a read) waits for its writer "
        "(another tenant's commit, one statement of an HR apply) before failing in one line with the "
        "holder's name (docs/operations.md)",
    )
    nightly_cron: Annotated[str, Accepts("a cron expression of five fields (UTC), e.g. 0 2 * * *")] = Field(
        "0 2 * * *", description="when the nightly incremental sync runs (UTC)"
    )
    full_refresh_cron: Annotated[str, Accepts("a cron expression of five fields (UTC), e.g. 0 3 * * 0")] = (
        Field("0 3 * * 0", description="when the weekly full refresh runs (UTC)")
    )
    hr_drop_dir: Annotated[Path, Accepts("a folder path")] = Field(
        Path("data/hr/inbox"),
        description="the folder the HR drop-folder sensor watches (and its folders holding an "
        "`hr-folder.toml`)",
    )
    hr_plan_max_age_hours: Annotated[float, Field(gt=0), Accepts("a number of hours above 0")] = Field(
        72.0, description="an HR plan older than this is not applied (plan the files again)"
    )
    hr_max_invalid_share: Annotated[float, Field(ge=0, le=1), Accepts("a share from 0 to 1 (e.g. 0.1)")] = (
        Field(
            0.1,
            description="an HR upload with a larger share of invalid rows is refused (`hr plan` exits 1; a "
            "Dagster run is red)",
        )
    )
    hr_four_eyes: Annotated[bool, Accepts("true or false")] = Field(
        False, description="a threshold lift of an HR plan must come from someone other than its planner"
    )
    tenant_tokens: Annotated[dict[str, SecretStr], Accepts("a bearer token")] = Field(
        default_factory=dict,
        exclude=True,
        description="one tenant's own token: `<TENANT>` is its id upper-cased with `_` for `-` (e.g. "
        "`ADM_TOKEN__0B5E5C1E_7D4A_4C53_9A51_6F1E2D3C4B5A`). With an address configured, every tenant needs "
        "a credential, its own or the shared one",
    )
    tenant_access_keys: Annotated[dict[str, SecretStr], Accepts("an access key")] = Field(
        default_factory=dict,
        exclude=True,
        description="one tenant's own access key (`<TENANT>` as for tokens)",
    )
    tenant_rate_plans: Annotated[
        dict[str, RatePlan], Accepts("one of essential, premium, enterprise", "`ADM_RATE_PLAN`")
    ] = Field(
        default_factory=dict,
        description="one tenant's own rate plan (a tenant with a plan of its own and no quota of its own "
        "gets its plan's quota); `<TENANT>` as for tokens; a variable naming no configured tenant is refused",
    )
    tenant_quotas: Annotated[
        dict[str, Annotated[int, Field(ge=1)]],
        Accepts("a whole number of API calls of at least 1", "`ADM_MONTHLY_QUOTA`"),
    ] = Field(
        default_factory=dict,
        description="one tenant's own monthly quota; a variable naming no configured tenant is refused",
    )

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

    _lower_case = field_validator("environment", "rate_plan", mode="before")(lower_case)
    _http_address = field_validator("base_url")(http_address)

    @field_validator("tenant_rate_plans", mode="before")
    @classmethod
    def _lower_case_plans(cls, value: object) -> object:
        if isinstance(value, dict):
            return {key: lower_case(plan) for key, plan in value.items()}
        return value

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
        # Only DuckDB knows its storage versions (it takes an in-memory database to ask): the default is
        # known (tests/test_settings.py), so loading the settings opens no database unless a version is set.
        problem = None if value == DEFAULT_STORAGE_VERSION else storage_version_problem(value)
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

    def client_settings(self, tenant_id: str) -> ClientSettings:
        """How the client of ``tenant_id`` reaches the service: the address, the tenant's own credential
        (else the shared one), its rate plan and the client limits of these settings."""
        token = credential_for(self.tenant_tokens, tenant_id)
        access_key = credential_for(self.tenant_access_keys, tenant_id)
        if token is None and access_key is None:
            token, access_key = self.token, self.access_key
        values: dict[str, Any] = {
            "environment": self.environment,
            "base_url": self.base_url,
            "token": token,
            "access_key": access_key,
            "tenant_id": tenant_id,
            "rate_plan": self.rate_plan_of(tenant_id),
            "rate_per_minute": self.rate_per_minute,
            "burst": self.burst,
            "concurrency": self.concurrency,
            "request_deadline_s": self.request_deadline_s,
            "limiter_state_dir": self.limiter_state_dir,
            "ca_bundle": self.ca_bundle,
        }
        return ClientSettings.model_validate(values)

    @property
    def plan_max_age(self) -> timedelta:
        """How old an HR plan may be applied."""
        return timedelta(hours=self.hr_plan_max_age_hours)

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
        info = SyncSettings.model_fields.get(field)
        accepted = accepts(info) if info is not None else None
        parts.append(
            f"{variable}={shown} is not accepted: expected {accepted.text if accepted else problem['msg']}"
            + (f" ({reason})" if reason else "")
        )
    return "; ".join(parts)
