"""The service client as the resource assets, sensors and the CLI use: a view of the settings."""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.settings import SyncSettings
from resources.client import AdmClient
from resources.settings import ClientSettings, RatePlan


@dataclass(frozen=True)
class AdmClientResource:
    """Clients of each configured tenant, configured by the settings alone: a Dagster run has nothing to
    configure here, so no secret is ever part of a run's config (`pipelines.bindings`)."""

    settings: SyncSettings

    @property
    def tenant_id(self) -> str | None:
        """The tenant a client is for when none is named: the first configured one."""
        return next(iter(self.settings.sync_tenants), None)

    @property
    def limiter_state_dir(self) -> str:
        """The folder remembering each tenant's rate-limit bucket between runs."""
        return str(self.settings.limiter_state_dir)

    def client_settings(self, tenant_id: str | None = None) -> ClientSettings:
        """The client settings of ``tenant_id`` (default: the first configured tenant)."""
        return self.settings.client_settings(tenant_id or self.settings.default_tenant)

    def rate_plan_of(self, tenant_id: str) -> RatePlan:
        """The tenant's rate plan: its own, else the shared one."""
        return self.settings.rate_plan_of(tenant_id)

    def get_client(self) -> AdmClient:
        """A new client of the first configured tenant (close it, or use it in a ``with`` block)."""
        return AdmClient(self.client_settings())

    def client_for(self, tenant_id: str) -> AdmClient:
        """A new client of ``tenant_id`` (one partition per tenant), otherwise configured alike."""
        return AdmClient(self.client_settings(tenant_id))
