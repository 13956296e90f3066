"""What the commands share: the settings and tenants, each refused in one line.

With no service address configured, a sync or an HR apply refuses (`service_or_exit`); only the demo
(`pipelines.demo`) starts an emulator."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from pipelines.settings import NO_SERVICE, SettingsError, SyncSettings, load_settings
from pipelines.tenant_runs import dagster_home_problem
from warehouse.publish_target import same_file_problem
from warehouse.reads import warehouse_problem


def settings_or_exit(warehouse: Path | None = None) -> SyncSettings:
    """The settings (``--warehouse`` wins over ``ADM_WAREHOUSE``); a refused value ends the command with
    one line naming the variable, exit code 2."""
    try:
        settings = load_settings()
    except SettingsError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    problem = (warehouse_problem(warehouse) or _published_over(settings, warehouse)) if warehouse else None
    if problem:
        typer.echo(f"error: --warehouse: {problem}", err=True)
        raise typer.Exit(2)
    return settings.model_copy(update={"warehouse": warehouse}) if warehouse else settings


def tenants_or_exit(settings: SyncSettings, named: list[str] | None) -> list[str]:
    """The tenants ``--tenant`` names (default: every configured one); one that is not configured ends the
    command with one line, exit code 2."""
    with _tenant_refused():
        return [settings.configured_tenant(tenant) for tenant in named] if named else settings.sync_tenants


def tenant_or_exit(settings: SyncSettings, named: str | None) -> str:
    """The configured tenant ``--tenant`` names (its id or its ``ADM_TENANTS`` name, as ``extract``
    takes it), else the first configured one; otherwise the command ends with one line, exit code 2."""
    with _tenant_refused():
        return settings.configured_tenant(named) if named else settings.default_tenant


@contextmanager
def _tenant_refused() -> Iterator[None]:
    """A `SettingsError` about the tenant ends the command with one line, exit code 2."""
    try:
        yield
    except SettingsError as error:
        typer.echo(f"error: --tenant: {error}", err=True)
        raise typer.Exit(2) from None


def _published_over(settings: SyncSettings, warehouse: Path) -> str | None:
    """Why ``--warehouse`` cannot be used with ``ADM_PUBLISH_PATH`` (it is that very file), or None."""
    if settings.publish_path and same_file_problem(warehouse, settings.publish_path):
        return f"{warehouse} is ADM_PUBLISH_PATH, where the copy for readers is published"
    return None


def service_or_exit(settings: SyncSettings) -> SyncSettings:
    """The settings, when a service address is configured and ``DAGSTER_HOME``, if set, can keep the runs
    (`dagster_home_problem`); else the command ends with one line, exit 2."""
    problem = NO_SERVICE if not settings.address_configured else dagster_home_problem()
    if problem:
        typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(2)
    return settings
