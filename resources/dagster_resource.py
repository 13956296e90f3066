"""`AdmClientResource`: the Dagster resource that hands assets a configured `AdmClient`.

Bind it once, in ``definitions.py``, with secrets only through environment variables::

    import dagster as dg

    from resources import AdmClientResource

    adm = AdmClientResource(
        base_url=dg.EnvVar("ADM_BASE_URL"),        # or environment=dg.EnvVar("ADM_ENVIRONMENT")
        access_key=dg.EnvVar("ADM_ACCESS_KEY"),    # or token=dg.EnvVar("ADM_TOKEN")
        tenant_id=dg.EnvVar("ADM_TENANT_ID"),
        rate_plan=dg.EnvVar("ADM_RATE_PLAN"),
    )
    defs = dg.Definitions(assets=[...], resources={"adm": adm})

Bound through ``dg.EnvVar``, Dagster's UI shows the variable's name, never its value. The token and the
access key are also kept out of the resource's ``repr`` and are never logged.
"""

from __future__ import annotations

from typing import Any

import dagster as dg
from pydantic import Field, SecretStr

from resources.client import AdmClient
from resources.settings import ClientSettings, RatePlan


class TenantCredential(dg.Config):
    """One tenant's own credential, for operators who hold a key per tenant (bind the secrets as EnvVars)."""

    tenant_id: str
    token: str | None = Field(default=None, repr=False, description="Bearer token of this tenant.")
    access_key: str | None = Field(default=None, repr=False, description="Access key of this tenant.")


class AdmClientResource(dg.ConfigurableResource["AdmClientResource"]):
    """Configuration of the service client; `get_client` builds a client (close it, or use ``with``)."""

    environment: str | None = Field(
        default=None, description="staging-us, staging-eu, prod-us or prod-eu (or give base_url)."
    )
    base_url: str | None = Field(default=None, description="Any base address, e.g. an emulator's.")
    token: str | None = Field(default=None, repr=False, description="Bearer token (secret; bind an EnvVar).")
    access_key: str | None = Field(
        default=None, repr=False, description="Access key exchanged for tokens (secret; bind an EnvVar)."
    )
    tenant_id: str | None = Field(
        default=None, description="The tenant's id (UUID); or name it per call with client_for."
    )
    rate_plan: str | None = Field(default=None, description="essential (default), premium or enterprise.")
    tenant_rate_plans: dict[str, str] = Field(
        default_factory=dict, description="Tenant id -> its own rate plan, where it differs from rate_plan."
    )
    rate_per_minute: float | None = Field(
        default=None, description="Overrides the plan's requests per minute."
    )
    burst: int | None = Field(default=None, description="Overrides the burst (default twice the rate).")
    concurrency: int | None = Field(default=None, description="Requests in flight at most (default 8).")
    request_deadline_s: float | None = Field(
        default=None, description="Seconds one request may take, connecting and every read included."
    )
    limiter_state_dir: str | None = Field(
        default=None, description="Folder remembering each tenant's rate-limit bucket between runs."
    )
    ca_bundle: str | None = Field(
        default=None, description="PEM file of CAs trusted besides the OS store and the public CAs."
    )
    tenant_credentials: list[TenantCredential] = Field(
        default_factory=list, description="Per-tenant credentials; a tenant not listed uses token/access_key."
    )

    def client_settings(self, tenant_id: str | None = None) -> ClientSettings:
        """The client settings this configuration describes, for ``tenant_id`` (default: the configured
        tenant). Fields left None take the settings' defaults; a tenant's own credential wins."""
        tenant = tenant_id or self.tenant_id
        token, access_key = self._credential(tenant)
        values: dict[str, Any] = {
            "environment": self.environment,
            "base_url": self.base_url,
            "token": SecretStr(token) if token else None,
            "access_key": SecretStr(access_key) if access_key else None,
            "tenant_id": tenant,
            "rate_plan": self.tenant_rate_plans.get(tenant or "", self.rate_plan),
            "rate_per_minute": self.rate_per_minute,
            "burst": self.burst,
            "concurrency": self.concurrency,
            "request_deadline_s": self.request_deadline_s,
            "limiter_state_dir": self.limiter_state_dir,
            "ca_bundle": self.ca_bundle,
        }
        given = {key: value for key, value in values.items() if value is not None}
        return ClientSettings.model_validate(given)

    def _credential(self, tenant_id: str | None) -> tuple[str | None, str | None]:
        """(token, access key) of the tenant: its own when listed, else the shared ones."""
        own = next((c for c in self.tenant_credentials if c.tenant_id == tenant_id), None)
        return (own.token, own.access_key) if own else (self.token, self.access_key)

    def rate_plan_of(self, tenant_id: str) -> RatePlan:
        """The tenant's rate plan: its own, else the shared one, else the settings' default."""
        return self.client_settings(tenant_id).rate_plan

    def get_client(self) -> AdmClient:
        """A new client of the configured tenant (close it, or use it in a ``with`` block)."""
        return AdmClient(self.client_settings())

    def client_for(self, tenant_id: str) -> AdmClient:
        """A new client of ``tenant_id`` (one partition per tenant), otherwise configured alike."""
        return AdmClient(self.client_settings(tenant_id))
