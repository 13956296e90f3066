"""What the commands share: the settings, checked into one line, and the embedded emulator.

With no service address configured, a command starts an emulator in-process and points the settings at
it. Only the command-line layer does this; the sync itself never starts or imports a server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from pipelines.settings import NO_SERVICE, SettingsError, SyncSettings, load_settings
from warehouse.publish import same_file_problem
from warehouse.reads import warehouse_problem

if TYPE_CHECKING:
    from emulator.server import EmulatorServer


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
    try:
        return [settings.configured_tenant(tenant) for tenant in named] if named else settings.sync_tenants
    except SettingsError as error:
        typer.echo(f"error: --tenant: {error}", err=True)
        raise typer.Exit(2) from None


def _published_over(settings: SyncSettings, warehouse: Path) -> str | None:
    """Why ``--warehouse`` cannot be used with ``ADM_PUBLISH_PATH`` (it is that very file), or None."""
    if settings.publish_path and same_file_problem(warehouse, settings.publish_path):
        return f"{warehouse} is ADM_PUBLISH_PATH, where the copy for readers is published"
    return None


def service_or_exit(settings: SyncSettings) -> SyncSettings:
    """The settings, when a service address is configured; else the command ends with one line, exit 2."""
    if not settings.address_configured:
        typer.echo(f"error: {NO_SERVICE}", err=True)
        raise typer.Exit(2)
    return settings


@contextmanager
def embedded_emulator() -> Iterator[EmulatorServer]:
    """A seeded emulator served on a free loopback port for the duration of the block."""
    # Imported here: the server (FastAPI, uvicorn) costs a command that never starts it half a second.
    from emulator.server import EmulatorServer

    with EmulatorServer() as server:
        yield server
