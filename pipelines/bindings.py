"""Bind the resources to the settings. Secrets read from the environment reach Dagster only as
``dg.EnvVar`` references, so their values never appear in definitions, config displays or logs."""

from __future__ import annotations

import os
from typing import Any

import dagster as dg
from pydantic import SecretStr

from pipelines.hr.policy import HrPolicyResource
from pipelines.settings import (
    ACCESS_KEY_PREFIX,
    TOKEN_PREFIX,
    SyncSettings,
    credential_for,
    tenant_variable_suffix,
)
from pipelines.warehouse_resource import SyncPolicyResource, WarehouseResource
from resources.dagster_resource import AdmClientResource, TenantCredential


def client_resource(settings: SyncSettings) -> AdmClientResource:
    """The client resource the settings describe, with per-tenant credentials where given."""
    fields: dict[str, Any] = {
        "environment": settings.environment.value if settings.environment else None,
        "base_url": settings.base_url,
        "token": _secret("ADM_TOKEN", settings.token),
        "access_key": _secret("ADM_ACCESS_KEY", settings.access_key),
        "tenant_id": next(iter(settings.sync_tenants), None),
        "rate_plan": settings.rate_plan.value,
        "tenant_rate_plans": {
            tenant: plan.value
            for tenant in settings.sync_tenants
            if (plan := settings.rate_plan_of(tenant)) != settings.rate_plan
        },
        "rate_per_minute": settings.rate_per_minute,
        "burst": settings.burst,
        "concurrency": settings.concurrency,
        "request_deadline_s": settings.request_deadline_s,
        "limiter_state_dir": str(settings.limiter_state_dir),
        "ca_bundle": str(settings.ca_bundle) if settings.ca_bundle else None,
        "tenant_credentials": [
            credential
            for tenant in settings.sync_tenants
            if (credential := _tenant_credential(settings, tenant)) is not None
        ],
    }
    return AdmClientResource(**fields)


def _tenant_credential(settings: SyncSettings, tenant_id: str) -> TenantCredential | None:
    suffix = tenant_variable_suffix(tenant_id)
    token = credential_for(settings.tenant_tokens, tenant_id)
    access_key = credential_for(settings.tenant_access_keys, tenant_id)
    if token is None and access_key is None:
        return None
    return TenantCredential(
        tenant_id=tenant_id,
        token=_secret(_variable(TOKEN_PREFIX, suffix), token),
        access_key=_secret(_variable(ACCESS_KEY_PREFIX, suffix), access_key),
    )


def _variable(prefix: str, suffix: str) -> str:
    """The variable as the operator spelled it (any case of the suffix), so that the EnvVar resolves."""
    return next((name for name in os.environ if name.upper() == f"{prefix}{suffix}"), f"{prefix}{suffix}")


def _secret(variable: str, value: SecretStr | None) -> Any:
    """An EnvVar when the value comes from ``variable``; otherwise the value itself (the emulator's public
    demo token, which the CLI sets when it starts an embedded emulator)."""
    if value is None:
        return None
    secret = value.get_secret_value()
    return dg.EnvVar(variable) if os.environ.get(variable) == secret else secret


def warehouse_resource(settings: SyncSettings) -> WarehouseResource:
    """Where the warehouse file and the staging folder are, and how the reader copy is published."""
    return WarehouseResource(
        path=str(settings.warehouse),
        staging_root=str(settings.staging_root),
        publish_path=str(settings.publish_file),
        publish_storage_version=settings.publish_storage_version,
        publish_parquet=settings.publish_parquet,
        readers_group=settings.readers_group,
        lock_wait_s=settings.lock_wait_s,
    )


def policy_resource(settings: SyncSettings) -> SyncPolicyResource:
    """How a tenant sync behaves: overlap, API quotas, the schema contract, retries."""
    return SyncPolicyResource(
        overlap_minutes=settings.overlap_minutes,
        monthly_quota=settings.quota,
        tenant_quotas={
            tenant: quota
            for tenant in settings.sync_tenants
            if (quota := settings.quota_of(tenant)) != settings.quota
        },
        quota_max_share=settings.quota_max_share,
        allow_over_quota=settings.allow_over_quota,
        schema_contract=settings.schema_contract,
        reject_max_count=settings.reject_max_count,
        reject_max_share=settings.reject_max_share,
        warn_only_checks=",".join(settings.warn_only_checks),
        resume_hours=settings.resume_hours,
        run_budget_s=settings.run_budget_s,
        max_retries=settings.max_retries,
        retry_wait_s=settings.retry_wait_s,
        revision_recheck_days=settings.revision_recheck_days,
        nightly_cron=settings.nightly_cron,
        full_refresh_cron=settings.full_refresh_cron,
    )


def hr_policy_resource(settings: SyncSettings) -> HrPolicyResource:
    """How the HR reverse sync behaves: its drop folder, plan age, invalid share and four eyes."""
    return HrPolicyResource(
        drop_dir=str(settings.hr_drop_dir),
        plan_max_age_hours=settings.hr_plan_max_age_hours,
        max_invalid_share=settings.hr_max_invalid_share,
        four_eyes=settings.hr_four_eyes,
        tenants=settings.sync_tenants,
        tenant_names=settings.tenant_names,
    )


def resources(settings: SyncSettings) -> dict[str, Any]:
    """Every resource of the code location, by the name assets, ops, sensors and schedules ask for."""
    return {
        "adm": client_resource(settings),
        "warehouse": warehouse_resource(settings),
        "sync_policy": policy_resource(settings),
        "hr_policy": hr_policy_resource(settings),
    }
