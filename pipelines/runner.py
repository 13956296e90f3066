"""Run the nightly extract in-process: the same assets, checks and jobs as the Dagster code location,
used by the CLI, the demo, the tests and the benchmarks."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import dagster as dg

from emulator.scale import DEMO_TOKEN
from emulator.server import EmulatorServer
from pipelines.assets import ALL_ASSETS, EXTRACT_ASSETS, ExtractConfig
from pipelines.bindings import UNLIMITED_RATE, address_configured
from pipelines.checks import sync_runs_fresh
from resources.dagster_resource import AdmClientResource
from resources.warehouse_resource import WarehouseResource

StepListener = Callable[[str, str], None]
"""Called with (event type, step key) for every step event of a run."""


@dataclass(frozen=True)
class TenantRun:
    """The outcome of one tenant's run."""

    tenant_id: str
    run_id: str
    success: bool
    error: str | None


def run_config(full_refresh: bool, listening: bool) -> dg.RunConfig:
    """Run config: the extract options for every extract asset, and which loggers to use."""
    ops = {asset.op.name: ExtractConfig(full_refresh=full_refresh) for asset in EXTRACT_ASSETS}
    loggers: dict[str, Any] = (
        {"progress": {}} if listening else {"console": {"config": {"log_level": "WARNING"}}}
    )
    return dg.RunConfig(ops=ops, loggers=loggers)


def run_tenant(
    tenant_id: str,
    adm: AdmClientResource,
    warehouse: WarehouseResource,
    *,
    full_refresh: bool = False,
    listener: StepListener | None = None,
    instance: dg.DagsterInstance | None = None,
) -> TenantRun:
    """Run the extract and commit of one tenant; a failure is reported, never raised."""
    defs = dg.Definitions(
        assets=ALL_ASSETS,
        asset_checks=[sync_runs_fresh],
        jobs=[dg.define_asset_job("extract", selection=dg.AssetSelection.all())],
        resources={"adm": adm, "warehouse": warehouse},
        loggers={"progress": _progress_logger(listener)} if listener else None,
    )
    result = defs.resolve_job_def("extract").execute_in_process(
        partition_key=tenant_id,
        run_config=run_config(full_refresh, listener is not None),
        instance=instance or dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    return TenantRun(
        tenant_id, result.run_id, result.success, None if result.success else _first_error(result)
    )


def _first_error(result: dg.ExecuteInProcessResult) -> str:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data.error:
            error = event.step_failure_data.error
            cause = error.cause or error
            return f"{event.step_key}: {cause.message.strip()}"
    return "the run failed"


def _progress_logger(listener: StepListener) -> dg.LoggerDefinition:
    class _Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            event = getattr(record, "dagster_meta", {}).get("dagster_event")
            if event is not None and event.step_key:
                listener(event.event_type_value, event.step_key)

    @dg.logger
    def progress(_: dg.InitLoggerContext) -> logging.Logger:
        logger = logging.getLogger("authority_sync.progress")
        logger.handlers = [_Handler()]
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        return logger

    return progress


@contextmanager
def service_overrides() -> Iterator[dict[str, Any]]:
    """Client settings to use: none when an address is configured, else an embedded emulator's."""
    if address_configured():
        yield {}
        return
    with EmulatorServer() as server:
        yield embedded_overrides(server)


def embedded_overrides(server: EmulatorServer) -> dict[str, Any]:
    """Client settings that point at an emulator with the demo tenant's (public, emulator-only) token."""
    return {
        "base_url": server.base_url,
        "token": DEMO_TOKEN,
        "access_key": None,
        "environment": None,
        "rate_per_minute": UNLIMITED_RATE,
    }
